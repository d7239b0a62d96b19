/*
 * shard.c — one shard of a plan, made ready to run (run.h; the plan and
 * its files: docs/scale-out.md, ADR 0020).
 *
 * Opening a shard decides what its run is from its own Landscape: none
 * yet (a new run), completed (nothing to do), or unfinished — finished
 * from its checkpoint, or, when it stopped before its first one, started
 * again in a cleared Landscape. It holds the shard's lock while open, so
 * a second copy of the same shard (a scheduler's retry while the first
 * still runs) is refused instead of run twice.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder/recorder.h"
#include "run/run.h"
#include "shard/shard.h"

struct run_shard {
	run_shard_info info;
	shd_manifest *m;
	int lock_fd;
	eng_shard eng;
	char landscape[4096];
	char resume[32];
};

/* Removes a shard's Landscape that a run left before its first
 * checkpoint (LMDB's files and the run locks beside them: regular files
 * only, nothing below) and the directory itself. */
static int clear_dir(const char *dir, core_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[4096];
	int rc = 0;

	if (!d)
		return errno == ENOENT ? 0 : core_err_set(err, CORE_EIO,
			"cannot read %s: %s", dir, strerror(errno));
	while (!rc && (e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= (int)sizeof(p))
			rc = core_err_set(err, CORE_ECONFIG, "%s: path too long", dir);
		else if (!lstat(p, &st) && S_ISREG(st.st_mode) && unlink(p))
			rc = core_err_set(err, CORE_EIO, "cannot remove %s: %s", p,
					  strerror(errno));
	}
	closedir(d);
	if (!rc && rmdir(dir) && errno != ENOENT)
		rc = core_err_set(err, CORE_EIO, "cannot remove %s: %s", dir,
				  strerror(errno));
	return rc;
}

static int lock_shard(run_shard *s, uint32_t k, core_err *err)
{
	char path[4096];
	int rc;

	if ((rc = shd_path(s->m, k, "lock", path, sizeof(path), err)))
		return rc;
	if ((s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) < 0)
		return core_err_set(err, CORE_EIO, "cannot open %s: %s", path, strerror(errno));
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB))
		return core_err_set(err, CORE_EIO,
			"shard %u is being run by another process (it holds %s); "
			"nothing was done", k, path);
	return 0;
}

/* What the shard's Landscape says (its latest run, which must be of this
 * plan). */
static int read_state(run_shard *s, uint32_t k, core_err *err)
{
	json_t *last = NULL;
	const char *status;
	int rc = shd_shard_run(s->m, k, NULL, &last, err);

	if (rc)
		return rc;
	if (!last) {
		s->info.state = RUN_SHARD_NEW;
		return 0;
	}
	status = json_string_value(json_object_get(last, "status"));
	s->info.run_id = (uint64_t)json_integer_value(json_object_get(last, "run_id"));
	s->info.state = status && !strcmp(status, "completed") ? RUN_SHARD_COMPLETED :
			RUN_SHARD_UNFINISHED;
	json_decref(last);
	return 0;
}

/* An unfinished run with a checkpoint is finished; one stopped before
 * its first checkpoint left nothing a resume can use: it starts again. */
static int resume_or_restart(run_shard *s, core_err *err)
{
	Elspeth__Checkpoint *ck = NULL;
	core_err local = { 0 };
	rec_env *rec;
	bool usable = true;

	/* a Landscape or checkpoint that cannot be read is the resume's to
	 * report (it names what), not a reason to start again */
	if (!rec_open(s->landscape, REC_READONLY, &rec, &local)) {
		if (rec_ckpt_load(rec, s->info.run_id, &ck, &local) == REC_NOTFOUND)
			usable = false;
		rec_ckpt_free(ck);
		rec_close(rec, NULL);
	}
	if (usable) {
		snprintf(s->resume, sizeof(s->resume), "%llu",
			 (unsigned long long)s->info.run_id);
		s->info.resume = s->resume;
		return 0;
	}
	return clear_dir(s->landscape, err);
}

int run_shard_open(dag_graph *g, const char *manifest, uint32_t k, run_shard **out,
		   core_err *err)
{
	run_shard *s = calloc(1, sizeof(*s));
	char parts[4096];
	int rc;

	*out = NULL;
	if (!s)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	s->lock_fd = -1;
	if ((rc = shd_load(manifest, &s->m, err)))
		goto fail;
	if (k >= s->m->nshards) {
		rc = core_err_set(err, CORE_ECONFIG, "shard %u: %s has shards 0..%u", k,
				  s->m->path, s->m->nshards - 1);
		goto fail;
	}
	s->info.index = k;
	s->info.nshards = s->m->nshards;
	s->info.manifest = s->m->path;
	s->info.first_row = s->m->ranges[k].first_row;
	s->info.last_row = s->m->ranges[k].last_row;
	s->info.landscape = s->landscape;
	if ((rc = shd_check_settings(s->m, g, err)) ||
	    (rc = shd_path(s->m, k, "landscape", s->landscape, sizeof(s->landscape), err)) ||
	    (rc = shd_path(s->m, k, "parts", parts, sizeof(parts), err)) ||
	    (rc = core_mkdir_p(parts, err)) || (rc = lock_shard(s, k, err)) ||
	    (rc = read_state(s, k, err)))
		goto fail;
	if (s->info.state != RUN_SHARD_COMPLETED) {
		if ((rc = shd_check_source(s->m, k, err)) ||
		    (rc = plg_env_set_part_dir(&g->env, parts, err)))
			goto fail;
		plg_env_set_capacity_share(&g->env, shd_capacity_share(s->m));
		shd_engine_shard(s->m, k, &s->eng);
		s->info.shard = &s->eng;
	}
	if (s->info.state == RUN_SHARD_UNFINISHED && (rc = resume_or_restart(s, err)))
		goto fail;
	*out = s;
	return 0;
fail:
	run_shard_close(s);
	return rc;
}

const run_shard_info *run_shard_get(const run_shard *s)
{
	return &s->info;
}

void run_shard_close(run_shard *s)
{
	if (!s)
		return;
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	shd_free(s->m);
	free(s);
}
