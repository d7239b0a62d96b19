/*
 * cmd_purge.c — `elspeth purge`: ELSPETH 0.4.1's verb (cli.py purge):
 * deletes the payload files of runs older than the retention period and
 * keeps their hashes (ADR 0028, docs/audit.md "Payload store and purge").
 */
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

typedef struct purge_args {
	const char *settings, *database, *payload_dir;
	long long retention_days;     /* -1: not given */
	bool dry_run, yes;
} purge_args;

static const char usage[] =
	"usage: elspeth purge [-s SETTINGS] [-d DATABASE] [-p PAYLOAD_DIR]\n"
	"                     [-r DAYS] [--dry-run] [-y]\n\n"
	"Purge old payloads to free storage. Deletes the payload store's files\n"
	"(payload_store.backend: filesystem) named only by runs that completed\n"
	"more than DAYS ago; the audit trail keeps their hashes, and explain and\n"
	"verify say \"purged\". Failed and interrupted runs are kept: a resume\n"
	"needs their payloads.\n\n"
	"  -s, --settings FILE       settings (default: ./settings.yaml when present)\n"
	"  -d, --database PATH       the Landscape (SQL trail file or LMDB directory)\n"
	"  -p, --payload-dir DIR     the payload store (default: payload_store.base_path,\n"
	"                            else DATABASE's directory/payloads)\n"
	"  -r, --retention-days N    delete payloads older than N days (default: from\n"
	"                            config or 90; 0: every completed run)\n"
	"      --dry-run             show what would be deleted without deleting\n"
	"  -y, --yes                 skip the confirmation prompt\n";

