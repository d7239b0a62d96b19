/*
 * expr_builtin.c — the builtin functions allowed in gate expressions:
 * len, str, int, float, bool, abs, with Python 3 semantics (len counts
 * characters, int() truncates floats and parses decimal strings with
 * surrounding whitespace, float() parses decimal, inf and nan strings).
 */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "expr/expr_internal.h"

static const char *snip(expr__ctx *c, uint32_t n, char *buf, size_t cap)
{
	return expr__snippet(c->e, n, buf, cap);
}

/* ValueError naming the offending string, shortened. */
static int value_error(expr__ctx *c, uint32_t n, const char *what,
		       const expr__val *v)
{
	core_buf b = { 0 };
	char s[128];
	int rc;

	expr__append_str(&b, v, true);
	rc = expr__rt_error(c, "%s: %.60s%s (in `%s`)", what,
			   b.data ? b.data : "?", b.len > 60 ? "..." : "",
			   snip(c, n, s, sizeof(s)));
	core_buf_release(&b);
	return rc;
}

static void trim(const char **p, size_t *n)
{
	while (*n && isspace((unsigned char)**p))
		(*p)++, (*n)--;
	while (*n && isspace((unsigned char)(*p)[*n - 1]))
		(*n)--;
}

/* Python int(s): [sign] digits, single underscores between digits. */
static int parse_int(const char *p, size_t n, long long *out, bool *range)
{
	unsigned long long v = 0, lim = (unsigned long long)LLONG_MAX;
	bool neg = false, digit = false;
	size_t i = 0;

	trim(&p, &n);
	*range = false;
	if (n && (p[0] == '+' || p[0] == '-'))
		neg = p[i++] == '-';
	for (; i < n; i++) {
		if (p[i] == '_' && digit && i + 1 < n && isdigit((unsigned char)p[i + 1]))
			continue;
		if (!isdigit((unsigned char)p[i]))
			return -1;
		digit = true;
		v = v * 10 + (unsigned long long)(p[i] - '0');
		if (v > lim + neg) {
			*range = true;
			return -1;
		}
	}
	if (!digit)
		return -1;
	if (neg && v == lim + 1)
		*out = LLONG_MIN;
	else
		*out = neg ? -(long long)v : (long long)v;
	return 0;
}

static int to_int(expr__ctx *c, uint32_t n, const expr__val *v, expr__val *out)
{
	char s[128];
	long long i;
	bool range;

	switch (v->kind) {
	case DAG__V_INT:
	case DAG__V_BOOL:
		expr__set_int(out, v->kind == DAG__V_INT ? v->u.i : v->u.b);
		return 0;
	case DAG__V_FLOAT:
		if (isnan(v->u.d) || isinf(v->u.d))
			return expr__rt_error(c, "cannot convert float %s to integer (in `%s`)",
				isnan(v->u.d) ? "NaN" : "infinity", snip(c, n, s, sizeof(s)));
		if (!(v->u.d > -9223372036854775809.0 && v->u.d < 9223372036854775808.0))
			return expr__rt_error(c, "int() result outside the 64-bit range (in `%s`)",
					     snip(c, n, s, sizeof(s)));
		expr__set_int(out, (long long)v->u.d);
		return 0;
	case DAG__V_STR:
		if (!parse_int(v->u.s.p, v->u.s.n, &i, &range)) {
			expr__set_int(out, i);
			return 0;
		}
		if (range)
			return expr__rt_error(c, "int() result outside the 64-bit range (in `%s`)",
					     snip(c, n, s, sizeof(s)));
		return value_error(c, n, "invalid literal for int() with base 10", v);
	default:
		return expr__rt_error(c,
			"int() argument must be a string or a number, not '%s' (in `%s`)",
			expr__type_name(v), snip(c, n, s, sizeof(s)));
	}
}

/* Python float(s) syntax: [sign] (digits[.digits] | .digits)[e[sign]digits]
 * or [sign] inf/infinity/nan, case-insensitive, surrounding whitespace. */
static bool float_syntax(const char *p, size_t n)
{
	size_t i = 0, d = 0;

	if (n && (p[0] == '+' || p[0] == '-'))
		i++;
	if ((n - i == 3 && (!strncasecmp(p + i, "inf", 3) || !strncasecmp(p + i, "nan", 3))) ||
	    (n - i == 8 && !strncasecmp(p + i, "infinity", 8)))
		return true;
	for (; i < n && isdigit((unsigned char)p[i]); i++)
		d++;
	if (i < n && p[i] == '.')
		for (i++; i < n && isdigit((unsigned char)p[i]); i++)
			d++;
	if (!d)
		return false;
	if (i < n && (p[i] == 'e' || p[i] == 'E')) {
		if (++i < n && (p[i] == '+' || p[i] == '-'))
			i++;
		if (i == n || !isdigit((unsigned char)p[i]))
			return false;
		while (i < n && isdigit((unsigned char)p[i]))
			i++;
	}
	return i == n;
}

static int parse_float(expr__ctx *c, uint32_t n, const expr__val *v,
		       expr__val *out)
{
	const char *p = v->u.s.p;
	size_t len = v->u.s.n;
	char *z;

	trim(&p, &len);
	if (!float_syntax(p, len))
		return value_error(c, n, "could not convert string to float", v);
	if (!(z = expr__arena_alloc(&c->arena, len + 1)))
		return expr__alloc_error(c);
	memcpy(z, p, len);
	z[len] = '\0';
	expr__set_float(out, strtod(z, NULL));
	return 0;
}

