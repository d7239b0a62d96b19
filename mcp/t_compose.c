/*
 * t_compose.c — the composer's tools (docs/mcp.md "Composing and running
 * pipelines"): ELSPETH's catalog tools (list_sources, list_transforms,
 * list_sinks, get_plugin_schema, as its web composer names them), a
 * settings text validated, and pipelines run under --root.
 *
 * A run is a child process, `elspeth run -s SETTINGS --execute --format
 * json`, in the root (the working directory), its output in a private
 * directory: the server stays one thread (mcp.h), a run outlives a slow
 * client, and the status is what the CLI printed. Children are reaped
 * by their pid only; when the server ends, a run still going gets SIGINT
 * (it stops as on ^C: checkpointed, resumable), then SIGKILL after
 * MCP__JOB_GRACE_S.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "mcp/mcp_internal.h"
#include "run/run.h"

#define MCP__JOB_GRACE_S 10
#define TAIL_MAX (256u << 10) /* of a run's output read for its status */

extern char **environ;

typedef struct mcp__job {
	char id[17];              /* 16 hex digits */
	pid_t pid;                /* 0 once reaped */
	int wstatus;              /* waitpid's, once reaped */
	bool cancelled;
	char settings[PATH_MAX];  /* as given to the child (under the root) */
	char out[PATH_MAX + 64], errf[PATH_MAX + 64];
	uint64_t started_ns;
} mcp__job;

/* ------------------------------------------------------------ catalog */

static int list(const char *type, mcp_result *r, core_err *err)
{
	return (r->value = plg_catalog_list(type)) ? 0 : mcp__oom(err);
}

int mcp__list_sources(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	(void)s, (void)a;
	return list("source", r, err);
}

int mcp__list_transforms(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	(void)s, (void)a;
	return list("transform", r, err);
}

int mcp__list_sinks(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	(void)s, (void)a;
	return list("sink", r, err);
}

int mcp__get_plugin_schema(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	char msg[2048];

	(void)s;
	r->value = plg_catalog_schema(mcp__arg_str(a, "plugin_type"), mcp__arg_str(a, "name"),
				      msg, sizeof(msg));
	return r->value ? 0 : mcp__answer_error(r, err, "%s", msg);
}

/* ----------------------------------------------------------- validate */

/* Loads and checks settings given as a path (under the root) or a text;
 * 0 with *ok false and msg set when they are refused (a validation
 * result, not a tool error). */
static int check(mcp_server *s, const char *path, const char *yaml, bool *ok, char *msg,
		 size_t cap, core_err *err)
{
	core_settings *st = NULL;
	dag_graph *g = NULL;
	core_err e = { 0 };
	bool outside = false;
	int rc;

	if (path && s->root && !run_path_inside(s->root, path))
		rc = core_err_set(&e, CORE_ECONFIG, "settings_path '%s' is outside the root %s",
				  path, s->root);
	else
		rc = path ? run_load(path, &st, &g, &e) : run_load_text("posted.yaml", yaml, &st, &g, &e);
	if (!rc && s->root)
		rc = run_confine(s->root, st, &outside, &e);
	if (!rc)
		rc = run_validate(st, g, &e);
	dag_free(g);
	core_settings_free(st);
	*ok = rc == 0;
	snprintf(msg, cap, "%s", rc ? e.msg : "");
	return rc == CORE_ENOMEM ? mcp__oom(err) : 0;
}

/* Exactly one of settings_path and settings_yaml. */
static int one_source(const json_t *a, const char **path, const char **yaml, mcp_result *r,
		      core_err *err)
{
	*path = mcp__arg_str(a, "settings_path");
	*yaml = mcp__arg_str(a, "settings_yaml");
	if (!*path == !*yaml)
		return mcp__answer_error(r, err, "give settings_path or settings_yaml, not both");
	return 1;
}

int mcp__validate_settings(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	const char *path, *yaml;
	char msg[sizeof(err->msg)];
	bool ok;
	int rc;

	if ((rc = one_source(a, &path, &yaml, r, err)) != 1)
		return rc;
	if ((rc = check(s, path, yaml, &ok, msg, sizeof(msg), err)))
		return rc;
	return (r->value = run_validation_json(ok, ok ? NULL : msg)) ? 0 : mcp__oom(err);
}

/* --------------------------------------------------------------- runs */

static int need_root(mcp_server *s, mcp_result *r, core_err *err)
{
	if (s->root)
		return 1;
	return mcp__answer_error(r, err, "running pipelines needs a root: start the server "
				 "as elspeth mcp --root DIR (pipelines and their files stay under it)");
}

