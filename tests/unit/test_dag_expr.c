/* Tests of the gate expression language (dag/expr_*.c). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "dag/dag.h"

static const char *row_json =
	"{\"name\": \"alice\", \"age\": 30, \"score\": 7.5, \"active\": true,"
	" \"deleted\": false, \"note\": null, \"tags\": [\"a\", \"b\", \"c\"],"
	" \"nums\": [1, 2, 3], \"addr\": {\"city\": \"Paris\", \"zip\": \"75001\","
	" \"geo\": {\"lat\": 48.85}}, \"empty\": \"\", \"zero\": 0,"
	" \"none_list\": [], \"none_obj\": {}, \"big\": 9223372036854775807,"
	" \"small\": -9223372036854775808, \"uni\": \"h\\u00e9llo\","
	" \"matrix\": [[1, 2], [3, 4]], \"text\": \" 42 \"}";

static json_t *make_row(void)
{
	json_error_t jerr;
	json_t *row = json_loads(row_json, 0, &jerr);

	cr_assert_not_null(row, "fixture: %s", jerr.text);
	return row;
}

static expr_code *compile_ok(const char *src)
{
	expr_code *e = NULL;
	core_err err = { 0 };
	int rc = expr_compile(src, &e, &err);

	cr_assert_eq(rc, 0, "compile `%s`: %s", src, err.msg);
	cr_assert_not_null(e);
	return e;
}

/* Evaluates src on the fixture row and compares with the JSON text want
 * (types matter: 2 is not 2.0). */
static void expect(const char *src, const char *want)
{
	json_t *row = make_row(), *got = NULL, *w;
	expr_code *e = compile_ok(src);
	core_err err = { 0 };
	char *gs;
	int rc;

	rc = expr_eval(e, row, &got, &err);
	cr_assert_eq(rc, 0, "eval `%s`: %s", src, err.msg);
	w = json_loads(want, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	cr_assert_not_null(w, "bad want %s", want);
	gs = json_dumps(got, JSON_ENCODE_ANY);
	cr_assert(json_equal(got, w), "`%s` gave %s, want %s", src, gs, want);
	free(gs);
	json_decref(w);
	json_decref(got);
	expr_free(e);
	json_decref(row);
}

static void expect_key(const char *src, const char *want)
{
	json_t *row = make_row();
	expr_code *e = compile_ok(src);
	core_err err = { 0 };
	char buf[256];
	int rc;

	memset(buf, 'X', sizeof(buf));
	rc = expr_route_key(e, row, buf, sizeof(buf), &err);
	cr_assert_eq(rc, 0, "route key `%s`: %s", src, err.msg);
	cr_assert_str_eq(buf, want, "`%s` keyed '%s', want '%s'", src, buf, want);
	expr_free(e);
	json_decref(row);
}

static void expect_syntax(const char *src, int col, const char *needle)
{
	expr_code *e = (expr_code *)1;
	core_err err = { 0 };
	char prefix[32];
	int rc = expr_compile(src, &e, &err);

	cr_assert_eq(rc, CORE_EEXPR, "`%s` compiled (rc %d)", src, rc);
	cr_assert_null(e);
	cr_assert_eq(err.code, CORE_EEXPR);
	snprintf(prefix, sizeof(prefix), "column %d: ", col);
	cr_assert(!strncmp(err.msg, prefix, strlen(prefix)),
		  "`%s`: '%s' does not start with '%s'", src, err.msg, prefix);
	cr_assert(strstr(err.msg, needle), "`%s`: '%s' lacks '%s'", src,
		  err.msg, needle);
}

static void expect_runtime(const char *src, const char *needle)
{
	json_t *row = make_row(), *got = (json_t *)1;
	expr_code *e = compile_ok(src);
	core_err err = { 0 };
	char buf[64];
	int rc;

	rc = expr_eval(e, row, &got, &err);
	cr_assert_eq(rc, CORE_EEXPR, "`%s` evaluated (rc %d)", src, rc);
	cr_assert_null(got);
	cr_assert(strstr(err.msg, needle), "`%s`: '%s' lacks '%s'", src,
		  err.msg, needle);
	memset(&err, 0, sizeof(err));
	rc = expr_route_key(e, row, buf, sizeof(buf), &err);
	cr_assert_eq(rc, CORE_EEXPR, "`%s` keyed (rc %d)", src, rc);
	cr_assert(strstr(err.msg, needle), "`%s` key: '%s' lacks '%s'", src,
		  err.msg, needle);
	expr_free(e);
	json_decref(row);
}

static char *repeat(const char *head, const char *unit, size_t times,
		    const char *tail)
{
	size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail), i;
	char *s = malloc(hl + ul * times + tl + 1);

	cr_assert_not_null(s);
	memcpy(s, head, hl);
	for (i = 0; i < times; i++)
		memcpy(s + hl + i * ul, unit, ul);
	memcpy(s + hl + ul * times, tail, tl + 1);
	return s;
}

/* ------------------------------------------------------------ literals */

Test(expr, literals)
{
	expect("12", "12");
	expect("1.5", "1.5");
	expect("1e3", "1000.0");
	expect(".5", "0.5");
	expect("1.", "1.0");
	expect("2.5E-1", "0.25");
	expect("'single'", "\"single\"");
	expect("\"double\"", "\"double\"");
	expect("True", "true");
	expect("False", "false");
	expect("None", "null");
	expect("[1, 'a', None, [True]]", "[1, \"a\", null, [true]]");
	expect("[]", "[]");
	expect("[1, 2,]", "[1, 2]");
	expect("(1, 2)", "[1, 2]");
	expect("(1,)", "[1]");
	expect("()", "[]");
	expect("(((7)))", "7");
	expect("0", "0");
	expect("00", "0");
}

