/*
 * value.c — Python's view of the JSON values templates use: str(),
 * truthiness, type names, == and ordering.
 */
#include <string.h>

#include "plugins/template/template_internal.h"

/* Python str() of a JSON value; objects and arrays as compact JSON. */
int tpl__py_str(core_buf *b, const json_t *v)
{
	char num[48];

	switch (json_typeof(v)) {
	case JSON_STRING:
		return core_buf_append(b, json_string_value(v),
				       json_string_length(v));
	case JSON_INTEGER:
		return core_buf_printf(b, "%" JSON_INTEGER_FORMAT,
				       json_integer_value(v));
	case JSON_REAL:
		core_format_double_py(json_real_value(v), num, sizeof(num));
		return core_buf_puts(b, num);
	case JSON_TRUE:
		return core_buf_puts(b, "True");
	case JSON_FALSE:
		return core_buf_puts(b, "False");
	case JSON_NULL:
		return core_buf_puts(b, "None");
	case JSON_OBJECT:
	case JSON_ARRAY:
		break;
	}
	return core_json_append(b, v, -1, 0);
}

bool tpl__truthy(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return json_object_size(v) > 0;
	case JSON_ARRAY:
		return json_array_size(v) > 0;
	case JSON_STRING:
		return json_string_length(v) > 0;
	case JSON_INTEGER:
		return json_integer_value(v) != 0;
	case JSON_REAL:
		return json_real_value(v) != 0;
	case JSON_TRUE:
		return true;
	case JSON_FALSE:
	case JSON_NULL:
		break;
	}
	return false;
}

/* bool is an int in Python: True == 1, False < 0.5. */
static bool is_num(const json_t *v)
{
	return json_is_number(v) || json_is_boolean(v);
}

static long double num(const json_t *v)
{
	if (json_is_integer(v))
		return (long double)json_integer_value(v);
	if (json_is_real(v))
		return (long double)json_real_value(v);
	return json_is_true(v) ? 1.0L : 0.0L;
}

/* Numbers by value: a long double holds every int64 and double exactly,
 * so 2**53 + 1 != 2.0**53 as in Python. NaN is unordered: 2. */
static int num_order(const json_t *a, const json_t *b)
{
	long double x = num(a), y = num(b);

	if (x != x || y != y)
		return 2;
	return x < y ? -1 : x > y;
}

bool tpl__py_eq(const json_t *a, const json_t *b)
{
	size_t i;
	const char *k;
	json_t *x;

	if (is_num(a) && is_num(b))
		return num_order(a, b) == 0;
	if (json_typeof(a) != json_typeof(b))
		return false;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       !memcmp(json_string_value(a), json_string_value(b),
			       json_string_length(a));
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return false;
		json_array_foreach(a, i, x)
			if (!tpl__py_eq(x, json_array_get(b, i)))
				return false;
		return true;
	case JSON_OBJECT:
		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_foreach((json_t *)a, k, x) {
			const json_t *y = json_object_get(b, k);

			if (!y || !tpl__py_eq(x, y))
				return false;
		}
		return true;
	default:
		return true;	/* null */
	}
}

int tpl__py_order(const json_t *a, const json_t *b)
{
	size_t i, na, nb, m;
	int r;

	if (is_num(a) && is_num(b))
		return num_order(a, b);
	if (json_is_string(a) && json_is_string(b)) {
		na = json_string_length(a);
		nb = json_string_length(b);
		m = na < nb ? na : nb;
		/* UTF-8 byte order is code point order */
		r = memcmp(json_string_value(a), json_string_value(b), m);
		return r ? (r < 0 ? -1 : 1) : na < nb ? -1 : na > nb;
	}
	if (!json_is_array(a) || !json_is_array(b))
		return 2;
	na = json_array_size(a);
	nb = json_array_size(b);
	for (i = 0; i < na && i < nb; i++) {
		const json_t *x = json_array_get(a, i), *y = json_array_get(b, i);

		if (!tpl__py_eq(x, y))
			return tpl__py_order(x, y);
	}
	return na < nb ? -1 : na > nb;
}
