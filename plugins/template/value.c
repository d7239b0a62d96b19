/*
 * value.c — Python's view of the JSON values templates print: str() and
 * truthiness.
 */
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
