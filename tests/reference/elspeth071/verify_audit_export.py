#!/usr/bin/env python3
"""Check an audit-export-v2 JSON file (ours or 0.7.1's) with ELSPETH 0.7.1's own code.

Run with the 0.7.1 reference interpreter and sys.path, e.g.
  ref=${ELSPETH_REF071:-$HOME/.cache/elspeth-ref071}
  PYTHONPATH="$ref/shim:$ref/src:$ref/vendor/usr/lib/python3/dist-packages" \
    /root/.pyenv/versions/3.11.7/bin/python tests/reference/elspeth071/verify_audit_export.py FILE [HMAC_KEY]

Two independent checks:
 A. re-derivation: feeds the file's records (signature removed) to 0.7.1's
    derive_audit_export_bundle() with the config taken from the run record's
    settings.landscape.export + the manifest's source fields, and compares the
    produced target bytes with the file byte-for-byte;
 B. graph verification: builds the registry objects (AuditExportSnapshot /
    AuditExportSnapshotChunk) from the manifest line and runs 0.7.1's
    _verify_snapshot_graph() (the routine bind_winner/verify_candidate use)
    with the engine's own manifest / record-signature verifiers, reading chunk
    bytes out of the file.  Chunk boundaries are not stored in the file; they
    are recomputed from per_chunk_record_limit/per_chunk_byte_limit (and the
    intermediate chunk-seal hashes are taken from check A's derivation).
"""
import hashlib
import json
import sys
from datetime import UTC, datetime

from elspeth.contracts.audit import AuditExportSnapshot, AuditExportSnapshotChunk
from elspeth.contracts.audit_export import AuditExportDerivationConfig, derive_audit_export_bundle
from elspeth.contracts.enums import RunStatus
from elspeth.contracts.sink_effects import AuditExportFormat, AuditExportSigningMode
from elspeth.core.landscape.execution.audit_export_snapshots import _verify_snapshot_graph
from elspeth.engine.orchestrator.audit_export_effects import _manifest_verifier, _record_signature_verifier


def main() -> int:
    path = sys.argv[1]
    key = sys.argv[2].encode("utf-8") if len(sys.argv) > 2 else None
    data = open(path, "rb").read()
    cut = data.rfind(b"\n") + 1
    body, manifest_bytes = data[:cut], data[cut:]
    manifest = json.loads(manifest_bytes)
    frames = body.splitlines(keepends=True)
    records = [json.loads(f) for f in frames]
    for r in records:
        r.pop("signature", None)
    x = records[0]["settings"]["landscape"]["export"]
    mode = x["signing_mode"]
    cfg = AuditExportDerivationConfig(
        source_run_id=manifest["run_id"],
        source_status=manifest["source_status"],
        source_completed_at=manifest["source_completed_at"],
        export_format=x["format"],
        exporter_version=x["exporter_version"],
        serialization_version=x["serialization_version"],
        chunking_algorithm_version=x["chunking_algorithm_version"],
        include_raw_error_rows=x["include_raw_error_rows"],
        per_chunk_byte_limit=x["per_chunk_byte_limit"],
        per_chunk_record_limit=x["per_chunk_record_limit"],
        signing_mode=mode,
        signer_key_id=x["signer_key_id"],
        signing_key=key if mode == "hmac_sha256" else None,
    )
    bundle = derive_audit_export_bundle(records, cfg)
    ok_a = bundle.json_target_bytes == data
    print("A re-derivation byte-identical:", ok_a)
    if not ok_a:
        exp = bundle.json_target_bytes
        i = next((i for i in range(min(len(exp), len(data))) if exp[i] != data[i]), min(len(exp), len(data)))
        print("  first difference at byte", i, "expected", exp[max(0, i - 40):i + 40], "got", data[max(0, i - 40):i + 40])

    # ---- B: engine graph verification against the manifest's claims
    ts = datetime.strptime(manifest["source_completed_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    exported = datetime.strptime(manifest["exported_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    blobs: dict[str, bytes] = {}
    chunks = []
    offset = 0
    for dc in bundle.chunks:
        content = data[offset:offset + dc.descriptor.size_bytes]
        offset += dc.descriptor.size_bytes
        h = hashlib.sha256(content).hexdigest()
        blobs["sha256:" + h] = content
        chunks.append(AuditExportSnapshotChunk(
            snapshot_id=manifest["snapshot_id"], ordinal=dc.ordinal, content_ref="sha256:" + h, content_hash=h,
            size_bytes=len(content), record_count=content.count(b"\n"), predecessor_seal_hash=dc.predecessor_seal_hash,
            cumulative_records=dc.cumulative_records, cumulative_bytes=dc.cumulative_bytes, chunk_seal_hash=dc.chunk_seal_hash))
    mh = hashlib.sha256(manifest_bytes).hexdigest()
    blobs["sha256:" + mh] = manifest_bytes
    snapshot = AuditExportSnapshot(
        snapshot_id=manifest["snapshot_id"], source_run_id=manifest["run_id"],
        source_status=RunStatus(manifest["source_status"]), source_completed_at=ts, exported_at=exported,
        registry_key_hash=manifest["registry_key_hash"], exporter_version=x["exporter_version"],
        serialization_version=x["serialization_version"], export_format=AuditExportFormat(manifest["export_format"]),
        signing_mode=AuditExportSigningMode(manifest["signature_algorithm"]), signer_key_id=manifest["signature_key_id"],
        derivation_version=manifest["derivation_version"], public_export_config_hash=bundle.public_export_config_hash,
        chunking_algorithm_version=x["chunking_algorithm_version"], per_chunk_record_limit=x["per_chunk_record_limit"],
        per_chunk_byte_limit=x["per_chunk_byte_limit"], record_count=manifest["record_count"],
        total_bytes=manifest["total_bytes"], chunk_count=manifest["chunk_count"],
        terminal_chunk_ordinal=manifest["chunk_count"] - 1, content_store_id="oracle-file",
        manifest_hash=manifest["manifest_hash"], last_chunk_seal_hash=manifest["last_chunk_seal_hash"],
        snapshot_hash=manifest["snapshot_hash"], snapshot_seal_hash=manifest["snapshot_seal_hash"],
        signature_hex=manifest["signature"], record_chain_algorithm=manifest["record_chain_algorithm"],
        final_hash=manifest["final_hash"], signed_manifest_schema=manifest["schema"],
        signed_manifest_hash=mh, signed_manifest_ref="sha256:" + mh, signed_manifest_size_bytes=len(manifest_bytes))
    signing_mode = AuditExportSigningMode(mode)
    try:
        _verify_snapshot_graph(
            snapshot, tuple(chunks),
            resolve_registered=lambda ref: blobs[ref],
            signed_manifest_verifier=_manifest_verifier(signing_mode, key if mode == "hmac_sha256" else None),
            record_signature_verifier=_record_signature_verifier(signing_mode, key if mode == "hmac_sha256" else None),
        )
        ok_b = offset == len(body)
    except Exception as exc:  # noqa: BLE001
        print("B graph verification FAILED:", type(exc).__name__, exc)
        ok_b = False
    print("B _verify_snapshot_graph passed:", ok_b)
    return 0 if ok_a and ok_b else 1


if __name__ == "__main__":
    sys.exit(main())
