/*
 * out_pg.c — an export into PostgreSQL (a landscape.url postgresql://…;
 * docs/audit.md "PostgreSQL", ADR 0039).
 *
 * The schema is ELSPETH 0.4.1's twenty tables as its metadata.create_all
 * makes them on PostgreSQL (our SQLite DDL with PostgreSQL's types:
 * TIMESTAMP WITH TIME ZONE, BYTEA, BIGINT for our counters), one column
 * widened (runs.schema_contract_hash: ELSPETH writes 32 characters into
 * its VARCHAR(16)), and our elspeth_ tables; created when the database
 * has none of ELSPETH's tables, checked when it has all.
 *
 * Rows are not inserted one by one: each table's rows are spooled, as
 * COPY text, into a temporary file while the exporter reads the trail,
 * and COPY'd at commit in the order of the foreign keys (the exporter
 * writes tokens before their rows), all in one transaction. A table
 * whose existing rows win (batch_outputs, elspeth_payloads) goes through
 * a temporary table and INSERT … ON CONFLICT DO NOTHING.
 *
 * The url's password reaches libpq only: messages name the url without
 * it (core_url_sanitize), and the settings record holds its fingerprint.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "sqltrail/export_internal.h"

#define COPY_CHUNK (256 * 1024)
#define SPOOL_FLUSH (1024 * 1024) /* bytes staged before a spool write */

typedef struct spool {
	FILE *f;          /* NULL until the table's first row */
	core_buf stage;   /* lines not yet in f */
	size_t rows;
} spool;

typedef struct out_pg {
	sqlt_out base;
	PGconn *pg;
	char *shown;      /* the url without its password */
	bool append;      /* this transaction is a live step's */
	bool v07_ready;   /* 0.7.1's additions are there (committed) */
	bool v07_pending; /* ... made or seen in this transaction */
	spool sp[ST__COUNT];
} out_pg;

/* Tables in the order their foreign keys allow. */
static const int copy_order[] = {
	ST_RUNS, ST_NODES, ST_RUN_SOURCES, ST_EDGES, ST_ROWS, ST_ROWS07,
	ST_TOKENS, ST_TOKEN_PARENTS,
	ST_NODE_STATES, ST_OPERATIONS, ST_CALLS, ST_ROUTING_EVENTS,
	ST_BATCHES, ST_BATCH_MEMBERS, ST_BATCH_OUTPUTS, ST_ARTIFACTS,
	ST_VALIDATION_ERRORS, ST_TRANSFORM_ERRORS, ST_CHECKPOINTS,
	ST_TOKEN_OUTCOMES, ST_OWN_RUNS, ST_OWN_ROWS, ST_OWN_CALLS,
	ST_OWN_ARTIFACTS, ST_OWN_SINK_FILES, ST_OWN_RESUMES,
	ST_OWN_SUPERSEDED, ST_OWN_PAYLOADS, ST_OWN_SAMPLES,
	ST_OWN_SAMPLE_UPSTREAMS,
};
_Static_assert(sizeof(copy_order) / sizeof(copy_order[0]) == ST__COUNT,
	       "every table is copied");

/* ---------------------------------------------------------------- errors */

static int pg_fail(out_pg *o, const char *what, const char *msg, core_err *err)
{
	char clean[1024];

	core_pg_message(clean, sizeof(clean), msg);
	return core_err_set(err, CORE_EIO, "%s: %s (%s)", what, clean, o->shown);
}

static int exec_ok(out_pg *o, const char *sql, const char *what, core_err *err)
{
	PGresult *r = PQexec(o->pg, sql);
	int st = PQresultStatus(r), rc = 0;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		rc = pg_fail(o, what, PQresultErrorMessage(r), err);
	PQclear(r);
	return rc;
}

static PGresult *exec1(out_pg *o, const char *sql, const char *arg)
{
	return PQexecParams(o->pg, sql, arg ? 1 : 0, NULL, arg ? &arg : NULL,
			    NULL, NULL, 0);
}

/* ---------------------------------------------------------------- schema */

