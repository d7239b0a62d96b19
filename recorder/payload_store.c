/*
 * payload_store.c — payload_store.backend: filesystem (ADR 0028). With it
 * a row's payloads are files DIR/ab/abcdef... (ELSPETH's
 * FilesystemPayloadStore layout, content-addressed by SHA-256 hex) and the
 * row's story keeps only the hashes its records name. The directories a
 * Landscape's runs used are listed in REC_META "payload_dirs" (one
 * absolute path per line), so every reader finds the files without being
 * told where; a payload `elspeth purge` deleted is marked in REC_META
 * ("purged:" + the run + its 32-byte hash), so explain and verify can tell "purged,
 * hash kept" from "missing".
 *
 * Durability without an fsync per payload on the engine's threads: a
 * worker writes the file under a temporary name and renames it into place,
 * then marks the environment's payloads dirty; the writer thread, before
 * it commits a transaction (which may name those hashes), makes them
 * durable with one syncfs() of their filesystem (rec__payload_files_sync).
 * A crash before that commit leaves files no record names; a file a crash
 * cut short has the wrong size and is written again when next needed.
 */
#define _GNU_SOURCE /* syncfs */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder/recorder_internal.h"

#define DIRS_KEY "payload_dirs"
#define PURGED_PREFIX "purged:"

static int mkdirs(const char *path)
{
	char d[PATH_MAX];

	if (snprintf(d, sizeof(d), "%s", path) >= (int)sizeof(d))
		return ENAMETOOLONG;
	for (char *p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(d, 0777) && errno != EEXIST)
			return errno;
		*p = '/';
	}
	return mkdir(d, 0777) && errno != EEXIST ? errno : 0;
}

static void meta_key(rec_key *k, const char *text)
{
	k->len = strlen(text);
	memcpy(k->b, text, k->len);
}

typedef struct dirs_add {
	const char *dir;
} dirs_add;

/* Appends the directory to "payload_dirs" unless it is listed. */
static int add_dir(void *ctx, rec_env *env, void *txn)
{
	dirs_add *a = ctx;
	MDB_val key, val;
	rec_key k;
	char *list;
	size_t n = 0, dl = strlen(a->dir);
	int rc;

	meta_key(&k, DIRS_KEY);
	key.mv_data = k.b;
	key.mv_size = k.len;
	rc = mdb_get(txn, env->dbi[REC_META], &key, &val);
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	if (!rc) {
		n = val.mv_size;
		for (const char *p = val.mv_data, *e = p + n; p < e;) {
			const char *nl = memchr(p, '\n', (size_t)(e - p));
			size_t l = nl ? (size_t)(nl - p) : (size_t)(e - p);

			if (l == dl && !memcmp(p, a->dir, dl))
				return 0;
			p += l + 1;
		}
	}
	if (!(list = malloc(n + dl + 1)))
		return CORE_ENOMEM;
	if (n)
		memcpy(list, val.mv_data, n);
	memcpy(list + n, a->dir, dl);
	list[n + dl] = '\n';
	rc = rec_txn_put(env, txn, REC_META, &k, list, n + dl + 1);
	free(list);
	return rc;
}

int rec_payload_store_open(rec_env *env, const char *dir, core_err *err)
{
	char abs[PATH_MAX];
	dirs_add a = { abs };
	struct stat st;
	int rc;


	if ((rc = mkdirs(dir)) || !realpath(dir, abs))
		return core_err_set(err, CORE_EIO, "payload_store.base_path %s: %s", dir,
				    strerror(rc ? rc : errno));
	if (stat(abs, &st) || !S_ISDIR(st.st_mode))
		return core_err_set(err, CORE_EIO, "payload_store.base_path %s: not a "
				    "directory", dir);
	if ((rc = rec_write_sync(env, add_dir, &a, err)))
		return rc;
	free(env->payload_dir);
	if (!(env->payload_dir = strdup(abs)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return 0;
}

void rec_payload_file_path(const char *dir, const char *hex, char *out, size_t cap)
{
	if ((size_t)snprintf(out, cap, "%s/%.2s/%s", dir, hex, hex) >= cap && cap)
		out[0] = '\0';
}

int rec__payload_file_put(rec_env *env, const char *hex, const void *data,
			  size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16], sub[PATH_MAX];
	struct stat st;
	int fd, rc = 0;

	rec_payload_file_path(env->payload_dir, hex, path, sizeof(path));
	if (!stat(path, &st) && (size_t)st.st_size == len)
		return 0; /* content-addressed: stored once */
	if ((size_t)snprintf(sub, sizeof(sub), "%s/%.2s", env->payload_dir, hex) >= sizeof(sub) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp))
		return CORE_EIO;
	/* The two-letter folder is made when the first file needs it. */
	if ((fd = mkstemp(tmp)) < 0 && errno == ENOENT &&
	    (!mkdir(sub, 0777) || errno == EEXIST)) {
		memcpy(tmp + strlen(tmp) - 6, "XXXXXX", 6);
		fd = mkstemp(tmp);
	}
	if (fd < 0)
		return CORE_EIO;
	for (size_t off = 0; off < len && !rc;) {
		ssize_t w = write(fd, (const char *)data + off, len - off);

		if (w < 0 && errno != EINTR)
			rc = errno == ENOSPC ? ENOSPC : CORE_EIO;
		else if (w > 0)
			off += (size_t)w;
	}
	close(fd);
	if (!rc && rename(tmp, path))
		rc = CORE_EIO;
	if (rc) {
		unlink(tmp);
		return rc;
	}
	atomic_store(&env->payloads_dirty, true); /* after the rename */
	return 0;
}

