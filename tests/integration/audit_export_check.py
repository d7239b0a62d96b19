#!/usr/bin/env python3
"""Recompute every hash of an ELSPETH 0.7.1 audit-export-v2 JSON file.

An independent check of sqltrail/audit_v2.c's output (ADR 0053): standard
library only, with its own RFC 8785 (JCS) canonicalizer (rfc8785 0.1.4's
rules, which 0.7.1 uses). It passes on the files the real 0.7.1 wrote
(tests/fixtures/elspeth071_audit_export) and fails on any edited byte.

usage: audit_export_check.py AUDIT_TRAIL.json [HMAC_KEY]
  HMAC_KEY (utf-8 text, the value of the env var named by signing_secret_ref)
  is needed only to check an hmac_sha256 export's signatures.

All derivation inputs come from the file itself: the per-chunk limits and
version strings from the run record's settings.landscape.export, the source
run id/status/completed_at from the manifest (cross-checked with the run
record).
"""
import hashlib
import hmac
import json
import math
import sys

# ---------------------------------------------------------------- RFC 8785
_ESC = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _str(s):
    out = ['"']
    for ch in s:
        if ch in _ESC:
            out.append(_ESC[ch])
        elif ord(ch) < 0x20:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _float(f):
    if math.isnan(f) or math.isinf(f):
        raise ValueError("non-finite float")
    if f == 0:
        return "0"
    if f < 0:
        return "-" + _float(-f)
    s = repr(f)  # shortest round-trip digits, same as ECMAScript
    exp_str, exp = "", 0
    q = s.find("e")
    if q > 0:
        exp_str = s[q:]
        if exp_str[2:3] == "0":
            exp_str = exp_str[:2] + exp_str[3:]
        s = s[:q]
        exp = int(exp_str[1:])
    first, dot, last = s, "", ""
    q = s.find(".")
    if q > 0:
        first, dot, last = s[:q], ".", s[q + 1:]
    if last == "0":
        dot, last = "", ""
    if 0 < exp < 21:
        first += last
        last = dot = exp_str = ""
        q = exp - len(first)
        while q >= 0:
            q -= 1
            first += "0"
    elif -7 < exp < 0:
        last = first + last
        first, dot, exp_str = "0", ".", ""
        q = exp
        while q < -1:
            q += 1
            last = "0" + last
    return first + dot + last + exp_str


def jcs(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        if not -(2**53) + 1 <= v <= 2**53 - 1:
            raise ValueError("integer outside IEEE-754 safe range")
        return str(v)
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, str):
        return _str(v)
    if isinstance(v, list):
        return "[" + ",".join(jcs(x) for x in v) + "]"
    if isinstance(v, dict):
        items = sorted(v.items(), key=lambda kv: kv[0].encode("utf-16be"))
        return "{" + ",".join(_str(k) + ":" + jcs(x) for k, x in items) + "}"
    raise TypeError(type(v))


def cb(v):
    return jcs(v).encode("utf-8")


def H(b):
    return hashlib.sha256(b).hexdigest()


def C(tag, payload):
    return cb({"payload": payload, "schema": tag})


