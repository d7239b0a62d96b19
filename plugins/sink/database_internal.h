/*
 * database_internal.h — shared by the files of the "database" sink
 * (plugins/sink/database*.c); not part of the plugin contract.
 *
 *   database.c         the sink: options, open/resume, position/verify
 *                      (ADR 0021)
 *   database_txn.c     rows and transactions
 *   database_db.c      one connection per database, shared by its sinks
 *   database_ledger.c  the commit ledger (elspeth_sink_commits): what each
 *                      commit wrote, so a resume can delete it again
 *   database_table.c   the target table: its columns, DDL, a row's values
 *   database_url.c     sqlite:/// and postgresql:// urls, without passwords
 *   database_sqlite.c  the SQLite backend (libsqlite3)
 *   database_pg.c      the PostgreSQL backend (libpq)
 *
 * SQL text uses $1, $2 ... for parameters on both backends (SQLite binds
 * them by name). A backend's connection has one caller at a time.
 */
#ifndef ELSPETH_PLUGINS_SINK_DATABASE_INTERNAL_H
#define ELSPETH_PLUGINS_SINK_DATABASE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugins/plugins_internal.h"

/* The ledger's table, in the target's database (ADR 0021). */
#define DBS_LEDGER "elspeth_sink_commits"
/* ELSPETH 0.7.1's effect ledger (option effect_ledger, ADR 0047): an
 * operator-provisioned table of these columns (schema version 1), which
 * the sink writes instead of its own and never changes otherwise. */
#define DBS_EFFECT_COLUMNS { "effect_id", "schema_version", "protocol_version", \
	"plan_hash", "payload_hash", "completed", "descriptor_json", \
	"accepted_ordinals_json", "diverted_ordinals_json", \
	"accepted_payload_hash", "diversion_hashes_json", "evidence_json", NULL }
/* Its protocol_version: what wrote the entry and how to read it. */
#define DBS_EFFECT_PROTOCOL "elspeth-c/commit-ledger-1"

/* ------------------------------------------------------------------ urls */

typedef enum dbs_kind { DBS_SQLITE, DBS_PG } dbs_kind;

typedef struct dbs_url {
	dbs_kind kind;
	/* sqlite: the file (relative to the working directory) or
	 * ":memory:"; postgresql: the URI for libpq (no "+driver") */
	char *conninfo;
	/* the url as written with its password taken out: for messages and
	 * the audit trail */
	char *sanitized;
} dbs_url;

/* Parses a `url` option: sqlite:///REL, sqlite:////ABS, sqlite:// and
 * sqlite:///:memory:, postgresql[+driver]://... CORE_ECONFIG at n (its
 * file, line and key) saying what is supported; u is then empty. */
int dbs__url_parse(const core_node *n, dbs_url *u, core_err *err);
void dbs__url_release(dbs_url *u);
/* "db://TABLE@SANITIZED_URL" (ELSPETH's artifact uri) for the options
 * of a database sink, or NULL; kept for the process (thread-safe). */
const char *dbs__target(const plg_env *env, const core_node *options);

/* ------------------------------------------------------------- backends */

typedef enum dbs_vkind {
	DBS_V_NULL, DBS_V_INT, DBS_V_REAL, DBS_V_BOOL, DBS_V_TEXT
} dbs_vkind;

/* One parameter; a text's bytes are the caller's (valid for the call). */
typedef struct dbs_val {
	dbs_vkind kind;
	int64_t i;      /* INT; BOOL: 0 or 1 */
	double d;       /* REAL */
	const char *s;  /* TEXT (UTF-8, may hold NUL bytes: len counts) */
	size_t len;
} dbs_val;

typedef struct dbs_conn dbs_conn;

/* A query's row, each value as text (NULL for SQL NULL); return nonzero
 * to stop (that value is returned by the query). */
typedef int dbs_row_fn(void *ctx, size_t ncols, const char *const *vals);

