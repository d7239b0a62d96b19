/* landscape.c — finding and opening the audit trail for the CLI. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "run/run.h"

#define DEFAULT_URL "lmdb://./state/audit.lmdb"

int cli_landscape_of(const char *database, char *lmdb, size_t cap, char *sql,
		     size_t scap, core_err *err)
{
	return run_database_paths(database, lmdb, cap, sql, scap, err);
}

/* -s SETTINGS (its landscape.url), --database PATH, or the default. */
int cli_landscape_path(const char *settings, const char *database, char *path,
		       size_t cap)
{
	char sql[4096];
	core_settings *s = NULL;
	core_err err = { 0 };
	int rc = 0;

	if (settings) {
		rc = core_settings_load(settings, &s, &err);
		if (!rc && (size_t)snprintf(path, cap, "%s", s->landscape_lmdb) >= cap)
			rc = core_err_set(&err, CORE_ECONFIG, "the Landscape's path is too long");
		core_settings_free(s);
	} else if (database) {
		rc = cli_landscape_of(database, path, cap, sql, sizeof(sql), &err);
	} else {
		rc = rec_path_from_url(DEFAULT_URL, path, cap, &err);
	}
	if (rc) {
		cli_error(&err);
		return CLI_ERROR;
	}
	return CLI_OK;
}

int cli_open_landscape(const char *settings, const char *database,
		       int flags, rec_env **env)
{
	char path[4096];
	core_err err = { 0 };
	int rc = cli_landscape_path(settings, database, path, sizeof(path));

	if (rc)
		return rc;
	if (rec_open(path, flags, env, &err)) {
		cli_error(&err);
		return CLI_ERROR;
	}
	return CLI_OK;
}

void cli_print_json(const json_t *doc)
{
	core_buf b = { 0 };

	if (!core_json_append(&b, doc, 2, 0))
		puts(b.data);
	core_buf_release(&b);
}

void cli_print_json_line(const json_t *doc)
{
	core_buf b = { 0 };

	if (!core_json_append(&b, doc, -1, 0)) {
		puts(b.data);
		fflush(stdout);
	}
	core_buf_release(&b);
}
