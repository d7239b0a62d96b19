/*
 * database_ledger.c — the commit ledger (ADR 0023): one row per commit of
 * a writer (one sink of one run, its resumes included), written in the
 * transaction it describes, so the database itself says which rows a
 * commit wrote: how many the writer had before and after it, the hash
 * chain of its rows through it, and how to find them (SQLite: their
 * rowid ranges; PostgreSQL: the transaction id their xmin holds).
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/sink/database_internal.h"

static const char create_sql[] =
	"CREATE TABLE IF NOT EXISTS " DBS_LEDGER " ("
	"writer TEXT NOT NULL, "       /* the run's key / the sink's options path */
	"seq BIGINT NOT NULL, "        /* the writer's commits, from 1 */
	"target TEXT NOT NULL, "       /* the table it wrote */
	"rows_before BIGINT NOT NULL, "
	"rows_after BIGINT NOT NULL, "
	"chain TEXT NOT NULL, "        /* hash chain of the rows 1..rows_after */
	"ref TEXT NOT NULL, "          /* where the commit's rows are */
	"committed_at TEXT NOT NULL, "
	"PRIMARY KEY (writer, seq))";

void dbs__entries_release(dbs_entries *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].ref);
	free(l->e);
	l->e = NULL;
	l->n = 0;
}

int dbs__ledger_create(const dbs_backend *be, dbs_conn *c, core_err *err)
{
	/* Two processes creating it at once: one of them fails (PostgreSQL
	 * reports a duplicate type); the second try finds it. */
	if (be->exec(c, create_sql, NULL, 0, NULL, err) == 0)
		return 0;
	return be->exec(c, create_sql, NULL, 0, NULL, err);
}

typedef struct loader {
	dbs_entries *out;
	bool bad, oom;
} loader;

static int add_entry(void *ctx, size_t nc, const char *const *v)
{
	loader *l = ctx;
	dbs_entry *grown, *e;

	if (nc < 5 || !v[0] || !v[1] || !v[2] || !v[3] || !v[4] ||
	    strlen(v[3]) != CORE_SHA256_HEX_LEN) {
		l->bad = true;
		return CORE_EDATA;
	}
	if (!(grown = realloc(l->out->e, (l->out->n + 1) * sizeof(*grown)))) {
		l->oom = true;
		return CORE_ENOMEM;
	}
	l->out->e = grown;
	e = &grown[l->out->n];
	e->seq = strtoull(v[0], NULL, 10);
	e->before = strtoull(v[1], NULL, 10);
	e->after = strtoull(v[2], NULL, 10);
	memcpy(e->chain, v[3], sizeof(e->chain));
	if (!(e->ref = strdup(v[4]))) {
		l->oom = true;
		return CORE_ENOMEM;
	}
	l->out->n++;
	return 0;
}

/* An effect ledger's row: descriptor_json and payload_hash. */
static int add_effect(void *ctx, size_t nc, const char *const *v)
{
	loader *l = ctx;
	json_t *d = nc >= 2 && v[0] && v[1] ? json_loads(v[0], 0, NULL) : NULL;
	json_int_t seq = 0, before = 0, after = 0;
	const char *ref = NULL;
	char sseq[24], sb[24], sa[24];
	int rc;

	if (!d || json_unpack(d, "{s:I,s:I,s:I,s:s}", "seq", &seq, "rows_before",
			      &before, "rows_after", &after, "ref", &ref) ||
	    seq < 1 || before < 0 || after < before) {
		json_decref(d);
		l->bad = true;
		return CORE_EDATA;
	}
	snprintf(sseq, sizeof(sseq), "%lld", (long long)seq);
	snprintf(sb, sizeof(sb), "%lld", (long long)before);
	snprintf(sa, sizeof(sa), "%lld", (long long)after);
	rc = add_entry(ctx, 5, (const char *const[]){ sseq, sb, sa, v[1], ref });
	json_decref(d);
	return rc;
}