Test(expr, string_escapes)
{
	expect("'a\\nb\\tc'", "\"a\\nb\\tc\"");
	expect("'\\\\'", "\"\\\\\"");
	expect("'it\\'s'", "\"it's\"");
	expect("\"say \\\"hi\\\"\"", "\"say \\\"hi\\\"\"");
	expect("'\\x41\\u00e9\\U0001F600'", "\"A\\u00e9\\ud83d\\ude00\"");
	expect("'\\xe9'", "\"\\u00e9\"");
	expect("'\\0'", "\"\\u0000\"");
	expect("'h\xc3\xa9'", "\"h\\u00e9\"");
	expect("'a' \"b\" 'c'", "\"abc\"");
	expect("\"'\"", "\"'\"");
}

/* --------------------------------------------------------- row access */

Test(expr, row_access)
{
	expect("row['name']", "\"alice\"");
	expect("row[\"age\"]", "30");
	expect("row['score']", "7.5");
	expect("row['active']", "true");
	expect("row['note']", "null");
	expect("row['addr']['city']", "\"Paris\"");
	expect("row['addr']['geo']['lat']", "48.85");
	expect("row['tags'][0]", "\"a\"");
	expect("row['tags'][-1]", "\"c\"");
	expect("row['tags'][-3]", "\"a\"");
	expect("row['matrix'][1][0]", "3");
	expect("row['matrix'][-1][-1]", "4");
	expect("row['tags'][True]", "\"b\"");
	expect("row['name'][0]", "\"a\"");
	expect("row['name'][-1]", "\"e\"");
	expect("row['uni'][1]", "\"\\u00e9\"");
	expect("row['uni'][2]", "\"l\"");
	expect("row['tags']", "[\"a\", \"b\", \"c\"]");
	expect("row['addr']", "{\"city\": \"Paris\", \"zip\": \"75001\", \"geo\": {\"lat\": 48.85}}");
	expect("[row['age'], row['name']][1]", "\"alice\"");
	expect("(row)['age']", "30");
}

Test(expr, row_alone_is_the_row_object)
{
	json_t *row = make_row(), *got;
	expr_code *e = compile_ok("row");
	core_err err = { 0 };

	cr_assert_eq(expr_eval(e, row, &got, &err), 0, "%s", err.msg);
	cr_assert(json_equal(got, row));
	cr_assert_neq(got, row, "result must be a new value, not the row");
	json_decref(got);
	expr_free(e);
	json_decref(row);
}

Test(expr, row_get)
{
	expect("row.get('name')", "\"alice\"");
	expect("row.get('missing')", "null");
	expect("row.get('missing', 5)", "5");
	expect("row.get('missing', row['age'] + 1)", "31");
	expect("row.get('note', 5)", "null");
	expect("row.get('age', 5)", "30");
	expect("row.get(1)", "null");
	expect("row.get('addr')['zip']", "\"75001\"");
	expect("row.get('missing',)", "null");
}

/* ---------------------------------------------------------- arithmetic */

Test(expr, arithmetic)
{
	expect("1 + 2", "3");
	expect("5 - 7", "-2");
	expect("6 * 7", "42");
	expect("7 / 2", "3.5");
	expect("6 / 3", "2.0");
	expect("7 // 2", "3");
	expect("7 % 3", "1");
	expect("1 + 2.5", "3.5");
	expect("row['age'] * 2", "60");
	expect("row['score'] - 0.5", "7.0");
	expect("2 * 3.0", "6.0");
	expect("True + 1", "2");
	expect("True * 3.5", "3.5");
	expect("-row['age']", "-30");
	expect("+5", "5");
	expect("--5", "5");
	expect("-True", "-1");
	expect("-1.5", "-1.5");
}

Test(expr, floor_division_and_modulo_follow_python)
{
	expect("7 // -2", "-4");
	expect("-7 // 2", "-4");
	expect("-7 // -2", "3");
	expect("-7 % 3", "2");
	expect("7 % -3", "-2");
	expect("-7 % -3", "-1");
	expect("6 % 3", "0");
	expect("7.5 // 2", "3.0");
	expect("-7.5 // 2", "-4.0");
	expect("-7.5 % 2", "0.5");
	expect("7.5 % -2", "-0.5");
	expect("-9223372036854775807 // 1", "-9223372036854775807");
	expect("row['small'] % -1", "0");
}

Test(expr, string_and_list_operators)
{
	expect("'ab' + 'cd'", "\"abcd\"");
	expect("row['name'] + '!'", "\"alice!\"");
	expect("'' + row['name']", "\"alice\"");
	expect("'ab' * 3", "\"ababab\"");
	expect("3 * 'ab'", "\"ababab\"");
	expect("'x' * 0", "\"\"");
	expect("'x' * -2", "\"\"");
	expect("[1] + [2, 3]", "[1, 2, 3]");
	expect("row['nums'] + [4]", "[1, 2, 3, 4]");
	expect("row['tags'] * 2", "[\"a\", \"b\", \"c\", \"a\", \"b\", \"c\"]");
	expect("(1,) + (2,)", "[1, 2]");
	expect("[0] * 3", "[0, 0, 0]");
	expect("len('ab' * 1000)", "2000");
}

