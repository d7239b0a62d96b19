/* test_core_canon.c — RFC 8785 canonical JSON, number formatting
 * (ECMAScript and Python), SHA-256. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/core.h"

/* Canonical form of v; the test fails if canonicalization does. */
static char *canon_ok(const json_t *v)
{
	core_err err = { 0 };
	char *out = NULL;
	size_t len = 0;
	int rc;

	rc = core_canon(v, &out, &len, &err);
	cr_assert_eq(rc, 0, "core_canon failed: %s", err.msg);
	cr_assert_not_null(out);
	cr_assert_eq(len, strlen(out));
	return out;
}

static json_t *load(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);

	cr_assert_not_null(v, "bad test JSON: %s", jerr.text);
	return v;
}

static void assert_canon_text(const char *in, const char *want)
{
	json_t *v = load(in);
	char *got = canon_ok(v);

	cr_assert_str_eq(got, want, "for %s", in);
	free(got);
	json_decref(v);
}

/* fmt (core_format_double or core_format_double_py) of d is want. */
static void assert_fmt(int (*fmt)(double, char *, size_t), double d,
		       const char *want)
{
	char buf[32];
	int n = fmt(d, buf, sizeof(buf));

	cr_assert_eq(n, (int)strlen(want), "%.17g: got \"%s\", want \"%s\"", d,
		     n >= 0 ? buf : "(error)", want);
	cr_assert_str_eq(buf, want, "%.17g", d);
}

/* ECMAScript's Number::toString. */
static void assert_num(double d, const char *want)
{
	assert_fmt(core_format_double, d, want);
}

/* Python's repr(); every expected string is what CPython 3 prints. */
static void assert_py(double d, const char *want)
{
	assert_fmt(core_format_double_py, d, want);
}

static double from_bits(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

/* Canonicalizes v expecting code, and that the message has want in it. */
static void assert_canon_err(const json_t *v, int code, const char *want)
{
	core_err err = { 0 };
	char *out = NULL;

	cr_assert_eq(core_canon(v, &out, NULL, &err), code, "msg: %s", err.msg);
	cr_assert_null(out);
	cr_assert_eq(err.code, code);
	cr_assert_not_null(strstr(err.msg, want), "\"%s\" not in \"%s\"", want,
			   err.msg);
}

Test(canon, sha256_known_vectors)
{
	uint8_t md[CORE_SHA256_LEN];
	char hex[CORE_SHA256_HEX_LEN + 1];

	core_sha256("abc", 3, md);
	core_hex(md, sizeof(md), hex);
	cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223"
			      "b00361a396177a9cb410ff61f20015ad");
	core_sha256("", 0, md);
	core_hex(md, sizeof(md), hex);
	cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb924"
			      "27ae41e4649b934ca495991b7852b855");
}

Test(canon, hex_is_lowercase_and_terminated)
{
	const uint8_t b[] = { 0x00, 0x9f, 0xab, 0xff };
	char out[9];

	memset(out, 'x', sizeof(out));
	core_hex(b, sizeof(b), out);
	cr_assert_str_eq(out, "009fabff");
}