static int by_seq(const void *a, const void *b)
{
	const dbs_entry *x = a, *y = b;

	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Whether the ledger table exists (a read-only check before reading). */
static int ledger_exists(const dbs_ledger *lg, dbs_conn *c, bool *exists,
			 core_err *err)
{
	char **names = NULL;
	size_t n = 0;
	int rc = lg->be->columns(c, lg->effect ? lg->effect : DBS_LEDGER, &names,
				 &n, exists, err);

	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

int dbs__effect_check(const dbs_ledger *lg, dbs_conn *c, const core_node *n,
		      const char *where, core_err *err)
{
	static const char *const want[] = DBS_EFFECT_COLUMNS;
	char **names = NULL, missing[512] = "";
	size_t nn = 0, used = 0;
	bool exists = false;
	int rc = lg->be->columns(c, lg->effect, &names, &nn, &exists, err);

	for (size_t i = 0; !rc && exists && want[i]; i++) {
		size_t j = 0;

		while (j < nn && strcmp(names[j], want[i]))
			j++;
		if (j == nn && used < sizeof(missing))
			used += (size_t)snprintf(missing + used, sizeof(missing) - used,
						 "%s%s", used ? ", " : "", want[i]);
	}
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	if (rc)
		return rc;
	if (!exists)
		return core_err_at(err, CORE_ECONFIG, n,
			"effect ledger table '%s' does not exist in %s: the database "
			"sink never creates it (ELSPETH 0.7.1's contract); provision it "
			"first (docs/settings.md gives its DDL)", lg->effect, where);
	if (used)
		return core_err_at(err, CORE_ECONFIG, n,
			"effect ledger table '%s' in %s is not schema version 1: it "
			"lacks %s", lg->effect, where, missing);
	return 0;
}

int dbs__ledger_load(const dbs_ledger *lg, dbs_conn *c, const char *writer,
		     bool missing_ok, dbs_entries *out, core_err *err)
{
	static const char sql[] =
		"SELECT seq, rows_before, rows_after, chain, ref FROM " DBS_LEDGER
		" WHERE writer = $1 ORDER BY seq";
	char plan[CORE_SHA256_HEX_LEN + 1];
	dbs_val v = { .kind = DBS_V_TEXT, .s = writer, .len = strlen(writer) };
	loader l = { .out = out };
	bool exists = true;
	core_buf q = { 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	if (missing_ok && (rc = ledger_exists(lg, c, &exists, err)))
		return rc;
	if (!exists)
		return 0;
	if (!lg->effect) {
		rc = lg->be->query(c, sql, &v, 1, add_entry, &l, err);
	} else if (core_buf_printf(&q, "SELECT descriptor_json, payload_hash FROM %s "
				   "WHERE plan_hash = $1", lg->qeffect)) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	} else {
		uint8_t d[CORE_SHA256_LEN];

		core_sha256(writer, strlen(writer), d);
		core_hex(d, sizeof(d), plan);
		v.s = plan;
		v.len = strlen(plan);
		rc = lg->be->query(c, q.data, &v, 1, add_effect, &l, err);
		if (!rc && out->n)
			qsort(out->e, out->n, sizeof(*out->e), by_seq);
	}
	core_buf_release(&q);
	if (l.oom)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else if (l.bad)
		rc = core_err_set(err, CORE_EDATA, "the table %s holds a row the "
				  "database sink did not write (writer '%s')",
				  lg->effect ? lg->effect : DBS_LEDGER, writer);
	if (rc)
		dbs__entries_release(out);
	return rc;
}

/* The time now as ISO 8601 UTC, for people reading the ledger. */
static void now_iso(char *out, size_t cap)
{
	uint64_t ns = core_now_wall_ns();
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The entry as an effect ledger row (see the top of this file). */
static int effect_put(const dbs_ledger *lg, dbs_conn *c, const char *writer,
		      const char *table, const dbs_entry *e, const char *at,
		      core_err *err)
{
	char plan[CORE_SHA256_HEX_LEN + 1], id[CORE_SHA256_HEX_LEN + 1];
	uint8_t d[CORE_SHA256_LEN];
	core_buf q = { 0 };
	json_t *ev = json_pack("{s:s}", "ref", e->ref);
	char *evj = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
	json_t *desc = json_pack("{s:s,s:s,s:I,s:I,s:I,s:s,s:s}", "writer", writer,
				 "target", table, "seq", (json_int_t)e->seq,
				 "rows_before", (json_int_t)e->before,
				 "rows_after", (json_int_t)e->after, "ref", e->ref,
				 "committed_at", at);
	char *dj = desc ? json_dumps(desc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	char acc[64], key[96];
	int rc;

	core_sha256(writer, strlen(writer), d);
	core_hex(d, sizeof(d), plan);
	snprintf(key, sizeof(key), "%s#%" PRIu64, plan, e->seq);
	core_sha256(key, strlen(key), d);
	core_hex(d, sizeof(d), id);
	/* the writer's positions of the rows: one range, first and last */
	if (e->after > e->before)
		snprintf(acc, sizeof(acc), "[[%" PRIu64 ",%" PRIu64 "]]", e->before + 1,
			 e->after);
	else
		snprintf(acc, sizeof(acc), "[]");
	if (!dj || !evj || core_buf_printf(&q, "INSERT INTO %s (effect_id, schema_version, "
		"protocol_version, plan_hash, payload_hash, completed, descriptor_json, "
		"accepted_ordinals_json, diverted_ordinals_json, accepted_payload_hash, "
		"diversion_hashes_json, evidence_json) VALUES ($1, 1, $2, $3, $4, $5, "
		"$6, $7, '[]', $8, '[]', $9)", lg->qeffect)) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	} else {
		dbs_val v[9] = {
			{ .kind = DBS_V_TEXT, .s = id, .len = strlen(id) },
			{ .kind = DBS_V_TEXT, .s = DBS_EFFECT_PROTOCOL,
			  .len = strlen(DBS_EFFECT_PROTOCOL) },
			{ .kind = DBS_V_TEXT, .s = plan, .len = strlen(plan) },
			{ .kind = DBS_V_TEXT, .s = e->chain, .len = strlen(e->chain) },
			{ .kind = DBS_V_BOOL, .i = 1 },
			{ .kind = DBS_V_TEXT, .s = dj, .len = strlen(dj) },
			{ .kind = DBS_V_TEXT, .s = acc, .len = strlen(acc) },
			{ .kind = DBS_V_TEXT, .s = e->chain, .len = strlen(e->chain) },
			{ .kind = DBS_V_TEXT, .s = evj, .len = strlen(evj) },
		};

		rc = lg->be->exec(c, q.data, v, 9, NULL, err);
	}
	free(dj);
	free(evj);
	json_decref(desc);
	json_decref(ev);
	core_buf_release(&q);
	return rc;
}

int dbs__ledger_put(const dbs_ledger *lg, dbs_conn *c, const char *writer,
		    const char *table, const dbs_entry *e, core_err *err)
{
	static const char sql[] =
		"INSERT INTO " DBS_LEDGER " (writer, seq, target, rows_before, "
		"rows_after, chain, ref, committed_at) VALUES ($1, $2, $3, $4, $5, "
		"$6, $7, $8)";
	char at[32];
	dbs_val v[8] = {
		{ .kind = DBS_V_TEXT, .s = writer, .len = strlen(writer) },
		{ .kind = DBS_V_INT, .i = (int64_t)e->seq },
		{ .kind = DBS_V_TEXT, .s = table, .len = strlen(table) },
		{ .kind = DBS_V_INT, .i = (int64_t)e->before },
		{ .kind = DBS_V_INT, .i = (int64_t)e->after },
		{ .kind = DBS_V_TEXT, .s = e->chain, .len = strlen(e->chain) },
		{ .kind = DBS_V_TEXT, .s = e->ref, .len = strlen(e->ref) },
		{ .kind = DBS_V_TEXT, .s = at },
	};

	now_iso(at, sizeof(at));
	if (lg->effect)
		return effect_put(lg, c, writer, table, e, at, err);
	v[7].len = strlen(at);
	return lg->be->exec(c, sql, v, 8, NULL, err);
}

int dbs__ledger_trim(const dbs_backend *be, dbs_conn *c, const char *writer,
		     uint64_t below, core_err *err)
{
	static const char sql[] =
		"DELETE FROM " DBS_LEDGER " WHERE writer = $1 AND rows_after < $2";
	dbs_val v[2] = {
		{ .kind = DBS_V_TEXT, .s = writer, .len = strlen(writer) },
		{ .kind = DBS_V_INT, .i = (int64_t)below },
	};

	return be->exec(c, sql, v, 2, NULL, err);
}

int dbs__ledger_drop(const dbs_backend *be, dbs_conn *c, const char *writer,
		     uint64_t seq, core_err *err)
{
	static const char sql[] =
		"DELETE FROM " DBS_LEDGER " WHERE writer = $1 AND seq = $2";
	dbs_val v[2] = {
		{ .kind = DBS_V_TEXT, .s = writer, .len = strlen(writer) },
		{ .kind = DBS_V_INT, .i = (int64_t)seq },
	};

	return be->exec(c, sql, v, 2, NULL, err);
}