Test(expr, precedence)
{
	expect("1 + 2 * 3", "7");
	expect("(1 + 2) * 3", "9");
	expect("2 * 3 % 4", "2");
	expect("-2 * 3", "-6");
	expect("10 - 2 - 3", "5");
	expect("100 / 10 / 5", "2.0");
	expect("not 1 == 2", "true");
	expect("1 + 2 == 3 and 2 < 3", "true");
	expect("True or False and False", "true");
	expect("(True or False) and False", "false");
	expect("not True or True", "true");
	expect("not (True or True)", "false");
	expect("1 if True else 2 + 10", "1");
	expect("(1 if False else 2) + 10", "12");
	expect("1 if False else 2 if False else 3", "3");
	expect("'x' if row['age'] > 18 and row['active'] else 'y'", "\"x\"");
	expect("1 < 2 == True", "false");  /* (1 < 2) and (2 == True) */
}

/* ---------------------------------------------------------- comparisons */

Test(expr, comparisons)
{
	expect("1 == 1", "true");
	expect("1 != 1", "false");
	expect("1 < 2", "true");
	expect("2 <= 2", "true");
	expect("3 > 2", "true");
	expect("2 >= 3", "false");
	expect("row['age'] == 30", "true");
	expect("row['score'] > 7", "true");
	expect("row['name'] != 'bob'", "true");
}

Test(expr, chained_comparisons)
{
	expect("1 < 2 < 3", "true");
	expect("1 < 3 < 2", "false");
	expect("3 > 2 == 2", "true");
	expect("1 < row['age'] <= 30 < 31", "true");
	expect("0 < row['age'] < 18", "false");
	/* stops at the first false link: the missing field is never read */
	expect("1 > 2 < row['missing']", "false");
}

Test(expr, int_float_and_mixed_equality)
{
	expect("1 == 1.0", "true");
	expect("row['age'] == 30.0", "true");
	expect("True == 1", "true");
	expect("False == 0.0", "true");
	expect("'1' == 1", "false");
	expect("None == 0", "false");
	expect("None == None", "true");
	expect("[1, 2] == [1.0, 2.0]", "true");
	expect("(1, 2) == [1, 2]", "false");
	expect("(1, 2) == (1, 2)", "true");
	expect("row['nums'] == [1, 2, 3]", "true");
	expect("row['addr'] == row['addr']", "true");
	expect("row['none_obj'] == row['addr']", "false");
	expect("9007199254740993 == 9007199254740992.0", "false");
	expect("9007199254740992 == 9007199254740992.0", "true");
	expect("9223372036854775807 < 9223372036854775808.0", "true");
	expect("1.5 > 1", "true");
	expect("-1 < -0.5", "true");
}

Test(expr, string_ordering)
{
	expect("'abc' < 'abd'", "true");
	expect("'B' < 'a'", "true");
	expect("'a' < 'ab'", "true");
	expect("'' < 'a'", "true");
	expect("row['name'] >= 'alice'", "true");
	expect("row['uni'] > 'hz'", "true");
	expect("[1, 2] < [1, 3]", "true");
	expect("[1, 2] < [1, 2, 0]", "true");
	expect("(2,) > (1, 9)", "true");
}

Test(expr, membership)
{
	expect("'b' in row['tags']", "true");
	expect("'z' in row['tags']", "false");
	expect("'z' not in row['tags']", "true");
	expect("'lic' in row['name']", "true");
	expect("'' in row['name']", "true");
	expect("'city' in row['addr']", "true");
	expect("'lat' in row['addr']", "false");
	expect("1 in row['addr']", "false");
	expect("2 in (1, 2)", "true");
	expect("2.0 in [1, 2]", "true");
	expect("row['name'] in ['bob', 'alice']", "true");
	expect("row['name'] not in ('bob', 'carol')", "true");
	expect("[1, 2] in row['matrix']", "true");
	expect("'age' in row", "true");
	expect("1 in [] or 'x'", "\"x\"");
}

Test(expr, identity)
{
	expect("row['note'] is None", "true");
	expect("row['name'] is not None", "true");
	expect("row.get('missing') is None", "true");
	expect("None is row['note']", "true");
	expect("None is not row['name']", "true");
	expect("row['name'] is (None)", "false");
	expect("None is None", "true");
	/* every `is` of a chain has None next to it */
	expect("row['note'] is None is row['note']", "true");
	expect("row['age'] == 30 is not None", "true");
}

/* ELSPETH 0.4.1 (core/expression_parser.py, visit_Compare) refuses `is`
 * and `is not` unless an operand next to them is the literal None: "'is'
 * and 'is not' operators are only allowed for None checks". */
Test(expr, identity_only_with_none)
{
	const char *msg = "'is' and 'is not' operators are only allowed for None checks";

	expect_syntax("row['s'] is 'active'", 10, msg);
	expect_syntax("row['s'] is 'active'", 10, "(in `row['s'] is 'active'`)");
	expect_syntax("row['s'] is not 'x'", 10, msg);
	expect_syntax("row['n'] is 1", 10, msg);
	expect_syntax("row['active'] is True", 15, msg);
	expect_syntax("row['deleted'] is not False", 16, msg);
	expect_syntax("row['addr'] is row['addr']", 13, msg);
	expect_syntax("row['x'] is []", 10, msg);
	expect_syntax("row['x'] is -None", 10, msg);
	expect_syntax("1 < row['a'] is 'x'", 14, "(in `1 < row['a'] is 'x'`)");
	expect_syntax("row['a'] is None and row['b'] is 2", 31,
		      "(in `row['b'] is 2`); compare values with == or !=");
	expect_syntax("row['s'] is 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'",
		      10, "(in `row['s'] is 'aaaaaaaaaaaaaaaa");
	expect_syntax("row['s'] is 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'",
		      10, "aaa...`)");
}