/* Our SQLite DDL as PostgreSQL's: its types; our counters BIGINT; a
 * column named window quoted (a reserved word there); the widened hash. */
static int pg_ddl(const char *sqlite, bool ours, core_buf *b)
{
	static const struct { const char *from, *to; bool ours_only; } sub[] = {
		{ "DATETIME", "TIMESTAMP WITH TIME ZONE", false },
		{ "BLOB", "BYTEA", false },
		{ "schema_contract_hash VARCHAR(16)", "schema_contract_hash VARCHAR(64)", false },
		{ "\twindow ", "\t\"window\" ", false },
		{ "INTEGER", "BIGINT", true },
	};
	int rc = 0;

	core_buf_reset(b);
	for (const char *p = sqlite; *p && !rc;) {
		size_t k, n = sizeof(sub) / sizeof(sub[0]);

		for (k = 0; k < n; k++)
			if ((ours || !sub[k].ours_only) &&
			    !strncmp(p, sub[k].from, strlen(sub[k].from)))
				break;
		if (k < n) {
			rc = core_buf_puts(b, sub[k].to);
			p += strlen(sub[k].from);
		} else {
			rc = core_buf_putc(b, *p++);
		}
	}
	return rc ? CORE_ENOMEM : 0;
}

static int exec_ddl(out_pg *o, const char *const *stmts, bool ours, core_err *err)
{
	core_buf b = { 0 };
	int rc = 0;

	for (size_t i = 0; stmts[i] && !rc; i++) {
		if (pg_ddl(stmts[i], ours, &b))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		else
			rc = exec_ok(o, b.data, "creating the SQL trail's schema", err);
	}
	core_buf_release(&b);
	return rc;
}

/* Indexes of ours on ELSPETH's tables: the referencing columns of its
 * foreign keys that no index of its own starts with. PostgreSQL checks a
 * foreign key for every row deleted from the table it refers to; without
 * these, replacing a run (a resume's export) scans artifacts, batches,
 * batch_members, token_outcomes and routing_events once per deleted
 * state, token, batch or edge of it: hours for a large run. */
static const char *const fk_indexes[] = {
	"CREATE INDEX IF NOT EXISTS elspeth_ix_artifacts_state ON artifacts (produced_by_state_id)",
	"CREATE INDEX IF NOT EXISTS elspeth_ix_batches_state ON batches (aggregation_state_id)",
	"CREATE INDEX IF NOT EXISTS elspeth_ix_batch_members_token ON batch_members (token_id)",
	"CREATE INDEX IF NOT EXISTS elspeth_ix_token_outcomes_batch ON token_outcomes (batch_id)",
	"CREATE INDEX IF NOT EXISTS elspeth_ix_routing_events_edge ON routing_events (edge_id)",
	"CREATE INDEX IF NOT EXISTS elspeth_ix_checkpoints_token ON checkpoints (token_id)",
	NULL
};

/* Those of fk_indexes missing, each under a savepoint: a user who may
 * write rows but not create indexes (the tables are another's) still
 * writes, only a replacement is slower. */
static int fk_index(out_pg *o, core_err *err)
{
	PGresult *r = exec1(o, "SELECT count(*) FROM pg_indexes WHERE schemaname = "
			    "current_schema() AND indexname LIKE 'elspeth\\_ix\\_%'", NULL);
	int have, want = 0, rc = 0;

	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = pg_fail(o, "reading the indexes", PQresultErrorMessage(r), err);
		PQclear(r);
		return rc;
	}
	have = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	while (fk_indexes[want])
		want++;
	for (int i = 0; have < want && fk_indexes[i] && !rc; i++) {
		if ((rc = exec_ok(o, "SAVEPOINT fk_index", "creating an index", err)))
			break;
		r = PQexec(o->pg, fk_indexes[i]);
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			rc = exec_ok(o, "ROLLBACK TO SAVEPOINT fk_index", "creating an index", err);
		else
			rc = exec_ok(o, "RELEASE SAVEPOINT fk_index", "creating an index", err);
		PQclear(r);
	}
	return rc;
}

