/*
 * sqltrail.h — the Landscape as ELSPETH 0.4.1's SQL audit schema: its 20
 * tables, column names and types, filled from our records, plus tables of
 * our own for what ELSPETH does not record (docs/audit.md "The SQL
 * trail"), in an SQLite file or a PostgreSQL database (ADR 0039). Used
 * by `elspeth export --sqlite`, by runs whose landscape.url is
 * sqlite:///... or postgresql://... (written live while they run,
 * follow.c, and brought up to date after every run and resume,
 * run/after.c), by `elspeth manifest` and by `elspeth mcp`'s
 * query over an LMDB trail. `elspeth report` reads the Landscape itself.
 * No threads of its own; an export or a live step uses the calling
 * thread.
 *
 * Ids are text: run "1" (in PostgreSQL ten base-36 digits, export.c), the
 * rest prefixed by kind and run ("tok-1-42"), times ISO 8601 UTC as
 * ELSPETH's SQLite stores them, hashes hex.
 */
#ifndef ELSPETH_SQLTRAIL_H
#define ELSPETH_SQLTRAIL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "recorder/recorder.h"

typedef struct sqlt_opts {
	bool payloads; /* also copy the payloads the run refers to */
	/* The run's id in the file instead of its number (at most 23
	 * bytes): "shard-3" for a shard's run, whose Landscape numbers its
	 * runs from 1 as every shard's does. NULL: the number. */
	const char *run_label;
} sqlt_opts;

/*
 * Writes run `run` of env (0: every run) into the SQLite database at
 * path — or, when path is a postgresql[+driver]:// url, into that
 * PostgreSQL database (out_pg.c; runs get ids of their own there, and
 * elspeth_runs.landscape_run_id their number) — creating the file and
 * ELSPETH's schema when missing (our
 * elspeth_* tables are added to a file that lacks them). A run already
 * in the file is replaced (re-export is idempotent); each run is one
 * SQLite transaction over one LMDB snapshot, so a reader sees a run whole
 * or not at all; when exporting several runs fails, those before the
 * failure stay. o may be NULL (no payloads).
 *
 * Returns 0; CORE_EDATA when the file is not an SQL trail (some but not
 * all of ELSPETH's tables, or a column of theirs missing), the run is
 * unknown, or a record cannot be decoded; CORE_EIO for SQLite's errors;
 * CORE_ENOMEM; an LMDB code when the trail cannot be read. err names the
 * file and the run.
 *
 * Thread rules: it takes its own LMDB read transactions, so the calling
 * thread may not hold a rec_txn on env (like rec_flush).
 */
int sqlt_export(rec_env *env, uint64_t run, const char *path,
		const sqlt_opts *o, core_err *err);

/* Whether sqlt_export could write into target: a SQLite file is opened
 * (created with the schema when missing); a postgresql:// url is
 * connected to, its schema created or checked, and the user's right to
 * write every table checked; v07 (a run in ELSPETH 0.7.1's format):
 * 0.7.1's additions made where missing (ADR 0049). 0, or what is wrong
 * (CORE_EIO, CORE_EDATA), naming the target without its password. */
int sqlt_check(const char *target, bool v07, core_err *err);

/* The SQL trail a postgresql:// url's database holds (every run, in one
 * read-only snapshot), copied into `file`, a new SQLite file in the same
 * schema (ADR 0043), written beside as FILE.part and renamed: the whole
 * copy or nothing. CORE_ECONFIG (file exists), CORE_EIO (the database),
 * CORE_EDATA (not an audit trail), naming the url without its password. */
int sqlt_import_pg(const char *url, const char *file, core_err *err);
/* The runs a postgresql:// url's database holds, newest first, read from
 * it now: [{"run_id", "landscape_run_id", "status", "started_at",
 * "completed_at", "duration_seconds", "rows", "succeeded", "failed",
 * "quarantined", "config_hash", "topology_hash", "canonical_version",
 * "settings_path", "elspeth_version", "error", "metrics", "written_at"}]
 * (a column the database lacks for a run is left out). */
int sqlt_runs_pg(const char *url, json_t **out, core_err *err);

