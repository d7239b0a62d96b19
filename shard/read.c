/*
 * read.c — reading a sharded run as one: a shard's run, where a part's
 * bytes landed in the merged files, and `verify --manifest`.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shard/shard_internal.h"

int shd_shard_run(const shd_manifest *m, uint32_t k, rec_env **env, json_t **run,
		  core_err *err)
{
	json_t *runs = NULL, *sh;
	const char *mh;
	char path[4096];
	struct stat st;
	rec_env *rec = NULL;
	int rc;

	*run = NULL;
	if (env)
		*env = NULL;
	if ((rc = shd_path(m, k, "landscape", path, sizeof(path), err)) || stat(path, &st))
		return rc;
	if ((rc = rec_open(path, REC_READONLY, &rec, err)) ||
	    (rc = rec_list_runs(rec, &runs, err))) {
		rec_close(rec, NULL);
		return core_err_prefix(err, "shard %u", k);
	}
	*run = json_incref(json_array_get(runs, 0));
	json_decref(runs);
	sh = json_object_get(*run, "shard");
	mh = json_string_value(json_object_get(sh, "manifest_hash"));
	if (*run && (!mh || strcmp(mh, m->plan_hash) ||
		     json_integer_value(json_object_get(sh, "index")) != (json_int_t)k ||
		     json_integer_value(json_object_get(sh, "count")) != (json_int_t)m->nshards))
		rc = core_err_set(err, CORE_EDATA,
			"shard %u: run %lld in its Landscape is not shard %u of this plan: "
			"%s holds a run of another plan or shard; remove it and run the "
			"shard again", k,
			(long long)json_integer_value(json_object_get(*run, "run_id")), k, path);
	if (rc) { /* a run of another plan: nothing for the caller */
		json_decref(*run);
		*run = NULL;
	}
	if (env && !rc)
		*env = rec;
	else
		rec_close(rec, NULL);
	return rc;
}

int shd_open_shard(const shd_manifest *m, uint32_t k, rec_env **env,
		   uint64_t *run, core_err *err)
{
	shd__run s = { 0 };
	int rc = shd__open_run(m, k, &s, err);

	*env = s.rec;
	*run = s.run;
	return rc;
}

json_t *shd_merge_record(const shd_manifest *m)
{
	char path[4096];
	json_t *doc;

	if (snprintf(path, sizeof(path), "%s/merge.json", m->dir) >= (int)sizeof(path))
		return NULL;
	doc = json_load_file(path, 0, NULL);
	if (doc && strcmp(json_string_value(json_object_get(doc, "plan_hash")) ?
			  json_string_value(json_object_get(doc, "plan_hash")) : "",
			  m->plan_hash)) {
		json_decref(doc); /* a merge of another plan */
		doc = NULL;
	}
	return doc;
}

bool shd_final_range(const json_t *rec, const char *part, uint64_t offset,
		     const char **path, uint64_t *final_offset)
{
	const json_t *sink, *p;
	size_t i, j;

	json_array_foreach(json_object_get(rec, "sinks"), i, sink)
		json_array_foreach(json_object_get(sink, "parts"), j, p) {
			uint64_t at = (uint64_t)json_integer_value(json_object_get(p, "part_offset"));
			uint64_t len = (uint64_t)json_integer_value(json_object_get(p, "length"));
			const char *name = json_string_value(json_object_get(p, "part"));

			if (!name || strcmp(name, part) || offset < at || offset > at + len)
				continue;
			*path = json_string_value(json_object_get(sink, "path"));
			*final_offset = (uint64_t)json_integer_value(
				json_object_get(p, "final_offset")) + (offset - at);
			return *path != NULL;
		}
	return false;
}

/* ------------------------------------------------------------- verify */

static void add(json_t *list, const char *fmt, ...) CORE_PRINTF(2, 3);

static void add(json_t *list, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(list, json_string(msg));
}

static json_t *verify_shard(const shd_manifest *m, uint32_t k, json_t *all)
{
	const shd_range *r = &m->ranges[k];
	json_t *j = json_pack("{s:i,s:I,s:I}", "shard", (int)k,
			      "first_row", (json_int_t)r->first_row,
			      "last_row", (json_int_t)r->last_row);
	json_t *rep = NULL, *v;
	core_err err = { 0 };
	shd__run s = { 0 };
	size_t i;

	if (shd__open_run(m, k, &s, &err)) {
		add(all, "shard %u: %s", k, err.msg);
	} else if (rec_verify(s.rec, s.run, &rep, &err)) {
		add(all, "shard %u: %s", k, err.msg);
	} else {
		json_object_set_new(j, "run_id", json_integer((json_int_t)s.run));
		json_object_set(j, "status", json_object_get(rep, "status"));
		json_object_set(j, "checked", json_object_get(rep, "checked"));
		json_object_set(j, "violation_count", json_object_get(rep, "violation_count"));
		json_array_foreach(json_object_get(rep, "violations"), i, v)
			add(all, "shard %u: %s", k, json_string_value(v));
	}
	json_decref(rep);
	if (s.rec)
		rec_close(s.rec, NULL);
	return j;
}

/* After a merge: each final file and each part are as merge.json says. */
static void verify_merge(const json_t *rec, json_t *all)
{
	const json_t *sink, *p;
	size_t i, j;

	json_array_foreach(json_object_get(rec, "sinks"), i, sink) {
		const char *path = json_string_value(json_object_get(sink, "path"));
		const char *want = json_string_value(json_object_get(sink, "sha256"));
		char hex[CORE_SHA256_HEX_LEN + 1];
		uint64_t size = 0;

		if (!path || !want)
			continue;
		if (core_sha256_file(path, UINT64_MAX, &size, hex, NULL))
			add(all, "merged file %s: %s", path, strerror(errno));
		else if (strcmp(hex, want) ||
			 size != (uint64_t)json_integer_value(json_object_get(sink, "size")))
			add(all, "merged file %s changed since the merge (%llu bytes now, "
			    "%lld merged)", path, (unsigned long long)size,
			    (long long)json_integer_value(json_object_get(sink, "size")));
		json_array_foreach(json_object_get(sink, "parts"), j, p) {
			const char *part = json_string_value(json_object_get(p, "part"));
			const char *ph = json_string_value(json_object_get(p, "part_sha256"));

			if (part && ph && (core_sha256_file(part, UINT64_MAX, &size, hex, NULL) ||
					   strcmp(hex, ph)))
				add(all, "part %s (shard %lld) is not what was merged", part,
				    (long long)json_integer_value(json_object_get(p, "shard")));
		}
	}
}

int shd_verify(const shd_manifest *m, json_t **report, core_err *err)
{
	json_t *all = json_array(), *shards = json_array(), *merged;

	if (!all || !shards) {
		json_decref(all);
		json_decref(shards);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	for (uint32_t k = 0; k < m->nshards; k++)
		json_array_append_new(shards, verify_shard(m, k, all));
	if ((merged = shd_merge_record(m)))
		verify_merge(merged, all);
	*report = json_pack("{s:s,s:s,s:I,s:i,s:o,s:o,s:I,s:o}", "manifest", m->path,
			    "plan_hash", m->plan_hash, "rows", (json_int_t)m->rows,
			    "shard_count", (int)m->nshards, "shards", shards,
			    "merge", merged ? merged : json_null(),
			    "violation_count", (json_int_t)json_array_size(all),
			    "violations", all);
	return *report ? 0 : core_err_set(err, CORE_ENOMEM, "out of memory");
}