Test(expr, short_circuit_and_operand_values)
{
	expect("row.get('missing') is None or row['missing'] == 1", "true");
	expect("False and row['missing']", "false");
	expect("True or row['missing']", "true");
	expect("0 or 'x'", "\"x\"");
	expect("'' and 1", "\"\"");
	expect("1 and 2", "2");
	expect("None or 0", "0");
	expect("0 or None or [] or 'last'", "\"last\"");
	expect("1 and 'a' and [1]", "[1]");
	expect("'x' if True else row['missing']", "\"x\"");
	expect("row['missing'] if False else 'y'", "\"y\"");
}

Test(expr, truthiness)
{
	expect("not ''", "true");
	expect("not 'a'", "false");
	expect("not 0", "true");
	expect("not 0.0", "true");
	expect("not None", "true");
	expect("not []", "true");
	expect("not row['none_list']", "true");
	expect("not row['none_obj']", "true");
	expect("not row['addr']", "false");
	expect("not row['empty']", "true");
	expect("not -1", "false");
}

/* ------------------------------------------------------------ builtins */

Test(expr, builtin_len)
{
	expect("len(row['name'])", "5");
	expect("len(row['uni'])", "5");
	expect("len(row['tags'])", "3");
	expect("len(row['addr'])", "3");
	expect("len(row)", "18");
	expect("len([])", "0");
	expect("len((1, 2))", "2");
}

Test(expr, builtin_str)
{
	expect("str(1)", "\"1\"");
	expect("str(-42)", "\"-42\"");
	expect("str(1.0)", "\"1.0\"");
	expect("str(0.1)", "\"0.1\"");
	expect("str(1e20)", "\"1e+20\"");
	/* Just above a power of two: Python prints 16 digits here, not 17. */
	expect("str(6.183260036827614e+172)", "\"6.183260036827614e+172\"");
	expect("str(None)", "\"None\"");
	expect("str(True)", "\"True\"");
	expect("str('s')", "\"s\"");
	expect("str(row['tags'])", "\"['a', 'b', 'c']\"");
	expect("str(row['addr']['geo'])", "\"{'lat': 48.85}\"");
	expect("str(row['age']) + 'y'", "\"30y\"");
}

Test(expr, builtin_int)
{
	expect("int('42')", "42");
	expect("int(' -7 ')", "-7");
	expect("int('+3')", "3");
	expect("int('1_000')", "1000");
	expect("int(row['text'])", "42");
	expect("int(3.9)", "3");
	expect("int(-3.9)", "-3");
	expect("int(True)", "1");
	expect("int(7)", "7");
	expect("int('-9223372036854775808')", "-9223372036854775808");
}

Test(expr, builtin_float_bool_abs)
{
	expect("float('1.5')", "1.5");
	expect("float(' 1e3 ')", "1000.0");
	expect("float('.5')", "0.5");
	expect("float(2)", "2.0");
	expect("float(row['text'])", "42.0");
	expect("float(False)", "0.0");
	expect("bool('')", "false");
	expect("bool('x')", "true");
	expect("bool([])", "false");
	expect("bool(row['none_obj'])", "false");
	expect("bool(0.1)", "true");
	expect("abs(-3)", "3");
	expect("abs(-2.5)", "2.5");
	expect("abs(True)", "1");
	expect("abs(row['big'])", "9223372036854775807");
}

Test(expr, builtins_without_an_argument)
{
	expect("bool()", "false");
	expect("str()", "\"\"");
	expect("int()", "0");
	expect("float()", "0.0");
	expect_syntax("len()", 5, "len() takes exactly one argument");
	expect_syntax("abs()", 5, "abs() takes exactly one argument");
	expect_syntax("bool(1, 2)", 9, "bool() takes at most one argument");
}

/* ------------------------------------------------------ sets and dicts */

Test(expr, set_literals)
{
	expect("{1, 2, 2, 1.0}", "[1, 2]");
	expect_key("{1, 2, 2, 1.0}", "{1, 2}");
	expect_key("{'b', 'a', 'b',}", "{'b', 'a'}");	/* the order written */
	expect_key("{(1, 2), (1, 2)}", "{(1, 2)}");
	expect_key("{1} - {1}", "set()");
	expect("{1, 2, 3} - {2, 5}", "[1, 3]");
	expect("row['name'] in {'alice', 'bob'}", "true");
	expect("row['name'] not in {'alice', 'bob'}", "false");
	expect("row['age'] in {30.0, 'x'}", "true");
	expect("(1, 2) in {(1, 2)}", "true");
	expect("{1, 2} == {2, 1}", "true");
	expect("{1, 2} == [1, 2]", "false");
	expect("{1} < {1, 2}", "true");
	expect("{1, 2} <= {1, 2}", "true");
	expect("{1, 2} < {1, 2}", "false");
	expect("{1, 3} > {1}", "true");
	expect("{1} >= {2}", "false");
	expect("[{1}] < [{1, 2}]", "true");
	expect("len({1, 1, True, 2})", "2");
	expect("bool({0})", "true");
	expect("str({'a', None})", "\"{'a', None}\"");
}

Test(expr, dict_literals)
{
	expect("{}", "{}");
	expect_key("{}", "{}");
	expect("{'a': 1, 'b': [1, 2]}", "{\"a\": 1, \"b\": [1, 2]}");
	expect_key("{'a': 1, 'a': 2, 1: 'x', 1.0: 'y', True: 'z'}",
		   "{'a': 2, 1: 'z'}");
	expect("row['age'] in {30: 'x'}", "true");
	expect("'30' in {30: 'x'}", "false");
	expect("'x' in {30: 'x'}", "false");
	expect("{1: 'a'} == {1.0: 'a'}", "true");
	expect("{'geo': {'lat': 48.85}, 'zip': '75001', 'city': 'Paris'}"
	       " == row['addr']", "true");
	expect("row['addr'] != {'city': 'Paris'}", "true");
	expect("{'a': {'b': 2}}['a']['b']", "2");
	expect("{(1, 2): 'x'}[(1, 2)]", "\"x\"");
	expect("row.get('missing', {'k': 'd'})['k']", "\"d\"");
	expect("len({'a': 1, 'a': 2})", "1");
	expect("not {}", "true");
	expect("str({'a': None, 2: row['tags']})",
	       "\"{'a': None, 2: ['a', 'b', 'c']}\"");
}