static const char elspeth_tables_q[] =
	"SELECT count(*) FROM information_schema.tables WHERE "
	"table_schema = current_schema() AND table_name IN "
	"('runs','nodes','edges','rows','tokens','token_parents',"
	"'token_outcomes','node_states','operations','calls','routing_events',"
	"'batches','batch_members','batch_outputs','artifacts',"
	"'validation_errors','transform_errors','checkpoints',"
	"'secret_resolutions','preflight_results')";

/* Whether the user may insert into, update and delete from table. */
static int can_write(out_pg *o, const char *table, core_err *err)
{
	char priv[256];
	PGresult *r;
	int rc = 0;

	snprintf(priv, sizeof(priv), "SELECT has_table_privilege('%s', 'INSERT') "
		 "AND has_table_privilege('%s', 'UPDATE') "
		 "AND has_table_privilege('%s', 'DELETE')", table, table, table);
	r = exec1(o, priv, NULL);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		rc = pg_fail(o, "checking privileges", PQresultErrorMessage(r), err);
	else if (strcmp(PQgetvalue(r, 0, 0), "t"))
		rc = core_err_set(err, CORE_EIO,
			"%s: user %s may not insert into, update and delete from table %s "
			"(a run writes its rows as it goes, updates its own row and "
			"replaces itself at its end): the audit trail cannot be "
			"written", o->shown, PQuser(o->pg), table);
	PQclear(r);
	return rc;
}

/* Every column the exporter writes must be there, and the user must be
 * allowed to insert, update (the live trail's steps, ADR 0041) and
 * delete in every table it writes: said now, before a row is processed,
 * rather than mid-run or at the run's end. */
static int check_tables(out_pg *o, core_err *err)
{
	core_buf cols = { 0 };
	PGresult *r;
	int rc = 0;

	r = exec1(o, "SELECT ',' || string_agg(table_name || '.' || column_name, ',') || ',' "
		  "FROM information_schema.columns WHERE table_schema = current_schema()",
		  NULL);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = pg_fail(o, "reading the tables' columns", PQresultErrorMessage(r), err);
		PQclear(r);
		return rc;
	}
	rc = core_buf_puts(&cols, PQgetisnull(r, 0, 0) ? "," : PQgetvalue(r, 0, 0));
	PQclear(r);
	if (rc)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (int t = 0; t < ST__COUNT && !rc; t++) {
		const sqlt_table *tb = &sqlt__tables[t];
		const char *c = tb->cols;
		char want[256];

		if (tb->v07) /* made, or checked, by pg_v07 */
			continue;
		while (*c && !rc) {
			size_t n = strcspn(c, ",");

			snprintf(want, sizeof(want), ",%s.%.*s,", tb->name, (int)n, c);
			if (!strstr(cols.data, want))
				rc = core_err_set(err, CORE_EDATA,
					"%s is not an SQL audit trail of ELSPETH 0.4.1's schema: "
					"table %s has no column %.*s", o->shown, tb->name, (int)n, c);
			c += n;
			c += strspn(c, ", ");
		}
		if (!rc)
			rc = can_write(o, tb->name, err);
	}
	core_buf_release(&cols);
	return rc;
}

/* Creates what is missing, under a lock so that two runs starting
 * against a new database do not both create it. */
