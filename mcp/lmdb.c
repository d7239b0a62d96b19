/*
 * lmdb.c — serving an LMDB Landscape: the tools read SQL, so the trail is
 * first exported (sqlt_export: every run, with its payloads), in a child
 * process (rec_read_isolated: a damaged trail is refused, never a crash
 * of the server), to a SQLite file in a private directory (mkdtemp, mode
 * 0700) under $TMPDIR. The export writes it with a rollback journal (a
 * read-only connection needs no -wal or -shm beside it); it is opened
 * read-only and then removed with its directory at once: the open
 * connection keeps reading it, nobody else can, and nothing is left
 * behind when the process ends, however it ends.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/mcp_internal.h"
#include "recorder/recorder.h"
#include "sqltrail/sqltrail.h"

/* In the trail reader's child (rec_read_isolated): a damaged page that
 * faults liblmdb ends the child, not the server. */
static int export_fn(rec_env *env, void *ctx, uint64_t *run, core_buf *out, core_err *err)
{
	sqlt_opts o = { .payloads = true };

	(void)run, (void)out;
	return sqlt_export(env, 0, ctx, &o, err);
}

static int export(const char *dir, const char *file, core_err *err)
{
	uint64_t run;
	int rc = rec_read_isolated(dir, "the exporter", export_fn, (void *)file, 1 << 20,
				   &run, NULL, err);

	if (rc)
		core_err_prefix(err, "exporting %s to SQL", dir);
	return rc;
}

int mcp__snapshot(mcp_server *s, const char *shown, mcp__fill_fn fill, const char *src,
		  core_err *err)
{
	const char *tmp = getenv("TMPDIR");
	char tdir[4096], file[4200];
	int rc;

	if ((size_t)snprintf(tdir, sizeof(tdir), "%s/elspeth-mcp-XXXXXX",
			     tmp && *tmp ? tmp : "/tmp") >= sizeof(tdir))
		return core_err_set(err, CORE_EIO, "TMPDIR is too long");
	if (!mkdtemp(tdir))
		return core_err_set(err, CORE_EIO, "cannot make a temporary directory in "
				    "%s for the exported trail: %s", tmp && *tmp ? tmp : "/tmp",
				    strerror(errno));
	snprintf(file, sizeof(file), "%s/trail.sqlite", tdir);
	rc = fill(src, file, err);
	if (!rc)
		rc = mcp__open_sqlite(s, file, shown, err);
	/* Gone from the file system now; the connection reads on. */
	unlink(file);
	rmdir(tdir);
	return rc;
}

int mcp__open_lmdb(mcp_server *s, const char *dir, core_err *err)
{
	uint64_t t0 = core_now_mono_ns();
	int rc = mcp__snapshot(s, dir, export, dir, err);

	if (!rc)
		fprintf(s->log, "elspeth mcp: exported %s to SQL in %.2f s\n", dir,
			(double)(core_now_mono_ns() - t0) / 1e9);
	return rc;
}