Test(expr, set_and_dict_errors)
{
	json_t *row = make_row(), *got = (json_t *)1;
	expr_code *e = compile_ok("{1: 'a'}");
	core_err err = { 0 };

	expect_runtime("{[1]}", "unhashable type: 'list'");
	expect_runtime("{row['tags']: 1}", "unhashable type: 'list'");
	expect_runtime("{row['addr']}", "unhashable type: 'dict'");
	expect_runtime("{(1, [2])}", "unhashable type: 'tuple'");
	expect_runtime("[1] in {1}", "unhashable type: 'list'");
	expect_runtime("{1} in {'a': 1}", "unhashable type: 'set'");
	expect_runtime("row.get({1})", "unhashable type: 'set'");
	expect_runtime("{1: 2}[3]", "key 3 not found in `{1: 2}`");
	expect_runtime("{1} < [1]",
		       "'<' not supported between instances of 'set' and 'list'");
	expect_runtime("{'a': 1} < {'a': 2}",
		       "'<' not supported between instances of 'dict' and 'dict'");
	expect_runtime("{1} + {2}",
		       "unsupported operand type(s) for +: 'set' and 'set'");
	expect_runtime("{1}[0]", "'set' object is not subscriptable");
	/* A dict with a key that is not a string has no JSON form; its route
	 * key is still Python's str(). */
	cr_assert_eq(expr_eval(e, row, &got, &err), CORE_EEXPR);
	cr_assert_null(got);
	cr_assert(strstr(err.msg, "no JSON form"), "%s", err.msg);
	expr_free(e);
	json_decref(row);
	expect_key("{1: 'a'}", "{1: 'a'}");
}

Test(expr, set_and_dict_syntax)
{
	expect_syntax("{**row}", 2, "dict spread (**) is not allowed");
	expect_syntax("{'a': 1, **row}", 10, "dict spread (**) is not allowed");
	expect_syntax("{*row['tags']}", 2, "starred expressions (*x) are not allowed");
	expect_syntax("[*row['tags']]", 2, "starred expressions (*x) are not allowed");
	expect_syntax("2 ** 3", 3, "'**' (power) is not allowed");
	expect_syntax("{1: 2, 3}", 9, "expected ':' after the key in the dict opened at column 1");
	expect_syntax("{1, 2: 3}", 6, "expected ',' or '}' to close the set opened at column 1, found ':'");
	expect_syntax("{1", 3, "expected ',' or '}' to close the set opened at column 1, found end of input");
	expect_syntax("{row['a'] for x in row}", 11, "comprehensions are not allowed");
	expect_syntax("{1:}", 4, "expected an expression");
	expect_syntax("row['tags'][:2]", 13, "slices ([a:b]) are not allowed");
}

/* A set of many items is built in linear time (a hash table), once per
 * evaluation. */
Test(expr, large_set_literal, .timeout = 20)
{
	char *src = repeat("row['age'] in {", "7, 'x', 1.5, ", 100000, "30}");
	char *dup = repeat("len({", "1, ", 200000, "2})");

	expect(src, "true");
	expect(dup, "2");
	free(src);
	free(dup);
}

/* ----------------------------------------------------------- route keys */

Test(expr, route_keys_per_result_type)
{
	expect_key("row['age'] > 18", "true");
	expect_key("row['age'] < 18", "false");
	expect_key("row['name']", "alice");
	expect_key("row['age']", "30");
	expect_key("row['small']", "-9223372036854775808");
	expect_key("row['score']", "7.5");
	expect_key("row['note']", "None");
	expect_key("row.get('nope')", "None");
	expect_key("row['tags']", "['a', 'b', 'c']");
	expect_key("(1,)", "(1,)");
	expect_key("(1, 'x')", "(1, 'x')");
	expect_key("[]", "[]");
	expect_key("row['addr']", "{'city': 'Paris', 'zip': '75001', 'geo': {'lat': 48.85}}");
	expect_key("[\"it's\", 'a\\nb', True, None, 1.0]", "[\"it's\", 'a\\nb', True, None, 1.0]");
	expect_key("'x' if row['active'] else 'y'", "x");
	expect_key("row['active'] and 'vip'", "vip");
	expect_key("''", "");
}

Test(expr, route_keys_print_floats_like_python)
{
	expect_key("1e20", "1e+20");
	expect_key("1e16", "1e+16");
	expect_key("1e15", "1000000000000000.0");
	expect_key("0.1 + 0.2", "0.30000000000000004");
	expect_key("1 / 3", "0.3333333333333333");
	expect_key("0.0001", "0.0001");
	expect_key("0.00001", "1e-05");
	expect_key("-0.0", "-0.0");
	expect_key("2.0", "2.0");
	expect_key("123.456", "123.456");
	expect_key("1.5e-300", "1.5e-300");
	expect_key("1e308 * 10", "inf");
	expect_key("-1e308 * 10", "-inf");
	expect_key("float('nan')", "nan");
	expect_key("5e-324", "5e-324");
	expect_key("1.7976931348623157e308", "1.7976931348623157e+308");
}