static int schema(out_pg *o, core_err *err)
{
	PGresult *r;
	int rc, n, mine, own;

	if ((rc = exec_ok(o, "BEGIN", "starting a transaction", err)))
		return rc;
	if ((rc = exec_ok(o, "SELECT pg_advisory_xact_lock(4751128)", "locking the schema", err)))
		goto fail;
	r = exec1(o, elspeth_tables_q, NULL);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = pg_fail(o, "reading the database's tables", PQresultErrorMessage(r), err);
		PQclear(r);
		goto fail;
	}
	n = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	if (n != 0 && n != 20) {
		rc = core_err_set(err, CORE_EDATA,
			"%s is not an SQL audit trail: it has %d of ELSPETH's 20 tables",
			o->shown, n);
		goto fail;
	}
	/* CREATE … IF NOT EXISTS needs the right to create even when the
	 * table is there: only what is missing is created, so that a user
	 * who may only write rows can write them. */
	r = exec1(o, "SELECT count(*) FROM information_schema.tables WHERE "
		  "table_schema = current_schema() AND table_name LIKE 'elspeth\\_%'", NULL);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = pg_fail(o, "reading the database's tables", PQresultErrorMessage(r), err);
		PQclear(r);
		goto fail;
	}
	mine = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	for (own = 0; sqlt__own_tables[own]; own++)
		;
	if ((n == 0 && ((rc = exec_ddl(o, sqlt__elspeth_tables, false, err)) ||
			(rc = exec_ddl(o, sqlt__elspeth_indexes, false, err)))) ||
	    (mine < own && ((rc = exec_ddl(o, sqlt__own_tables, true, err)) ||
			    (rc = exec_ddl(o, sqlt__own_indexes, true, err)))) ||
	    (rc = check_tables(o, err)) || (rc = fk_index(o, err)))
		goto fail;
	return exec_ok(o, "COMMIT", "creating the SQL trail's schema", err);
fail:
	PQclear(PQexec(o->pg, "ROLLBACK"));
	return rc;
}

/* ----------------------------------------------------------------- spools */

static int put_text(core_buf *b, const char *p, size_t n)
{
	int rc = core_buf_reserve(b, n + 16);

	for (size_t i = 0; i < n && !rc; i++) {
		char c = p[i];

		switch (c) {
		case '\\': rc = core_buf_append(b, "\\\\", 2); break;
		case '\n': rc = core_buf_append(b, "\\n", 2); break;
		case '\r': rc = core_buf_append(b, "\\r", 2); break;
		case '\t': rc = core_buf_append(b, "\\t", 2); break;
		default: rc = core_buf_putc(b, c);
		}
	}
	return rc;
}

static int put_blob(core_buf *b, const unsigned char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	int rc = core_buf_append(b, "\\\\x", 3);

	for (size_t i = 0; i < n && !rc; i++) {
		char two[2] = { hex[p[i] >> 4], hex[p[i] & 15] };

		rc = core_buf_append(b, two, 2);
	}
	return rc;
}

static int spool_flush(spool *s)
{
	if (!s->stage.len)
		return 0;
	if (!s->f && !(s->f = tmpfile()))
		return CORE_EIO;
	if (fwrite(s->stage.data, 1, s->stage.len, s->f) != s->stage.len)
		return CORE_EIO;
	core_buf_reset(&s->stage);
	return 0;
}

static int pg_row(sqlt_out *base, int which, const xrow *r, core_err *err)
{
	out_pg *o = (out_pg *)base;
	spool *s = &o->sp[which];
	core_buf *b = &s->stage;
	const sqlt_table *t = &sqlt__tables[which];
	int rc = 0;

	for (int i = 1; i <= t->ncols && !rc; i++) {
		const char *p = r->bytes.data + r->off[i];

		if (i > 1)
			rc = core_buf_putc(b, '\t');
		if (rc)
			break;
		switch (r->kind[i]) {
		case XV_INT:
			rc = core_buf_printf(b, "%lld", (long long)r->i[i]);
			break;
		case XV_REAL:
			rc = core_buf_printf(b, "%.17g", r->d[i]);
			break;
		case XV_TEXT:
			rc = put_text(b, p, r->len[i]);
			break;
		case XV_BLOB:
			rc = put_blob(b, (const unsigned char *)p, r->len[i]);
			break;
		default:
			rc = core_buf_append(b, "\\N", 2);
		}
	}
	if (!rc && t->fixed_col)
		rc = core_buf_printf(b, "\t%s", t->fixed_copy);
	if (!rc)
		rc = core_buf_putc(b, '\n');
	if (rc)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	s->rows++;
	if (b->len >= SPOOL_FLUSH && spool_flush(s))
		return core_err_set(err, CORE_EIO, "spooling rows for %s: %s",
				    o->shown, strerror(errno));
	return 0;
}

