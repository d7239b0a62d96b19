/* payload_store: filesystem (recorder/payload_store.c, ADR 0028): a row's
 * payloads as content-addressed files, read back through rec_get_payload
 * by any reader of the Landscape; purge marks are per (run, hash). */
#include "tests/unit/test_recorder_util.h"

static const char data[] = "{\"id\":1,\"text\":\"hello\"}";

static void store_one(rec_env *env, char hex[CORE_SHA256_HEX_LEN + 1])
{
	core_err err = { 0 };

	cr_assert_eq(rec_story_payload(env, 1, 1, data, strlen(data), hex), 0);
	cr_assert_eq(rec_story_seal(env, 1, 1), 0);
	cr_assert_eq(rec_flush(env, &err), 0, "%s", err.msg);
}

Test(recorder_payload_store, payload_is_a_file_named_by_its_hash, .timeout = TIMEOUT)
{
	tdir d;
	char dir[256], path[512], hex[CORE_SHA256_HEX_LEN + 1], real[4096];
	rec_env *env;
	core_err err = { 0 };
	struct stat st;
	FILE *f;
	char buf[128] = { 0 };

	tdir_make(&d);
	snprintf(dir, sizeof(dir), "%s/pay/loads", d.root);
	cr_assert_eq(rec_open(d.path, 0, &env, &err), 0, "%s", err.msg);
	cr_assert_eq(rec_payload_store_open(env, dir, &err), 0, "%s", err.msg);
	store_one(env, hex);
	cr_assert_not_null(realpath(dir, real));
	rec_payload_file_path(real, hex, path, sizeof(path));
	cr_assert_eq(stat(path, &st), 0, "no file %s", path);
	cr_assert_eq((size_t)st.st_size, strlen(data));
	f = fopen(path, "rb");
	cr_assert_eq(fread(buf, 1, sizeof(buf) - 1, f), strlen(data));
	fclose(f);
	cr_assert_str_eq(buf, data);
	/* stored once: a second put of the same bytes leaves the file */
	cr_assert_eq(rec_story_payload(env, 1, 2, data, strlen(data), hex), 0);
	cr_assert_eq(rec_close(env, &err), 0, "%s", err.msg);
	tdir_remove(&d);
}

Test(recorder_payload_store, a_reader_finds_the_file_and_purge_marks_are_per_run, .timeout = TIMEOUT)
{
	tdir d;
	char dir[256], path[512], hex[CORE_SHA256_HEX_LEN + 1], real[4096];
	rec_env *env;
	rec_txn *t;
	core_err err = { 0 };
	const void *p;
	size_t len;
	rec_purge_mark m;

	tdir_make(&d);
	snprintf(dir, sizeof(dir), "%s/payloads", d.root);
	cr_assert_eq(rec_open(d.path, 0, &env, &err), 0, "%s", err.msg);
	cr_assert_eq(rec_payload_store_open(env, dir, &err), 0, "%s", err.msg);
	store_one(env, hex);
	cr_assert_eq(rec_close(env, &err), 0, "%s", err.msg);

	/* another process, read-only, not told where the files are */
	cr_assert_eq(rec_open(d.path, REC_READONLY, &env, &err), 0, "%s", err.msg);
	cr_assert_eq(rec_read_begin(env, &t, &err), 0);
	cr_assert_eq(rec_get_payload(t, hex, &p, &len), 0);
	cr_assert_eq(len, strlen(data));
	cr_assert_eq(memcmp(p, data, len), 0);
	cr_assert_not(rec_payload_purged(t, 1, hex));
	rec_read_end(t);
	cr_assert_eq(rec_close(env, &err), 0);

	/* purge run 1: mark, then delete the file */
	cr_assert_eq(rec_open(d.path, 0, &env, &err), 0, "%s", err.msg);
	m.run = 1;
	memcpy(m.hex, hex, sizeof(m.hex));
	cr_assert_eq(rec_payload_mark_purged(env, &m, 1, "{}", &err), 0, "%s", err.msg);
	cr_assert_not_null(realpath(dir, real));
	rec_payload_file_path(real, hex, path, sizeof(path));
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(rec_read_begin(env, &t, &err), 0);
	cr_assert_eq(rec_get_payload(t, hex, &p, &len), REC_NOTFOUND);
	cr_assert(rec_payload_purged(t, 1, hex));
	cr_assert_not(rec_payload_purged(t, 2, hex), "run 2's copy was not purged");
	cr_assert_not(rec_payload_purged(t, 1, "not-hex"));
	rec_read_end(t);
	cr_assert_eq(rec_close(env, &err), 0);
	tdir_remove(&d);
}

Test(recorder_payload_store, unusable_base_path_is_an_error, .timeout = TIMEOUT)
{
	tdir d;
	char file[256];
	rec_env *env;
	core_err err = { 0 };
	FILE *f;

	tdir_make(&d);
	snprintf(file, sizeof(file), "%s/a-file", d.root);
	f = fopen(file, "w");
	fclose(f);
	cr_assert_eq(rec_open(d.path, 0, &env, &err), 0, "%s", err.msg);
	cr_assert_eq(rec_payload_store_open(env, file, &err), CORE_EIO);
	cr_assert(strstr(err.msg, "payload_store.base_path"), "%s", err.msg);
	rec_close(env, NULL);
	tdir_remove(&d);
}

/* A file a crash cut short (its size is not the payload's) is written
 * again the next time the payload is stored, not taken as stored. */
Test(recorder_payload_store, a_cut_short_file_is_written_again, .timeout = TIMEOUT)
{
	tdir d;
	char dir[256], path[512], hex[CORE_SHA256_HEX_LEN + 1], real[4096];
	rec_env *env;
	core_err err = { 0 };
	struct stat st;

	tdir_make(&d);
	snprintf(dir, sizeof(dir), "%s/payloads", d.root);
	cr_assert_eq(rec_open(d.path, 0, &env, &err), 0, "%s", err.msg);
	cr_assert_eq(rec_payload_store_open(env, dir, &err), 0, "%s", err.msg);
	store_one(env, hex);
	cr_assert_not_null(realpath(dir, real));
	rec_payload_file_path(real, hex, path, sizeof(path));
	cr_assert_eq(truncate(path, 3), 0);
	cr_assert_eq(rec_story_payload(env, 1, 2, data, strlen(data), hex), 0);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq((size_t)st.st_size, strlen(data));
	cr_assert_eq(rec_close(env, &err), 0, "%s", err.msg);
	tdir_remove(&d);
}
