/*
 * landscape_url.c — what a landscape.url names (docs/audit.md, ADR 0019):
 *   lmdb://PATH            the LMDB environment (a directory)
 *   sqlite:///REL          ELSPETH's SQL trail, a file relative to the
 *   sqlite:////ABS         working directory, or absolute; the LMDB
 *                          environment the engine writes lives beside it,
 *                          in FILE.lmdb, and the file is brought up to
 *                          date after every run and resume
 *   postgresql://…         ELSPETH's SQL trail in PostgreSQL (also
 *   postgresql+DRIVER://…  SQLAlchemy's spelling); the LMDB environment
 *                          the engine writes is the default one,
 *                          ./state/audit.lmdb, and the database is
 *                          brought up to date after every run and resume
 *                          (ADR 0039)
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include "core/core.h"

#define LMDB_SCHEME "lmdb://"
#define SQLITE_SCHEME "sqlite:///"
#define LMDB_BESIDE ".lmdb"

static int too_long(const char *url, core_err *err)
{
	return core_err_set(err, CORE_ECONFIG,
		"landscape url '%s': the path is too long", url);
}

/* The file's last component: "" for a directory form ("a/", ".", ".."). */
static bool names_a_directory(const char *path)
{
	const char *last = strrchr(path, '/');

	last = last ? last + 1 : path;
	return !*last || !strcmp(last, ".") || !strcmp(last, "..");
}

int core_landscape_paths(const char *url, char *lmdb, size_t cap,
			 char *sqlite, size_t scap, core_err *err)
{
	char *shown;
	size_t n;
	int rc;

	if (sqlite && scap)
		sqlite[0] = '\0';
	if (!url)
		url = "(null)";
	if (!strncmp(url, LMDB_SCHEME, strlen(LMDB_SCHEME)) && url[strlen(LMDB_SCHEME)]) {
		if ((size_t)snprintf(lmdb, cap, "%s", url + strlen(LMDB_SCHEME)) >= cap)
			return too_long(url, err);
		return 0;
	}
	if (!strncmp(url, SQLITE_SCHEME, strlen(SQLITE_SCHEME))) {
		const char *path = url + strlen(SQLITE_SCHEME); /* "/abs" or "rel" */

		n = strlen(path);
		if (!n || names_a_directory(path) || !strcmp(path, ":memory:") ||
		    strchr(path, '?'))
			return core_err_set(err, CORE_ECONFIG,
				"landscape url '%s' is not supported: a SQL trail is a "
				"file, sqlite:///relative/audit.db or sqlite:////absolute/audit.db "
				"(no in-memory database, no query parameters)", url);
		if ((sqlite && (size_t)snprintf(sqlite, scap, "%s", path) >= scap) ||
		    (size_t)snprintf(lmdb, cap, "%s" LMDB_BESIDE, path) >= cap)
			return too_long(url, err);
		return 0;
	}
	if (!strncmp(url, "postgresql://", 13) || !strncmp(url, "postgresql+", 11)) {
		if ((sqlite && (size_t)snprintf(sqlite, scap, "%s", url) >= scap) ||
		    (size_t)snprintf(lmdb, cap, "%s", CORE_PG_LMDB) >= cap)
			return too_long(url, err);
		return 0;
	}
	shown = core_url_sanitize(url);
	if (!strncmp(url, "postgres://", 11))
		rc = core_err_set(err, CORE_ECONFIG,
			"landscape url '%s': write postgresql:// (as SQLAlchemy, and so "
			"ELSPETH, requires), not postgres://", shown ? shown : "");
	else
		rc = core_err_set(err, CORE_ECONFIG,
			"landscape url '%s' is not supported: expected lmdb://PATH (a "
			"directory, e.g. lmdb://./state/audit.lmdb), sqlite:///PATH "
			"(ELSPETH's SQL trail, e.g. sqlite:///./runs/audit.db) or "
			"postgresql://USER@HOST/DB", shown ? shown : "");
	free(shown);
	return rc;
}

bool core_sql_is_pg(const char *sql)
{
	return !strncmp(sql, "postgresql://", 13) || !strncmp(sql, "postgresql+", 11);
}
