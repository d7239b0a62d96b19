/* test_mcp_pg_params.c — the query tool's named parameters on PostgreSQL
 * (mcp/pg_params.c): :name becomes $n where PostgreSQL would read a
 * parameter, and stays as written inside strings (also E'' with
 * backslash escapes and dollar quotes), quoted identifiers, comments
 * (also nested), casts and array slices; a name used twice is one
 * parameter. */
#include <criterion/criterion.h>

#include "mcp/mcp_internal.h"

TestSuite(mcp_pg_params, .timeout = 10);

static void expect(const char *sql, const char *want, int n, const char *names)
{
	mcp__pg_params p = { 0 };
	core_err err = { 0 };
	char got_names[256] = "";

	cr_assert_eq(mcp__pg_rewrite(sql, &p, &err), 0, "%s: %s", sql, err.msg);
	cr_expect_str_eq(p.sql.data ? p.sql.data : "", want, "%s", sql);
	cr_expect_eq(p.n, n, "%s: %d parameters", sql, p.n);
	for (int i = 0; i < p.n; i++) {
		strcat(got_names, i ? "," : "");
		strcat(got_names, p.names[i]);
	}
	cr_expect_str_eq(got_names, names, "%s", sql);
	mcp__pg_params_free(&p);
}

Test(mcp_pg_params, names_become_numbers_once_each)
{
	expect("SELECT * FROM rows WHERE run_id = :rid AND row_index = :i OR :rid IS NULL",
	       "SELECT * FROM rows WHERE run_id = $1 AND row_index = $2 OR $1 IS NULL", 2,
	       "rid,i");
	expect("SELECT :a_1+:b", "SELECT $1+$2", 2, "a_1,b");
	expect("", "", 0, "");
}

Test(mcp_pg_params, casts_and_slices_are_not_parameters)
{
	expect("SELECT x::int, :v::text, (arr)[1:n], arr[2:hi]", "SELECT x::int, $1::text, "
	       "(arr)[1:n], arr[2:hi]", 1, "v");
}

Test(mcp_pg_params, quoted_parts_are_left_alone)
{
	expect("SELECT ':a', \":b\", $$:c$$, $t$ :d $t$, :e", "SELECT ':a', \":b\", $$:c$$, "
	       "$t$ :d $t$, $1", 1, "e");
	expect("SELECT 'it''s :a', :b", "SELECT 'it''s :a', $1", 1, "b");
	/* E'' strings: a backslash escapes the quote */
	expect("SELECT E'it\\'s :x', :y", "SELECT E'it\\'s :x', $1", 1, "y");
	/* a name ending in e before a quote is no E'' string */
	expect("SELECT name':a'", "SELECT name':a'", 0, "");
}

Test(mcp_pg_params, comments_are_left_alone_nested_too)
{
	expect("SELECT 1 -- :a\n, :b", "SELECT 1 -- :a\n, $1", 1, "b");
	expect("SELECT /* a /* :b */ :c */ :d", "SELECT /* a /* :b */ :c */ $1", 1, "d");
	expect("SELECT /* :unterminated", "SELECT /* :unterminated", 0, "");
}
