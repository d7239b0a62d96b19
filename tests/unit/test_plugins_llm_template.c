/* test_plugins_llm_template.c — prompt templates: syntax, whitespace
 * control, lookups, filters, Python-style rendering, errors, fields. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "plugins/template/template.h"

TestSuite(tpl_template);

static const char *row_text =
	"{\"a\": 1, \"s\": \"  Hi there \", \"n\": null, \"t\": true, \"f\": false,"
	" \"r\": 2.5, \"big\": 1e16, \"l\": [1, \"x\", [2, 3]],"
	" \"o\": {\"k\": \"v\", \"b\": true, \"in\": {\"deep\": 7}, \"z\": null},"
	" \"u\": \"h\\u00e9llo \\u4e16\\u754c\", \"e\": \"\", \"my key\": \"mk\","
	" \"zero\": 0, \"el\": [], \"eo\": {}}";

static json_t *js(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, 0, &jerr);

	cr_assert_not_null(v, "bad test JSON %s: %s", text, jerr.text);
	return v;
}

static tpl_template *compile_ok(const char *src)
{
	core_err err = { 0 };
	tpl_template *t = NULL;

	cr_assert_eq(tpl_compile(src, &t, &err), 0, "%s: %s", src,
		     err.msg);
	cr_assert_not_null(t);
	return t;
}

/* Renders src for the row (default: row_text); returns a malloc'd string. */
static char *render_row(const char *src, const char *row)
{
	tpl_template *t = compile_ok(src);
	json_t *r = js(row ? row : row_text);
	core_buf b = { 0 };
	core_err err = { 0 };

	cr_assert_eq(tpl_render(t, r, &b, &err), 0, "%s: %s", src,
		     err.msg);
	json_decref(r);
	tpl_free(t);
	return core_buf_steal(&b);
}

static void expect(const char *src, const char *want)
{
	char *got = render_row(src, NULL);

	cr_expect_str_eq(got, want, "template %s", src);
	free(got);
}

static void expect_compile_err(const char *src, const char *want)
{
	core_err err = { 0 };
	tpl_template *t = (tpl_template *)1;

	cr_assert_eq(tpl_compile(src, &t, &err), CORE_ECONFIG, "%s", src);
	cr_assert_null(t);
	cr_expect(strstr(err.msg, want), "template %s: got '%s', want '%s'", src,
		  err.msg, want);
}

static void expect_render_err(const char *src, const char *want)
{
	tpl_template *t = compile_ok(src);
	json_t *r = js(row_text);
	core_buf b = { 0 };
	core_err err = { 0 };

	cr_assert(!core_buf_puts(&b, "keep"));
	cr_assert_eq(tpl_render(t, r, &b, &err), CORE_EDATA, "%s", src);
	cr_expect(strstr(err.msg, want), "template %s: got '%s', want '%s'", src,
		  err.msg, want);
	cr_expect_str_eq(b.data, "keep", "the output is left as it was");
	core_buf_release(&b);
	json_decref(r);
	tpl_free(t);
}

/* ------------------------------------------------------------ syntax */

Test(tpl_template, literal_text_only)
{
	expect("", "");
	expect("just text", "just text");
	expect("single { braces } and }} stay", "single { braces } and }} stay");
	expect("{ {", "{ {");
}

Test(tpl_template, interpolation_forms)
{
	expect("A={{row.a}}", "A=1");
	expect("A={{ row.a }}!", "A=1!");
	expect("{{ row['a'] }}", "1");
	expect("{{ row[\"a\"] }}", "1");
	expect("{{ row['my key'] }}", "mk");
	expect("{{\n  row . o . k\n}}", "v");
	expect("{{ row['o']['in']['deep'] }}", "7");
	expect("{{ row.o.in.deep }}", "7");
	expect("{{ row.o['in'].deep }}", "7");
	expect("{{ row.l[0] }}|{{ row.l[1] }}|{{ row.l[2][1] }}", "1|x|3");
	expect("{{ row.l[-1] }}|{{ row.l[-3] }}", "[2,3]|1");
	expect("{{ row.s }}{{ row.a }}", "  Hi there 1");
}

Test(tpl_template, string_literals)
{
	expect("{{ '{{' }} row.a {{ \"}}\" }}", "{{ row.a }}");
	expect("{{ 'it\\'s' }}", "it's");
	expect("{{ \"tab\\there\\n\" }}", "tab\there\n");
	expect("{{ '\\u00e9\\x41\\U0001F600' }}", "\xc3\xa9" "A\xf0\x9f\x98\x80");
	expect("{{ '\\q' }}", "\\q");
	expect("{{ 'abc' | upper }}", "ABC");
}

Test(tpl_template, comments)
{
	expect("a{# a comment {{ row.zz }} #}b", "ab");
	expect("a {#- c -#} b", "ab");
	expect("a {# c #} b", "a  b");
	expect("{#- x #}", "");
	expect("{##}x", "x");
}