static int write_file(const char *path, const char *text, core_err *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	size_t n = strlen(text), off = 0;

	if (fd < 0)
		return core_err_set(err, CORE_EIO, "%s: %s", path, strerror(errno));
	while (off < n) {
		ssize_t w = write(fd, text + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			close(fd);
			return core_err_set(err, CORE_EIO, "%s: %s", path, strerror(errno));
		}
		off += (size_t)w;
	}
	return close(fd) ? core_err_set(err, CORE_EIO, "%s: %s", path, strerror(errno)) : 0;
}

static int spawn(mcp_server *s, mcp__job *j, core_err *err)
{
	char *argv[] = { "elspeth", "run", "-s", j->settings, "--execute", "--format", "json",
			 NULL };
	posix_spawn_file_actions_t fa;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, j->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, j->errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	rc = posix_spawn(&j->pid, s->self, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		j->pid = 0;
		return core_err_set(err, CORE_EIO, "cannot start %s: %s", s->self, strerror(rc));
	}
	return 0;
}

int mcp__run_pipeline(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	const char *path, *yaml;
	char msg[sizeof(err->msg)], dir[PATH_MAX + 32];
	uint8_t rnd[8];
	mcp__job *j, *grown;
	bool ok;
	int rc;

	if ((rc = one_source(a, &path, &yaml, r, err)) != 1 || (rc = need_root(s, r, err)) != 1)
		return rc;
	if ((rc = check(s, path, yaml, &ok, msg, sizeof(msg), err)))
		return rc;
	if (!ok) {
		r->value = run_validation_json(false, msg);
		if (r->value)
			json_object_set_new(r->value, "run_id", json_null());
		return r->value ? 0 : mcp__oom(err);
	}
	if (!(grown = realloc(s->jobs, (s->njobs + 1) * sizeof(*s->jobs))))
		return mcp__oom(err);
	s->jobs = grown;
	j = &s->jobs[s->njobs];
	memset(j, 0, sizeof(*j));
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return core_err_set(err, CORE_EIO, "no random bytes for a run id");
	core_hex(rnd, sizeof(rnd), j->id);
	snprintf(dir, sizeof(dir), "%s/%s", s->jobdir, j->id);
	if (mkdir(dir, 0700))
		return core_err_set(err, CORE_EIO, "%s: %s", dir, strerror(errno));
	snprintf(j->out, sizeof(j->out), "%s/out.jsonl", dir);
	snprintf(j->errf, sizeof(j->errf), "%s/err.txt", dir);
	/* a posted text is kept in the root, beside the files it names
	 * (a template_file is relative to the settings' directory), so the
	 * run can be explained and resumed with -s */
	if (yaml) {
		snprintf(j->settings, sizeof(j->settings), "mcp-%s.yaml", j->id);
		rc = write_file(j->settings, yaml, err);
	} else {
		snprintf(j->settings, sizeof(j->settings), "%s", path);
	}
	j->started_ns = core_now_wall_ns();
	if (rc || (rc = spawn(s, j, err))) {
		unlink(j->out);
		unlink(j->errf);
		rmdir(dir); /* not counted: mcp__compose_close would not see it */
		return rc;
	}
	s->njobs++;
	r->value = json_pack("{s:s,s:s,s:s}", "run_id", j->id, "status", "running",
			     "settings", j->settings);
	return r->value ? 0 : mcp__oom(err);
}

static mcp__job *find_job(mcp_server *s, const char *id)
{
	for (size_t i = 0; id && i < s->njobs; i++)
		if (!strcmp(s->jobs[i].id, id))
			return &s->jobs[i];
	return NULL;
}

static void reap(mcp__job *j, int flags)
{
	int st;

	if (j->pid > 0 && waitpid(j->pid, &st, flags) == j->pid) {
		j->wstatus = st;
		j->pid = 0;
	}
}

/* The last `max` bytes of a file, NUL-terminated (NULL: unreadable). */
static char *tail(const char *path, size_t max)
{
	FILE *f = fopen(path, "rb");
	char *b;
	long size;
	size_t n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, size > (long)max ? size - (long)max : 0, SEEK_SET);
	if (!(b = malloc(max + 1))) {
		fclose(f);
		return NULL;
	}
	n = fread(b, 1, max, f);
	fclose(f);
	b[n] = '\0';
	return b;
}

/* What the CLI's JSON lines said last: the latest progress and the
 * run_completed event, if any. */
