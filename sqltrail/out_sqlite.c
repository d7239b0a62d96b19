/*
 * out_sqlite.c — an export into an SQLite file: one prepared INSERT per
 * table (and one for a live step's rules), rows bound and stepped as
 * they come. Replacing a run drops the
 * indexes first (deleting and inserting a million rows under them is
 * minutes, building them again seconds); close builds them again, also
 * after a failure, and a new file gets them once its first runs are in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqltrail/export_internal.h"

typedef struct out_sqlite {
	sqlt_out base;
	sqlite3 *db;
	sqlite3_stmt *st[2][ST__COUNT]; /* [append]: a live step's */
	bool fresh, dropped, append, live;
	char path[];
} out_sqlite;

static int prepare(out_sqlite *o, int which, bool append, core_err *err)
{
	const sqlt_table *t = &sqlt__tables[which];
	core_buf b = { 0 };
	int rc = 0;

	core_buf_printf(&b, "INSERT INTO %s (%s%s%s) VALUES (", t->name, t->cols,
			t->fixed_col ? ", " : "", t->fixed_col ? t->fixed_col : "");
	for (int i = 0; i < t->ncols; i++)
		core_buf_puts(&b, i ? ",?" : "?");
	if (t->fixed_col)
		core_buf_printf(&b, ",%s", t->fixed_sql);
	if (core_buf_putc(&b, ')') || sqlt__conflict_sql(which, append, &b))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else if (sqlite3_prepare_v2(o->db, b.data, -1, &o->st[append][which], NULL) !=
		 SQLITE_OK)
		rc = sqlt__db_error(o->db, err, "preparing the export");
	core_buf_release(&b);
	return rc;
}

/* Whether table has column (column "": whether the table exists). */
static int has_column(out_sqlite *o, const char *table, const char *column,
		      bool *found, core_err *err)
{
	sqlite3_stmt *s;

	if (sqlite3_prepare_v2(o->db, *column ?
			       "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2" :
			       "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
			       -1, &s, NULL) != SQLITE_OK)
		return sqlt__db_error(o->db, err, "reading the tables");
	sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
	if (*column)
		sqlite3_bind_text(s, 2, column, -1, SQLITE_STATIC);
	*found = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_finalize(s);
	return 0;
}

static int has_run(out_sqlite *o, const char *rid, bool *found, core_err *err)
{
	sqlite3_stmt *s;

	if (sqlite3_prepare_v2(o->db, "SELECT 1 FROM runs WHERE run_id = ?1", -1,
			       &s, NULL) != SQLITE_OK)
		return sqlt__db_error(o->db, err, "reading the runs");
	sqlite3_bind_text(s, 1, rid, -1, SQLITE_STATIC);
	*found = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_finalize(s);
	return 0;
}

static int deletes(out_sqlite *o, const char *const *sql, const char *rid,
		   core_err *err)
{
	sqlite3_stmt *s;
	int rc;

	for (size_t i = 0; sql[i]; i++) {
		if (sqlite3_prepare_v2(o->db, sql[i], -1, &s, NULL) != SQLITE_OK)
			return sqlt__db_error(o->db, err, "replacing an earlier export");
		sqlite3_bind_text(s, 1, rid, -1, SQLITE_STATIC);
		rc = sqlite3_step(s);
		sqlite3_finalize(s);
		if (rc != SQLITE_DONE)
			return sqlt__db_error(o->db, err, "replacing an earlier export");
	}
	return 0;
}

/* BEGIN IMMEDIATE: the file is ours before the exporter takes its LMDB
 * snapshot, so an export that waited for another writes what the trail
 * holds now, never an older picture over a newer one. */
