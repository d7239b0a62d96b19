/* test_recorder_util.h — helpers shared by the recorder tests. */
#ifndef TEST_RECORDER_UTIL_H
#define TEST_RECORDER_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "recorder/recorder.h"

/* One .timeout for every test of a binary: Criterion 2.4.1 leaks 48 bytes
 * in its runner (LeakSanitizer report at exit) when, with --jobs >= 2, a
 * test with a longer timeout starts before one with a shorter timeout. */
#define TIMEOUT 120

typedef struct tdir {
	char root[64];       /* the mkdtemp directory */
	char path[96];       /* root/state/audit.lmdb: rec_open creates it */
} tdir;

static inline void tdir_make(tdir *d)
{
	snprintf(d->root, sizeof(d->root), "/tmp/elspeth-rec-XXXXXX");
	cr_assert_not_null(mkdtemp(d->root), "mkdtemp failed");
	snprintf(d->path, sizeof(d->path), "%s/state/audit.lmdb", d->root);
}

/* rm -r of a directory tree without symlinks (ours). */
static inline void rm_tree(const char *path)
{
	struct dirent *e;
	char sub[1024];
	struct stat st;
	DIR *dir;

	if (lstat(path, &st) != 0)
		return;
	if (S_ISDIR(st.st_mode) && (dir = opendir(path))) {
		while ((e = readdir(dir))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (snprintf(sub, sizeof(sub), "%s/%.200s", path,
				     e->d_name) < (int)sizeof(sub))
				rm_tree(sub);
		}
		closedir(dir);
	}
	remove(path);
}

static inline void tdir_remove(tdir *d)
{
	rm_tree(d->root);
}

/* Opens or fails the test with the error message. */
static inline rec_env *env_open(const char *path, int flags)
{
	core_err err = { 0 };
	rec_env *env = NULL;
	int rc;

	rc = rec_open(path, flags, &env, &err);
	cr_assert_eq(rc, 0, "rec_open(%s): %d %s", path, rc, err.msg);
	cr_assert_not_null(env);
	return env;
}

static inline void env_close(rec_env *env)
{
	core_err err = { 0 };
	int rc = rec_close(env, &err);

	cr_assert_eq(rc, 0, "rec_close: %d %s", rc, err.msg);
}

static inline void env_flush(rec_env *env)
{
	core_err err = { 0 };
	int rc = rec_flush(env, &err);

	cr_assert_eq(rc, 0, "rec_flush: %d %s", rc, err.msg);
}

static inline rec_txn *txn_begin(rec_env *env)
{
	core_err err = { 0 };
	rec_txn *t = NULL;
	int rc = rec_read_begin(env, &t, &err);

	cr_assert_eq(rc, 0, "rec_read_begin: %d %s", rc, err.msg);
	return t;
}

static inline rec_key key2(uint64_t a, uint64_t b)
{
	rec_key k;

	rec_key_init(&k);
	rec_key_u64(&k, a);
	rec_key_u64(&k, b);
	return k;
}

static inline rec_key key1(uint64_t a)
{
	rec_key k;

	rec_key_init(&k);
	rec_key_u64(&k, a);
	return k;
}

static inline int count_fn(void *ctx, const void *k, size_t kl, const void *v,
			   size_t vl)
{
	(void)k;
	(void)kl;
	(void)v;
	(void)vl;
	(*(size_t *)ctx)++;
	return 0;
}

/* Number of keys of table t starting with prefix (NULL: all; a per-row
 * table, read from the row stories, needs at least a run in the prefix). */
static inline size_t count_keys(rec_txn *t, rec_table tab,
				const rec_key *prefix)
{
	size_t n = 0;
	int rc = rec_scan(t, tab, prefix, count_fn, &n);

	cr_assert_eq(rc, 0, "rec_scan(%s): %d", rec_table_name(tab), rc);
	return n;
}

/* ------------------------------------------------------- row stories */

/* Adds msg (a per-row record) to row seq's story, or fails the test. */
static inline void story_put(rec_env *env, uint64_t run, uint64_t seq,
			     const ProtobufCMessage *msg)
{
	int rc = rec_story_put(env, run, seq, msg);

	cr_assert_eq(rc, 0, "rec_story_put(%llu, %llu, %s): %d",
		     (unsigned long long)run, (unsigned long long)seq,
		     msg->descriptor->name, rc);
}

/* Adds a payload to row seq's story; hex receives its hash. */
static inline void story_payload(rec_env *env, uint64_t run, uint64_t seq,
				 const void *data, size_t len,
				 char hex[CORE_SHA256_HEX_LEN + 1])
{
	int rc = rec_story_payload(env, run, seq, data, len, hex);

	cr_assert_eq(rc, 0, "rec_story_payload: %d", rc);
}

static inline void story_seal(rec_env *env, uint64_t run, uint64_t seq)
{
	int rc = rec_story_seal(env, run, seq);

	cr_assert_eq(rc, 0, "rec_story_seal: %d", rc);
}

/* Enqueues every open story, then waits until all is committed. */
static inline void trail_flush(rec_env *env)
{
	int rc = rec_story_flush(env);

	cr_assert_eq(rc, 0, "rec_story_flush: %d", rc);
	env_flush(env);
}

/* Deterministic bytes for record n (xorshift64*). */
static inline void fill_bytes(uint64_t n, uint8_t *p, size_t len)
{
	uint64_t x = n * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		p[i] = (uint8_t)((x * 0x2545f4914f6cdd1dull) >> 56);
	}
}

#endif /* TEST_RECORDER_UTIL_H */
