/*
 * database_ledger.c — the commit ledger (ADR 0023): one row per commit of
 * a writer (one sink of one run, its resumes included), written in the
 * transaction it describes, so the database itself says which rows a
 * commit wrote: how many the writer had before and after it, the hash
 * chain of its rows through it, and how to find them (SQLite: their
 * rowid ranges; PostgreSQL: the transaction id their xmin holds).
 */
#include <inttypes.h>
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

/* Whether the ledger table exists (a read-only check before reading). */
static int ledger_exists(const dbs_backend *be, dbs_conn *c, bool *exists,
			 core_err *err)
{
	char **names = NULL;
	size_t n = 0;
	int rc = be->columns(c, DBS_LEDGER, &names, &n, exists, err);

	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

int dbs__ledger_load(const dbs_backend *be, dbs_conn *c, const char *writer,
		     bool missing_ok, dbs_entries *out, core_err *err)
{
	static const char sql[] =
		"SELECT seq, rows_before, rows_after, chain, ref FROM " DBS_LEDGER
		" WHERE writer = $1 ORDER BY seq";
	dbs_val v = { .kind = DBS_V_TEXT, .s = writer, .len = strlen(writer) };
	loader l = { .out = out };
	bool exists = true;
	int rc;

	memset(out, 0, sizeof(*out));
	if (missing_ok && (rc = ledger_exists(be, c, &exists, err)))
		return rc;
	if (!exists)
		return 0;
	rc = be->query(c, sql, &v, 1, add_entry, &l, err);
	if (l.oom)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else if (l.bad)
		rc = core_err_set(err, CORE_EDATA, "the table " DBS_LEDGER
				  " holds a row the database sink did not write "
				  "(writer '%s')", writer);
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

int dbs__ledger_put(const dbs_backend *be, dbs_conn *c, const char *writer,
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
	v[7].len = strlen(at);
	return be->exec(c, sql, v, 8, NULL, err);
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