static void spools_clear(out_pg *o)
{
	for (int i = 0; i < ST__COUNT; i++) {
		spool *s = &o->sp[i];

		core_buf_reset(&s->stage);
		if (s->f) {
			fclose(s->f);
			s->f = NULL;
		}
		s->rows = 0;
	}
}

/* "a, b, window" -> "a", "b", "window" (a reserved word on PostgreSQL) */
static int quoted_cols(const sqlt_table *t, core_buf *b)
{
	int rc = 0;

	for (const char *c = t->cols; *c && !rc;) {
		size_t n = strcspn(c, ",");

		rc = core_buf_printf(b, "%s\"%.*s\"", c == t->cols ? "" : ", ", (int)n, c);
		c += n;
		c += strspn(c, ", ");
	}
	if (!rc && t->fixed_col)
		rc = core_buf_printf(b, ", \"%s\"", t->fixed_col);
	return rc;
}

static int copy_in(out_pg *o, int which, core_err *err)
{
	const sqlt_table *t = &sqlt__tables[which];
	spool *s = &o->sp[which];
	/* a row that may meet one already there goes through a temporary
	 * table and an INSERT that says what happens then */
	bool via_tmp = sqlt__conflict(which, o->append) != SQLT_INSERT;
	core_buf sql = { 0 }, cols = { 0 };
	char chunk[COPY_CHUNK], tmp[96];
	PGresult *r;
	size_t n;
	int rc = 0;

	if (!s->rows)
		return 0;
	if (spool_flush(s) || fflush(s->f) || fseek(s->f, 0, SEEK_SET))
		return core_err_set(err, CORE_EIO, "reading the spooled rows of %s: %s",
				    t->name, strerror(errno));
	snprintf(tmp, sizeof(tmp), "elspeth_copy_%s", t->name);
	if (quoted_cols(t, &cols)) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto done;
	}
	if (via_tmp) {
		core_buf_printf(&sql, "CREATE TEMP TABLE IF NOT EXISTS %s (LIKE %s) "
				"ON COMMIT DROP", tmp, t->name);
		if ((rc = exec_ok(o, sql.data, "writing the SQL trail", err)))
			goto done;
		core_buf_reset(&sql);
	}
	if (core_buf_printf(&sql, "COPY %s (%s) FROM STDIN", via_tmp ? tmp : t->name,
			    cols.data)) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto done;
	}
	r = PQexec(o->pg, sql.data);
	if (PQresultStatus(r) != PGRES_COPY_IN) {
		rc = pg_fail(o, "writing the SQL trail", PQresultErrorMessage(r), err);
		PQclear(r);
		goto done;
	}
	PQclear(r);
	while ((n = fread(chunk, 1, sizeof(chunk), s->f)) > 0)
		if (PQputCopyData(o->pg, chunk, (int)n) != 1)
			break;
	if (ferror(s->f))
		PQputCopyEnd(o->pg, "the spool could not be read");
	else
		PQputCopyEnd(o->pg, NULL);
	while ((r = PQgetResult(o->pg))) {
		if (PQresultStatus(r) != PGRES_COMMAND_OK && !rc)
			rc = pg_fail(o, "writing the SQL trail", PQresultErrorMessage(r), err);
		PQclear(r);
	}
	if (!rc && via_tmp) {
		core_buf_reset(&sql);
		if (core_buf_printf(&sql, "INSERT INTO %s (%s) SELECT %s FROM %s", t->name,
				    cols.data, cols.data, tmp) ||
		    sqlt__conflict_sql(which, o->append, &sql))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		else
			rc = exec_ok(o, sql.data, "writing the SQL trail", err);
	}
done:
	if (rc)
		core_err_prefix(err, "table %s", t->name);
	core_buf_release(&sql);
	core_buf_release(&cols);
	return rc;
}

/* ------------------------------------------------------------------ ops */

/* One transaction per run; a lock on the run's id keeps two exports of
 * it (a run's end and its resume) from interleaving. */
/* Whether table has column (column "": whether the table exists), in
 * the current schema. */