Test(expr, route_key_truncation_is_an_error)
{
	json_t *row = make_row();
	expr_code *e = compile_ok("row['name']");
	core_err err = { 0 };
	char buf[6];

	cr_assert_eq(expr_route_key(e, row, buf, 6, &err), 0, "%s", err.msg);
	cr_assert_str_eq(buf, "alice");
	cr_assert_eq(expr_route_key(e, row, buf, 5, &err), CORE_EEXPR);
	cr_assert(strstr(err.msg, "route key"), "%s", err.msg);
	cr_assert_eq(expr_route_key(e, row, buf, 0, &err), CORE_EEXPR);
	expr_free(e);
	json_decref(row);
}

/* ------------------------------------------------------ compile errors */

Test(expr, syntax_errors_name_the_column)
{
	expect_syntax("", 1, "expected an expression, found end of input");
	expect_syntax("   ", 4, "expected an expression");
	expect_syntax("row['a'] ==", 12, "expected an expression, found end of input");
	expect_syntax("row['a' == 1", 13, "expected ']' to close subscript opened at column 4");
	expect_syntax("row['a'] == 1 2", 15, "expected end of expression, found '2'");
	expect_syntax("1 +* 2", 4, "starred expressions (*x) are not allowed");
	expect_syntax("(1 + 2", 7, "expected ')' to close '(' opened at column 1");
	expect_syntax("[1, 2", 6, "expected ',' or ']' to close list opened at column 1");
	expect_syntax("[1 2]", 4, "expected ',' or ']'");
	expect_syntax("(1, 2", 6, "to close tuple opened at column 1");
	expect_syntax("1 if True", 10, "expected 'else'");
	expect_syntax("row['a'] = 1", 10, "use '=='");
	expect_syntax("row['a'] && 1", 10, "use 'and'");
	expect_syntax("!row['a']", 1, "use 'not'");
	expect_syntax("1 not 2", 7, "expected 'in' after 'not'");
	expect_syntax("not", 4, "expected an expression");
	expect_syntax("row[1:2]", 6, "slices ([a:b]) are not allowed");
	expect_syntax("row['a'] == 1 # c", 15, "unexpected character '#'");
	expect_syntax("'\xc3\xa9' == x", 8, "unknown name 'x'");
	expect_syntax("1 ** 2", 3, "'**' (power) is not allowed");
}

Test(expr, literal_errors)
{
	expect_syntax("'abc", 1, "unterminated string");
	expect_syntax("row['a] == 1", 5, "unterminated string");
	expect_syntax("'a\nb'", 1, "unterminated string");
	expect_syntax("row['a\\q']", 7, "invalid escape '\\q'");
	expect_syntax("'\\x4'", 2, "expected 2 hex digits");
	expect_syntax("'\\u12'", 2, "expected 4 hex digits");
	expect_syntax("'\\ud800'", 2, "not a valid character");
	expect_syntax("'\\U00110000'", 2, "not a valid character");
	expect_syntax("'\\", 2, "unterminated string");
	expect_syntax("'\xff'", 2, "invalid UTF-8");
	expect_syntax("12abc", 1, "invalid number literal");
	expect_syntax("1.2.3", 1, "invalid number literal");
	expect_syntax("1e", 1, "exponent has no digits");
	expect_syntax("1 + 99999999999999999999", 5, "integer literal too large");
	expect_syntax("007", 1, "leading zeros");
	expect_syntax("\xe2\x82\xac", 1, "unexpected character");
	expect_syntax("\x01", 1, "unexpected byte 0x01");
}

Test(expr, names_calls_and_attributes_are_restricted)
{
	expect_syntax("foo(1)", 1, "unknown function 'foo'; allowed functions: len, str, int, float, bool, abs");
	expect_syntax("x == 1", 1, "unknown name 'x'");
	expect_syntax("x == 1", 1, "row['x']");
	expect_syntax("true", 1, "unknown name 'true'");
	expect_syntax("row.keys()", 5, "only row.get(...)");
	expect_syntax("row['a'].get('b')", 9, "only row.get(...)");
	expect_syntax("row.get('a').get('b')", 13, "only row.get(...)");
	expect_syntax("row.get", 8, "expected '(' to call row.get");
	expect_syntax("len", 4, "expected '(' to call len");
	expect_syntax("len(1, 2)", 8, "len() takes exactly one argument");
	expect_syntax("len()", 5, "len() takes exactly one argument");
	expect_syntax("len(1 2)", 7, "expected ')' to close len( opened at column 4");
	expect_syntax("row.get()", 9, "row.get() takes one or two arguments");
	expect_syntax("row.get('a', 1, 2)", 17, "row.get() takes one or two arguments");
	expect_syntax("row(1)", 4, "only len, str, int, float, bool, abs and row.get can be called");
	expect_syntax("row['a'](1)", 9, "can be called");
	expect_syntax("__import__('os')", 1, "unknown function '__import__'");
	expect_syntax("lambda: 1", 1, "unknown name 'lambda'");
	expect_syntax("[x for x in row]", 2, "unknown name 'x'");
}

/* 200 levels of brackets, as Python allows (ELSPETH's own tests nest up
 * to 100). */
Test(expr, nesting_limit)
{
	char *ok = repeat("", "(", 199, "1");
	char *ok2, *deep, *unary, *brackets, *nots;
	size_t i;

	ok2 = malloc(500);
	strcpy(ok2, ok);
	for (i = 0; i < 199; i++)
		strcat(ok2, ")");
	expect(ok2, "1");
	deep = repeat("", "(", 201, "1");
	expect_syntax(deep, 201, "nested too deeply");
	unary = repeat("", "-", 250, "1");
	expect_syntax(unary, 200, "nested too deeply");
	brackets = repeat("", "[", 100000, "");
	expect_syntax(brackets, 201, "nested too deeply");
	nots = repeat("", "not ", 250, "1");
	expect_syntax(nots, 797, "nested too deeply");
	free(ok);
	free(ok2);
	free(deep);
	free(unary);
	free(brackets);
	free(nots);
}

