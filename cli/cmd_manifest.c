/* cmd_manifest.c — `runs`, `explain`, `verify` and `export` with
 * --manifest: a sharded run read as one (docs/scale-out.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "shard/shard.h"
#include "sqltrail/sqltrail.h"

static shd_manifest *load(const char *path)
{
	shd_manifest *m = NULL;
	core_err err = { 0 };

	if (shd_load(path, &m, &err))
		cli_error(&err);
	return m;
}

/* ---------------------------------------------------------------- runs */

/* One shard's latest run as `runs` lists it, or its state. */
static json_t *shard_entry(const shd_manifest *m, uint32_t k)
{
	const shd_range *r = &m->ranges[k];
	json_t *j = json_pack("{s:i,s:I,s:I}", "shard", (int)k,
			      "first_row", (json_int_t)r->first_row,
			      "last_row", (json_int_t)r->last_row);
	json_t *run = NULL;
	core_err err = { 0 };

	if (shd_shard_run(m, k, NULL, &run, &err)) {
		json_object_set_new(j, "status", json_string("unreadable"));
		json_object_set_new(j, "error", json_string(err.msg));
	} else if (run) {
		json_object_set(j, "status", json_object_get(run, "status"));
		json_object_set_new(j, "run", run);
	} else {
		json_object_set_new(j, "status", json_string("not run"));
	}
	return j;
}

int cli_runs_manifest(const cli_read_args *a)
{
	shd_manifest *m = load(a->manifest);
	json_t *list, *merged, *e;
	size_t i;

	if (!m)
		return CLI_ERROR;
	list = json_array();
	for (uint32_t k = 0; k < m->nshards; k++)
		json_array_append_new(list, shard_entry(m, k));
	merged = shd_merge_record(m);
	if (a->json) {
		json_t *doc = json_pack("{s:s,s:I,s:o,s:b}", "manifest", m->path,
					"rows", (json_int_t)m->rows, "shards", list,
					"merged", merged != NULL);

		cli_print_json(doc);
		json_decref(doc);
	} else {
		printf("%s: %llu rows in %u shards%s\n", m->path, (unsigned long long)m->rows,
		       m->nshards, merged ? "; merged" : "; not merged yet");
		printf("%6s %11s %11s  %6s  %-11s %9s %9s %7s %11s %9s\n", "shard", "first row",
		       "last row", "run", "status", "rows", "succeeded", "failed",
		       "quarantined", "duration");
		json_array_foreach(list, i, e) {
			const json_t *r = json_object_get(e, "run");
			const json_t *d = json_object_get(r, "duration_seconds");
			char dur[32] = "-";

			if (d)
				snprintf(dur, sizeof(dur), "%.2fs", json_real_value(d));
			printf("%6zu %11lld %11lld  %6lld  %-11s %9lld %9lld %7lld %11lld %9s\n", i,
			       (long long)json_integer_value(json_object_get(e, "first_row")),
			       (long long)json_integer_value(json_object_get(e, "last_row")),
			       (long long)json_integer_value(json_object_get(r, "run_id")),
			       json_string_value(json_object_get(e, "status")),
			       (long long)json_integer_value(json_object_get(r, "rows")),
			       (long long)json_integer_value(json_object_get(r, "succeeded")),
			       (long long)json_integer_value(json_object_get(r, "failed")),
			       (long long)json_integer_value(json_object_get(r, "quarantined")), dur);
		}
		json_decref(list);
	}
	json_decref(merged);
	shd_free(m);
	return CLI_OK;
}

/* ------------------------------------------------------------- explain */

/* Each artifact's bytes in the merged file, when the shards were merged. */
static void add_final(json_t *doc, const json_t *merged)
{
	json_t *t;
	size_t i;

	json_array_foreach(json_object_get(doc, "tokens"), i, t) {
		json_t *a = json_object_get(t, "artifact");
		const char *path;
		uint64_t off;

		if (!json_is_object(a) || !merged ||
		    !shd_final_range(merged, json_string_value(json_object_get(a, "path")),
				     (uint64_t)json_integer_value(json_object_get(a, "offset")),
				     &path, &off))
			continue;
		json_object_set_new(a, "final", json_pack("{s:s,s:I,s:I}", "path", path,
			"offset", (json_int_t)off,
			"length", json_integer_value(json_object_get(a, "length"))));
	}
}

