/* isolated.c — a whole answer read out of the trail in a child process
 * (core_isolate), as verify, export, explain, report and the MCP server's
 * export do: a damaged page that makes liblmdb fault ends the child, and
 * the caller reports the damage with the trail's path instead of
 * crashing; a damaged value (a seal that does not match, rec_err_damaged)
 * is reported the same way, as CORE_EDATA.
 *
 * The child's answer on the pipe: "OK RUN\n" and the bytes fn made, or
 * "ERR RUN CODE\n" and the error message.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder/recorder.h"

typedef struct trail_job {
	const char *path;
	rec_read_fn fn;
	void *ctx;
} trail_job;

static void trail_child(void *ctx, int fd)
{
	trail_job *j = ctx;
	core_buf out = { 0 };
	core_err err = { 0 };
	uint64_t run = 0;
	rec_env *env;
	char head[96];
	int rc = rec_open(j->path, REC_READONLY, &env, &err);

	if (!rc) {
		rc = j->fn(env, j->ctx, &run, &out, &err);
		rec_close(env, NULL);
	}
	if (rc) {
		snprintf(head, sizeof(head), "ERR %" PRIu64 " %d\n", run,
			 err.code ? err.code : rc);
		core_write_all(fd, head, strlen(head));
		core_write_all(fd, err.msg, strlen(err.msg));
	} else {
		snprintf(head, sizeof(head), "OK %" PRIu64 "\n", run);
		core_write_all(fd, head, strlen(head));
		if (out.len)
			core_write_all(fd, out.data, out.len);
	}
	_exit(0);
}

int rec_read_isolated(const char *path, const char *who, rec_read_fn fn, void *ctx,
		   size_t max, uint64_t *run, core_buf *out, core_err *err)
{
	trail_job j = { path, fn, ctx };
	core_buf b = { 0 };
	core_isolated how;
	unsigned long long id = 0;
	int code = 0, n = 0, rc;
	const char *nl;

	*run = 0;
	rc = core_isolate(trail_child, &j, 0, max + 128, &b, &how, err);
	if (rc)
		goto out;
	if (how.signal) {
		rc = core_err_set(err, CORE_EDATA, "the trail is damaged: reading it stopped "
				  "%s (signal %d, %s): a page of %s cannot be read", who,
				  how.signal, strsignal(how.signal), path);
		goto out;
	}
	nl = b.len ? memchr(b.data, '\n', b.len) : NULL;
	if (how.too_big) {
		rc = core_err_set(err, CORE_ENOMEM, "%s: the answer is larger than %zu MiB",
				  who, max >> 20);
	} else if (nl && sscanf(b.data, "OK %llu%n", &id, &n) == 1 && b.data + n == nl) {
		*run = id;
		if (out)
			rc = core_buf_append(out, nl + 1, b.len - (size_t)(nl + 1 - b.data));
	} else if (nl && sscanf(b.data, "ERR %llu %d%n", &id, &code, &n) == 2 &&
		   b.data + n == nl && code) {
		*run = id;
		core_err_set(err, code, "%.*s", (int)(b.len - (size_t)(nl + 1 - b.data)), nl + 1);
		rc = rec_err_damaged(code) ? CORE_EDATA : code;
		if (rc == CORE_EDATA && !strstr(err->msg, "damaged"))
			core_err_prefix(err, "the trail is damaged");
	} else {
		rc = core_err_set(err, CORE_EIO, "%s ended without an answer (exit %d)", who,
				  how.status);
	}
out:
	core_buf_release(&b);
	return rc;
}
