/*
 * audit_after_run.c — what ELSPETH does with the audit trail once a run
 * stops (ADR 0028): landscape.export (after a completed run, its records
 * to the export's sink) and the landscape.dump_to_jsonl change journal.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "plugins/plugins.h"
#include "sqltrail/sqltrail.h"

typedef struct sink_out {
	const plg_sink_ops *ops;
	void *state;
} sink_out;

static int write_record(void *ctx, json_t *rec, core_err *err)
{
	sink_out *o = ctx;
	plg_write_info info;

	return o->ops->write(o->state, rec, &info, err);
}

/* ELSPETH's export_landscape: json — every record through the sink's
 * write; csv — one file per record type beside the sink's path. */
static int export_trail(rec_env *rec, const core_settings *s, uint64_t run,
			core_err *err)
{
	const core_audit_export_cfg *x = &s->audit_export;
	const char *key = NULL;
	sink_out o = { 0 };
	int rc, rc2;

	if (x->sign && !(key = getenv("ELSPETH_SIGNING_KEY")))
		return core_err_set(err, CORE_ECONFIG,
			"ELSPETH_SIGNING_KEY environment variable required for signed export "
			"(landscape.export.sign: true)");
	if (!(o.ops = plg_find_sink(x->target.plugin)))
		return core_err_set(err, CORE_ECONFIG, "Export sink '%s': unknown plugin '%s'",
				    x->sink, x->target.plugin);
	if (!x->json) {
		const char *path = o.ops->target ? o.ops->target(x->target.options) : NULL;

		if (!path)
			return core_err_set(err, CORE_ECONFIG,
				"CSV export requires file-based sink with 'path' in config, "
				"but sink '%s' has no path configured", x->sink);
		return sqlt_audit_csv(rec, run, key, path, err);
	}
	if ((rc = o.ops->open(x->target.options, &o.state, err)))
		return rc;
	rc = sqlt_audit_records(rec, run, key, write_record, &o, err);
	if (!rc)
		rc = o.ops->flush(o.state, err);
	rc2 = o.ops->close(o.state, rc ? NULL : err);
	return rc ? rc : rc2;
}

int cli_before_run(rec_env *rec, const core_settings *s)
{
	core_err err = { 0 };

	if (!rec || !s->payload_store.set)
		return CLI_OK;
	if (!rec_payload_store_open(rec, s->payload_store.base_path, &err))
		return CLI_OK;
	cli_error(&err);
	return CLI_ERROR;
}

int cli_after_run(rec_env *rec, const core_settings *s, uint64_t run,
		  bool completed, bool json)
{
	core_err err = { 0 };
	int rc = 0;

	if (!rec || !run)
		return CLI_OK;
	if (s->journal.enabled)
		rc = sqlt_journal(rec, run, &s->journal, &err);
	if (rc && !s->journal.fail_on_error) {
		fprintf(stderr, "warning: the landscape journal was not written: %s\n", err.msg);
		rc = 0;
	}
	if (!rc && completed && s->audit_export.enabled) {
		uint64_t t0 = core_now_mono_ns();

		if (json)
			cli_phase_json("phase_started", "export", "exporting",
				       s->audit_export.sink, 0, NULL);
		if (!(rc = rec_flush(rec, &err)))
			rc = export_trail(rec, s, run, &err);
		if (json)
			cli_phase_json(rc ? "phase_error" : "phase_completed", "export",
				       NULL, s->audit_export.sink,
				       (double)(core_now_mono_ns() - t0) / 1e9,
				       rc ? err.msg : NULL);
	}
	if (!rc)
		return CLI_OK;
	core_err_prefix(&err, "run %llu is recorded, but its audit export failed",
			(unsigned long long)run);
	cli_error(&err);
	return CLI_ERROR;
}