Test(tpl_template, whitespace_control)
{
	expect("x  {{- row.a -}}  \n y", "x1y");
	expect("x \n {{- row.a }} \n", "x1 ");
	expect("x {{ row.a -}}\n\t y", "x 1y");
	/* Python's str.isspace(): no-break space and ideographic space. */
	expect("x\xc2\xa0\xe3\x80\x80{{- row.a -}}\xc2\xa0y", "x1y");
	expect("{{- row.a -}}", "1");
}

Test(tpl_template, jinja_newline_handling)
{
	expect("A {{ row.a }}\n", "A 1");
	expect("A\n\n", "A\n");
	expect("A\r\n", "A");
	expect("a\r\nb\rc\n", "a\nb\nc");
	expect("a\r\nb {# c -#}  \n d\r\n", "a\nb d");
}

Test(tpl_template, values_are_not_normalised)
{
	char *got = render_row("[{{ row.v }}]\n", "{\"v\": \"a\\r\\nb\\n\"}");

	cr_expect_str_eq(got, "[a\r\nb\n]");
	free(got);
}

Test(tpl_template, unicode_pass_through)
{
	expect("{{ row.u }} \xe2\x9c\x93", "h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c \xe2\x9c\x93");
	expect("{{ row.u | length }}", "8");
}

/* ------------------------------------------------------ value rendering */

static void expect_value(const char *json_value, const char *want)
{
	char row[256], *got;

	snprintf(row, sizeof(row), "{\"v\": %s}", json_value);
	got = render_row("{{ row.v }}", row);
	cr_expect_str_eq(got, want, "value %s", json_value);
	free(got);
}

Test(tpl_template, python_str_of_scalars)
{
	expect_value("\"text\"", "text");
	expect_value("0", "0");
	expect_value("-42", "-42");
	expect_value("9223372036854775807", "9223372036854775807");
	expect_value("-9223372036854775808", "-9223372036854775808");
	expect_value("true", "True");
	expect_value("false", "False");
	expect_value("null", "None");
}

Test(tpl_template, python_repr_of_reals)
{
	/* Each expected string is Python 3's repr(float(x)). */
	expect_value("0.1", "0.1");
	expect_value("0.3", "0.3");
	expect_value("2.5", "2.5");
	expect_value("100.0", "100.0");
	expect_value("123.0", "123.0");
	expect_value("-1234.5678", "-1234.5678");
	expect_value("1e15", "1000000000000000.0");
	expect_value("1e16", "1e+16");
	expect_value("1e22", "1e+22");
	expect_value("123456789012345678.0", "1.2345678901234568e+17");
	expect_value("12345678901234567890.0", "1.2345678901234567e+19");
	expect_value("9007199254740993.0", "9007199254740992.0");
	expect_value("0.0001", "0.0001");
	expect_value("0.00001", "1e-05");
	expect_value("1.5e-7", "1.5e-07");
	expect_value("-0.0", "-0.0");
	expect_value("0.0", "0.0");
	expect_value("5e-324", "5e-324");
	expect_value("1.7976931348623157e308", "1.7976931348623157e+308");
	expect_value("1e100", "1e+100");
	expect_value("0.5", "0.5");
}

Test(tpl_template, containers_as_compact_json)
{
	expect("{{ row.l }}", "[1,\"x\",[2,3]]");
	expect("{{ row.o.in }}", "{\"deep\":7}");
	expect("{{ row.el }}{{ row.eo }}", "[]{}");
	expect_value("{\"b\": 1.0, \"a\": \"\\u00e9\"}", "{\"b\":1.0,\"a\":\"\xc3\xa9\"}");
}

/* ------------------------------------------------------------ filters */

Test(tpl_template, upper_lower_trim)
{
	expect("{{ row.s | upper }}", "  HI THERE ");
	expect("{{ row.s | lower }}", "  hi there ");
	expect("[{{ row.s | trim }}]", "[Hi there]");
	expect("{{ row.s|trim|upper }}", "HI THERE");
	expect("{{ row.s | upper() }}", "  HI THERE ");
	/* As Jinja: the value's str() first. */
	expect("{{ row.t | lower }}{{ row.n | upper }}{{ row.a | trim }}", "trueNONE1");
	expect("{{ row.r | upper }}", "2.5");
	expect("[{{ row.e | trim }}]", "[]");
	expect_value("\"\\u00a0\\u3000 x \\u2028\"", "\xc2\xa0\xe3\x80\x80 x \xe2\x80\xa8");
}

static void expect_case(const char *in, const char *upper, const char *lower)
{
	char row[256], *got;

	snprintf(row, sizeof(row), "{\"v\": \"%s\"}", in);
	got = render_row("{{ row.v | upper }}", row);
	cr_expect_str_eq(got, upper, "upper of %s", in);
	free(got);
	got = render_row("{{ row.v | lower }}", row);
	cr_expect_str_eq(got, lower, "lower of %s", in);
	free(got);
}

