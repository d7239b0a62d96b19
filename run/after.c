/*
 * after.c — what a run does with the audit trail around the engine:
 * the payload store before it (payload_store), and once it stopped the
 * SQL trail of a sqlite:/// landscape url (ADR 0019), ELSPETH's change
 * journal (landscape.dump_to_jsonl) and landscape.export (ADR 0028).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins.h"
#include "run/run_internal.h"
#include "sqltrail/sqltrail.h"

int run__before(run_job *j, core_err *err)
{
	const core_settings *s = j->cfg.graph->settings;

	if (!j->rec || !s->payload_store.set)
		return 0;
	return rec_payload_store_open(j->rec, s->payload_store.base_path, err);
}

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
int run_audit_export(rec_env *rec, const core_settings *s, uint64_t run,
		     const char *sql, core_err *err)
{
	const core_audit_export_cfg *x = &s->audit_export;
	const char *key = NULL;
	sink_out o = { 0 };
	int rc, rc2;

	if (x->v2.on) {
		const core_node *cp = core_map_get(x->target.options, "collision_policy");
		const core_node *path = core_map_get(x->target.options, "path");

		return sqlt_audit_export_v2(rec, run, x, path ? path->value : "",
					    cp && cp->value && !strcmp(cp->value, "fail_if_exists"),
					    sql, err);
	}
	if (x->sign && !(key = core_signing_key()))
		return core_err_set(err, CORE_ECONFIG,
			"ELSPETH_SIGNING_KEY environment variable required for signed export "
			"(landscape.export.sign: true)");
	if (!(o.ops = plg_find_sink(x->target.plugin)))
		return core_err_set(err, CORE_ECONFIG, "Export sink '%s': unknown plugin '%s'",
				    x->sink, x->target.plugin);
	if (!x->json) {
		const char *path = o.ops->target ? o.ops->target(NULL, x->target.options) : NULL;

		if (!path)
			return core_err_set(err, CORE_ECONFIG,
				"CSV export requires file-based sink with 'path' in config, "
				"but sink '%s' has no path configured", x->sink);
		return sqlt_audit_csv(rec, run, key, path, err);
	}
	if ((rc = o.ops->open(NULL, x->target.options, &o.state, err)))
		return rc;
	rc = sqlt_audit_records(rec, run, key, write_record, &o, err);
	if (!rc)
		rc = o.ops->flush(o.state, err);
	rc2 = o.ops->close(o.state, rc ? NULL : err);
	return rc ? rc : rc2;
}

/* The SQL trail: brought up to date with the run however it ended (the
 * LMDB trail holds it whole). */
static void sql_trail(run_job *j, uint64_t run)
{
	run_result *r = &j->res;
	core_err err = { 0 };
	int rc = rec_flush(j->rec, &err);

	/* The live trail's last step (ADR 0041); when it fails, or there is
	 * none, the whole run. */
	if (j->follow) {
		core_err ferr = { 0 }; /* a failed step: the export says why */

		if (!rc && !sqlt_follow_finish(j->follow, &ferr))
			r->live.finished = true;
		sqlt_follow_close(j->follow);
		j->follow = NULL;
		if (r->live.finished)
			return;
	}
	if (!rc)
		rc = sqlt_export(j->rec, run, r->sql, NULL, &err);
	if (!rc)
		return;
	r->sql_failed = true;
	r->sql_err = err;
	run__emit(j, &(run_event){ .kind = RUN_EV_SQL_TRAIL_FAILED, .target = r->sql_shown,
				   .error = err.msg, .run_id = run });
}

static int export_phase(run_job *j, uint64_t run, core_err *err)
{
	const core_settings *s = j->cfg.graph->settings;
	uint64_t t0 = core_now_mono_ns();
	int rc;

	tel_phase(j->tel, run, "export", "exporting");
	run__emit(j, &(run_event){ .kind = RUN_EV_PHASE_STARTED, .phase = "export",
				   .action = "exporting", .target = s->audit_export.sink });
	/* a SQLite trail brought up to date already holds the run */
	const char *sql = j->res.sql[0] && !j->res.sql_failed &&
			  !core_sql_is_pg(j->res.sql) ? j->res.sql : NULL;

	if (!(rc = rec_flush(j->rec, err)))
		rc = run_audit_export(j->rec, s, run, sql, err);
	run__emit(j, &(run_event){ .kind = rc ? RUN_EV_PHASE_ERROR : RUN_EV_PHASE_COMPLETED,
				   .phase = "export", .target = s->audit_export.sink,
				   .seconds = (double)(core_now_mono_ns() - t0) / 1e9,
				   .error = rc ? err->msg : NULL });
	return rc;
}

void run__after(run_job *j, bool completed)
{
	const core_settings *s = j->cfg.graph->settings;
	uint64_t run = j->res.sum.run_id;
	core_err err = { 0 };
	int rc = 0;

	if (!j->rec || !run || !j->res.sql[0]) {
		sqlt_follow_close(j->follow);
		j->follow = NULL;
	}
	if (!j->rec || !run)
		return;
	if (j->res.sql[0])
		sql_trail(j, run);
	if (s->journal.enabled)
		rc = sqlt_journal(j->rec, run, &s->journal, &err);
	if (rc && !s->journal.fail_on_error) {
		char msg[1100];

		snprintf(msg, sizeof(msg), "the landscape journal was not written: %s", err.msg);
		run__emit(j, &(run_event){ .kind = RUN_EV_WARNING, .error = msg, .run_id = run });
		rc = 0;
	}
	if (!rc && completed && s->audit_export.enabled)
		rc = export_phase(j, run, &err);
	if (!rc)
		return;
	core_err_prefix(&err, "run %llu is recorded, but its audit export failed",
			(unsigned long long)run);
	j->res.after_err = err;
	j->res.after_failed = true;
}