Test(expr, long_operator_chains)
{
	char *ok = repeat("1", " + 1", 200, "");
	char *tooo = repeat("1", " + 1", 300, "");
	char *ors = repeat("row['age'] == 0", " or row['age'] == 0", 5000, " or row['age'] == 30");
	char *ands = repeat("True", " and True", 5000, "");

	expect(ok, "201");
	expect_syntax(tooo, 1, "expression too complex");
	expect(ors, "true");
	expect(ands, "true");
	free(ok);
	free(tooo);
	free(ors);
	free(ands);
}

Test(expr, very_long_input)
{
	char *lit = repeat("'", "a", 200000, "' == row['name']");
	char *huge = repeat("'", "a", (16u << 20) + 1, "'");
	char *list = repeat("row['age'] in [", "0, ", 20000, "30]");

	expect(lit, "false");
	expect(list, "true");
	expect_syntax(huge, 1, "expression too long");
	free(lit);
	free(huge);
	free(list);
}

/* ------------------------------------------------------ runtime errors */

Test(expr, missing_fields_name_the_path)
{
	expect_runtime("row['missing'] == 1", "field 'missing' not found in row");
	expect_runtime("row['missing']", "fields: name, age, score");
	expect_runtime("row['addr']['country']", "field 'country' not found in row['addr'] (fields: city, zip, geo)");
	expect_runtime("row['addr']['geo']['lon']", "field 'lon' not found in row['addr']['geo'] (fields: lat)");
	expect_runtime("row['none_obj']['x']", "field 'x' not found in row['none_obj'] (it has no fields)");
	expect_runtime("row[1]", "field 1 not found in row");
	expect_runtime("row.get('addr')['x']", "not found in row.get('addr')");
	expect_runtime("row[['a']]", "unhashable type: 'list'");
}

Test(expr, index_and_subscript_errors)
{
	expect_runtime("row['tags'][5]", "index 5 out of range for row['tags'] (length 3)");
	expect_runtime("row['tags'][-4]", "index -4 out of range for row['tags']");
	expect_runtime("row['name'][9]", "index 9 out of range for row['name'] (length 5)");
	expect_runtime("row['tags']['x']", "list indices must be integers, not 'str'");
	expect_runtime("row['age']['x']", "cannot subscript `row['age']`: 'int' object is not subscriptable");
	expect_runtime("row['note'][0]", "'NoneType' object is not subscriptable");
	expect_runtime("row.get('x')['y']", "cannot subscript `row.get('x')`");
}

Test(expr, type_errors)
{
	expect_runtime("'a' < 1", "'<' not supported between instances of 'str' and 'int'");
	expect_runtime("row['name'] >= 3", "'>=' not supported between instances of 'str' and 'int' (in `row['name'] >= 3`)");
	expect_runtime("None < 1", "'NoneType' and 'int'");
	expect_runtime("[1] < (1,)", "'list' and 'tuple'");
	expect_runtime("row['name'] + 1", "can only concatenate str (not \"int\") to str");
	expect_runtime("[1] + (1,)", "can only concatenate list (not \"tuple\") to list");
	expect_runtime("row['name'] - 1", "unsupported operand type(s) for -: 'str' and 'int'");
	expect_runtime("'a' * 'b'", "can't multiply sequence by non-int of type 'str'");
	expect_runtime("1.5 * [1]", "can't multiply sequence by non-int of type 'float'");
	expect_runtime("None * 2", "unsupported operand type(s) for *: 'NoneType' and 'int'");
	expect_runtime("-row['name']", "bad operand type for unary -: 'str'");
	expect_runtime("1 in 'abc'", "requires a string as left operand, not 'int'");
	expect_runtime("'a' in 5", "argument of type 'int' is not iterable");
	expect_runtime("len(row['age'])", "object of type 'int' has no len() (in `len(row['age'])`)");
	expect_runtime("int('4.2')", "invalid literal for int() with base 10: '4.2'");
	expect_runtime("int('')", "invalid literal for int()");
	expect_runtime("int(None)", "int() argument must be a string or a number, not 'NoneType'");
	expect_runtime("int(float('nan'))", "cannot convert float NaN to integer");
	expect_runtime("int(1e19)", "outside the 64-bit range");
	expect_runtime("int('99999999999999999999')", "outside the 64-bit range");
	expect_runtime("float('abc')", "could not convert string to float: 'abc'");
	expect_runtime("float('0x10')", "could not convert string to float");
	expect_runtime("float([])", "float() argument must be a string or a real number, not 'list'");
	expect_runtime("abs('x')", "bad operand type for abs(): 'str'");
}

Test(expr, arithmetic_errors)
{
	expect_runtime("1 / 0", "division by zero (in `1 / 0`)");
	expect_runtime("1 // 0", "integer division or modulo by zero");
	expect_runtime("1 % row['zero']", "integer division or modulo by zero (in `1 % row['zero']`)");
	expect_runtime("1.0 / 0", "float division by zero");
	expect_runtime("1.5 // 0.0", "float floor division by zero");
	expect_runtime("1.5 % 0", "float modulo by zero");
	expect_runtime("row['big'] + 1", "integer overflow");
	expect_runtime("row['small'] - 1", "integer overflow");
	expect_runtime("row['big'] * 2", "integer overflow");
	expect_runtime("-row['small']", "integer overflow");
	expect_runtime("abs(row['small'])", "integer overflow");
	expect_runtime("row['small'] // -1", "integer overflow");
	expect_runtime("'x' * 100000000000", "larger than");
	expect_runtime("[1, 2] * 100000000000", "larger than");
	/* little memory, but shared items: printing it would not end */
	expect_runtime("len(str([[1] * 20000] * 20000))", "larger than");
	expect_runtime("[row['tags']] * 10000000", "larger than");
	expect_runtime("len('abcdefgh' * 1000000 + 'abcdefgh' * 1000000 + 'x' * 1000000)", "larger than");
}