static int sq_begin(sqlt_out *base, const char *rid, const char *started,
		    bool append, core_err *err)
{
	out_sqlite *o = (out_sqlite *)base;
	bool found = false;
	int rc;

	(void)started;
	o->append = append;
	if (sqlite3_exec(o->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return sqlt__db_error(o->db, err, "starting a transaction");
	if (append || (rc = has_run(o, rid, &found, err)) || !found)
		return append ? 0 : rc;
	if (!o->dropped) {
		if ((rc = sqlt__drop_indexes(o->db, err)))
			return rc;
		o->dropped = true;
	}
	/* 0.7.1's run_sources first (it refers to runs and nodes) */
	if ((rc = has_column(o, "run_sources", "", &found, err)) ||
	    (found && (rc = deletes(o, sqlt__delete_v07_sql, rid, err))))
		return rc;
	return deletes(o, sqlt__delete_sql, rid, err);
}

static int sq_row(sqlt_out *base, int which, const xrow *r, core_err *err)
{
	out_sqlite *o = (out_sqlite *)base;
	sqlite3_stmt *s = o->st[o->append][which];
	int n = sqlt__tables[which].ncols, rc;

	for (int i = 1; i <= n; i++) {
		const char *p = r->bytes.data + r->off[i];

		switch (r->kind[i]) {
		case XV_INT:
			sqlite3_bind_int64(s, i, r->i[i]);
			break;
		case XV_REAL:
			sqlite3_bind_double(s, i, r->d[i]);
			break;
		case XV_TEXT:
			sqlite3_bind_text64(s, i, p, r->len[i], SQLITE_STATIC, SQLITE_UTF8);
			break;
		case XV_BLOB:
			sqlite3_bind_blob64(s, i, p, r->len[i], SQLITE_STATIC);
			break;
		default:
			sqlite3_bind_null(s, i);
		}
	}
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_DONE ? 0 : sqlt__db_error(o->db, err, "writing the SQL trail");
}

/* ELSPETH 0.7.1's additions where missing, then their INSERTs. */
static int sq_v07(sqlt_out *base, core_err *err)
{
	out_sqlite *o = (out_sqlite *)base;
	char sql[256];
	bool has;
	int rc = 0;

	/* checked every time: a rolled back transaction takes them away */
	for (size_t i = 0; sqlt__v07_columns[i] && !rc; i++) {
		if ((rc = has_column(o, "rows", sqlt__v07_columns[i], &has, err)) || has)
			continue;
		snprintf(sql, sizeof(sql), "ALTER TABLE rows ADD COLUMN %s INTEGER",
			 sqlt__v07_columns[i]);
		if (sqlite3_exec(o->db, sql, NULL, NULL, NULL) != SQLITE_OK)
			rc = sqlt__db_error(o->db, err, "adding ELSPETH 0.7.1's columns");
	}
	for (size_t i = 0; sqlt__v07_tables[i] && !rc; i++)
		if (sqlite3_exec(o->db, sqlt__v07_tables[i], NULL, NULL, NULL) != SQLITE_OK)
			rc = sqlt__db_error(o->db, err, "adding ELSPETH 0.7.1's tables");
	for (int i = 0; i < 2 * ST__COUNT && !rc; i++)
		if (sqlt__tables[i % ST__COUNT].v07 && !o->st[i >= ST__COUNT][i % ST__COUNT])
			rc = prepare(o, i % ST__COUNT, i >= ST__COUNT, err);
	return rc;
}

static int sq_commit(sqlt_out *base, core_err *err)
{
	out_sqlite *o = (out_sqlite *)base;

	if (sqlite3_exec(o->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return sqlt__db_error(o->db, err, "committing");
	return 0;
}

static void sq_rollback(sqlt_out *base)
{
	sqlite3_exec(((out_sqlite *)base)->db, "ROLLBACK", NULL, NULL, NULL);
}

static int sq_close(sqlt_out *base, bool ok, core_err *err)
{
	out_sqlite *o = (out_sqlite *)base;
	int rc = 0;

	(void)ok;
	if (o->dropped || o->fresh)
		rc = sqlt__create_indexes(o->db, err);
	/* a live trail back to a rollback journal, unless a reader has it
	 * open (it then stays in WAL mode) */
	if (o->live) {
		sqlite3_busy_timeout(o->db, 0);
		sqlite3_exec(o->db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
	}
	for (int i = 0; i < ST__COUNT; i++) {
		sqlite3_finalize(o->st[0][i]);
		sqlite3_finalize(o->st[1][i]);
	}
	if (sqlite3_close(o->db) != SQLITE_OK && !rc)
		rc = core_err_set(err, CORE_EIO, "closing %s", o->path);
	free(o);
	return rc;
}

static const sqlt_out_ops ops = {
	sq_begin, sq_row, sq_commit, sq_rollback, sq_close, sq_v07,
};

int sqlt__out_sqlite(const char *path, bool live, sqlt_out **out, core_err *err)
{
	out_sqlite *o = calloc(1, sizeof(*o) + strlen(path) + 1);
	int rc;

	*out = NULL;
	if (!o)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	strcpy(o->path, path);
	o->base.ops = &ops;
	o->base.where = o->path;
	if ((rc = sqlt__open(path, &o->db, &o->fresh, err))) {
		free(o);
		return rc;
	}
	/* A live trail is read while it is written: in WAL mode, as
	 * ELSPETH keeps its SQLite Landscape, a reader's transaction does
	 * not hold up a step's commit, nor a step the reader. A file others
	 * have open stays as it is. */
	if ((o->live = live)) {
		sqlite3_busy_timeout(o->db, 0);
		sqlite3_exec(o->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
		sqlite3_busy_timeout(o->db, 10000);
	}
	for (int i = 0; i < 2 * ST__COUNT; i++)
		if (!sqlt__tables[i % ST__COUNT].v07 && /* those: sq_v07 */
		    (rc = prepare(o, i % ST__COUNT, i >= ST__COUNT, err))) {
			core_err e2 = { 0 };

			o->fresh = o->dropped = false;
			sq_close(&o->base, false, &e2);
			return rc;
		}
	*out = &o->base;
	return 0;
}
