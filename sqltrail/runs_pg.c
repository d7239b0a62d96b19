/*
 * runs_pg.c — the runs a PostgreSQL trail holds, read from the database
 * itself (`elspeth runs -d postgresql://…`, ADR 0043): every Landscape's
 * runs that wrote into it, each under its id there, with what
 * elspeth_runs adds (its Landscape's number for it, the counts, the
 * metrics, when a step last wrote it). A run ELSPETH itself wrote has no
 * elspeth_runs row (a database only ELSPETH wrote, no such table): its
 * rows are counted from the rows table.
 */
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "sqltrail/sqltrail_internal.h"

#define ISO(c) "to_char(" c " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

/* e: elspeth_runs, or no rows of its shape in a database ELSPETH wrote */
static const char with_ours[] = "WITH e AS (SELECT * FROM elspeth_runs) ";
static const char without[] =
	"WITH e AS (SELECT NULL::text AS run_id, NULL::bigint AS landscape_run_id, "
	"NULL::bigint AS rows, NULL::bigint AS succeeded, NULL::bigint AS failed, "
	"NULL::bigint AS quarantined, NULL::text AS topology_hash, "
	"NULL::text AS settings_path, NULL::text AS elspeth_version, NULL::text AS error, "
	"NULL::text AS metrics_json, NULL::timestamptz AS exported_at WHERE false) ";
static const char runs_sql[] =
	"SELECT r.run_id, e.landscape_run_id, r.status, " ISO("r.started_at") ", "
	ISO("r.completed_at") ", "
	"COALESCE(e.rows, (SELECT count(*) FROM rows w WHERE w.run_id = r.run_id)), "
	"e.succeeded, e.failed, e.quarantined, r.config_hash, e.topology_hash, "
	"r.canonical_version, e.settings_path, e.elspeth_version, "
	"EXTRACT(EPOCH FROM r.completed_at - r.started_at)::float8, e.error, e.metrics_json, "
	ISO("e.exported_at") " "
	"FROM runs r LEFT JOIN e USING (run_id) "
	"ORDER BY r.started_at DESC, r.run_id";

/* The columns of runs_sql, in order, and how each becomes JSON. */
enum { J_STR, J_INT, J_REAL, J_JSON };
static const struct {
	const char *name;
	int kind;
} cols[] = {
	{ "run_id", J_STR }, { "landscape_run_id", J_INT }, { "status", J_STR },
	{ "started_at", J_STR }, { "completed_at", J_STR }, { "rows", J_INT },
	{ "succeeded", J_INT }, { "failed", J_INT }, { "quarantined", J_INT },
	{ "config_hash", J_STR }, { "topology_hash", J_STR }, { "canonical_version", J_STR },
	{ "settings_path", J_STR }, { "elspeth_version", J_STR },
	{ "duration_seconds", J_REAL }, { "error", J_STR }, { "metrics", J_JSON },
	{ "written_at", J_STR },
};

static json_t *value(const PGresult *res, int r, int c)
{
	const char *v = PQgetvalue(res, r, c);

	switch (cols[c].kind) {
	case J_INT: return json_integer(strtoll(v, NULL, 10));
	case J_REAL: return json_real(strtod(v, NULL));
	case J_JSON: return json_loads(v, 0, NULL);
	default: return json_string(v);
	}
}

int sqlt_runs_pg(const char *url, json_t **out, core_err *err)
{
	PGconn *pg = NULL;
	PGresult *res = NULL;
	char *shown = NULL, msg[1024];
	json_t *runs = NULL;
	core_buf sql = { 0 };
	bool ours;
	int rc;

	*out = NULL;
	if ((rc = core_pg_connect(url, true, &pg, &shown, err)))
		goto out;
	res = PQexec(pg, "SELECT to_regclass('elspeth_runs') IS NOT NULL");
	ours = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
	       PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	if (core_buf_puts(&sql, ours ? with_ours : without) || core_buf_puts(&sql, runs_sql)) {
		res = NULL;
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	res = PQexec(pg, sql.data);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		core_pg_message(msg, sizeof(msg), PQresultErrorMessage(res));
		rc = core_err_set(err, CORE_EDATA, "%s: reading its runs (is it an SQL audit "
				  "trail?): %s", shown, msg);
		goto out;
	}
	if (!(runs = json_array())) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	for (int r = 0; r < PQntuples(res); r++) {
		json_t *o = json_object();

		for (int c = 0; o && c < (int)(sizeof(cols) / sizeof(cols[0])); c++) {
			json_t *v;

			if (PQgetisnull(res, r, c))
				continue;
			if ((v = value(res, r, c)))
				json_object_set_new(o, cols[c].name, v);
		}
		if (!o || json_array_append_new(runs, o)) {
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
			goto out;
		}
	}
	*out = runs;
	runs = NULL;
out:
	json_decref(runs);
	core_buf_release(&sql);
	PQclear(res);
	if (pg)
		PQfinish(pg);
	free(shown);
	return rc;
}