Test(expr, non_finite_result_has_no_json_form)
{
	json_t *row = make_row(), *got = (json_t *)1;
	expr_code *e = compile_ok("float('inf')");
	core_err err = { 0 };

	cr_assert_eq(expr_eval(e, row, &got, &err), CORE_EEXPR);
	cr_assert_null(got);
	cr_assert(strstr(err.msg, "result inf is not a finite number"), "%s", err.msg);
	expr_free(e);
	json_decref(row);
	expect_key("float('-infinity')", "-inf");
	expect("float('inf') > 1e308", "true");
	expect("float('nan') == float('nan')", "false");
	expect("float('nan') != 1", "true");
}

/* ------------------------------------------------------------- the API */

Test(expr, api_contract)
{
	json_t *arr = json_array(), *got = (json_t *)1;
	expr_code *e = compile_ok("  row['a'] == 1 "), *none = (expr_code *)1;
	core_err err = { 0 };

	cr_assert_str_eq(expr_source(e), "  row['a'] == 1 ");
	cr_assert_eq(expr_eval(e, arr, &got, &err), CORE_EEXPR);
	cr_assert_null(got);
	cr_assert(strstr(err.msg, "not a JSON object"), "%s", err.msg);
	cr_assert_eq(expr_compile(NULL, &none, &err), CORE_EEXPR);
	cr_assert_null(none);
	expr_free(e);
	expr_free(NULL);
	cr_assert_null(expr_source(NULL));
	json_decref(arr);
}

Test(expr, results_are_new_references)
{
	json_t *row = make_row(), *got;
	expr_code *e = compile_ok("row['tags']");
	core_err err = { 0 };

	cr_assert_eq(expr_eval(e, row, &got, &err), 0, "%s", err.msg);
	cr_assert_neq(got, json_object_get(row, "tags"));
	json_array_append_new(got, json_integer(1));
	cr_assert_eq(json_array_size(json_object_get(row, "tags")), 3);
	json_decref(got);
	expr_free(e);
	json_decref(row);
}

struct shared {
	const expr_code *e;
	const json_t *row;
	int failures;
};

static void *worker(void *arg)
{
	struct shared *s = arg;
	core_err err;
	char key[64];
	int i;

	for (i = 0; i < 2000; i++)
		if (expr_route_key(s->e, s->row, key, sizeof(key), &err) ||
		    strcmp(key, "alice-30"))
			s->failures++;
	return NULL;
}

Test(expr, one_expression_many_threads, .timeout = 60)
{
	json_t *row = make_row();
	expr_code *e = compile_ok("row['name'] + '-' + str(row['age']) if 'a' in row['tags'] else 'no'");
	struct shared s[4];
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++) {
		s[i] = (struct shared){ e, row, 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, worker, &s[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(s[i].failures, 0);
	}
	expr_free(e);
	json_decref(row);
}

struct deep {
	const char *src;
	const char *want;	/* the route key */
	expr_code *e;
	int rc;
	char key[64];
	core_err err;
};

static void *deep_worker(void *arg)
{
	struct deep *d = arg;
	json_t *row = json_object();

	d->rc = expr_route_key(d->e, row, d->key, sizeof(d->key), &d->err);
	json_decref(row);
	return NULL;
}

/* The deepest expressions the parser accepts (compiled when the settings
 * are validated, on the main thread) evaluate on a stack the size of the
 * engine's workers' (engine/pipeline.c, WORKER_STACK): 200 levels of
 * brackets (a set of nested tuples, hashed, compared and printed
 * recursively) and 255 operators in a row. */
Test(expr, deepest_expressions_fit_a_worker_stack, .timeout = 60)
{
	char *tuple = repeat("{", "(", 198, "1");
	char *chain = repeat("1", " + 1", 255, "");
	char *src, *printed, *strlen_src;
	struct deep d[3] = { 0 };
	pthread_attr_t attr;
	pthread_t t;
	size_t i, len = strlen(tuple);

	src = malloc(4 * len + 1000);
	printed = malloc(4 * len + 1000);
	strlen_src = malloc(4 * len + 1000);
	cr_assert(src && printed && strlen_src);
	strcpy(printed, tuple);
	for (i = 0; i < 198; i++)
		strcat(printed, ",)");
	strcat(printed, "}");
	sprintf(src, "%s == %s", printed, printed);
	/* len( and str( are two more levels: two tuples fewer */
	sprintf(strlen_src, "len(str({%s))", printed + 3);
	strlen_src[strlen(strlen_src) - 2 * 2 - 3] = '\0';
	strcat(strlen_src, "}))");
	d[0] = (struct deep){ .src = src, .want = "true" };
	d[1] = (struct deep){ .src = chain, .want = "256" };
	d[2] = (struct deep){ .src = strlen_src, .want = "591" };
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (i = 0; i < 3; i++) {
		d[i].e = compile_ok(d[i].src);
		cr_assert_eq(pthread_create(&t, &attr, deep_worker, &d[i]), 0);
		pthread_join(t, NULL);
		cr_assert_eq(d[i].rc, 0, "%.40s...: %s", d[i].src, d[i].err.msg);
		cr_assert_str_eq(d[i].key, d[i].want);
		expr_free(d[i].e);
	}
	pthread_attr_destroy(&attr);
	free(src);
	free(printed);
	free(strlen_src);
	free(tuple);
	free(chain);
}