int rec__payload_files_sync(rec_env *env)
{
	int fd, rc = 0;

	if (!env->payload_dir || !atomic_exchange(&env->payloads_dirty, false))
		return 0;
	fd = open(env->payload_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || syncfs(fd))
		rc = EIO;
	if (fd >= 0)
		close(fd);
	if (rc)
		atomic_store(&env->payloads_dirty, true);
	return rc;
}

/* The directories listed in REC_META, each tried in turn. */
int rec__payload_file_get(rec_txn *t, const char *hex, const void **data,
			  size_t *len)
{
	const void *v;
	size_t vl;
	rec_key k;

	meta_key(&k, DIRS_KEY);
	if (rec_get(t, REC_META, &k, &v, &vl))
		return REC_NOTFOUND;
	for (const char *p = v, *e = p + vl; p < e;) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(e - p);
		char dir[PATH_MAX], path[PATH_MAX];
		struct stat st;
		FILE *f;
		char *buf;

		if ((size_t)snprintf(dir, sizeof(dir), "%.*s", (int)l, p) >= sizeof(dir))
			continue;
		p += l + 1;
		rec_payload_file_path(dir, hex, path, sizeof(path));
		if (stat(path, &st) || !(f = fopen(path, "rb")))
			continue;
		buf = malloc((size_t)st.st_size + 1);
		if (!buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
			free(buf);
			fclose(f);
			return CORE_EIO;
		}
		fclose(f);
		if (rec__txn_keep(t, buf))
			return CORE_ENOMEM;
		*data = buf;
		*len = (size_t)st.st_size;
		return 0;
	}
	return REC_NOTFOUND;
}

/* "purged:" run(8, big-endian) sha256(32) */
static int purged_key(rec_key *k, uint64_t run, const char *hex)
{
	size_t n = strlen(PURGED_PREFIX);

	memcpy(k->b, PURGED_PREFIX, n);
	for (int i = 0; i < 8; i++)
		k->b[n + (size_t)i] = (uint8_t)(run >> (56 - 8 * i));
	if (!rec__unhex32(hex, true, k->b + n + 8))
		return CORE_EDATA;
	k->len = n + 8 + CORE_SHA256_LEN;
	return 0;
}

bool rec_payload_purged(rec_txn *t, uint64_t run, const char *hex)
{
	const void *v;
	size_t vl;
	rec_key k;

	return hex && !purged_key(&k, run, hex) && !rec_get(t, REC_META, &k, &v, &vl);
}

typedef struct marks {
	const rec_purge_mark *m;
	size_t n;
	const char *what;
} marks;

static int put_marks(void *ctx, rec_env *env, void *txn)
{
	marks *m = ctx;
	int rc = 0;

	for (size_t i = 0; i < m->n && !rc; i++) {
		rec_key k;

		if (!(rc = purged_key(&k, m->m[i].run, m->m[i].hex)))
			rc = rec_txn_put(env, txn, REC_META, &k, m->what, strlen(m->what));
	}
	return rc;
}

int rec_payload_mark_purged(rec_env *env, const rec_purge_mark *mk, size_t n,
			    const char *what, core_err *err)
{
	marks m = { mk, n, what };

	return rec_write_sync(env, put_marks, &m, err);
}
