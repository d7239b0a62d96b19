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
} sqlt_opts;

/*
 * Writes run `run` of env (0: every run) into the SQLite database at
 * path, creating the file and ELSPETH's schema when missing. A run
 * already in the file is replaced (re-export is idempotent); each run is
 * one SQLite transaction, so a reader sees a run whole or not at all.
 * A file that is not an SQL trail (tables missing or of another shape)
 * is refused with CORE_EDATA naming it.
 */
int sqlt_export(rec_env *env, uint64_t run, const char *path,
		const sqlt_opts *o, core_err *err);

#endif /* ELSPETH_SQLTRAIL_H */