Test(tpl_template, unicode_case_as_python)
{
	/* Expected values are Python 3's str.upper() / str.lower(). */
	expect_case("Stra\xc3\x9f" "e \xc3\x89\xc3\xa7\xc3\xa0",
		    "STRASSE \xc3\x89\xc3\x87\xc3\x80",
		    "stra\xc3\x9f" "e \xc3\xa9\xc3\xa7\xc3\xa0");
	expect_case("\xc3\xbf", "\xc5\xb8", "\xc3\xbf");       /* ÿ -> Ÿ */
	expect_case("\xc4\xb0", "\xc4\xb0", "i\xcc\x87");       /* İ */
	expect_case("\xc4\xb1", "I", "\xc4\xb1");               /* ı */
	expect_case("\xc5\x89", "\xca\xbcN", "\xc5\x89");       /* ŉ */
	expect_case("\xc4\xb2\xc4\xb3\xc4\xbf\xc5\x80\xc5\xbd\xc5\xbe\xc4\xb8",
		    "\xc4\xb2\xc4\xb2\xc4\xbf\xc4\xbf\xc5\xbd\xc5\xbd\xc4\xb8",
		    "\xc4\xb3\xc4\xb3\xc5\x80\xc5\x80\xc5\xbe\xc5\xbe\xc4\xb8");
	expect_case("\xce\x86\xce\x88\xce\x8f\xce\xb1\xcf\x89",   /* ΆΈΏαω */
		    "\xce\x86\xce\x88\xce\x8f\xce\x91\xce\xa9",
		    "\xce\xac\xce\xad\xcf\x8e\xce\xb1\xcf\x89");
	expect_case("\xce\x90", "\xce\x99\xcc\x88\xcc\x81", "\xce\x90"); /* ΐ */
	expect_case("\xd0\x81\xd0\x96\xd1\x8f", "\xd0\x81\xd0\x96\xd0\xaf",
		    "\xd1\x91\xd0\xb6\xd1\x8f");                      /* ЁЖя */
	expect_case("\xc2\xb5", "\xce\x9c", "\xc2\xb5");          /* µ */
	expect_case("\xe4\xb8\x96 \xc3\x97\xc3\xb7", "\xe4\xb8\x96 \xc3\x97\xc3\xb7",
		    "\xe4\xb8\x96 \xc3\x97\xc3\xb7");                 /* 世 × ÷ */
}

Test(tpl_template, length)
{
	expect("{{ row.s | length }}", "11");
	expect("{{ row.l | length }}/{{ row.o | length }}", "3/4");
	expect("{{ row.e | length }}{{ row.el | length }}{{ row.eo | length }}", "000");
	expect("{{ 'abc' | length }}", "3");
}

Test(tpl_template, tojson_is_canonical)
{
	expect("{{ row.o | tojson }}", "{\"b\":true,\"in\":{\"deep\":7},\"k\":\"v\",\"z\":null}");
	expect("{{ row.s | tojson }}", "\"  Hi there \"");
	expect("{{ row.u | tojson }}", "\"h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c\"");
	expect("{{ row.n | tojson }}{{ row.t|tojson }}{{ row.r|tojson }}", "nulltrue2.5");
	expect("{{ row.big | tojson }}", "10000000000000000");
	expect("{{ row.l | tojson | length }}", "13");
}

Test(tpl_template, default_filter)
{
	expect("{{ row.zz | default('none given') }}", "none given");
	expect("{{ row.n | default('was null') }}", "was null");
	expect("{{ row.a | default('x') }}", "1");
	expect("{{ row.e | default('x') }}", "");
	expect("{{ row.e | default('x', true) }}", "x");
	expect("{{ row.zero | default(5, true) }}|{{ row.zero | default(5) }}", "5|0");
	expect("{{ row.el | default('empty', True) }}", "empty");
	expect("{{ row.zz | default }}|", "|");
	expect("{{ row.zz | default() }}|", "|");
	expect("{{ row.zz | default(-3) }} {{ row.zz | default(1.5e3) }}", "-3 1500.0");
	expect("{{ row.zz | default(true) }} {{ row.zz | default(none) }}", "True None");
	expect("{{ row.zz | default(\"q\") | upper }}", "Q");
	expect("{{ row.o.zz | default('d') }}", "d");
	expect("{{ row.o.z.deeper | default('d') }}", "d");
	expect("{{ row.zz.y | default('d') }}", "d");
	expect("{{ row.l[9] | default('d') }}", "d");
}

/* ----------------------------------------------------- compile errors */