typedef struct dbs_backend {
	const char *name; /* "SQLite", "PostgreSQL" */
	/* the column type of a schema type (DDL) */
	const char *(*type_name)(plg_ftype t);
	const char *begin_sql; /* starts a transaction */
	/* Connects; readonly: writes nothing (verify). CORE_EIO naming the
	 * sanitized url. */
	int (*connect)(const dbs_url *u, bool readonly, dbs_conn **c,
		       core_err *err);
	void (*disconnect)(dbs_conn *c); /* NULL allowed */
	/* A statement that returns no rows; *changes (may be NULL) gets the
	 * rows it inserted, updated or deleted. CORE_EIO with the server's
	 * message. */
	int (*exec)(dbs_conn *c, const char *sql, const dbs_val *p, size_t n,
		    uint64_t *changes, core_err *err);
	/* A query: fn sees each row. */
	int (*query)(dbs_conn *c, const char *sql, const dbs_val *p, size_t n,
		     dbs_row_fn *fn, void *ctx, core_err *err);
	/* One INSERT of a row (the statement is kept while sql stays the
	 * same); *rowid: SQLite's rowid of the row (PostgreSQL: 0). A value
	 * the database cannot take at all is CORE_EDATA before anything is
	 * sent. */
	int (*insert)(dbs_conn *c, const char *sql, const dbs_val *p, size_t n,
		      int64_t *rowid, core_err *err);
	/* Whether a transaction is open and can go on (after a failed
	 * statement: SQLite keeps it unless it rolled it back itself;
	 * PostgreSQL aborts it). */
	bool (*txn_usable)(dbs_conn *c);
	/* Whether the connection is still there (a failed statement was the
	 * statement's fault, not the server's going away). */
	bool (*connected)(dbs_conn *c);
	/* The reference of the open transaction's rows for the ledger, into
	 * out (PostgreSQL: its 64-bit transaction id); NULL for a backend
	 * whose caller keeps the rows' ids (SQLite: rowid ranges). */
	int (*txn_ref)(dbs_conn *c, core_buf *out, core_err *err);
	/* Deletes from table (quoted) the rows a committed transaction
	 * wrote, as the ledger's ref names them; *n gets how many. rowid:
	 * the name SQLite's rowid has in table. */
	int (*delete_ref)(dbs_conn *c, const char *qtable, const char *rowid,
			  const char *ref, uint64_t *n, core_err *err);
	/* table's column names in order (malloc'd array of malloc'd names),
	 * or *exists false. */
	int (*columns)(dbs_conn *c, const char *table, char ***names,
		       size_t *n, bool *exists, core_err *err);
	/* The name SQLite's rowid goes by in table (rowid, _rowid_ or oid,
	 * whichever no column shadows), or an error for a table without
	 * one; NULL when the backend needs none (PostgreSQL). */
	int (*rowid_name)(dbs_conn *c, const char *qtable, char *const *cols,
			  size_t ncols, const char **out, core_err *err);
} dbs_backend;

extern const dbs_backend dbs__sqlite;
extern const dbs_backend dbs__pg;

/* "name" with inner quotes doubled, appended to b. */
int dbs__quote(core_buf *b, const char *name);

/* A table's column names, as a backend's columns() gathers them. */
typedef struct dbs_col_list {
	char **names;
	size_t n;
	bool exists, oom;
} dbs_col_list;

/* Appends a copy of name; CORE_ENOMEM (and l->oom) when it cannot. */
int dbs__col_add(dbs_col_list *l, const char *name);
/* The end of a columns(): on rc (or l->oom) frees the names and returns
 * the error; else hands them to *names, *n. */
int dbs__col_done(dbs_col_list *l, int rc, char ***names, size_t *n,
		  core_err *err);

/* ---------------------------------------------------------------- table */

/* A column of the target table: its name, and the schema's field of that
 * name (NULL: not declared; its values go in as they are). */
typedef struct dbs_col {
	char *name;
	const plg_field *field;
} dbs_col;

