/*
 * cmd_health.c — `elspeth health [--json] [-v]`: ELSPETH's deployment
 * check. The same checks and output shape as ELSPETH 0.4.1's: version,
 * commit (GIT_COMMIT_SHA, else the one built from), the runtime (ours: the C libraries instead of
 * Python's version), the database of DATABASE_URL (sqlite:/// or
 * postgresql://, a SELECT 1), ./config readable, ./output writable, the
 * plugins. Exit 1 when a check errs (unhealthy), else 0.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <libpq-fe.h>
#include <lmdb.h>
#include <sqlite3.h>

#include "cli/cli.h"

#ifndef ELSPETH_COMMIT
#define ELSPETH_COMMIT ""
#endif

static const char usage[] =
	"usage: elspeth health [-j|--json] [-v|--verbose]\n"
	"\n"
	"Checks that elspeth can run here (deployments, container health\n"
	"checks): its version and commit (GIT_COMMIT_SHA), the libraries, the\n"
	"database named by DATABASE_URL (sqlite:///FILE or postgresql://...),\n"
	"./config readable, ./output writable, the plugins. Exit 1 when a check\n"
	"fails; warnings (no config or output folder) do not.\n"
	"\n"
	"  -j, --json      the result as JSON\n"
	"  -v, --verbose   every check with its value\n";

static void check(json_t *checks, const char *name, const char *status,
		  const char *value)
{
	json_object_set_new(checks, name, json_pack("{s:s,s:s}", "status", status,
						    "value", value));
}

/* SELECT 1 on DATABASE_URL; false (and why in msg) when it fails. */
static bool database_ok(const char *url, char *msg, size_t cap)
{
	if (!strncmp(url, "sqlite:///", 10)) {
		sqlite3 *db = NULL;
		int rc = sqlite3_open_v2(url + 10, &db, SQLITE_OPEN_READONLY, NULL);

		if (rc == SQLITE_OK)
			rc = sqlite3_exec(db, "SELECT 1", NULL, NULL, NULL);
		snprintf(msg, cap, "%s", rc == SQLITE_OK ? "connected" :
			 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		sqlite3_close(db);
		return rc == SQLITE_OK;
	}
	if (!strncmp(url, "postgresql://", 13) || !strncmp(url, "postgres://", 11)) {
		PGconn *c = PQconnectdb(url);
		PGresult *r = PQstatus(c) == CONNECTION_OK ? PQexec(c, "SELECT 1") : NULL;
		bool ok = r && PQresultStatus(r) == PGRES_TUPLES_OK;
		size_t n;

		snprintf(msg, cap, "%s", ok ? "connected" : PQerrorMessage(c));
		n = strlen(msg);
		while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
			msg[--n] = '\0';
		PQclear(r);
		PQfinish(c);
		return ok;
	}
	snprintf(msg, cap, "unsupported URL (sqlite:///FILE or postgresql://...)");
	return false;
}

/* The first of paths that is a folder with access mode, or NULL. */
static const char *first_dir(const char *const *paths, int mode)
{
	for (size_t i = 0; paths[i]; i++)
		if (!access(paths[i], mode | X_OK))
			return paths[i];
	return NULL;
}

static void print_text(const json_t *doc, bool verbose)
{
	const char *name;
	json_t *c;

	printf("Status: %s\nVersion: %s\nCommit: %s\n",
	       json_string_value(json_object_get(doc, "status")),
	       json_string_value(json_object_get(doc, "version")),
	       json_string_value(json_object_get(doc, "commit")));
	if (!verbose)
		return;
	puts("\nChecks:");
	json_object_foreach(json_object_get(doc, "checks"), name, c) {
		const char *st = json_string_value(json_object_get(c, "status"));

		printf("  %s %s: %s\n", !strcmp(st, "ok") ? "\u2713" :
		       !strcmp(st, "error") ? "\u2717" : "\u26a0", name,
		       json_string_value(json_object_get(c, "value")));
	}
}

int cli_health(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static const char *const config[] = { "/app/config", "./config", NULL };
	static const char *const output[] = { "/app/output", "./output", NULL };
	const char *sha = getenv("GIT_COMMIT_SHA"), *url = getenv("DATABASE_URL");
	const char *dir, *name, *desc;
	bool json = false, verbose = false, healthy = true;
	size_t count[4] = { 0 };
	char buf[512];
	json_t *checks = json_object(), *doc;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'v': verbose = true; break;
		case 'h':
			json_decref(checks);
			fputs(usage, stdout);
			return CLI_OK;
		default:
			json_decref(checks);
			return cli_bad_option("health", c, argc, argv);
		}
	}
	if (optind != argc) {
		json_decref(checks);
		return cli_usage_error("health", "unexpected argument '%s'", argv[optind]);
	}
	if (!sha || !*sha)
		sha = ELSPETH_COMMIT;
	if (!*sha)
		sha = "unavailable";
	check(checks, "version", "ok", ELSPETH_VERSION);
	check(checks, "commit", strcmp(sha, "unavailable") ? "ok" : "warn", sha);
	snprintf(buf, sizeof(buf), "libcurl %s, LMDB %d.%d.%d, SQLite %s, libpq %d",
		 curl_version_info(CURLVERSION_NOW)->version, MDB_VERSION_MAJOR,
		 MDB_VERSION_MINOR, MDB_VERSION_PATCH, sqlite3_libversion(),
		 PQlibVersion());
	check(checks, "runtime", "ok", buf);
	if (url && *url) {
		bool ok = database_ok(url, buf, sizeof(buf));

		check(checks, "database", ok ? "ok" : "error", buf);
		healthy = healthy && ok;
	} else {
		check(checks, "database", "skip", "DATABASE_URL not set");
	}
	dir = first_dir(config, R_OK);
	check(checks, "config_dir", dir ? "ok" : "warn", dir ? dir : "not found or not readable");
	dir = first_dir(output, W_OK);
	check(checks, "output_dir", dir ? "ok" : "warn", dir ? dir : "not found or not writable");
	for (int k = PLG_SOURCE; k <= PLG_AGGREGATION; k++)
		while (plg_describe((plg_kind)k, count[k], &name, &desc))
			count[k]++;
	snprintf(buf, sizeof(buf), "%zu sources, %zu transforms, %zu sinks",
		 count[PLG_SOURCE], count[PLG_TRANSFORM] + count[PLG_AGGREGATION],
		 count[PLG_SINK]);
	check(checks, "plugins", "ok", buf);
	doc = json_pack("{s:s,s:s,s:s,s:o}", "status", healthy ? "healthy" : "unhealthy",
			"version", ELSPETH_VERSION, "commit", sha, "checks", checks);
	if (json)
		cli_print_json(doc);
	else
		print_text(doc, verbose);
	json_decref(doc);
	return healthy ? CLI_OK : CLI_ERROR;
}