static int has_relation(out_pg *o, const char *table, const char *column,
			bool *found, core_err *err)
{
	const char *args[2] = { table, column };
	PGresult *r = PQexecParams(o->pg, *column ?
		"SELECT 1 FROM information_schema.columns WHERE table_schema = "
		"current_schema() AND table_name = $1 AND column_name = $2" :
		"SELECT 1 FROM information_schema.tables WHERE table_schema = "
		"current_schema() AND table_name = $1", *column ? 2 : 1, NULL, args,
		NULL, NULL, 0);
	int rc = 0;

	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		rc = pg_fail(o, "reading the tables", PQresultErrorMessage(r), err);
	else
		*found = PQntuples(r) > 0;
	PQclear(r);
	return rc;
}

/* Whether the index a "CREATE INDEX IF NOT EXISTS name ON ..." makes is
 * there (creating it needs the table's owner, even when it is). */
static int has_index(out_pg *o, const char *ddl, bool *found, core_err *err)
{
	const char *p = strstr(ddl, "EXISTS ") + 7;
	char name[128];
	PGresult *r;
	int rc = 0;

	snprintf(name, sizeof(name), "%.*s", (int)strcspn(p, " "), p);
	r = exec1(o, "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() "
		  "AND indexname = $1", name);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		rc = pg_fail(o, "reading the indexes", PQresultErrorMessage(r), err);
	else
		*found = PQntuples(r) > 0;
	PQclear(r);
	return rc;
}

static int deletes(out_pg *o, const char *const *stmts, const char *rid, core_err *err)
{
	int rc = 0;

	for (size_t i = 0; stmts[i] && !rc; i++) {
		char sql[512], *q;
		PGresult *r;

		snprintf(sql, sizeof(sql), "%s", stmts[i]);
		while ((q = strstr(sql, "?1")))
			*q = '$';
		r = exec1(o, sql, rid);
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			rc = pg_fail(o, "replacing an earlier export", PQresultErrorMessage(r), err);
		PQclear(r);
	}
	return rc;
}

static int pg_begin(sqlt_out *base, const char *rid, const char *started,
		    bool append, core_err *err)
{
	out_pg *o = (out_pg *)base;
	const char *args[2] = { rid, started };
	PGresult *r;
	bool found;
	int rc;

	spools_clear(o);
	o->append = append;
	if ((rc = exec_ok(o, "BEGIN", "starting a transaction", err)))
		return rc;
	r = exec1(o, "SELECT pg_advisory_xact_lock(hashtext('elspeth-run:' || $1))", rid);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = pg_fail(o, "locking the run", PQresultErrorMessage(r), err);
		PQclear(r);
		return rc;
	}
	PQclear(r);
	r = PQexecParams(o->pg, "SELECT $2 = '' OR started_at = CAST(NULLIF($2, '') "
			 "AS TIMESTAMP WITH TIME ZONE) FROM runs WHERE run_id = $1",
			 2, NULL, args, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = pg_fail(o, "reading the runs", PQresultErrorMessage(r), err);
		PQclear(r);
		return rc;
	}
	found = PQntuples(r) > 0;
	if (found && strcmp(PQgetvalue(r, 0, 0), "t"))
		rc = core_err_set(err, CORE_EDATA,
			"%s: run %s is already there, begun at another time than this "
			"one (%s): two runs met on one id; nothing was replaced",
			o->shown, rid, started);
	PQclear(r);
	if (rc)
		return rc;
	if (!found || append)
		return 0;
	/* 0.7.1's run_sources first (it refers to runs and nodes) */
	if ((rc = has_relation(o, "run_sources", "", &found, err)) ||
	    (found && (rc = deletes(o, sqlt__delete_v07_sql, rid, err))))
		return rc;
	return deletes(o, sqlt__delete_sql, rid, err);
}

/* ELSPETH 0.7.1's additions, made when one is missing (under the
 * schema's lock: two runs may get there at once); a database that has
 * them all is not altered, so a user who may write rows but not alter
 * tables writes into it. */
