/* test_recorder_keys.c — composite keys, table names, landscape URLs. */
#include <signal.h>
#include <string.h>

#include <criterion/criterion.h>

#include "recorder/recorder.h"

static rec_key run_seq(uint64_t run, uint64_t seq)
{
	rec_key k;

	rec_key_init(&k);
	rec_key_u64(&k, run);
	rec_key_u64(&k, seq);
	return k;
}

static int key_cmp(const rec_key *a, const rec_key *b)
{
	size_t n = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->b, b->b, n);

	return c ? c : (a->len > b->len) - (a->len < b->len);
}

Test(recorder, keys_sort_in_numeric_order)
{
	rec_key a = run_seq(1, 255), b = run_seq(1, 256), c = run_seq(2, 0);
	rec_key d = run_seq(1, UINT64_MAX);

	cr_assert_lt(key_cmp(&a, &b), 0, "(1,255) must sort before (1,256)");
	cr_assert_lt(key_cmp(&b, &c), 0, "(1,256) must sort before (2,0)");
	cr_assert_lt(key_cmp(&d, &c), 0, "(1,max) must sort before (2,0)");
	cr_assert_eq(a.len, 16);
}

Test(recorder, keys_are_big_endian_and_read_back)
{
	rec_key k;

	rec_key_init(&k);
	rec_key_u64(&k, 0x0102030405060708ull);
	rec_key_u32(&k, 0xa0b0c0d0u);
	cr_assert_eq(k.len, 12);
	cr_assert_eq(k.b[0], 0x01);
	cr_assert_eq(k.b[7], 0x08);
	cr_assert_eq(k.b[8], 0xa0);
	cr_assert_eq(k.b[11], 0xd0);
	cr_assert_eq(rec_key_get_u64(k.b, 0), 0x0102030405060708ull);
	cr_assert_eq(rec_key_get_u32(k.b, 8), 0xa0b0c0d0u);
}

Test(recorder, key_overflow_aborts, .signal = SIGABRT)
{
	rec_key k;
	int i;

	rec_key_init(&k);
	for (i = 0; i < REC_KEY_MAX / 8 + 1; i++)
		rec_key_u64(&k, (uint64_t)i);
}

Test(recorder, table_names_are_distinct)
{
	int i, j;

	for (i = 0; i < REC_TABLE_LAST; i++) {
		cr_assert_neq(rec_table_name(i)[0], '(', "table %d", i);
		for (j = 0; j < i; j++)
			cr_assert_str_neq(rec_table_name(i), rec_table_name(j));
	}
	cr_assert_str_eq(rec_table_name(REC_TOKENS_BY_ROW), "tokens_by_row");
	cr_assert_str_eq(rec_table_name(REC_PAYLOADS), "payloads");
}

Test(recorder, url_accepts_relative_and_absolute_paths)
{
	core_err err = { 0 };
	char out[256];

	cr_assert_eq(rec_path_from_url("lmdb://./state/audit.lmdb", out,
				       sizeof(out), &err), 0, "%s", err.msg);
	cr_assert_str_eq(out, "./state/audit.lmdb");
	cr_assert_eq(rec_path_from_url("lmdb:///var/lib/e/audit", out,
				       sizeof(out), &err), 0, "%s", err.msg);
	cr_assert_str_eq(out, "/var/lib/e/audit");
	cr_assert_eq(rec_path_from_url("lmdb://audit", out, sizeof(out), &err),
		     0, "%s", err.msg);
	cr_assert_str_eq(out, "audit");
	/* ELSPETH's SQL trail: the LMDB environment beside the file. */
	cr_assert_eq(rec_path_from_url("sqlite:///runs/audit.db", out, sizeof(out),
				       &err), 0, "%s", err.msg);
	cr_assert_str_eq(out, "runs/audit.db.lmdb");
	cr_assert_eq(rec_path_from_url("sqlite:////var/lib/e/audit.db", out,
				       sizeof(out), &err), 0, "%s", err.msg);
	cr_assert_str_eq(out, "/var/lib/e/audit.db.lmdb");
}

Test(recorder, url_sqlite_names_the_file)
{
	core_err err = { 0 };
	char lmdb[64], sql[64];

	cr_assert_eq(core_landscape_paths("sqlite:///./examples/x/runs/audit.db", lmdb,
					  sizeof(lmdb), sql, sizeof(sql), &err), 0, "%s", err.msg);
	cr_assert_str_eq(sql, "./examples/x/runs/audit.db");
	cr_assert_str_eq(lmdb, "./examples/x/runs/audit.db.lmdb");
	cr_assert_eq(core_landscape_paths("lmdb://a", lmdb, sizeof(lmdb), sql,
					  sizeof(sql), &err), 0, "%s", err.msg);
	cr_assert_str_eq(sql, "");
	cr_assert_eq(core_landscape_paths("postgresql://h/db", lmdb, sizeof(lmdb), sql,
					  sizeof(sql), &err), 0, "%s", err.msg);
	cr_assert_str_eq(sql, "postgresql://h/db");
	cr_assert_str_eq(lmdb, CORE_PG_LMDB);
	cr_assert(core_sql_is_pg(sql));
	cr_assert_eq(core_landscape_paths("postgresql+psycopg2://u:pw@h/db", lmdb, sizeof(lmdb),
					  sql, sizeof(sql), &err), 0, "%s", err.msg);
	cr_assert(core_sql_is_pg(sql));
	cr_assert_eq(core_landscape_paths("postgres://u:secret@h/db", lmdb, sizeof(lmdb), sql,
					  sizeof(sql), &err), CORE_ECONFIG);
	cr_assert_not_null(strstr(err.msg, "write postgresql://"), "%s", err.msg);
	cr_assert_null(strstr(err.msg, "secret"), "%s", err.msg);
	cr_assert_eq(core_landscape_paths("sqlite:///:memory:", lmdb, sizeof(lmdb), sql,
					  sizeof(sql), &err), CORE_ECONFIG);
	cr_assert_eq(core_landscape_paths("sqlite:///runs/", lmdb, sizeof(lmdb), sql,
					  sizeof(sql), &err), CORE_ECONFIG);
}

Test(recorder, url_rejects_other_forms_with_the_expected_form)
{
	static const char *bad[] = {
		"mysql://h/audit", "lmdb://", "lmdb:/x", "./audit.lmdb", "",
	};
	core_err err = { 0 };
	char out[64];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		cr_assert_eq(rec_path_from_url(bad[i], out, sizeof(out), &err),
			     CORE_ECONFIG, "%s", bad[i]);
		cr_assert_not_null(strstr(err.msg, bad[i]), "%s", err.msg);
		cr_assert_not_null(strstr(err.msg, "lmdb://PATH"), "%s", err.msg);
	}
	memset(&err, 0, sizeof(err));
	cr_assert_eq(rec_path_from_url("lmdb://abcdefgh", out, 8, &err),
		     CORE_ECONFIG);
	cr_assert_not_null(strstr(err.msg, "too long"), "%s", err.msg);
}