static void read_events(const char *path, json_t **progress, json_t **done)
{
	char *b = tail(path, TAIL_MAX), *line, *save = NULL;

	*progress = *done = NULL;
	for (line = b ? strtok_r(b, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
		json_t *ev = json_loads(line, 0, NULL);
		const char *kind = json_string_value(json_object_get(ev, "event"));

		if (kind && !strcmp(kind, "progress")) {
			json_decref(*progress);
			*progress = ev;
		} else if (kind && !strcmp(kind, "run_completed")) {
			json_decref(*done);
			*done = ev;
		} else {
			json_decref(ev);
		}
	}
	free(b);
}

/* The child's last error line (its stderr), or "". */
static void last_error(const char *path, char *out, size_t cap)
{
	char *b = tail(path, 4096), *nl;
	size_t n;

	out[0] = '\0';
	if (!b)
		return;
	n = strlen(b);
	while (n && (b[n - 1] == '\n' || b[n - 1] == '\r'))
		b[--n] = '\0';
	nl = strrchr(b, '\n');
	snprintf(out, cap, "%s", nl ? nl + 1 : b);
	out[core_utf8_check(out, strlen(out))] = '\0';
	free(b);
}

int mcp__get_pipeline_run(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	mcp__job *j = find_job(s, mcp__arg_str(a, "run_id"));
	json_t *progress, *done, *out;
	const char *status;
	char error[1024] = "";
	int code = -1;

	if (!j)
		return mcp__answer_error(r, err, "Run '%s' not found", mcp__arg_str(a, "run_id"));
	reap(j, WNOHANG);
	read_events(j->out, &progress, &done);
	if (j->pid)
		status = "running";
	else {
		code = WIFEXITED(j->wstatus) ? WEXITSTATUS(j->wstatus) : 128 + WTERMSIG(j->wstatus);
		status = done ? json_string_value(json_object_get(done, "status")) : NULL;
		if (!status || code == 3 || j->cancelled)
			status = j->cancelled ? "cancelled" : code == 3 ? "interrupted" : "failed";
		if (code)
			last_error(j->errf, error, sizeof(error));
	}
	out = json_pack("{s:s,s:s,s:s,s:I,s:I,s:o,s:o,s:o}", "run_id", j->id, "status", status,
		"settings", j->settings,
		"rows_processed", (json_int_t)json_integer_value(json_object_get(
			done ? done : progress, done ? "total_rows" : "rows_processed")),
		"rows_failed", (json_int_t)json_integer_value(json_object_get(
			done ? done : progress, done ? "failed" : "rows_failed")),
		"landscape_run_id", done && json_object_get(done, "run_id") ?
			json_incref(json_object_get(done, "run_id")) : json_null(),
		"exit_code", code >= 0 ? json_integer(code) : json_null(),
		"error", error[0] ? json_string(error) : json_null());
	json_decref(progress);
	json_decref(done);
	return (r->value = out) ? 0 : mcp__oom(err);
}

int mcp__cancel_pipeline_run(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	mcp__job *j = find_job(s, mcp__arg_str(a, "run_id"));

	if (!j)
		return mcp__answer_error(r, err, "Run '%s' not found", mcp__arg_str(a, "run_id"));
	reap(j, WNOHANG);
	if (j->pid) {
		j->cancelled = true;
		kill(j->pid, SIGINT); /* as ^C: checkpointed, resumable */
	}
	return mcp__get_pipeline_run(s, a, r, err);
}

/* ------------------------------------------------------------- life */

int mcp__compose_open(mcp_server *s, core_err *err)
{
	char tmpl[] = "/tmp/elspeth-mcp-XXXXXX", self[PATH_MAX];
	ssize_t n;

	if (!s->o.root)
		return 0;
	if (!(s->root = realpath(s->o.root, NULL)))
		return core_err_set(err, CORE_ECONFIG, "--root %s: %s", s->o.root, strerror(errno));
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) < 0)
		return core_err_set(err, CORE_EIO, "/proc/self/exe: %s", strerror(errno));
	self[n] = '\0';
	if (!(s->self = strdup(self)))
		return mcp__oom(err);
	if (!mkdtemp(tmpl))
		return core_err_set(err, CORE_EIO, "a directory for runs' output: %s", strerror(errno));
	return (s->jobdir = strdup(tmpl)) ? 0 : mcp__oom(err);
}

static void remove_dir(const char *dir, const mcp__job *jobs, size_t n)
{
	char p[PATH_MAX + 32];

	for (size_t i = 0; i < n; i++) {
		unlink(jobs[i].out);
		unlink(jobs[i].errf);
		snprintf(p, sizeof(p), "%s/%s", dir, jobs[i].id);
		rmdir(p);
	}
	rmdir(dir);
}

void mcp__compose_close(mcp_server *s)
{
	struct timespec nap = { 0, 50 * 1000000L };

	for (size_t i = 0; i < s->njobs; i++) {
		mcp__job *j = &s->jobs[i];

		reap(j, WNOHANG);
		if (!j->pid)
			continue;
		kill(j->pid, SIGINT);
		for (int t = 0; j->pid && t < MCP__JOB_GRACE_S * 20; t++) {
			nanosleep(&nap, NULL);
			reap(j, WNOHANG);
		}
		if (j->pid) {
			kill(j->pid, SIGKILL);
			reap(j, 0);
		}
	}
	if (s->jobdir)
		remove_dir(s->jobdir, s->jobs, s->njobs);
	free(s->jobs);
	free(s->jobdir);
	free(s->self);
	free(s->root);
}
