/*
 * map.c — the size of the memory map.
 *
 * LMDB lets mdb_env_set_mapsize() run only while no transaction of this
 * process is active on the env, and does not check it. Every transaction
 * we begin therefore holds env->map_lock for reading until it ends, and a
 * size change holds it for writing:
 *   - the writer doubles the map when a commit hits MDB_MAP_FULL;
 *   - any txn begin that gets MDB_MAP_RESIZED (another process grew the
 *     file past our map) adopts the size recorded in the file.
 * Consequence: a thread that holds a rec_txn on a writing env must not wait
 * for the writer (rec_flush, rec_write_sync, rec_close, a full queue): the
 * writer may need the write lock to grow the map. rec_read_begin on a
 * writing env is for tests and tools.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <sys/stat.h>

#include "recorder/recorder_internal.h"

#define MAPSIZE_ALIGN ((size_t)64 << 10)
#define RESIZE_TRIES 100

int rec__txn_begin(rec_env *env, unsigned flags, MDB_txn **out)
{
	int rc = 0, i;

	for (i = 0; i < RESIZE_TRIES; i++) {
		pthread_rwlock_rdlock(&env->map_lock);
		rc = mdb_txn_begin(env->mdb, NULL, flags, out);
		if (rc == 0)
			return 0;
		pthread_rwlock_unlock(&env->map_lock);
		if (rc != MDB_MAP_RESIZED)
			return rc;
		rc = rec__map_adopt(env);
		if (rc)
			return rc;
	}
	return rc;
}

void rec__txn_done(rec_env *env)
{
	pthread_rwlock_unlock(&env->map_lock);
}

int rec__map_adopt(rec_env *env)
{
	int rc;

	pthread_rwlock_wrlock(&env->map_lock);
	rc = mdb_env_set_mapsize(env->mdb, 0);
	pthread_rwlock_unlock(&env->map_lock);
	return rc;
}

int rec__map_grow(rec_env *env)
{
	MDB_envinfo info;
	int rc;

	pthread_rwlock_wrlock(&env->map_lock);
	rc = mdb_env_info(env->mdb, &info);
	if (rc == 0)
		rc = mdb_env_set_mapsize(env->mdb, info.me_mapsize * 2);
	pthread_rwlock_unlock(&env->map_lock);
	return rc;
}

/* ELSPETH_LMDB_MAPSIZE: bytes with an optional K, M or G suffix (tests use
 * a tiny map to exercise growth); default 64 MiB. */
size_t rec__mapsize_initial(void)
{
	const char *s = getenv(REC_MAPSIZE_ENV);
	unsigned long long v;
	char *end;

	if (!s || !*s)
		return REC_MAPSIZE_DEFAULT;
	v = strtoull(s, &end, 10);
	switch (*end) {
	case 'g': case 'G': v <<= 10; /* fall through */
	case 'm': case 'M': v <<= 10; /* fall through */
	case 'k': case 'K': v <<= 10; end++; break;
	default: break;
	}
	if (*end || v == 0)
		return REC_MAPSIZE_DEFAULT;
	if (v < MAPSIZE_ALIGN)
		v = MAPSIZE_ALIGN;
	return (size_t)(v + MAPSIZE_ALIGN - 1) / MAPSIZE_ALIGN * MAPSIZE_ALIGN;
}


/* LMDB does not say where its map is (mdb_env_info's me_mapaddr is set
 * only for MDB_FIXEDMAP): /proc/self/maps does, as the read-only shared
 * mapping of the environment's data.mdb (found by its inode). */
void rec__map_drop(rec_env *env)
{
	char file[PATH_MAX + 16], line[PATH_MAX + 128];
	unsigned long lo, hi, ino;
	struct stat st;
	FILE *f;

	if ((size_t)snprintf(file, sizeof(file), "%s/data.mdb", env->path) >= sizeof(file) ||
	    stat(file, &st) || !(f = fopen("/proc/self/maps", "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		char perms[8];

		/* lo-hi perms offset dev inode path */
		if (sscanf(line, "%lx-%lx %7s %*x %*s %lu", &lo, &hi, perms, &ino) == 4 &&
		    ino == (unsigned long)st.st_ino && !strcmp(perms, "r--s") &&
		    strstr(line, "/data.mdb")) {
			madvise((void *)lo, hi - lo, MADV_DONTNEED);
			break;
		}
	}
	fclose(f);
}