Test(tpl_template, unsupported_statements_are_named)
{
	expect_compile_err("Hi {% set x = 1 %}",
			   "template line 1, column 7: {% set %} is not supported "
			   "(supported: if, elif, else, endif, for, endfor)");
	expect_compile_err("a\nbc {%- raw %}", "line 2, column 8: {% raw %} is not supported");
	expect_compile_err("{% include 'x' %}", "column 4: {% include %} is not supported");
	expect_compile_err("{% macro m() %}", "column 4: {% macro %} is not supported");
	expect_compile_err("{% break %}", "column 4: {% break %} is not supported");
	expect_compile_err("{% frobnicate %}", "column 4: unknown statement 'frobnicate'");
	expect_compile_err("{% %}", "column 4: expected a statement after '{%'");
}

Test(tpl_template, syntax_errors_name_position)
{
	expect_compile_err("Hello {{ row.a", "line 1, column 15: expected '|' or '}}' "
			   "to close the expression opened at line 1, column 7, "
			   "got end of template");
	expect_compile_err("{{ row.a b }}", "column 10: expected '|' or '}}'");
	expect_compile_err("{{ }}", "column 4: expected an expression (row.name, "
			   "row['name'] or a quoted string), got '}}'");
	expect_compile_err("{{ name }}", "column 4: unknown name 'name': "
			   "names are row, lookup and loop variables, e.g. {{ row.name }}");
	expect_compile_err("{{ row. }}", "column 9: expected a field name after '.', got '}}'");
	expect_compile_err("{{ row.1 }}", "column 8: expected a field name after '.', got '1'");
	expect_compile_err("{{ row[0] }}", "column 7: the row is an object");
	expect_compile_err("{{ row[x] }}", "column 8: unknown name 'x'");
	expect_compile_err("{{ row[true] }}", "column 8: a key must be a quoted string or an integer");
	expect_compile_err("{{ row['a' }}", "column 12: expected ']', got '}}'");
	expect_compile_err("{{ row.l[1.5] }}", "column 10: an index must be an integer");
	expect_compile_err("{{ row['a }}", "column 8: unterminated string literal");
	expect_compile_err("{{ row.a | }}", "column 12: expected a filter name after '|'");
	expect_compile_err("{{ row.a | title }}", "column 12: unknown filter 'title' "
			   "(supported: upper, lower, trim, length, tojson, default)");
	expect_compile_err("{{ row.a | upper(1) }}", "column 18: filter 'upper' takes no arguments");
	expect_compile_err("{{ row.a | default(x) }}", "column 20: unknown name 'x'");
	expect_compile_err("{{ row.a | default('x', 'y') }}", "column 25: the second argument of default");
	expect_compile_err("{{ row.a | default('x' }}", "column 24: expected ')'");
	expect_compile_err("x {# never closed", "column 3: unclosed comment: expected '#}'");
	expect_compile_err("{{ '\\u12' }}", "column 5: expected 4 hex digits after '\\u'");
	expect_compile_err("{{ '\\ud800' }}", "U+D800 is not allowed");
	expect_compile_err("{{ '\\x00' }}", "U+0000 is not allowed");
	expect_compile_err("{{ row.a | default(99999999999999999999) }}", "integer 99999999999999999999 is out of range");
	expect_compile_err("{{ row.a | default(1e999) }}", "out of range");
	expect_compile_err("{{ row.a | default(1e) }}", "expected digits in the exponent");
	expect_compile_err("{{ row.a | default('\xff') }}", "not valid UTF-8");
}

Test(tpl_template, columns_count_characters_and_lines)
{
	expect_compile_err("\xc3\xa9\xc3\xa9 {{ bad }}", "line 1, column 7: unknown name 'bad'");
	expect_compile_err("one\ntwo\n  {{ row.a | nope }}", "line 3, column 14: unknown filter 'nope'");
}

Test(tpl_template, compile_error_without_err_struct)
{
	tpl_template *t = NULL;

	cr_expect_eq(tpl_compile("{{ row", &t, NULL), CORE_ECONFIG);
	cr_expect_eq(tpl_compile("{{ 'x", &t, NULL), CORE_ECONFIG);
	cr_expect_eq(tpl_compile(NULL, &t, NULL), CORE_ECONFIG);
	cr_expect_null(t);
}

/* ------------------------------------------------------ render errors */

Test(tpl_template, missing_field_is_a_data_error)
{
	expect_render_err("Hi {{ row.x }}", "template field 'x' is not in the row");
	expect_render_err("{{ row['my other'] }}", "template field 'my other' is not in the row");
	expect_render_err("{{ row.o.nope }}", "template field 'o.nope' is not in the row");
	expect_render_err("{{ row.o['sp ace'] }}", "template field 'o['sp ace']' is not in the row");
	expect_render_err("{{ row.o.z.deeper }}", "template field 'o.z.deeper' is not in the row ('o.z' is null)");
	expect_render_err("{{ row.n.x }}", "template field 'n.x' is not in the row ('n' is null)");
	expect_render_err("{{ row.l[3] }}", "template field 'l[3]' is not in the row ('l' has 3 items)");
	expect_render_err("{{ row.l[-4] }}", "template field 'l[-4]' is not in the row ('l' has 3 items)");
	/* A filter does not hide a missing value; only default replaces it. */
	expect_render_err("{{ row.x | upper | default('d') }}", "template field 'x' is not in the row");
	expect_render_err("{{ row.x | length }}", "template field 'x' is not in the row");
}