static int pg_v07(sqlt_out *base, core_err *err)
{
	out_pg *o = (out_pg *)base;
	bool has, all = true;
	char sql[256];
	int rc = 0;

	if (o->v07_ready)
		return 0;
	for (size_t i = 0; sqlt__v07_columns[i] && !rc && all; i++)
		if (!(rc = has_relation(o, "rows", sqlt__v07_columns[i], &has, err)))
			all = has;
	for (size_t i = 0; sqlt__v07_tables[i] && !rc && all; i++)
		if (!(rc = strncmp(sqlt__v07_tables[i], "CREATE INDEX", 12) ?
		      has_relation(o, "run_sources", "", &has, err) :
		      has_index(o, sqlt__v07_tables[i], &has, err)))
			all = has;
	if (!rc && !all &&
	    !(rc = exec_ok(o, "SELECT pg_advisory_xact_lock(4751128)", "locking the schema", err))) {
		for (size_t i = 0; sqlt__v07_columns[i] && !rc; i++) {
			snprintf(sql, sizeof(sql), "ALTER TABLE rows ADD COLUMN IF NOT EXISTS "
				 "%s INTEGER", sqlt__v07_columns[i]);
			rc = exec_ok(o, sql, "adding ELSPETH 0.7.1's columns", err);
		}
		if (!rc)
			rc = exec_ddl(o, sqlt__v07_tables, false, err);
		if (rc)
			core_err_prefix(err, "a run in ELSPETH 0.7.1's format needs its "
					"columns rows.source_row_index and ingest_sequence and its "
					"table run_sources, which the database lacks");
	}
	if (!rc)
		rc = can_write(o, "run_sources", err);
	/* ready once this transaction commits; a rollback makes it look again */
	o->v07_pending = !rc;
	return rc;
}

static int pg_commit(sqlt_out *base, core_err *err)
{
	out_pg *o = (out_pg *)base;
	int rc = 0;

	for (int i = 0; i < ST__COUNT && !rc; i++)
		rc = copy_in(o, copy_order[i], err);
	spools_clear(o);
	if (!rc)
		rc = exec_ok(o, "COMMIT", "committing", err);
	o->v07_ready |= !rc && o->v07_pending;
	o->v07_pending = false;
	return rc;
}

static void pg_rollback(sqlt_out *base)
{
	out_pg *o = (out_pg *)base;

	o->v07_pending = false;
	spools_clear(o);
	PQclear(PQexec(o->pg, "ROLLBACK"));
}

static int pg_close(sqlt_out *base, bool ok, core_err *err)
{
	out_pg *o = (out_pg *)base;

	(void)ok, (void)err;
	spools_clear(o);
	for (int i = 0; i < ST__COUNT; i++)
		core_buf_release(&o->sp[i].stage);
	PQfinish(o->pg);
	free(o->shown);
	free(o);
	return 0;
}

static const sqlt_out_ops ops = {
	pg_begin, pg_row, pg_commit, pg_rollback, pg_close, pg_v07,
};

int sqlt__out_pg(const char *url, bool live, sqlt_out **out, core_err *err)
{
	out_pg *o = calloc(1, sizeof(*o));
	int rc;

	*out = NULL;
	if (!o)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	o->base.ops = &ops;
	if ((rc = core_pg_connect(url, false, &o->pg, &o->shown, err))) {
		free(o->shown);
		free(o);
		return rc;
	}
	o->base.where = o->shown;
	/* ELSPETH's times are UTC; ours are written without a zone. A live
	 * trail's step waits at most 10 s for a lock (another export of the
	 * run holding it): the step fails and the next one tries again,
	 * rather than the run's end waiting on it. */
	if ((rc = exec_ok(o, "SET TIME ZONE 'UTC'", "setting the time zone", err)) ||
	    (live && (rc = exec_ok(o, "SET lock_timeout = '10s'", "setting a lock timeout",
				   err))) ||
	    (rc = schema(o, err))) {
		core_err e2 = { 0 };

		pg_close(&o->base, false, &e2);
		return rc;
	}
	*out = &o->base;
	return 0;
}