int cli_explain_manifest(const cli_read_args *a)
{
	shd_manifest *m = load(a->manifest);
	json_t *doc = NULL, *merged = NULL;
	core_err err = { 0 };
	rec_env *env = NULL;
	uint64_t run;
	int k, rc;

	if (!m)
		return CLI_ERROR;
	if (a->token || strcmp(a->run, "latest")) {
		shd_free(m);
		return cli_usage_error("explain", "with --manifest, name the row (--row SEQ): "
				       "each shard numbers its own runs and tokens");
	}
	if ((k = shd_find_row(m, a->row)) < 0) {
		fprintf(stderr, "error: row %llu: %s has rows 1..%llu\n",
			(unsigned long long)a->row, m->path, (unsigned long long)m->rows);
		shd_free(m);
		return CLI_ERROR;
	}
	rc = shd_open_shard(m, (uint32_t)k, &env, &run, &err) ||
	     rec_explain(env, run, a->row, 0, &doc, &err);
	if (!rc) {
		merged = shd_merge_record(m);
		add_final(doc, merged);
		json_object_set_new(doc, "shard", json_pack("{s:i,s:I,s:I}", "index", k,
			"first_row", (json_int_t)m->ranges[k].first_row,
			"last_row", (json_int_t)m->ranges[k].last_row));
	}
	if (rc)
		cli_error(&err);
	else if (a->json)
		cli_print_json(doc);
	else {
		printf("Shard %d of %s (rows %llu..%llu)%s\n", k, m->path,
		       (unsigned long long)m->ranges[k].first_row,
		       (unsigned long long)m->ranges[k].last_row,
		       merged ? "" : "; not merged yet");
		rc = cli_explain_text(stdout, doc, a->sink);
	}
	json_decref(doc);
	json_decref(merged);
	rec_close(env, NULL);
	shd_free(m);
	return rc == CLI_USAGE ? rc : rc ? CLI_ERROR : CLI_OK;
}

/* -------------------------------------------------------------- verify */

int cli_verify_manifest(const cli_read_args *a)
{
	shd_manifest *m = load(a->manifest);
	json_t *rep = NULL, *v;
	core_err err = { 0 };
	size_t i, n;

	if (!m)
		return CLI_ERROR;
	if (shd_verify(m, &rep, &err)) {
		cli_error(&err);
		shd_free(m);
		return CLI_ERROR;
	}
	n = json_array_size(json_object_get(rep, "violations"));
	if (a->json) {
		cli_print_json(rep);
	} else {
		json_array_foreach(json_object_get(rep, "shards"), i, v) {
			const json_t *c = json_object_get(v, "checked");

			printf("shard %zu (rows %lld..%lld): run %lld %s, checked %lld rows, "
			       "%lld tokens, %lld artifacts\n", i,
			       (long long)json_integer_value(json_object_get(v, "first_row")),
			       (long long)json_integer_value(json_object_get(v, "last_row")),
			       (long long)json_integer_value(json_object_get(v, "run_id")),
			       json_string_value(json_object_get(v, "status")) ?
			       json_string_value(json_object_get(v, "status")) : "-",
			       (long long)json_integer_value(json_object_get(c, "rows")),
			       (long long)json_integer_value(json_object_get(c, "tokens")),
			       (long long)json_integer_value(json_object_get(c, "artifacts")));
		}
		printf("merge: %s\n", json_is_null(json_object_get(rep, "merge")) ?
		       "not merged yet" : "checked the merged files and their parts");
		json_array_foreach(json_object_get(rep, "violations"), i, v)
			printf("VIOLATION: %s\n", json_string_value(v));
		puts(n ? "verify: FAILED" : "verify: OK — every shard's invariants hold and "
		     "the shards cover every row once");
	}
	json_decref(rep);
	shd_free(m);
	return n ? CLI_AUDIT : CLI_OK;
}

/* -------------------------------------------------------------- export */

int cli_export_manifest(const cli_read_args *a)
{
	shd_manifest *m = load(a->manifest);
	core_err err = { 0 };
	int rc = 0;

	if (!m)
		return CLI_ERROR;
	if (strcmp(a->run, "all")) {
		shd_free(m);
		return cli_usage_error("export", "with --manifest, every shard's run is "
				       "exported (as run shard-K); it takes no --run");
	}
	for (uint32_t k = 0; k < m->nshards && !rc; k++) {
		char label[24];
		sqlt_opts o = { .payloads = a->payloads, .run_label = label };
		rec_env *env = NULL;
		uint64_t run;

		snprintf(label, sizeof(label), "shard-%u", k);
		rc = shd_open_shard(m, k, &env, &run, &err) ||
		     sqlt_export(env, run, a->sqlite, &o, &err);
		rec_close(env, NULL);
	}
	if (rc) {
		cli_error(&err);
	} else {
		char *shown = core_url_sanitize(a->sqlite);

		if (core_sql_is_pg(a->sqlite))
			fprintf(stderr, "exported the runs of %u shards to %s, each under an id "
				"of its own (elspeth_runs.landscape_run_id: its number)\n",
				m->nshards, shown ? shown : "the database");
		else
			fprintf(stderr, "exported the runs of %u shards (shard-0 .. shard-%u) to %s\n",
				m->nshards, m->nshards - 1, shown ? shown : a->sqlite);
		free(shown);
	}
	shd_free(m);
	return rc ? CLI_ERROR : CLI_OK;
}