static int parse(int argc, char **argv, purge_args *a)
{
	static const struct option opts[] = {
		{ "settings", required_argument, NULL, 's' },
		{ "database", required_argument, NULL, 'd' },
		{ "payload-dir", required_argument, NULL, 'p' },
		{ "retention-days", required_argument, NULL, 'r' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "yes", no_argument, NULL, 'y' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 }
	};
	unsigned long long days;
	char *end;
	int c;

	a->retention_days = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "s:d:p:r:yh", opts, NULL)) != -1) {
		switch (c) {
		case 's': a->settings = optarg; break;
		case 'd': a->database = optarg; break;
		case 'p': a->payload_dir = optarg; break;
		case 'r':
			days = strtoull(optarg, &end, 10);
			if (!*optarg || *end || *optarg == '-' || days > 1000000000ULL)
				return cli_usage_error("purge",
					"--retention-days must be a whole number of days, not '%s'", optarg);
			a->retention_days = (long long)days;
			break;
		case 'n': a->dry_run = true; break;
		case 'y': a->yes = true; break;
		case 'h': fputs(usage, stdout); return -1;
		default: return cli_bad_option("purge", c, argc, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error("purge", "unexpected argument '%s'", argv[optind]);
	return 0;
}

/* Where the Landscape and the payloads are, and the retention: the
 * flags, else the settings (as ELSPETH, ./settings.yaml when present),
 * else the defaults. */
static int resolve(purge_args *a, core_settings **s, char *lmdb, char *dir,
		   long long *days, core_err *err)
{
	char sql[4096];
	struct stat st;

	if (!a->settings && !stat("settings.yaml", &st))
		a->settings = "settings.yaml";
	if (a->settings && core_settings_load(a->settings, s, err)) {
		if (!a->database)
			return err->code;
		fprintf(stderr, "Warning: %s: %s (continuing with --database)\n",
			a->settings, err->msg);
		*s = NULL;
	}
	if (a->database) {
		/* a postgresql:// url is refused there, without its password */
		if (cli_landscape_of(a->database, lmdb, 4096, sql, sizeof(sql), err))
			return err->code;
		if (stat(a->database, &st))
			return core_err_set(err, CORE_ECONFIG, "Database file not found: %s",
					    a->database);
	} else if (*s) {
		char *shown = core_url_sanitize((*s)->landscape_url);

		snprintf(lmdb, 4096, "%s", (*s)->landscape_lmdb);
		printf("Using database from %s: %s\n", a->settings,
		       shown ? shown : (*s)->landscape_lmdb);
		free(shown);
	} else {
		return core_err_set(err, CORE_ECONFIG,
			"No settings.yaml found and --database not provided. Specify "
			"--database to provide path to Landscape database.");
	}
	if (a->payload_dir) {
		snprintf(dir, 4096, "%s", a->payload_dir);
	} else if (*s) {
		snprintf(dir, 4096, "%s", (*s)->payload_store.base_path);
		printf("Using payload directory from config: %s\n", dir);
	} else {
		char d[4096];

		snprintf(d, sizeof(d), "%s", a->database);
		snprintf(dir, 4096, "%s/payloads", dirname(d));
	}
	*days = a->retention_days >= 0 ? a->retention_days :
		*s ? (*s)->payload_store.retention_days : 90;
	if (a->retention_days < 0 && *s)
		printf("Using retention_days from config: %lld\n", *days);
	return 0;
}

static bool confirm(size_t n, long long days)
{
	char line[64];

	printf("Delete %zu payload(s) older than %lld days? [y/N]: ", n, days);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return false;
	return line[0] == 'y' || line[0] == 'Y';
}

static void dry_run(const rec_purge_plan *p, const char *dir, long long days)
{
	printf("Would delete %zu payload(s) older than %lld days:\n", p->n, days);
	for (size_t i = 0; i < p->n && i < 10; i++) {
		char path[4200];
		struct stat st;

		rec_payload_file_path(dir, p->hex[i], path, sizeof(path));
		printf("  %.16s... (%s)\n", p->hex[i],
		       stat(path, &st) ? "already deleted" : "exists");
	}
	if (p->n > 10)
		printf("  ... and %zu more\n", p->n - 10);
}

static int delete_files(rec_env *env, const rec_purge_plan *p, const char *dir,
			long long days, core_err *err)
{
	uint64_t t0 = core_now_mono_ns();
	size_t deleted = 0, skipped = 0, failed = 0;
	char note[96];
	int rc;

	/* Marked first: a crash between leaves a mark on a file still
	 * there, which reads as present (it is found before the mark is
	 * looked at), never a deleted payload called missing. */
	snprintf(note, sizeof(note), "{\"purged_at_ns\":%llu,\"retention_days\":%lld}",
		 (unsigned long long)core_now_wall_ns(), days);
	if ((rc = rec_payload_mark_purged(env, p->marks, p->nmarks, note, err)) ||
	    (rc = rec_flush(env, err)))
		return rc;
	for (size_t i = 0; i < p->n; i++) {
		char path[4200];
		struct stat st;

		rec_payload_file_path(dir, p->hex[i], path, sizeof(path));
		if (stat(path, &st))
			skipped++;
		else if (unlink(path))
			failed++;
		else
			deleted++;
	}
	printf("Purge completed in %.2fs:\n  Deleted: %zu\n  Skipped (not found): %zu\n",
	       (double)(core_now_mono_ns() - t0) / 1e9, deleted, skipped);
	if (failed)
		printf("  Failed: %zu\n", failed);
	return failed ? core_err_set(err, CORE_EIO, "%zu payload file(s) could not be deleted",
				     failed) : 0;
}

int cli_purge(int argc, char **argv)
{
	purge_args a = { 0 };
	core_settings *s = NULL;
	rec_purge_plan plan = { 0 };
	rec_env *env = NULL;
	core_err err = { 0 };
	char lmdb[4096], dir[4096];
	long long days = 90;
	bool aborted = false;
	int rc;

	if ((rc = parse(argc, argv, &a)))
		return rc < 0 ? CLI_OK : rc;
	if ((rc = resolve(&a, &s, lmdb, dir, &days, &err)) ||
	    (rc = rec_open(lmdb, a.dry_run ? REC_READONLY : 0, &env, &err)) ||
	    (rc = rec_purge_find(env, days, core_now_wall_ns(), &plan, &err)))
		goto out;
	if (!plan.n) {
		printf("No payloads older than %lld days found.\n", days);
		goto out;
	}
	if (a.dry_run) {
		dry_run(&plan, dir, days);
		goto out;
	}
	if (!a.yes && !confirm(plan.n, days)) {
		puts("Aborted.");
		aborted = true;
		goto out;
	}
	rc = delete_files(env, &plan, dir, days, &err);
out:
	rec_purge_plan_release(&plan);
	if (env && rec_close(env, rc ? NULL : &err) && !rc)
		rc = err.code;
	core_settings_free(s);
	if (rc)
		cli_error(&err);
	return rc || aborted ? CLI_ERROR : CLI_OK;
}