# ---------------------------------------------------------------- main
def main():
    path = sys.argv[1]
    key = sys.argv[2].encode("utf-8") if len(sys.argv) > 2 else None
    data = open(path, "rb").read()
    nl = data.rfind(b"\n")
    body, manifest_bytes = data[: nl + 1], data[nl + 1:]
    manifest = json.loads(manifest_bytes)
    frames = body.splitlines(keepends=True)
    results = []

    def check(name, got, want):
        ok = got == want
        results.append(ok)
        shown = got if not isinstance(got, bytes) else "%d bytes" % len(got)
        print(("OK   " if ok else "FAIL ") + name + (": %s" % (shown,) if ok else ": got %r want %r" % (got, want)))

    records = []
    for i, fr in enumerate(frames):
        rec = json.loads(fr[:-1])
        if cb(rec) + b"\n" != fr:
            print("FAIL frame %d is not canonical" % i)
            results.append(False)
        records.append(rec)
    check("manifest line is canonical (no trailing newline)", cb(manifest), manifest_bytes)

    run = records[0]
    if run.get("record_type") != "run":
        sys.exit("FAIL the first record is not the run")
    x = run["settings"]["landscape"]["export"]
    mode = x["signing_mode"]
    if mode == "hmac_sha256" and key is None:
        sys.exit("hmac_sha256 export: pass the signing key as argv[2]")

    # record chain (final_hash)
    chain = hashlib.sha256()
    for rec in records:
        sig = rec.pop("signature", None)
        unsigned = cb(rec)
        if mode == "unsigned":
            check("no signature on an unsigned record", sig, None)
            chain.update(H(unsigned).encode("ascii"))
        else:
            exp = hmac.new(key, unsigned, hashlib.sha256).hexdigest()
            check("record signature", sig, exp)
            chain.update(sig.encode("ascii"))
    final_hash = chain.hexdigest()

    # public config / registry key
    public = {
        "chunking_algorithm_version": x["chunking_algorithm_version"],
        "export_format": x["format"],
        "exporter_version": x["exporter_version"],
        "include_raw_error_rows": x["include_raw_error_rows"],
        "per_chunk_byte_limit": x["per_chunk_byte_limit"],
        "per_chunk_record_limit": x["per_chunk_record_limit"],
        "serialization_version": x["serialization_version"],
        "signer_key_id": x["signer_key_id"],
        "signing_mode": mode,
    }
    public_hash = H(C("audit-export-public-config-v1", public))
    registry_key_hash = H(C("audit-export-registry-key-v1", {
        "export_format": x["format"],
        "exporter_version": x["exporter_version"],
        "public_export_config_hash": public_hash,
        "serialization_version": x["serialization_version"],
        "signer_key_id": x["signer_key_id"],
        "signing_mode": mode,
        "source_run_id": run["run_id"],
    }))

    # chunking (record-framing-v1)
    rlim, blim = x["per_chunk_record_limit"], x["per_chunk_byte_limit"]
    chunks, cur, cur_bytes = [], [], 0
    for fr in frames:
        if cur and (len(cur) == rlim or cur_bytes + len(fr) > blim):
            chunks.append(cur)
            cur, cur_bytes = [], 0
        cur.append(fr)
        cur_bytes += len(fr)
    if cur:
        chunks.append(cur)
    summaries, cr, cbytes = [], 0, 0
    for i, ch in enumerate(chunks):
        content = b"".join(ch)
        cr += len(ch)
        cbytes += len(content)
        summaries.append({"content_hash": H(content), "cumulative_bytes": cbytes, "cumulative_records": cr,
                          "ordinal": i, "record_count": len(ch), "size_bytes": len(content)})
    snapshot_hash = H(C("audit-export-snapshot-content-v1", {
        "chunking_algorithm_version": x["chunking_algorithm_version"], "chunks": summaries,
        "record_count": cr, "serialization_version": x["serialization_version"], "total_bytes": cbytes}))
    snapshot_id = H(C("audit-export-snapshot-id-v1", {"registry_key_hash": registry_key_hash, "snapshot_hash": snapshot_hash}))
    pred, mchunks = None, []
    for s in summaries:
        seal = H(C("audit-export-chunk-seal-v1", {
            "chunking_algorithm_version": x["chunking_algorithm_version"],
            "content_hash": s["content_hash"], "content_ref": "sha256:" + s["content_hash"],
            "cumulative_bytes": s["cumulative_bytes"], "cumulative_records": s["cumulative_records"],
            "derivation_version": "audit-export-derivation-v1", "ordinal": s["ordinal"],
            "predecessor": {"kind": "genesis"} if pred is None else {"hash": pred, "kind": "chunk_seal"},
            "record_count": s["record_count"], "serialization_version": x["serialization_version"],
            "size_bytes": s["size_bytes"], "snapshot_id": snapshot_id}))
        mchunks.append(dict(s, chunk_seal_hash=seal, content_ref="sha256:" + s["content_hash"], predecessor_seal_hash=pred))
        pred = seal
    manifest_hash = H(C("audit-export-manifest-v1", {
        "chunk_count": len(chunks), "chunks": mchunks, "record_count": cr,
        "snapshot_id": snapshot_id, "total_bytes": cbytes}))
    completed = manifest["source_completed_at"]
    # isoformat() leaves out a zero fraction; the manifest always has six digits
    at = run["completed_at"] if "." in run["completed_at"] else run["completed_at"] + ".000000"
    check("run.completed_at + 'Z' == source_completed_at", at + "Z", completed)
    snapshot_seal_hash = H(C("audit-export-snapshot-seal-v1", {
        "chunk_count": len(chunks), "chunking_algorithm_version": x["chunking_algorithm_version"],
        "exported_at": completed, "last_chunk_seal_hash": pred, "manifest_hash": manifest_hash,
        "per_chunk_byte_limit": blim, "per_chunk_record_limit": rlim, "record_count": cr,
        "registry_key_hash": registry_key_hash, "snapshot_hash": snapshot_hash, "snapshot_id": snapshot_id,
        "source_completed_at": completed, "source_run_id": run["run_id"],
        "source_status": manifest["source_status"], "total_bytes": cbytes}))

    check("record_count", cr, manifest["record_count"])
    check("total_bytes", cbytes, manifest["total_bytes"])
    check("chunk_count", len(chunks), manifest["chunk_count"])
    check("final_hash", final_hash, manifest["final_hash"])
    check("registry_key_hash", registry_key_hash, manifest["registry_key_hash"])
    check("snapshot_hash", snapshot_hash, manifest["snapshot_hash"])
    check("snapshot_id", snapshot_id, manifest["snapshot_id"])
    check("last_chunk_seal_hash", pred, manifest["last_chunk_seal_hash"])
    check("manifest_hash", manifest_hash, manifest["manifest_hash"])
    check("snapshot_seal_hash", snapshot_seal_hash, manifest["snapshot_seal_hash"])

    core = {
        "chunk_count": len(chunks), "derivation_version": "audit-export-derivation-v1",
        "export_format": x["format"], "exported_at": completed, "final_hash": final_hash,
        "hash_algorithm": "sha256", "last_chunk_seal_hash": pred, "manifest_hash": manifest_hash,
        "record_chain_algorithm": "sha256_concat_record_sha256_v1" if mode == "unsigned"
        else "sha256_concat_hmac_sha256_signatures_v1",
        "record_count": cr, "record_type": "manifest", "registry_key_hash": registry_key_hash,
        "run_id": run["run_id"], "schema": "elspeth.audit-export-manifest.v2",
        "signature_algorithm": mode, "signature_key_id": x["signer_key_id"],
        "snapshot_hash": snapshot_hash, "snapshot_id": snapshot_id, "snapshot_seal_hash": snapshot_seal_hash,
        "source_completed_at": completed, "source_status": manifest["source_status"], "total_bytes": cbytes,
    }
    signature = None
    if mode == "hmac_sha256":
        signature = hmac.new(key, C("audit-export-final-manifest-signing-body-v2", core), hashlib.sha256).hexdigest()
    check("manifest signature", signature, manifest["signature"])
    check("whole manifest line bytes", cb(dict(core, signature=signature)), manifest_bytes)
    print("public_export_config_hash (not in file):", public_hash)
    print("signed manifest content_ref (not in file): sha256:" + H(manifest_bytes), "size", len(manifest_bytes))
    print("ALL MATCH" if all(results) else "MISMATCH")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
