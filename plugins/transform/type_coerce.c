/*
 * type_coerce.c — ELSPETH 0.7.1's "type_coerce" transform: strict,
 * explicit type conversions of listed fields (ADR 0045).
 *
 * `conversions: [{field, to: int|float|bool|str}]`, applied in order to a
 * copy of the row; the first that fails makes the row an error (nothing
 * partial is emitted), with 0.7.1's reasons:
 *   int    int as it is; a float without a fraction (3.0); a string of an
 *          integer after trimming (" -7 ", "1_000"); not bool, not "3.5",
 *          not "1e3"
 *   float  float (finite); int; a numeric string after trimming ("1e3");
 *          not bool, not NaN or infinity
 *   bool   bool; 0 or 1; true/1/yes/y/on, false/0/no/n/off/"" (any case,
 *          trimmed); nothing else
 *   str    str; an int, float or bool as Python's str() (3.0 → "3.0",
 *          True → "True"); not lists, objects or None
 * A missing field and a null are errors too. Integers beyond 64 bits are
 * refused as out of range (JSON rows here hold 64-bit integers).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/plugins_internal.h"

enum { TO_INT, TO_FLOAT, TO_BOOL, TO_STR };
static const char *const to_names[] = { "int", "float", "bool", "str", NULL };

struct conv {
	const char *field;      /* points into the options */
	int to;
};

struct coerce {
	plg_schema *schema;
	size_t n;
	struct conv *conv;
};

static const plg_option tc_own[] = {
	{ "conversions", "array", true, NULL,
	  "[{field, to: int|float|bool|str}], applied in order" },
	{ NULL }
};
static const plg_option *const tc_opts[] = { tc_own, plg__schema_opts, plg__input_opts, NULL };

static void tc_close(void *state)
{
	struct coerce *t = state;

	if (!t)
		return;
	free(t->conv);
	plg__schema_free(t->schema);
	free(t);
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	struct coerce *t = state;
	static const char *const keys[] = { "field", "to", NULL };
	const core_node *list = core_map_get(opts, "conversions");
	int rc;

	if ((rc = plg__check_options(opts, tc_opts, err)) ||
	    (rc = plg__schema_parse(core_map_get(opts, "schema"), &t->schema, err)))
		return rc;
	if (!list)
		return core_err_missing(err, opts, "conversions", "conversions",
					"a list of {field, to}");
	if (list->kind != CORE_NODE_SEQ || !list->len)
		return core_err_at(err, CORE_ECONFIG, list,
			"conversions must contain at least one conversion");
	if (!(t->conv = calloc(list->len, sizeof(*t->conv))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < list->len; i++) {
		const core_node *c = list->items[i];
		const core_node *to = core_map_get(c, "to");

		if (c->kind != CORE_NODE_MAP)
			return core_err_at(err, CORE_ECONFIG, c, "expected {field, to}");
		if ((rc = core_map_check_keys(c, keys, err)) ||
		    (rc = plg__opt_field(c, "field", true, &t->conv[i].field, err)))
			return rc;
		if (!to)
			return core_err_missing(err, c, "to", "to", "int, float, bool or str");
		if ((rc = core_node_enum(to, to_names, &t->conv[i].to, err)))
			return rc;
		t->n++;
	}
	return 0;
}

static int tc_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(struct coerce), parse_options, tc_close, options, state, err);
}

/* ------------------------------------------------------------- values */

/* s[0..n) with Python's str.strip() of ASCII whitespace, copied. */
static char *trimmed(const json_t *v)
{
	const char *b = json_string_value(v), *e = b + json_string_length(v);

	while (b < e && strchr(" \t\n\r\f\v", *b))
		b++;
	while (e > b && strchr(" \t\n\r\f\v", e[-1]))
		e--;
	return strndup(b, (size_t)(e - b));
}