static int to_float(expr__ctx *c, uint32_t n, const expr__val *v, expr__val *out)
{
	char s[128];

	switch (v->kind) {
	case DAG__V_INT:
		expr__set_float(out, (double)v->u.i);
		return 0;
	case DAG__V_BOOL:
		expr__set_float(out, v->u.b);
		return 0;
	case DAG__V_FLOAT:
		*out = *v;
		return 0;
	case DAG__V_STR:
		return parse_float(c, n, v, out);
	default:
		return expr__rt_error(c,
			"float() argument must be a string or a real number, not '%s' (in `%s`)",
			expr__type_name(v), snip(c, n, s, sizeof(s)));
	}
}

static int to_str(expr__ctx *c, const expr__val *v, expr__val *out)
{
	core_buf b = { 0 };
	char num[40];
	int rc;

	switch (v->kind) {
	case DAG__V_STR:
		*out = *v;
		return 0;
	case DAG__V_NONE:
	case DAG__V_BOOL:
		memset(out, 0, sizeof(*out));
		out->kind = DAG__V_STR;
		out->u.s.p = v->kind == DAG__V_NONE ? "None" :
			     v->u.b ? "True" : "False";
		out->u.s.n = strlen(out->u.s.p);
		return 0;
	case DAG__V_INT:
		snprintf(num, sizeof(num), "%lld", v->u.i);
		return expr__make_str(c, num, strlen(num), out);
	case DAG__V_FLOAT:
		core_format_double_py(v->u.d, num, sizeof(num));
		return expr__make_str(c, num, strlen(num), out);
	default:
		break;
	}
	rc = expr__append_str(&b, v, false);
	if (!rc)
		rc = expr__make_str(c, b.data, b.len, out);
	else
		rc = core_err_set(c->err, CORE_ENOMEM, "out of memory");
	core_buf_release(&b);
	return rc;
}

static int length(expr__ctx *c, uint32_t n, const expr__val *v, expr__val *out)
{
	char s[128];

	if (v->kind == DAG__V_STR)
		expr__set_int(out, (long long)core_utf8_count(v->u.s.p, v->u.s.n));
	else if (expr__is_list(v))
		expr__set_int(out, (long long)expr__list_len(v));
	else if (expr__is_dict(v))
		expr__set_int(out, (long long)expr__dict_len(v));
	else if (v->kind == DAG__V_SET)
		expr__set_int(out, (long long)v->u.l.n);
	else
		return expr__rt_error(c, "object of type '%s' has no len() (in `%s`)",
				     expr__type_name(v), snip(c, n, s, sizeof(s)));
	return 0;
}

static int absolute(expr__ctx *c, uint32_t n, const expr__val *v, expr__val *out)
{
	char s[128];

	if (v->kind == DAG__V_FLOAT) {
		expr__set_float(out, fabs(v->u.d));
		return 0;
	}
	if (v->kind == DAG__V_BOOL) {
		expr__set_int(out, v->u.b);
		return 0;
	}
	if (v->kind != DAG__V_INT)
		return expr__rt_error(c, "bad operand type for abs(): '%s' (in `%s`)",
				     expr__type_name(v), snip(c, n, s, sizeof(s)));
	if (v->u.i == LLONG_MIN)
		return expr__rt_error(c, "integer overflow (result outside the 64-bit range) (in `%s`)",
				     snip(c, n, s, sizeof(s)));
	expr__set_int(out, v->u.i < 0 ? -v->u.i : v->u.i);
	return 0;
}

/* bool(), str(), int(), float(): False, '', 0, 0.0 as in Python (the
 * parser lets only these be called without an argument). */
static int no_argument(expr__ctx *c, expr__builtin fn, expr__val *out)
{
	memset(out, 0, sizeof(*out));
	switch (fn) {
	case DAG__FN_BOOL:
		out->kind = DAG__V_BOOL;
		return 0;
	case DAG__FN_STR:
		return expr__make_str(c, "", 0, out);
	case DAG__FN_INT:
		expr__set_int(out, 0);
		return 0;
	case DAG__FN_FLOAT:
		expr__set_float(out, 0.0);
		return 0;
	case DAG__FN_LEN:
	case DAG__FN_ABS:
	case DAG__FN_LAST:
		break;
	}
	return core_err_set(c->err, CORE_EINTERNAL, "%s() without an argument",
			    expr__builtin_names[fn]);
}

int expr__call_builtin(expr__ctx *c, uint32_t n, const expr__val *arg,
		      expr__val *out)
{
	if (!arg)
		return no_argument(c, (expr__builtin)c->e->nodes[n].op, out);
	switch ((expr__builtin)c->e->nodes[n].op) {
	case DAG__FN_LEN:
		return length(c, n, arg, out);
	case DAG__FN_STR:
		return to_str(c, arg, out);
	case DAG__FN_INT:
		return to_int(c, n, arg, out);
	case DAG__FN_FLOAT:
		return to_float(c, n, arg, out);
	case DAG__FN_BOOL:
		memset(out, 0, sizeof(*out));
		out->kind = DAG__V_BOOL;
		out->u.b = expr__truthy(arg);
		return 0;
	case DAG__FN_ABS:
		return absolute(c, n, arg, out);
	case DAG__FN_LAST:
		break;
	}
	return core_err_set(c->err, CORE_EINTERNAL, "unknown builtin");
}