Test(tpl_template, type_errors_name_the_field)
{
	expect_render_err("{{ row.s.x }}", "template field 's.x': 's' is a string, not an object");
	expect_render_err("{{ row.s[20] }}", "template field 's[20]' is not in the row ('s' has 11 characters)");
	expect_render_err("{{ row.o[0] }}", "template field 'o[0]': 'o' is an object, not an array");
	expect_render_err("{{ row.l.k }}", "template field 'l.k': 'l' is an array, not an object");
	expect_render_err("{{ row.a.b.c }}", "template field 'a.b': 'a' is an integer, not an object");
	expect_render_err("{{ row.l[2].k }}", "template field 'l[2].k': 'l[2]' is an array, not an object");
	/* Type problems are not "missing": default does not apply. */
	expect_render_err("{{ row.s.x | default('d') }}", "'s' is a string, not an object");
	expect_render_err("{{ row.a | length }}", "template field 'a' | length: an integer has no length");
	expect_render_err("{{ row.t | length }}", "a boolean has no length");
	expect_render_err("{{ row.n | length }}", "null has no length");
	expect_render_err("{{ row.r | length }}", "a real number has no length");
}

Test(tpl_template, tojson_reports_unhashable_values)
{
	tpl_template *t = compile_ok("{{ row.v | tojson }}");
	json_t *r = js("{\"v\": {\"k\": [9007199254740993]}}");
	core_buf b = { 0 };
	core_err err = { 0 };

	cr_assert_eq(tpl_render(t, r, &b, &err), CORE_EDATA);
	cr_expect(strstr(err.msg, "template field 'v' | tojson: "), "%s", err.msg);
	cr_expect(strstr(err.msg, "outside +-2^53"), "%s", err.msg);
	cr_expect_eq(b.len, 0);
	core_buf_release(&b);
	json_decref(r);
	tpl_free(t);
}

Test(tpl_template, non_object_row)
{
	tpl_template *t = compile_ok("{{ row.a }}");
	json_t *r = js("[1]");
	core_buf b = { 0 };
	core_err err = { 0 };

	cr_assert_eq(tpl_render(t, r, &b, &err), CORE_EDATA);
	cr_expect_str_eq(err.msg, "template: the row is an array, not an object");
	json_decref(r);
	tpl_free(t);
}

Test(tpl_template, render_appends_and_template_is_reusable)
{
	tpl_template *t = compile_ok("<{{ row.a }}>");
	json_t *r1 = js("{\"a\": 1}"), *r2 = js("{\"a\": \"two\"}");
	core_buf b = { 0 };
	core_err err = { 0 };

	cr_assert(!core_buf_puts(&b, "pre"));
	cr_assert_eq(tpl_render(t, r1, &b, &err), 0);
	cr_assert_eq(tpl_render(t, r2, &b, &err), 0);
	cr_expect_str_eq(b.data, "pre<1><two>");
	cr_expect_eq(json_object_get(r1, "a")->refcount, 1, "the row is only read");
	core_buf_release(&b);
	json_decref(r1);
	json_decref(r2);
	tpl_free(t);
}

/* -------------------------------------------------------------- hash */

Test(tpl_template, hash_is_of_the_source_text)
{
	tpl_template *t = compile_ok("abc");
	tpl_template *u = compile_ok("abc\n");

	/* sha256("abc") */
	cr_expect_str_eq(tpl_hash(t), "sha256:ba7816bf8f01cfea414140de5dae2223"
			 "b00361a396177a9cb410ff61f20015ad");
	cr_expect_str_neq(tpl_hash(t), tpl_hash(u),
			  "the hash covers the text as given");
	tpl_free(t);
	tpl_free(u);
	tpl_free(NULL);
}

Test(tpl_template, large_template_and_values)
{
	size_t n = 200000;
	char *src = malloc(n * 12 + 1), *p = src, *got;
	json_t *r = json_object();
	char *big = malloc(1 << 20);

	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "{{ row.a }}");
	memset(big, 'x', (1 << 20) - 1);
	big[(1 << 20) - 1] = '\0';
	json_object_set_new(r, "a", json_string("y"));
	{
		tpl_template *t = compile_ok(src);
		core_buf b = { 0 };
		core_err err = { 0 };

		cr_assert_eq(tpl_render(t, r, &b, &err), 0);
		cr_expect_eq(b.len, n);
		core_buf_release(&b);
		tpl_free(t);
	}
	json_object_set_new(r, "a", json_string(big));
	got = NULL;
	{
		tpl_template *t = compile_ok("[{{ row.a | upper | length }}]");
		core_buf b = { 0 };
		core_err err = { 0 };

		cr_assert_eq(tpl_render(t, r, &b, &err), 0);
		got = core_buf_steal(&b);
		tpl_free(t);
	}
	cr_expect_str_eq(got, "[1048575]");
	free(got);
	free(big);
	free(src);
	json_decref(r);
}