Test(canon, rfc8785_main_example)
{
	assert_canon_text(
		"{\n  \"numbers\": [333333333.33333329, 1E30, 4.50, 2e-3, "
		"0.000000000000000000000000001],\n"
		"  \"string\": \"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\\"\\/\",\n"
		"  \"literals\": [null, true, false]\n}",
		"{\"literals\":[null,true,false],"
		"\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
		"\"string\":\"€$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
}

Test(canon, rfc8785_sorting_by_utf16_code_units)
{
	assert_canon_text(
		"{\"\\u20ac\": \"Euro Sign\", \"\\r\": \"Carriage Return\","
		" \"\\ufb33\": \"Hebrew Letter Dalet With Dagesh\", \"1\": \"One\","
		" \"\\ud83d\\ude00\": \"Emoji: Grinning Face\", \"\\u0080\": \"Control\","
		" \"\\u00f6\": \"Latin Small Letter O With Diaeresis\","
		" \"</script>\": \"Browser Challenge\"}",
		"{\"\\r\":\"Carriage Return\",\"1\":\"One\","
		"\"</script>\":\"Browser Challenge\","
		"\"\xc2\x80\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\","
		"\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\","
		"\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}");
}

/* UTF-8 byte order would put U+FFFF (EF BF BF) before U+1F600 (F0 ...). */
Test(canon, keys_with_common_prefix_sort_by_utf16)
{
	assert_canon_text(
		"{\"a\\uffff\":4,\"a\\ud83d\\ude00\":3,\"ab\":2,\"a\":1,\"\":0,"
		"\"a\\ue000\":5,\"a\\ud7ff\":6}",
		"{\"\":0,\"a\":1,\"ab\":2,\"a\xed\x9f\xbf\":6,\"a😀\":3,"
		"\"a\xee\x80\x80\":5,\"a\xef\xbf\xbf\":4}");
}

Test(canon, sorting_many_keys_and_nested_objects)
{
	json_t *o = json_object(), *inner = json_object();
	core_buf want = { 0 };
	char key[16], *got;
	int i;

	/* 300 keys inserted in reverse: more than the inline sort stack and
	 * the insertion-sort cut-off; every value is an object to sort too. */
	for (i = 299; i >= 0; i--) {
		snprintf(key, sizeof(key), "k%03d", i);
		json_object_set_new(o, key, json_pack("{s:i,s:i}", "z", i, "a", -i));
	}
	json_object_set_new(inner, "y", json_true());
	json_object_set_new(inner, "x", json_false());
	json_object_set_new(o, "zz", inner);
	core_buf_putc(&want, '{');
	for (i = 0; i < 300; i++)
		core_buf_printf(&want, "\"k%03d\":{\"a\":%d,\"z\":%d},", i, -i, i);
	core_buf_puts(&want, "\"zz\":{\"x\":false,\"y\":true}}");
	got = canon_ok(o);
	cr_assert_str_eq(got, want.data);
	free(got);
	core_buf_release(&want);
	json_decref(o);
}

Test(canon, nested_and_empty_containers)
{
	assert_canon_text("{}", "{}");
	assert_canon_text("[]", "[]");
	assert_canon_text(" { \"b\" : [ [ ], { }, [ [ 1 ] ] ] , \"a\" : { \"d\" : { } , \"c\" : [ ] } } ",
			  "{\"a\":{\"c\":[],\"d\":{}},\"b\":[[],{},[[1]]]}");
	assert_canon_text("[{\"b\":null,\"a\":[{\"y\":1,\"x\":2}]},\"s\"]",
			  "[{\"a\":[{\"x\":2,\"y\":1}],\"b\":null},\"s\"]");
	assert_canon_text("\"top\"", "\"top\"");
	assert_canon_text("null", "null");
}

Test(canon, string_escapes_are_minimal)
{
	json_t *s;
	char *got, raw[32];
	int i;

	for (i = 0; i < 32; i++)
		raw[i] = (char)i;
	s = json_stringn(raw, sizeof(raw));
	cr_assert_not_null(s);
	got = canon_ok(s);
	cr_assert_str_eq(got,
		"\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007"
		"\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f"
		"\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017"
		"\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\"");
	free(got);
	json_decref(s);
	assert_canon_text("\"a/b\\u007f\\\"\\\\<>&'\\u00e9\\u4e2d\\ud83d\\ude00\"",
			  "\"a/b\x7f\\\"\\\\<>&'é中😀\"");
}

Test(canon, format_double_ecmascript_cases)
{
	assert_num(0.0, "0");
	assert_num(-0.0, "0");
	assert_num(1.0, "1");
	assert_num(-1.5, "-1.5");
	assert_num(4.50, "4.5");
	assert_num(2e-3, "0.002");
	assert_num(0.000001, "0.000001");
	assert_num(1e-7, "1e-7");
	assert_num(1.5e-7, "1.5e-7");
	assert_num(0.1 + 0.2, "0.30000000000000004");
	assert_num(1e21, "1e+21");
	assert_num(1e20, "100000000000000000000");
	assert_num(123456789012345680000.0, "123456789012345680000");
	assert_num(1e23, "1e+23");
	assert_num(1e30, "1e+30");
	assert_num(1e-27, "1e-27");
	assert_num(9007199254740991.0, "9007199254740991");
	assert_num(333333333.33333329, "333333333.3333333");
	assert_num(5e-324, "5e-324");
	assert_num(-5e-324, "-5e-324");
	assert_num(1.7976931348623157e308, "1.7976931348623157e+308");
	assert_num(-1.7976931348623157e308, "-1.7976931348623157e+308");
	assert_num(2.2250738585072014e-308, "2.2250738585072014e-308");
	assert_num(123.456, "123.456");
	assert_num(-0.0000033333333333333333, "-0.0000033333333333333333");
	assert_num(1424953923781206.2, "1424953923781206.2");
}

/* RFC 8785 Appendix B, given as IEEE-754 bit patterns. */
Test(canon, format_double_rfc8785_appendix_b)
{
	assert_num(from_bits(0x0000000000000001ULL), "5e-324");
	assert_num(from_bits(0x8000000000000001ULL), "-5e-324");
	assert_num(from_bits(0x7fefffffffffffffULL), "1.7976931348623157e+308");
	assert_num(from_bits(0x4340000000000000ULL), "9007199254740992");
	assert_num(from_bits(0xc340000000000000ULL), "-9007199254740992");
	assert_num(from_bits(0x4430000000000000ULL), "295147905179352830000");
	assert_num(from_bits(0x44b52d02c7e14af5ULL), "9.999999999999997e+22");
	assert_num(from_bits(0x44b52d02c7e14af6ULL), "1e+23");
	assert_num(from_bits(0x44b52d02c7e14af7ULL), "1.0000000000000001e+23");
	assert_num(from_bits(0x444b1ae4d6e2ef4eULL), "999999999999999700000");
	assert_num(from_bits(0x444b1ae4d6e2ef4fULL), "999999999999999900000");
	assert_num(from_bits(0x444b1ae4d6e2ef50ULL), "1e+21");
	assert_num(from_bits(0x3eb0c6f7a0b5ed8cULL), "9.999999999999997e-7");
	assert_num(from_bits(0x3eb0c6f7a0b5ed8dULL), "0.000001");
	assert_num(from_bits(0x41b3de4355555553ULL), "333333333.3333332");
	assert_num(from_bits(0x41b3de4355555554ULL), "333333333.33333325");
	assert_num(from_bits(0x41b3de4355555555ULL), "333333333.3333333");
	assert_num(from_bits(0x41b3de4355555556ULL), "333333333.3333334");
	assert_num(from_bits(0x41b3de4355555557ULL), "333333333.33333343");
	assert_num(from_bits(0xbecbf647612f3696ULL), "-0.0000033333333333333333");
	assert_num(from_bits(0x43143ff3c1cb0959ULL), "1424953923781206.2");
}

/* Just above a power of two the nearest 16-digit decimal does not read
 * back but its upper neighbour does; ECMAScript (and V8) print that. */
Test(canon, format_double_power_of_two_boundaries)
{
	assert_num(ldexp(1.0, -24), "5.960464477539063e-8");
	assert_num(ldexp(1.0, 89), "6.189700196426902e+26");
	assert_num(ldexp(1.0, -1017), "7.120236347223045e-307");
	assert_num(ldexp(1.0, 53), "9007199254740992");
	assert_num(ldexp(1.0, -1), "0.5");
}

Test(canon, format_double_rejects_nan_and_infinity)
{
	char buf[32];

	cr_assert_eq(core_format_double(NAN, buf, sizeof(buf)), -1);
	cr_assert_eq(core_format_double(INFINITY, buf, sizeof(buf)), -1);
	cr_assert_eq(core_format_double(-INFINITY, buf, sizeof(buf)), -1);
}

Test(canon, format_double_py_shortest_round_trip_digits)
{
	assert_py(0.1, "0.1");
	assert_py(1.5, "1.5");
	assert_py(-2.5, "-2.5");
	assert_py(0.1 + 0.2, "0.30000000000000004");
	assert_py(1.0 / 3, "0.3333333333333333");
	assert_py(2.0 / 3, "0.6666666666666666");
	assert_py(3.141592653589793, "3.141592653589793");
}

Test(canon, format_double_py_integral_values_end_in_point_zero)
{
	assert_py(1.0, "1.0");
	assert_py(100.0, "100.0");
	assert_py(-7.0, "-7.0");
	assert_py(1e15, "1000000000000000.0");
	assert_py(9999999999999998.0, "9999999999999998.0");
}

Test(canon, format_double_py_exponent_form_from_1e16)
{
	assert_py(1e16, "1e+16");
	assert_py(-1e16, "-1e+16");
	assert_py(1.5e16, "1.5e+16");
	assert_py(123456789012345678.0, "1.2345678901234568e+17");
	assert_py(1e22, "1e+22");
	assert_py(1e100, "1e+100");
	assert_py(1.7976931348623157e308, "1.7976931348623157e+308");
}

Test(canon, format_double_py_exponent_form_below_1e_4)
{
	assert_py(1e-4, "0.0001");
	assert_py(0.00012345, "0.00012345");
	assert_py(1e-5, "1e-05");
	assert_py(-1e-5, "-1e-05");
	assert_py(1.5e-7, "1.5e-07");
	assert_py(2.2250738585072014e-308, "2.2250738585072014e-308");
	assert_py(5e-324, "5e-324");
	assert_py(-5e-324, "-5e-324");
}

Test(canon, format_double_py_zero_keeps_its_sign)
{
	assert_py(0.0, "0.0");
	assert_py(-0.0, "-0.0");
}

Test(canon, format_double_py_nan_and_infinities)
{
	assert_py(NAN, "nan");
	assert_py(-NAN, "nan");
	assert_py(INFINITY, "inf");
	assert_py(-INFINITY, "-inf");
}

/* Just above a power of two the gap below is half the gap above, and the
 * nearest 16-digit decimal may not read back while a neighbour does:
 * Python prints that neighbour, not 17 digits. */
Test(canon, format_double_py_power_of_two_neighbours)
{
	assert_py(ldexp(1.0, 574), "6.183260036827614e+172");
	assert_py(ldexp(1.0, -778), "6.290184345309701e-235");
	assert_py(ldexp(1.0, 182), "6.129982163463556e+54");
	assert_py(ldexp(1.0, -140), "7.174648137343064e-43");
	assert_py(from_bits(0x4340000000000000ULL), "9007199254740992.0");
}

Test(canon, format_double_py_fails_when_the_buffer_is_too_small)
{
	char buf[32];

	cr_assert_eq(core_format_double_py(1.5, buf, 3), -1);
	cr_assert_eq(core_format_double_py(1.5, buf, 4), 3);
	cr_assert_str_eq(buf, "1.5");
	cr_assert_eq(core_format_double_py(-INFINITY, buf, 4), -1);
	cr_assert_eq(core_format_double_py(-2.2250738585072014e-308, buf, 32), 24);
}

Test(canon, reals_and_integers_in_values)
{
	json_t *v = json_pack("[f,f,f,I,I,I,i]", -0.0, 1e21, 0.5,
			      (json_int_t)9007199254740992LL,
			      (json_int_t)-9007199254740992LL, (json_int_t)0, -42);
	char *got = canon_ok(v);

	cr_assert_str_eq(got, "[0,1e+21,0.5,9007199254740992,-9007199254740992,0,-42]");
	free(got);
	json_decref(v);
}

Test(canon, integer_beyond_2_53_names_field_path)
{
	json_t *v = json_pack("{s:{s:[i,i,I]}}", "a", "b", 0, 1,
			      (json_int_t)9007199254740993LL);

	assert_canon_err(v, CORE_EDATA, "$.a.b[2]");
	assert_canon_err(v, CORE_EDATA, "9007199254740993");
	json_decref(v);
	v = json_pack("{s:I}", "n", (json_int_t)-9007199254740993LL);
	assert_canon_err(v, CORE_EDATA, "$.n");
	json_decref(v);
	v = json_pack("[I]", (json_int_t)(-9223372036854775807LL - 1));
	assert_canon_err(v, CORE_EDATA, "$[0]");
	json_decref(v);
}

/* jansson refuses to make NaN reals; reach into its (2.14) layout to check
 * the guard anyway. */
struct jansson_real {
	json_t json;
	double value;
};

Test(canon, nan_real_names_field_path)
{
	json_t *r = json_real(1.0);
	json_t *v = json_pack("{s:{s:[n,n,o]}}", "a", "b", r);

	/* jansson refuses to make a NaN real; write one into its 2.14
	 * layout (Debian 12). A different layout fails here, visibly. */
	((struct jansson_real *)r)->value = NAN;
	cr_assert(isnan(json_real_value(r)),
		  "jansson's real layout changed: update struct jansson_real");
	assert_canon_err(v, CORE_EDATA, "$.a.b[2]");
	assert_canon_err(v, CORE_EDATA, "NaN/Infinity are not allowed in canonical JSON");
	((struct jansson_real *)r)->value = -INFINITY;
	assert_canon_err(v, CORE_EDATA, "NaN/Infinity");
	json_decref(v);
}

Test(canon, invalid_utf8_string_names_field_path)
{
	static const char *const bad[] = {
		"\xff", "a\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
		"\xf4\x90\x80\x80", "\xf0\x9f\x98", "ok\x80",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *v = json_pack("{s:[s,o]}", "row", "fine",
				      json_string_nocheck(bad[i]));

		assert_canon_err(v, CORE_EDATA, "$.row[1]: string is not valid UTF-8");
		json_decref(v);
	}
}

Test(canon, invalid_utf8_key_is_an_error)
{
	json_t *v = json_object(), *in = json_object();

	json_object_set_new_nocheck(in, "k\xfe", json_null());
	json_object_set_new(v, "a b", in);
	assert_canon_err(v, CORE_EDATA, "$[\"a b\"]: object key is not valid UTF-8");
	json_decref(v);
}

Test(canon, error_keeps_buffer_length)
{
	json_t *v = json_pack("[s,{s:s},I]", "long string to grow the buffer",
			      "k", "v", (json_int_t)1 << 60);
	core_buf b = { 0 };
	core_err err = { 0 };

	core_buf_puts(&b, "prefix");
	cr_assert_eq(core_canon_append(&b, v, &err), CORE_EDATA);
	cr_assert_eq(b.len, 6);
	cr_assert_str_eq(b.data, "prefix");
	cr_assert_eq(core_canon_append(&b, json_array_get(v, 1), &err), 0);
	cr_assert_str_eq(b.data, "prefix{\"k\":\"v\"}");
	core_buf_release(&b);
	json_decref(v);
}

Test(canon, too_deep_is_an_error)
{
	json_t *root = json_array(), *cur = root, *next;
	int i;

	for (i = 0; i < 3000; i++) {
		next = json_array();
		json_array_append_new(cur, next);
		cur = next;
	}
	assert_canon_err(root, CORE_EDATA, "nested deeper than");
	json_decref(root);
}

Test(canon, hash_json_is_sha256_of_canonical_bytes)
{
	static const char canon[] = "{\"a\":[true,null],\"b\":1}";
	json_t *v = load("{ \"b\": 1, \"a\": [true, null] }");
	char hex[CORE_SHA256_HEX_LEN + 1], want[CORE_SHA256_HEX_LEN + 1];
	uint8_t md[CORE_SHA256_LEN];
	core_err err = { 0 };

	cr_assert_eq(core_hash_json(v, hex, &err), 0, "%s", err.msg);
	core_sha256(canon, strlen(canon), md);
	core_hex(md, sizeof(md), want);
	cr_assert_str_eq(hex, want);
	cr_assert_str_eq(hex, "51705a2c9eb3e7e410a58f696a770c3a"
			      "c3885a0cf43eb7fc88f5e47c11d4d30d");
	json_decref(v);
}

Test(canon, hash_json_ignores_key_order_and_reports_errors)
{
	json_t *a = load("{\"x\":1.0,\"y\":\"z\"}"), *b = load("{\"y\":\"z\",\"x\":1}");
	json_t *bad = json_pack("{s:I}", "big", (json_int_t)1 << 62);
	char ha[CORE_SHA256_HEX_LEN + 1], hb[CORE_SHA256_HEX_LEN + 1];
	core_err err = { 0 };

	cr_assert_eq(core_hash_json(a, ha, NULL), 0);
	cr_assert_eq(core_hash_json(b, hb, NULL), 0);
	cr_assert_str_eq(ha, hb); /* 1.0 and 1 are the same number */
	cr_assert_eq(core_hash_json(bad, ha, &err), CORE_EDATA);
	cr_assert_not_null(strstr(err.msg, "$.big"));
	json_decref(a);
	json_decref(b);
	json_decref(bad);
}

/* The digits of a formatted number, zeros around them dropped ("57.3" ->
 * "573", "1200" -> "12", "1.25e-7" -> "125"). */
static void digits_of(const char *s, char *out)
{
	size_t n = 0;

	for (; *s && *s != 'e'; s++)
		if (*s >= '0' && *s <= '9' && (n || *s != '0'))
			out[n++] = *s;
	while (n > 1 && out[n - 1] == '0')
		n--;
	out[n] = '\0';
}

/* digits_fast (the path for numbers of up to 15 digits with up to 9
 * fraction digits) gives the shortest digits, as the general search
 * does: against %.14e with its zeros stripped (any decimal of at most 15
 * digits reads back from a double, and two such decimals never share
 * one), and the text reads back as the number. Random decimals of every
 * length and scale around the fast path's edges. */
Test(canon, shortest_digits_fast_path_matches_the_search)
{
	unsigned long long x = 88172645463325252ull;
	char buf[64], s[64], a[32], b[32];

	for (int i = 0; i < 200000; i++) {
		unsigned long long m;
		int digits, k;
		double d;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		digits = 1 + (int)(x % 15);
		m = (x >> 8) % 1000000000000000ull;
		for (int j = digits; j < 15; j++)
			m /= 10;
		if (!m)
			m = 1;
		k = (int)((x >> 40) % 14) - 2; /* 1e2 .. 1e-11 */
		snprintf(s, sizeof(s), "%llue%d", m, -k);
		d = strtod(s, NULL);
		cr_assert_gt(core_format_double(d, buf, sizeof(buf)), 0);
		cr_assert_eq(strtod(buf, NULL), d, "%s -> %s does not read back", s, buf);
		snprintf(s, sizeof(s), "%.14e", d);
		digits_of(s, a);
		digits_of(buf, b);
		cr_assert_str_eq(b, a, "%.17g: %s, want the digits %s", d, buf, a);
	}
}
