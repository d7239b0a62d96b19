/*
 * env.c — opening and closing an environment.
 *
 * Writer: MDB_NOMETASYNC (each group commit fdatasyncs its data pages but
 * not the meta page; integrity survives an OS crash, which may undo only
 * the last commit; rec_flush and rec_close sync fully — ADR 0004), MDB_NOTLS (read transactions are
 * not tied to threads). Reader: MDB_RDONLY | MDB_NOTLS, with the map size
 * recorded in the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder/recorder_internal.h"

#define MAXDBS (REC_TABLE_LAST + 8)
#define FILE_MODE 0664

static int no_trail(const char *path, core_err *err)
{
	return core_err_set(err, CORE_EIO,
		"no audit trail at %s — run a pipeline first or pass --database",
		path);
}

/* READONLY: the directory and its data file must exist. */
static int trail_check(const char *path, core_err *err)
{
	char data[PATH_MAX + 16];
	struct stat st;

	if (stat(path, &st) != 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return no_trail(path, err);
		return core_err_set(err, CORE_EIO, "audit trail %s: %s", path,
				    strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return core_err_set(err, CORE_EIO,
			"audit trail %s is not a directory (an audit trail is "
			"a directory holding data.mdb)", path);
	snprintf(data, sizeof(data), "%s/data.mdb", path);
	if (stat(data, &st) != 0)
		return no_trail(path, err);
	return 0;
}

/* Writer: a new environment gets the initial map size; an existing one
 * keeps the size recorded in it, raised to the initial size. */
static int mapsize_setup(rec_env *env, bool before_open)
{
	size_t want = rec__mapsize_initial();
	MDB_envinfo info;
	int rc;

	if (before_open)
		return mdb_env_set_mapsize(env->mdb, want);
	rc = mdb_env_info(env->mdb, &info);
	if (rc || info.me_mapsize >= want)
		return rc;
	return mdb_env_set_mapsize(env->mdb, want);
}

static bool data_file_exists(const char *path)
{
	char data[PATH_MAX + 16];
	struct stat st;

	snprintf(data, sizeof(data), "%s/data.mdb", path);
	return stat(data, &st) == 0;
}

static int lmdb_open(rec_env *env, core_err *err)
{
	bool ro = env->flags & REC_READONLY, fresh;
	unsigned flags = MDB_NOTLS | (ro ? MDB_RDONLY : MDB_NOMETASYNC);
	int rc, dead;

	rc = mdb_env_create(&env->mdb);
	if (rc)
		return rec__lmdb_err(err, rc, env, "creating the environment");
	fresh = !ro && !data_file_exists(env->path);
	if ((rc = mdb_env_set_maxdbs(env->mdb, MAXDBS)) ||
	    (rc = mdb_env_set_maxreaders(env->mdb, REC_MAXREADERS)) ||
	    (fresh && (rc = mapsize_setup(env, true))))
		return rec__lmdb_err(err, rc, env, "configuring the environment");
	rc = mdb_env_open(env->mdb, env->path, flags, FILE_MODE);
	if (rc == ENOENT && ro)
		return no_trail(env->path, err);
	if (rc)
		return rec__lmdb_err(err, rc, env, "opening the environment");
	if (ro)
		return 0;
	/* Clear reader slots of killed processes (they pin old pages). */
	mdb_reader_check(env->mdb, &dead);
	rc = fresh ? 0 : mapsize_setup(env, false);
	return rc ? rec__lmdb_err(err, rc, env, "setting the map size") : 0;
}

static int env_alloc(const char *path, int flags, rec_env **out,
		     core_err *err)
{
	rec_env *env;

	if (!path || !*path || strlen(path) >= PATH_MAX)
		return core_err_set(err, CORE_ECONFIG,
				    "audit trail path is empty or too long");
	env = calloc(1, sizeof(*env));
	if (!env)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (pthread_rwlock_init(&env->map_lock, NULL) != 0) {
		free(env);
		return core_err_set(err, CORE_ENOMEM,
				    "cannot create a lock: out of resources");
	}
	memcpy(env->path, path, strlen(path) + 1);
	env->flags = flags;
	*out = env;
	return 0;
}

static void env_free(rec_env *env)
{
	if (env->mdb)
		mdb_env_close(env->mdb);
	if (env->registered)
		rec__registry_remove(env);
	pthread_rwlock_destroy(&env->map_lock);
	free(env->payload_dir);
	free(env);
}

int rec_open(const char *path, int flags, rec_env **out, core_err *err)
{
	rec_env *env = NULL;
	int rc;

	*out = NULL;
	rec__strerror_register(); /* before any LMDB code can escape */
	rc = env_alloc(path, flags, &env, err);
	if (rc)
		return rc;
	rc = (flags & REC_READONLY) ? trail_check(path, err)
				    : core_mkdir_p(path, err) ?
				      core_err_prefix(err, "audit trail %s", path) : 0;
	if (rc)
		goto out_free;
	if ((rc = rec__registry_add(env, err)) ||
	    (rc = lmdb_open(env, err)) ||
	    (rc = rec__tables_open(env, err)))
		goto out_free;
	if (!(flags & REC_READONLY) && (rc = rec__writer_start(env, err)))
		goto out_free;
	*out = env;
	return 0;

out_free:
	env_free(env);
	return rc;
}

int rec_close(rec_env *env, core_err *err)
{
	int rc = 0;

	if (!env)
		return 0;
	if (env->has_writer) {
		/* Open row stories (a run that did not end) are kept. */
		rec_story_flush(env);
		rec__writer_stop(env);
		/* Make what was committed durable, even after an error. */
		rc = mdb_env_sync(env->mdb, 1);
		if (env->werr) {
			rc = env->werr;
			if (err)
				*err = env->werr_msg;
		} else if (rc) {
			rec__lmdb_err(err, rc, env, "fsync at close");
		}
	}
	env_free(env);
	return rc;
}

int rec_run_lock(rec_env *env, uint64_t run, int *fd, core_err *err)
{
	char path[PATH_MAX + 32], pid[32] = "";
	ssize_t n;

	snprintf(path, sizeof(path), "%s/run-%llu.lock", env->path,
		 (unsigned long long)run);
	/* Read-only (a dry run): a missing lock file means nobody runs it,
	 * and nothing is created. */
	*fd = open(path, (env->flags & REC_READONLY ? O_RDONLY : O_RDWR | O_CREAT) |
		   O_CLOEXEC, 0644);
	if (*fd < 0 && errno == ENOENT && (env->flags & REC_READONLY))
		return 0;
	if (*fd < 0)
		return core_err_set(err, CORE_EIO, "cannot open %s: %s", path,
				    strerror(errno));
	if (flock(*fd, LOCK_EX | LOCK_NB)) {
		int e = errno;

		n = pread(*fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		close(*fd);
		*fd = -1;
		if (e == EWOULDBLOCK)
			return core_err_set(err, CORE_EDATA,
				"run %llu is being run by another process (pid %s): wait for "
				"it to end, or stop it, before resuming",
				(unsigned long long)run, pid[0] ? pid : "?");
		return core_err_set(err, CORE_EIO, "cannot lock %s: %s", path, strerror(e));
	}
	if (env->flags & REC_READONLY)
		return 0;
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	if (ftruncate(*fd, 0) == 0)
		n = pwrite(*fd, pid, strlen(pid), 0);
	(void)n;
	return 0;
}

const char *rec_env_path(const rec_env *env)
{
	return env->path;
}