/* -------------------------------------------------------- statements */

Test(tpl_template, statement_errors_name_position)
{
	expect_compile_err("{% if row.a %}x", "line 1, column 1: {% if %} is never "
			   "closed: expected {% endif %} before the end of the template");
	expect_compile_err("a\n {% for x in row.l %}", "line 2, column 2: {% for %} is "
			   "never closed: expected {% endfor %}");
	expect_compile_err("{% endif %}", "column 4: unexpected {% endif %}: no {% if %} is open");
	expect_compile_err("{% endfor %}", "column 4: unexpected {% endfor %}: no {% for %} is open");
	expect_compile_err("{% for x in row.l %}{% endif %}", "column 24: unexpected "
			   "{% endif %}: the innermost open block is the {% for %} "
			   "opened at line 1, column 1");
	expect_compile_err("{% if row.a %}{% else %}{% else %}{% endif %}", "column 28: "
			   "{% else %} after the {% else %} of the {% if %} opened at "
			   "line 1, column 1");
	expect_compile_err("{% if row.a %}{% else %}{% elif row.b %}{% endif %}",
			   "column 28: {% elif %} after the {% else %}");
	expect_compile_err("{% for x in row.l %}{% elif row.b %}{% endfor %}",
			   "unexpected {% elif %}: the innermost open block is the {% for %}");
	expect_compile_err("{% elif row.a %}", "column 4: unexpected {% elif %}: no {% if %} is open");
	expect_compile_err("{% if %}{% endif %}", "column 7: expected an expression");
	expect_compile_err("{% if row.a x %}", "column 13: expected '%}' to close the "
			   "statement opened at line 1, column 1, got 'x'");
	expect_compile_err("{% else x %}", "unexpected {% else %}");
	expect_compile_err("{% for in row.l %}", "column 8: expected a variable name "
			   "after 'for', got 'in'");
	expect_compile_err("{% for x row.l %}", "column 10: expected 'in' after the "
			   "loop's variables, got 'row'");
	expect_compile_err("{% for loop in row.l %}", "'loop' is the loop's own variable");
	expect_compile_err("{% for x in row.l if x %}", "column 19: 'if' here (an inline "
			   "if, or a loop filter) is not supported; use {% if %}");
	expect_compile_err("{{ loop.index }}", "column 4: 'loop' is only defined inside {% for %}");
	expect_compile_err("{% for x in row.l %}{{ loop.nope }}{% endfor %}",
			   "column 29: unknown loop attribute 'nope'");
	expect_compile_err("{% for x in row.l %}{{ loop }}{% endfor %}",
			   "expected '.' after 'loop'");
	expect_compile_err("{% for x in row.l %}{% endfor %}{{ x }}", "unknown name 'x'");
	expect_compile_err("{% for x in row.l %}{% else %}{{ x }}{% endfor %}",
			   "unknown name 'x'");
	expect_compile_err("{% for x in x %}{% endfor %}", "column 13: unknown name 'x'");
	expect_compile_err("{% for a, b, c, d, e, f, g, h, i in row.l %}", "at most 8 names");
}

Test(tpl_template, expression_errors_name_position)
{
	expect_compile_err("{{ row.a + 1 }}", "column 10: operator '+' is not supported "
			   "(templates have no arithmetic)");
	expect_compile_err("{{ row.a ~ row.s }}", "operator '~' is not supported");
	expect_compile_err("{{ row.a if row.t else 'x' }}", "column 10: 'if' here (an "
			   "inline if, or a loop filter) is not supported");
	expect_compile_err("{{ 1 < 2 < 3 }}", "chained comparisons (a < b < c) are not supported");
	expect_compile_err("{{ row.a is foo }}", "column 13: unknown test 'foo' "
			   "(supported: defined, undefined, none)");
	expect_compile_err("{{ row.o.pop() }}", "column 10: calling 'pop' is not supported");
	expect_compile_err("{{ row.o.get() }}", ".get() takes a key and an optional default");
	expect_compile_err("{{ row.o.items(1) }}", ".items() takes no arguments");
	expect_compile_err("{% for k, v in row.items() %}{% endfor %}", "column 20: the "
			   "row has no .items() (ELSPETH's row has .get() and .keys())");
	expect_compile_err("{{ (1, 2) }}", "tuples are not supported");
	expect_compile_err("{{ row.l[1:2] }}", "column 11: slices ([a:b]) are not supported");
	expect_compile_err("{{ [1, 2 }}", "expected ']' to close the list opened at line 1, column 4");
	expect_compile_err("{{ (row.a }}", "expected ')' to close the parenthesis");
	expect_compile_err("{{ row.a | default(1, 2, 3) }}", "default takes at most two arguments");
}