typedef struct dbs_table {
	char *name;          /* as the options give it */
	char *qname;         /* quoted */
	dbs_col *cols;
	size_t ncols;        /* 0: not known yet (created at the first row) */
	const char *rowid;   /* SQLite: its rowid's name in the table */
} dbs_table;

void dbs__table_release(dbs_table *t);
/* The columns: names in order; declared fields found by name. */
int dbs__table_set_cols(dbs_table *t, const plg_schema *sc, char **names,
			size_t n, core_err *err);
/* The columns a new table gets (ELSPETH's): the schema's fields; with
 * mode flexible then the first row's other keys; with mode observed the
 * first row's keys. CORE_EDATA for a row that gives none. */
int dbs__table_cols_for(dbs_table *t, const plg_schema *sc,
			const json_t *row, core_err *err);
/* CREATE TABLE [IF NOT EXISTS] for the columns, into sql. */
int dbs__table_create_sql(const dbs_table *t, const dbs_backend *be,
			  bool if_not_exists, core_buf *sql);
/* An existing table's columns against the schema (ELSPETH's check):
 * fixed: the same set; flexible: every field present; observed: any.
 * CORE_ECONFIG at n, listing what is missing or extra. */
int dbs__table_check(const dbs_table *t, const plg_schema *sc,
		     const core_node *n, const char *where, core_err *err);
/* The INSERT of row into sql and its values into vals (one per key of
 * the row, in column order); text values that need formatting (JSON of
 * an object or array) go into scratch, which must not change until the
 * values are used. CORE_EDATA for a key that is not a column, naming it
 * and the columns. */
int dbs__table_insert(const dbs_table *t, const json_t *row, core_buf *sql,
		      dbs_val **vals, size_t *cap, size_t *n, core_buf *scratch,
		      core_err *err);

/* --------------------------------------------------------------- ledger */

/* One row of the ledger: one commit of one writer (a sink of a run). */
typedef struct dbs_entry {
	uint64_t seq, before, after;
	char chain[CORE_SHA256_HEX_LEN + 1];
	char *ref;
} dbs_entry;

typedef struct dbs_entries {
	dbs_entry *e;
	size_t n;
} dbs_entries;

void dbs__entries_release(dbs_entries *l);
/* Which ledger a sink keeps: ours (effect NULL), or an operator's effect
 * ledger, effect being its name (and qeffect quoted). */
typedef struct dbs_ledger {
	const dbs_backend *be;
	const char *effect, *qeffect;
} dbs_ledger;
/* Creates our ledger table when missing (its own transaction). */
int dbs__ledger_create(const dbs_backend *be, dbs_conn *c, core_err *err);
/* An effect ledger is there with every column of schema version 1:
 * CORE_ECONFIG at n naming what is missing (the sink never creates it). */
int dbs__effect_check(const dbs_ledger *lg, dbs_conn *c, const core_node *n,
		      const char *where, core_err *err);
/* The writer's entries by seq; none when the ledger table is missing
 * and missing_ok. */
int dbs__ledger_load(const dbs_ledger *lg, dbs_conn *c, const char *writer,
		     bool missing_ok, dbs_entries *out, core_err *err);
int dbs__ledger_put(const dbs_ledger *lg, dbs_conn *c, const char *writer,
		    const char *table, const dbs_entry *e, core_err *err);
/* Deletes the writer's entries whose rows end before `below` rows. */
int dbs__ledger_trim(const dbs_backend *be, dbs_conn *c, const char *writer,
		     uint64_t below, core_err *err);
int dbs__ledger_drop(const dbs_backend *be, dbs_conn *c, const char *writer,
		     uint64_t seq, core_err *err);

/* ----------------------------------------------------------------- sink */

/* Checkpoint positions remembered: ledger entries ending before the
 * oldest are deleted (ADR 0021: the latest durable checkpoint is never
 * older than the fourth-last position reported; twice that for margin). */
