/* sqltrail_internal.h — shared by the SQL trail's files. */
#ifndef ELSPETH_SQLTRAIL_INTERNAL_H
#define ELSPETH_SQLTRAIL_INTERNAL_H

#include <sqlite3.h>

#include "sqltrail/sqltrail.h"

/* ELSPETH's PRAGMA user_version for this schema (its SQLITE_SCHEMA_EPOCH). */
#define SQLT_SCHEMA_EPOCH 2
#define SQLT__STR(x) #x
#define SQLT_STR(x) SQLT__STR(x)

/* CREATE ... IF NOT EXISTS statements, NULL-terminated (schema.c). */
extern const char *const sqlt__elspeth_tables[];
extern const char *const sqlt__elspeth_indexes[];
extern const char *const sqlt__own_tables[];
extern const char *const sqlt__own_indexes[];
/* ELSPETH 0.7.1's additions (ADR 0049): the columns of rows it added
 * (INTEGER), and run_sources with its indexes and those of the columns. */
extern const char *const sqlt__v07_columns[];
extern const char *const sqlt__v07_tables[];

/* Unix ns -> "YYYY-MM-DD HH:MM:SS.ffffff" (UTC, as ELSPETH's SQLite
 * stores its times); "" for 0. */
#define SQLT_TIME_CAP 64
void sqlt__time(uint64_t ns, char out[SQLT_TIME_CAP]);

/* Opens (creating) the SQL trail at path with every table; *fresh: the
 * file had none of ELSPETH's tables (a file with some but not all of
 * them is refused). */
int sqlt__open(const char *path, sqlite3 **out, bool *fresh, core_err *err);
/* The indexes, once the rows are in; dropped before a run is replaced
 * (deleting and inserting a million rows under seven indexes is minutes,
 * building them again seconds). */
int sqlt__create_indexes(sqlite3 *db, core_err *err);
int sqlt__drop_indexes(sqlite3 *db, core_err *err);

/* The database's error as err (CORE_EIO), prefixed with what failed. */
int sqlt__db_error(sqlite3 *db, core_err *err, const char *what);

/* audit_records.c: run rid's records, read from db (an SQL trail holding
 * it), passed to fn one by one in ELSPETH's exporter order; shape NULL:
 * 0.4.1's records. */
typedef struct sqlt_shape {
	bool v2;                      /* ELSPETH 0.7.1's records (audit-export-v2) */
	bool raw_error_rows;          /* v2: error records carry the row's data */
} sqlt_shape;
int sqlt__audit_records(sqlite3 *db, const char *rid, const sqlt_shape *shape,
			sqlt_record_fn fn, void *ctx, core_err *err);

/* audit_export.c: writes run into a temporary SQL trail (payloads: with
 * elspeth_payloads), calls fn on it (opened read-only; rid: the run's id
 * there), removes it. */
typedef int (*sqlt_db_fn)(void *ctx, sqlite3 *db, const char *rid, core_err *err);
int sqlt__with_run_db(rec_env *env, uint64_t run, bool payloads,
		      sqlt_db_fn fn, void *ctx, core_err *err);
/* audit_export.c: records collected by type and written one CSV file
 * per type (ELSPETH's _export_csv_multifile; v2: 0.7.1's formatter). */
typedef struct sqlt_csv sqlt_csv;
sqlt_csv *sqlt__csv_new(bool v2);   /* NULL: out of memory */
int sqlt__csv_collect(void *ctx, json_t *rec, core_err *err); /* an sqlt_record_fn */
int sqlt__csv_write(sqlt_csv *c, const char *dir, core_err *err);
void sqlt__csv_free(sqlt_csv *c);   /* NULL allowed */
void sqlt__rm_tree(const char *dir);

/* v as Python's json.dumps writes it by default (", ", ": ", ASCII). */
void sqlt__py_json(core_buf *b, const json_t *v);

/* Python's datetime.now(UTC).isoformat() into out:
 * 2026-01-02T03:04:05.123456+00:00 (export_run.c). */
void sqlt__now_iso(char out[64]);

#endif /* ELSPETH_SQLTRAIL_INTERNAL_H */