Test(tpl_template, nesting_is_bounded)
{
	size_t n = 70, i;
	char *src = malloc(n * 40 + 200), *p = src;

	for (i = 0; i < n; i++)
		p += sprintf(p, "{%% if row.t %%}");
	strcpy(p, "x");
	expect_compile_err(src, "blocks nested too deeply (more than 64)");
	p = src;
	for (i = 0; i < n; i++)
		*p++ = '(';
	strcpy(p, "1");
	memmove(src + 3, src, strlen(src) + 1);
	memcpy(src, "{{ ", 3);
	expect_compile_err(src, "expression nested too deeply (more than 64 levels)");
	p = src + sprintf(src, "{{ row.s");
	for (i = 0; i < 201; i++)
		p += sprintf(p, " | trim");
	strcpy(p, " }}");
	expect_compile_err(src, "expression too complex (more than 200 levels");
	free(src);
}

Test(tpl_template, template_name_in_messages)
{
	core_err err = { 0 };
	tpl_template *t = (tpl_template *)1;

	cr_assert_eq(tpl_compile_named("ok\n{{ nope }}", "prompts/x.j2", &t, &err),
		     CORE_ECONFIG);
	cr_assert_null(t);
	cr_expect_str_eq(err.msg, "template prompts/x.j2 line 2, column 4: unknown "
			 "name 'nope': names are row, lookup and loop variables, "
			 "e.g. {{ row.nope }}");
}

Test(tpl_template, statement_render_errors)
{
	expect_render_err("{% if row.x %}a{% endif %}", "template field 'x' is not in the row");
	expect_render_err("{% for x in row.a %}{% endfor %}",
			  "template: {% for %} over 'row.a': an integer is not iterable");
	expect_render_err("{% for x in row.n %}{% endfor %}", "null is not iterable");
	expect_render_err("{% for a, b in row.l %}{% endfor %}",
			  "template: {% for %} over 'row.l': cannot unpack an integer into 2 names");
	expect_render_err("{% for a, b in [[1, 2, 3]] %}{% endfor %}",
			  "cannot unpack an array into 2 names (it has 3 items)");
	expect_render_err("{{ row.s < 1 }}", "template: '<' not supported between "
			  "instances of 'str' and 'int' (in `row.s < 1`)");
	expect_render_err("{{ 1 in row.a }}", "argument of type 'int' is not iterable");
	expect_render_err("{{ row.a in row.s }}", "'in <string>' requires a string as left operand, not 'int'");
	expect_render_err("{{ row.l in row.o }}", "unhashable type: 'list'");
	expect_render_err("{{ not row.x }}", "template field 'x' is not in the row");
	expect_render_err("{{ row.t and row.x }}", "template field 'x' is not in the row");
	expect_render_err("{% for it in row.l %}{{ it.k }}{% endfor %}",
			  "template field 'it.k': 'it' is an integer, not an object");
	expect_render_err("{% for it in [row.o] %}{{ it.nope }}{% endfor %}",
			  "template field 'it.nope' is not in loop variable 'it'");
	expect_render_err("{{ lookup.x }}", "template field 'lookup.x' is not in the lookup");
	expect_render_err("{{ row.o.items }}", "template field 'o.items': in Jinja .items "
			  "of a mapping is its method, not the key; write ['items']");
	expect_render_err("{{ row.keys }}", "template field 'keys': in Jinja .keys of a "
			  "mapping is its method");
	expect_render_err("{{ row.l.items() }}", "template: 'row.l' is an array, not a "
			  "mapping: it has no .items()");
	expect_render_err("{{ row.o[row.l] }}", "a key must be a string or an integer, not an array");
	expect_render_err("{{ (row.o).nope }}", "template field 'o.nope' is not in the row");
	expect_render_err("{{ (row.o)[row.s] }}", "template field 'o['  Hi there ']' is not in the row");
	expect_render_err("{{ row.o.get('in').nope }}", "template field "
			  "'row.o.get('in').nope' is not in 'row.o.get('in')'");
}

Test(tpl_template, statements_render)
{
	char *got;

	expect("{% if row.a %}A{% elif row.x %}B{% endif %}", "A");
	expect("{% for k, v in row.o.items() %}{{ k }}{% endfor %}", "kbinz");
	expect("{% for x in row.l %}{{ loop.revindex0 }}{% endfor %}", "210");
	expect("{{ row.o.get('k') }}{{ row.o.get('nope') }}{{ row.get('a') }}", "vNone1");
	expect("{{ row.s[2] }}{{ row.u[-1] }}", "H\xe7\x95\x8c");
	got = render_row("{{ row }}", "{\"a\": 1, \"b\": [true, null]}");
	cr_expect_str_eq(got, "{\"a\":1,\"b\":[true,null]}");
	free(got);
	expect("{% for k in row.eo %}x{% else %}empty{% endfor %}", "empty");
	expect("{{ (row.o).k }}{{ (row.o)['b'] }}{{ (row.l)[row.a] }}", "vTruex");
	expect("{{ row['my key'] is defined }}{{ row.o.z is none }}", "TrueTrue");
}

