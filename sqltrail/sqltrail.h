/*
 * sqltrail.h — the Landscape as ELSPETH 0.4.1's SQL audit schema: its 20
 * tables, column names and types, filled from our records, plus tables of
 * our own for what ELSPETH does not record (docs/audit.md "The SQL
 * trail"). Used by `elspeth export --sqlite`, by runs whose
 * landscape.url is sqlite:///... (brought up to date after every run and
 * resume) and by the readers of SQL (mcp, report).
 *
 * Ids are text: run "1", the rest prefixed by kind and run ("tok-1-42"),
 * times ISO 8601 UTC as ELSPETH's SQLite stores them, hashes hex.
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
 * path, creating the file and ELSPETH's schema when missing (our
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

#endif /* ELSPETH_SQLTRAIL_H */