#define DBS_RECENT 8
/* A transaction commits early past these (its statements are kept to
 * write them again if the database aborts it). */
#define DBS_TXN_ROWS 10000
#define DBS_TXN_BYTES (64u << 20)

typedef struct dbs_sink dbs_sink;

/* One database the pipeline's sinks write (database_db.c): its one
 * connection and one open transaction, shared by every sink whose url
 * names it — two connections to one SQLite file would wait for each
 * other's write lock until the busy timeout. */
typedef struct dbs_db {
	char *key;           /* which database: the registry's key */
	const dbs_backend *be;
	dbs_conn *conn;
	const char *where;   /* the sanitized url of its first sink */
	dbs_sink **sinks;    /* attached */
	size_t nsinks;

	/* the open transaction (guarded by `lock`) */
	bool txn;
	core_buf log;        /* its statements in order: to write again */
	uint64_t rows;       /* its rows, every sink's */
	bool broken;         /* a transaction was lost: every call fails */
	core_err why;
	pthread_mutex_t lock;
} dbs_db;

struct dbs_sink {
	dbs_db *db;
	const dbs_backend *be;
	dbs_url url;
	dbs_table t;
	plg_schema *schema;
	const core_node *options;
	bool replace;        /* if_exists: replace, the table not dropped yet */
	bool validate;       /* validate_input (rows are checked anyway) */
	char *writer;        /* the ledger's key for this sink of this run */
	dbs_ledger lg;       /* which ledger it keeps */
	char *effect, *qeffect; /* effect_ledger's table (lg's), or NULL */
	/* effect ledger, resumed: rows committed after the checkpoint by an
	 * earlier attempt (they are not written again: the rows that come
	 * are checked against them), and those commits */
	uint64_t published;
	dbs_entries after;

	/* its part of the open transaction */
	bool ddl;            /* it ran DDL in it */
	int64_t (*ranges)[2];/* SQLite: the rowids of its rows */
	size_t nranges, capranges;
	uint64_t pending;    /* its rows */

	uint64_t committed;  /* rows committed by the writer, all attempts */
	uint64_t seq;        /* the writer's last commit in the ledger */
	char chain[CORE_SHA256_HEX_LEN + 1];     /* through committed */
	char chain_txn[CORE_SHA256_HEX_LEN + 1]; /* through committed + pending */
	uint64_t recent[DBS_RECENT]; /* positions reported, oldest first */
	size_t nrecent;

	core_buf sql, scratch, canon, tmp;
	dbs_val *vals;
	size_t cap;
};

/* database_db.c: s->db for s->url (connected, shared); CORE_ECONFIG at
 * the table option when another sink attached writes the same table. */
int dbs__db_attach(dbs_sink *s, core_err *err);
/* Leaves s->db (the last sink closes it); the transaction must be
 * committed or rolled back before. NULL db allowed. */
void dbs__db_detach(dbs_sink *s);

/* database_txn.c: one row into the open transaction (begun if none);
 * CORE_EDATA for a row the table cannot take (the transaction goes on
 * without it), CORE_EIO when the sink cannot go on. */
int dbs__write(dbs_sink *s, const json_t *row, plg_write_info *info,
	       core_err *err);
/* Commits the open transaction of s's database, with a ledger entry for
 * each of its sinks that wrote in it. */
int dbs__commit(dbs_sink *s, core_err *err);
/* Rolls the open transaction back (closing after a failure). */
void dbs__rollback(dbs_db *db);
/* The error that broke s's database, into err (CORE_EIO), or 0. */
int dbs__broken(dbs_sink *s, core_err *err);
/* chain becomes the chain hash after one more row (its canonical JSON):
 * SHA-256 of the previous chain's hex and the row. */
int dbs__chain(dbs_sink *s, char chain[CORE_SHA256_HEX_LEN + 1],
	       const char *canon, size_t len);

#endif /* ELSPETH_PLUGINS_SINK_DATABASE_INTERNAL_H */