Test(tpl_template, lookup_namespace)
{
	tpl_template *t = compile_ok("{{ lookup.c[row.k].n }}|{% for l in lookup.l %}"
				     "{{ l }}{% if not loop.last %},{% endif %}{% endfor %}");
	json_t *r = js("{\"k\": \"b\"}");
	json_t *lk = js("{\"c\": {\"a\": {\"n\": 1}, \"b\": {\"n\": \"two\"}}, \"l\": [\"x\", \"y\"]}");
	core_buf b = { 0 };
	core_err err = { 0 };

	cr_assert_eq(tpl_render_lookup(t, r, lk, &b, &err), 0, "%s", err.msg);
	cr_expect_str_eq(b.data, "two|x,y");
	core_buf_reset(&b);
	json_object_set_new(r, "k", json_string("z"));
	cr_assert_eq(tpl_render_lookup(t, r, lk, &b, &err), CORE_EDATA);
	cr_expect_str_eq(err.msg, "template field 'lookup.c.z' is not in the lookup");
	cr_assert_eq(tpl_render(t, r, &b, &err), CORE_EDATA, "no lookup: an empty one");
	cr_expect_str_eq(err.msg, "template field 'lookup.c' is not in the lookup");
	cr_assert_eq(tpl_render_lookup(t, r, r, &b, &err), CORE_EDATA);
	core_buf_release(&b);
	json_decref(r);
	json_decref(lk);
	tpl_free(t);
}

/* A render is bounded: loops nested over a large list stop at 10,000,000
 * iterations, output at 64 MiB; both are row errors. */
Test(tpl_template, render_budget, .timeout = 60)
{
	tpl_template *loops = compile_ok("{% for a in row.l %}{% for b in row.l %}"
					 "{% for c in row.l %}{% endfor %}{% endfor %}"
					 "{% endfor %}");
	tpl_template *big = compile_ok("{% for a in row.l %}{{ row.s }}{% endfor %}");
	json_t *r = json_object(), *l = json_array();
	char *s = malloc(1 << 20);
	core_buf b = { 0 };
	core_err err = { 0 };

	for (int i = 0; i < 1000; i++)
		json_array_append_new(l, json_integer(i));
	memset(s, 'x', (1 << 20) - 1);
	s[(1 << 20) - 1] = '\0';
	json_object_set_new(r, "l", l);
	json_object_set_new(r, "s", json_string(s));
	cr_assert_eq(tpl_render(loops, r, &b, &err), CORE_EDATA);
	cr_expect_str_eq(err.msg, "template: more than 10000000 loop iterations in one render");
	cr_assert_eq(tpl_render(big, r, &b, &err), CORE_EDATA);
	cr_expect_str_eq(err.msg, "template: the rendered text would exceed 64 MiB");
	cr_expect_eq(b.len, 0);
	core_buf_release(&b);
	json_decref(r);
	free(s);
	tpl_free(loops);
	tpl_free(big);
}

struct deep_render {
	const tpl_template *t;
	const json_t *row;
	int rc;
	core_buf out;
	core_err err;
};

static void *render_worker(void *arg)
{
	struct deep_render *d = arg;

	d->rc = tpl_render(d->t, d->row, &d->out, &d->err);
	return NULL;
}

/* The deepest template compiles (on the main thread, as the settings are
 * validated) and renders on a stack the size of the engine's workers'
 * (engine/pipeline.c, WORKER_STACK): 63 blocks, the innermost holding an
 * expression 200 levels high. */
Test(tpl_template, deepest_template_fits_a_worker_stack)
{
	char *src = malloc(64 * 40 + 200 * 10 + 100), *p = src;
	struct deep_render d = { 0 };
	pthread_attr_t attr;
	pthread_t th;
	json_t *r = js(row_text);
	int i;

	for (i = 0; i < 63; i++)
		p += sprintf(p, i % 2 ? "{%% if row.t %%}" : "{%% for x%d in [1] %%}", i);
	p += sprintf(p, "{{ row.s");
	for (i = 0; i < 198; i++)
		p += sprintf(p, " | trim");
	p += sprintf(p, " }}");
	for (i = 62; i >= 0; i--)
		p += sprintf(p, i % 2 ? "{%% endif %%}" : "{%% endfor %%}");
	d.t = compile_ok(src);
	d.row = r;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	cr_assert_eq(pthread_create(&th, &attr, render_worker, &d), 0);
	pthread_join(th, NULL);
	cr_assert_eq(d.rc, 0, "%s", d.err.msg);
	cr_expect_str_eq(d.out.data, "Hi there");
	pthread_attr_destroy(&attr);
	core_buf_release(&d.out);
	tpl_free((tpl_template *)d.t);
	json_decref(r);
	free(src);
}