/* ------------------------------------------------- the live trail (ADR 0041)
 *
 * A run's rows written into its SQL trail while it runs: each step
 * writes, in one transaction over one LMDB snapshot, the rows from the
 * last step's up to `through` (rows the engine has released: their
 * stories are whole; the caller makes sure they are committed, e.g. by
 * rec_flush), with every record of theirs, the batches their tokens
 * joined, and the run's record as it stands. A reader sees whole rows
 * only. The first step, and the first after a failure (the database
 * away, a lost connection: the output is opened again), replaces the
 * run with rows 1..through. Records written to a row after its release
 * (an aggregation's flush: its members' states and outcomes, its
 * outputs) come with the step in which their batch is whole; the run's
 * own records (checkpoints, operations, sink files, resumes, samples)
 * with the last step, sqlt_follow_finish. One thread; it may not hold a
 * rec_txn on env.
 */
typedef struct sqlt_follow sqlt_follow;

/* Connects to target (a file or a postgresql:// url) for run `run`. */
int sqlt_follow_open(rec_env *env, uint64_t run, const char *target,
		     sqlt_follow **out, core_err *err);
/* One step: rows up to through. 0 (also when there is nothing new), or
 * the error (the next step starts over). */
int sqlt_follow_step(sqlt_follow *f, uint64_t through, core_err *err);
/* The run's last step, once it has stopped and its trail is committed:
 * every row the trail holds (also rows a stop left unreleased), what
 * was written to rows after their steps, and the run's own records,
 * with an export's damage checks. The database then holds what
 * sqlt_export would write; on an error (the step rolled back) the
 * caller exports the run whole instead. */
int sqlt_follow_finish(sqlt_follow *f, core_err *err);
/* The rows the database holds: 1..this (0 after a failed step). */
uint64_t sqlt_follow_through(const sqlt_follow *f);
void sqlt_follow_close(sqlt_follow *f); /* NULL allowed */

/* ------------------------------------------------ landscape.export (ADR 0028)
 *
 * A run's audit records as ELSPETH 0.4.1's LandscapeExporter yields them:
 * JSON objects with "record_type" (run, secret_resolution, node, edge,
 * operation, call, row, token, token_parent, token_outcome, node_state,
 * routing_event, batch, batch_member, artifact), its fields in its order,
 * the values of the SQL trail (sqlt_export). fn receives each record
 * (borrowed: valid during the call) and returns 0 or an error, which
 * stops the export and is returned.
 */
typedef int (*sqlt_record_fn)(void *ctx, json_t *rec, core_err *err);

/* signing_key NULL: unsigned. Else every record gets "signature" =
 * hex HMAC-SHA256 (key: the string's bytes) over its RFC 8785 canonical
 * JSON, and a last record "manifest" (record_count, final_hash: SHA-256
 * over the signatures in order, hash_algorithm, signature_algorithm,
 * exported_at, its own signature), as ELSPETH's export_run(sign=True).
 * Takes its own read transactions (like sqlt_export). */
int sqlt_audit_records(rec_env *env, uint64_t run, const char *signing_key,
		       sqlt_record_fn fn, void *ctx, core_err *err);

/* format: csv — ELSPETH's _export_csv_multifile: the directory `path`
 * without its suffix, one RECORD_TYPE.csv per record type present, the
 * columns the sorted union of its records' flattened fields (nested
 * objects as "a.b", lists as JSON text). */
int sqlt_audit_csv(rec_env *env, uint64_t run, const char *signing_key,
		   const char *path, core_err *err);

/* ELSPETH 0.7.1's landscape.export (audit-export-v2; ADR 0053): run's
 * records in 0.7.1's shapes, framed, chunked and sealed as its derivation
 * does, put into x's content store and published at target (format
 * json: the file, no_replace refusing one that exists; csv: a new
 * directory). hmac_sha256 reads its key from the variable
 * signing_secret_ref names. sql: an SQLite SQL trail already holding
 * the run whole, read instead of a temporary export of it; or NULL. */
int sqlt_audit_export_v2(rec_env *env, uint64_t run, const core_audit_export_cfg *x,
			 const char *target, bool no_replace, const char *sql, core_err *err);

/* landscape.dump_to_jsonl: appends run's lines to the journal cfg names
 * (ELSPETH's {"timestamp", "statement", "parameters", "executemany"}
 * lines; journal.c says how they are derived). */
int sqlt_journal(rec_env *env, uint64_t run, const core_journal_cfg *cfg,
		 core_err *err);

#endif /* ELSPETH_SQLTRAIL_H */