/* Python's rule for '_' in numbers: only between two digits; removed. */
static bool drop_underscores(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (*r == '_') {
			if (r == s || !strchr("0123456789", r[-1]) || !r[1] ||
			    !strchr("0123456789", r[1]))
				return false;
			continue;
		}
		*w++ = *r;
	}
	*w = '\0';
	return true;
}

__attribute__((format(printf, 5, 6)))
static int fail(core_err *err, const char *field, const char *to,
		const json_t *v, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return core_err_set(err, CORE_EDATA,
		"type_mismatch: field '%s' (%s) cannot be converted to %s: %s", field,
		core_py_type(v), to, why);
}

static int to_int(const char *field, const json_t *v, json_t **out, core_err *err)
{
	char *s, *end;
	long long x;

	if (json_is_real(v)) {
		double d = json_real_value(v);
		char repr[32];

		if (!isfinite(d))
			return fail(err, field, "int", v, "non-finite float cannot be converted to int");
		core_format_double_py(d, repr, sizeof(repr));
		if (d != trunc(d))
			return fail(err, field, "int", v, "float %s has fractional part", repr);
		if (fabs(d) >= 9.2233720368547758e18)
			return fail(err, field, "int", v, "%s is out of range", repr);
		*out = json_integer((json_int_t)d);
		return 0;
	}
	if (!json_is_string(v))
		return fail(err, field, "int", v, "unsupported type %s", core_py_type(v));
	if (!(s = trimmed(v)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!*s) {
		free(s);
		return fail(err, field, "int", v, "empty string cannot be converted to int");
	}
	errno = 0;
	x = 0;
	end = s;
	if (drop_underscores(s) && s[strspn(s, "+-")] >= '0' && s[strspn(s, "+-")] <= '9' &&
	    strspn(s, "+-") <= 1)
		x = strtoll(s, &end, 10);
	if (*end || end == s || errno) {
		char *t = trimmed(v);
		int rc = errno == ERANGE && !*end ?
			fail(err, field, "int", v, "'%s' is out of range", t ? t : "") :
			fail(err, field, "int", v, "'%s' is not a valid integer string", t ? t : "");

		free(t);
		free(s);
		return rc;
	}
	free(s);
	*out = json_integer(x);
	return 0;
}

static int to_float(const char *field, const json_t *v, json_t **out, core_err *err)
{
	char *s, *end;
	double d;

	if (json_is_integer(v)) {
		*out = json_real((double)json_integer_value(v));
		return 0;
	}
	if (json_is_real(v)) {
		if (!isfinite(json_real_value(v)))
			return fail(err, field, "float", v, "non-finite float values are not allowed");
		*out = json_copy((json_t *)v);
		return 0;
	}
	if (!json_is_string(v))
		return fail(err, field, "float", v, "unsupported type %s", core_py_type(v));
	if (!(s = trimmed(v)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!*s) {
		free(s);
		return fail(err, field, "float", v, "empty string cannot be converted to float");
	}
	end = s;
	d = 0;
	/* strtod also reads hex floats and "infinity"s that float() reads
	 * differently: only what Python's float() takes */
	if (drop_underscores(s) && !strpbrk(s, "xXpP"))
		d = strtod(s, &end);
	if (*end || end == s) {
		char *t = trimmed(v);
		int rc = fail(err, field, "float", v, "'%s' is not a valid numeric string", t ? t : "");

		free(t);
		free(s);
		return rc;
	}
	if (!isfinite(d)) {
		char *t = trimmed(v);
		int rc = fail(err, field, "float", v, "'%s' produces non-finite value", t ? t : "");

		free(t);
		free(s);
		return rc;
	}
	free(s);
	*out = json_real(d);
	return 0;
}

static int to_bool(const char *field, const json_t *v, json_t **out, core_err *err)
{
	static const char *const yes[] = { "true", "1", "yes", "y", "on", NULL };
	static const char *const no[] = { "false", "0", "no", "n", "off", "", NULL };
	char *s;

	if (json_is_integer(v)) {
		if (json_integer_value(v) == 0 || json_integer_value(v) == 1) {
			*out = json_boolean(json_integer_value(v));
			return 0;
		}
		return core_err_set(err, CORE_EDATA,
			"type_mismatch: field '%s' (int) cannot be converted to bool: only 0 "
			"and 1 can be converted to bool, got %lld", field,
			(long long)json_integer_value(v));
	}
	if (json_is_real(v))
		return fail(err, field, "bool", v, "float cannot be converted to bool");
	if (!json_is_string(v))
		return fail(err, field, "bool", v, "unsupported type %s", core_py_type(v));
	if (!(s = trimmed(v)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (int truth = 1; truth >= 0; truth--)
		for (const char *const *w = truth ? yes : no; *w; w++)
			if (!strcasecmp(s, *w)) {
				*out = json_boolean(truth);
				free(s);
				return 0;
			}
	free(s);
	return fail(err, field, "bool", v, "'%s' is not a valid boolean string",
		    json_string_value(v));
}

static int to_str(const char *field, const json_t *v, json_t **out, core_err *err)
{
	core_buf b = { 0 };

	if (json_is_object(v) || json_is_array(v))
		return fail(err, field, "str", v, "%s is not a scalar type", core_py_type(v));
	if (core_py_str(&b, v) || core_buf_reserve(&b, 1)) {
		core_buf_release(&b);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	*out = json_stringn(b.data, b.len);
	core_buf_release(&b);
	return 0;
}

static int convert(const struct conv *c, const json_t *v, json_t **out, core_err *err)
{
	static const int json_kind[] = { JSON_INTEGER, JSON_REAL, -1, JSON_STRING };

	*out = NULL;
	/* a NUL inside would cut what C reads of it: no number, no word */
	if (json_is_string(v) && c->to != TO_STR &&
	    strlen(json_string_value(v)) != json_string_length(v))
		return fail(err, c->field, to_names[c->to], v,
			    "the string holds a NUL character");
	if (json_is_null(v))
		return core_err_set(err, CORE_EDATA,
			"type_mismatch: field '%s' is None (expected %s)", c->field,
			to_names[c->to]);
	if (json_is_boolean(v)) {
		if (c->to == TO_BOOL) {
			*out = json_incref((json_t *)v);
			return 0;
		}
		if (c->to != TO_STR)
			return fail(err, c->field, to_names[c->to], v,
				    "bool cannot be converted to %s", to_names[c->to]);
	} else if ((int)json_typeof(v) == json_kind[c->to]) {
		*out = json_incref((json_t *)v); /* already that type: unchanged */
		return 0;
	}
	switch (c->to) {
	case TO_INT: return to_int(c->field, v, out, err);
	case TO_FLOAT: return to_float(c->field, v, out, err);
	case TO_BOOL: return to_bool(c->field, v, out, err);
	default: return to_str(c->field, v, out, err);
	}
}

static int tc_process(void *state, const json_t *row, json_t **out,
		      plg_ctx *ctx, core_err *err)
{
	const struct coerce *t = state;
	json_t *o = json_copy((json_t *)row);
	int rc = 0;

	(void)ctx;
	if (!o)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < t->n; i++) {
		const json_t *v = json_object_get(o, t->conv[i].field);
		json_t *nv;

		if (!v) {
			rc = core_err_set(err, CORE_EDATA,
				"missing_field: Field '%s' not found in row", t->conv[i].field);
			break;
		}
		if ((rc = convert(&t->conv[i], v, &nv, err)))
			break;
		if (!nv || json_object_set_new(o, t->conv[i].field, nv))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if (rc) {
		json_decref(o);
		return rc;
	}
	*out = o;
	return 0;
}

const plg_transform_ops plg__type_coerce = {
	.name = "type_coerce",
	.description = "Strict, explicit type conversions of listed fields: int, float, bool, str (ELSPETH 0.7.1)",
	.options = tc_opts,
	.open = tc_open,
	.process = tc_process,
	.close = tc_close,
};
