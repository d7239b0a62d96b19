/*
 * schema.c — ELSPETH's `schema` block: parsing it from the settings and
 * validating (and, for text sources, coercing) rows against it.
 *
 * plg__schema_apply is all-or-nothing: converted values are collected
 * first and stored only when the whole row passes, so a row that fails
 * keeps the values it was read with (what a quarantine sink should get).
 * The schema is read-only after parsing, so apply may run on many threads.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/plugins_internal.h"

/* Integers a row may hold: canonical JSON (RFC 8785) needs them exact in a
 * double. */
#define SCHEMA_INT_MAX 9007199254740991LL

static const char *const mode_names[] = {"observed", "fixed", "flexible",
					 NULL};
static const char *const type_names[] = {"str", "int", "float", "bool",
					 "any", NULL};

/* ---------------------------------------------------------------- parsing */

static void free_names(const char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)v[i]);
	free(v);
}

void plg__schema_free(plg_schema *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nfields; i++)
		free((char *)s->fields[i].name);
	free(s->fields);
	free_names(s->required, s->nrequired);
	free_names(s->guaranteed, s->nguaranteed);
	free_names(s->audit, s->naudit);
	free(s);
}

static void trim(const char **b, const char **e)
{
	while (*b < *e && isspace((unsigned char)**b))
		(*b)++;
	while (*e > *b && isspace((unsigned char)(*e)[-1]))
		(*e)--;
}

/* A near miss for a type name, or NULL. */
static const char *type_hint(const char *t, size_t n)
{
	static const char *const alias[][2] = {
		{"string", "str"}, {"text", "str"}, {"integer", "int"},
		{"long", "int"}, {"number", "float"}, {"double", "float"},
		{"real", "float"}, {"boolean", "bool"}, {"object", "any"},
	};
	size_t i;

	for (i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
		if (strlen(alias[i][0]) == n && !strncasecmp(t, alias[i][0], n))
			return alias[i][1];
	return NULL;
}

static int bad_spec(const core_node *item, const char *spec, core_err *err)
{
	return core_err_at(err, CORE_ECONFIG, item,
			   "bad field spec \"%s\": expected \"name: type\" "
			   "where type is str, int, float, bool or any (a "
			   "trailing ? makes the field optional: "
			   "\"score: float?\")", spec);
}

static int parse_type(plg_field *fd, const char *tb, const char *te,
		      const core_node *item, const char *spec, core_err *err)
{
	const char *hint;
	size_t n;
	int i;

	trim(&tb, &te);
	if (te > tb && te[-1] == '?') {
		fd->optional = true;
		te--;
		trim(&tb, &te);
	}
	n = (size_t)(te - tb);
	for (i = 0; type_names[i]; i++)
		if (strlen(type_names[i]) == n &&
		    !memcmp(tb, type_names[i], n)) {
			fd->type = (plg_ftype)i;
			return 0;
		}
	if (!n)
		return bad_spec(item, spec, err);
	hint = type_hint(tb, n);
	return core_err_at(err, CORE_ECONFIG, item,
			   "unknown type '%.*s' in field spec \"%s\"%s%s%s; "
			   "types are str, int, float, bool and any",
			   (int)n, tb, spec, hint ? " (did you mean " : "",
			   hint ? hint : "", hint ? "?)" : "");
}

/* One item of `fields`: "name: type" (or the map {name: type} YAML makes
 * of an unquoted `- name: type`). */
static int parse_field(plg_field *fd, const core_node *item, core_err *err)
{
	const char *spec, *nb, *ne, *colon, *tb;
	char buf[512];
	int rc;

	if (item->kind == CORE_NODE_SCALAR) {
		spec = item->value;
		colon = strrchr(spec, ':');
		if (!colon)
			return bad_spec(item, spec, err);
		nb = spec;
		ne = colon;
		tb = colon + 1;
	} else if (item->kind == CORE_NODE_MAP && item->len == 1 &&
		   item->items[0]->kind == CORE_NODE_SCALAR) {
		snprintf(buf, sizeof(buf), "%s: %s", item->keys[0]->value,
			 item->items[0]->value);
		spec = buf;
		nb = item->keys[0]->value;
		ne = nb + strlen(nb);
		tb = item->items[0]->value;
	} else {
		return bad_spec(item, "(not a string)", err);
	}
	trim(&nb, &ne);
	if (nb == ne)
		return bad_spec(item, spec, err);
	if ((rc = parse_type(fd, tb, tb + strlen(tb), item, spec, err)))
		return rc;
	fd->name = strndup(nb, (size_t)(ne - nb));
	return fd->name ? 0 : core_err_set(err, CORE_ENOMEM, "out of memory");
}

static int check_dup_field(const plg_schema *s, const core_node *item,
			   core_err *err)
{
	const char *name = s->fields[s->nfields - 1].name;
	size_t i;

	for (i = 0; i + 1 < s->nfields; i++)
		if (!strcmp(s->fields[i].name, name))
			return core_err_at(err, CORE_ECONFIG, item,
					   "field '%s' is declared twice "
					   "(fields[%zu] and fields[%zu])",
					   name, i, s->nfields - 1);
	return 0;
}

static int parse_fields(plg_schema *s, const core_node *map, core_err *err)
{
	const core_node *f = core_map_get(map, "fields");
	size_t i;
	int rc;

	if (s->mode == PLG_SCHEMA_OBSERVED) {
		if (f && !core_node_is_null(f) && !(f->kind == CORE_NODE_SEQ && !f->len))
			return core_err_at(err, CORE_ECONFIG, f,
					   "fields are not used with mode: "
					   "observed; use mode: fixed or "
					   "flexible to declare fields");
		return 0;
	}
	if (!f || core_node_is_null(f))
		return core_err_at(err, CORE_ECONFIG, map,
				   "'fields' is required with mode: %s",
				   mode_names[s->mode]);
	if (f->kind != CORE_NODE_SEQ || f->len == 0)
		return core_err_at(err, CORE_ECONFIG, f,
				   "expected a non-empty list of fields, e.g. "
				   "[\"id: int\", \"score: float?\"]");
	s->fields = calloc(f->len, sizeof(*s->fields));
	if (!s->fields)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (i = 0; i < f->len; i++) {
		if ((rc = parse_field(&s->fields[i], f->items[i], err)))
			return rc;
		s->nfields++;
		if ((rc = check_dup_field(s, f->items[i], err)))
			return rc;
	}
	return 0;
}

static bool declared(const plg_schema *s, const char *name)
{
	for (size_t i = 0; i < s->nfields; i++)
		if (!strcmp(s->fields[i].name, name))
			return true;
	return false;
}

/* ELSPETH's refusal of a name list naming undeclared fields (its
 * contracts/schema.py), with the same words. */
static int undeclared(const plg_schema *s, const core_node *n, const char *key,
		      const char **names, size_t len, core_err *err)
{
	core_buf miss = { 0 }, decl = { 0 };
	int rc;

	for (size_t i = 0; i < len; i++)
		if (!declared(s, names[i]))
			core_buf_printf(&miss, "%s%s", miss.len ? ", " : "", names[i]);
	if (!miss.len)
		return 0;
	for (size_t i = 0; i < s->nfields; i++)
		core_buf_printf(&decl, "%s%s", i ? ", " : "", s->fields[i].name);
	rc = core_err_at(err, CORE_ECONFIG, n, "'%s' contains fields not declared in "
			 "schema: %s. Declared fields are: %s.", key,
			 miss.data ? miss.data : "", decl.data ? decl.data : "");
	core_buf_release(&miss);
	core_buf_release(&decl);
	return rc;
}

/* required_fields, guaranteed_fields or audit_fields (absent: none). */
static int parse_names(plg_schema *s, const core_node *map, const char *key,
		       const char ***out, size_t *nout, core_err *err)
{
	const core_node *n = core_map_get(map, key);
	const char **names = NULL;
	size_t len = 0, i;
	int rc;

	if (!n || core_node_is_null(n))
		return 0;
	if ((rc = core_node_str_list(n, &names, &len, err)))
		return rc;
	rc = s->mode == PLG_SCHEMA_OBSERVED ? 0 : undeclared(s, n, key, names, len, err);
	if (!rc && !(*out = calloc(len ? len : 1, sizeof(**out))))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	for (i = 0; !rc && i < len; i++) {
		if (!((*out)[i] = strdup(names[i])))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		else
			(*nout)++;
	}
	free(names);
	return rc;
}

int plg__schema_check(const core_node *opts, bool required, core_err *err)
{
	const core_node *n = core_map_get(opts, "schema");
	plg_schema *schema = NULL;
	int rc;

	if (!n && required)
		return core_err_at(err, CORE_ECONFIG, opts, "missing required key 'schema' "
				   "(e.g. schema: {mode: observed})");
	rc = plg__schema_parse(n, &schema, err);
	plg__schema_free(schema);
	return rc;
}

int plg__schema_parse(const core_node *n, plg_schema **out, core_err *err)
{
	static const char *const keys[] = {"mode", "fields", "required_fields",
					   "guaranteed_fields", "audit_fields", NULL};
	const core_node *m;
	plg_schema *s;
	int rc, mode;

	s = calloc(1, sizeof(*s));
	if (!s)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	s->mode = PLG_SCHEMA_OBSERVED;
	if (!n || core_node_is_null(n))
		goto out_ok;
	if ((rc = core_map_check_keys(n, keys, err)))
		goto out_free;
	m = core_map_get(n, "mode");
	if (!m) {
		rc = core_err_at(err, CORE_ECONFIG, n,
				 "'mode' is required: observed, fixed or "
				 "flexible");
		goto out_free;
	}
	if ((rc = core_node_enum(m, mode_names, &mode, err)))
		goto out_free;
	s->mode = (plg_schema_mode)mode;
	s->node = n;
	if ((rc = parse_fields(s, n, err)) ||
	    (rc = parse_names(s, n, "required_fields", &s->required, &s->nrequired, err)) ||
	    (rc = parse_names(s, n, "guaranteed_fields", &s->guaranteed, &s->nguaranteed, err)) ||
	    (rc = parse_names(s, n, "audit_fields", &s->audit, &s->naudit, err)))
		goto out_free;
out_ok:
	*out = s;
	return 0;
out_free:
	plg__schema_free(s);
	return rc;
}

/* ------------------------------------------------------------- validation */

/* A short text for a value in messages: "abc" quoted, 4.5, null, "an
 * object". Cut at a character boundary so the message stays UTF-8. */
static const char *describe(const json_t *v, char *buf, size_t cap)
{
	char *s;
	size_t n;

	if (json_is_object(v))
		return "an object";
	if (json_is_array(v))
		return "an array";
	s = json_dumps(v, JSON_ENCODE_ANY);
	if (!s)
		return "a value";
	n = strlen(s);
	if (n >= cap) {
		n = core_utf8_cut(s, cap - 4);
		memcpy(buf, s, n);
		memcpy(buf + n, "...", 4);
	} else {
		memcpy(buf, s, n + 1);
	}
	free(s);
	return buf;
}

static int type_error(const plg_field *fd, const json_t *v, const char *why,
		      core_err *err)
{
	char buf[96];

	return core_err_set(err, CORE_EDATA,
			    "field '%s': expected %s, got %s%s", fd->name,
			    type_names[fd->type], describe(v, buf, sizeof(buf)),
			    why ? why : "");
}

static int out_of_memory(core_err *err)
{
	return core_err_set(err, CORE_ENOMEM, "out of memory");
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Text [b, e) with Python's digit-group underscores taken out, into buf
 * (NUL-terminated): an underscore is allowed only between two digits.
 * false: a misplaced underscore, or no room. */
static bool drop_underscores(const char *b, const char *e, char *buf, size_t cap)
{
	size_t n = 0;

	for (const char *p = b; p < e; p++) {
		if (*p == '_') {
			if (p == b || p + 1 == e || !is_digit(p[-1]) || !is_digit(p[1]))
				return false;
			continue;
		}
		if (n + 1 >= cap)
			return false;
		buf[n++] = *p;
	}
	buf[n] = '\0';
	return true;
}

/* pydantic's lax int from text (ELSPETH's sources validate with it):
 * surrounding whitespace, a sign, ASCII digits with Python's underscores,
 * leading zeros, and a fraction of zeros only ("5.00", not "5." or "5.5"). */
static int coerce_int(const plg_field *fd, const json_t *v, json_t **out,
		      core_err *err)
{
	const char *b = json_string_value(v), *e = b + json_string_length(v);
	const char *p, *dot;
	char buf[64];
	long long x;

	trim(&b, &e);
	for (dot = b; dot < e && *dot != '.'; dot++)
		;
	if (dot < e) { /* "5.00": only zeros after the point, at least one */
		if (dot + 1 == e)
			return type_error(fd, v, NULL, err);
		for (p = dot + 1; p < e; p++)
			if (*p != '0')
				return type_error(fd, v, NULL, err);
		e = dot;
	}
	if (!drop_underscores(b, e, buf, sizeof(buf)))
		return type_error(fd, v, (size_t)(e - b) >= sizeof(buf) - 1 ?
				  " (out of range: integers must be within "
				  "+-9007199254740991)" : NULL, err);
	p = buf[0] == '+' || buf[0] == '-' ? buf + 1 : buf;
	if (!*p)
		return type_error(fd, v, NULL, err);
	for (const char *q = p; *q; q++)
		if (!is_digit(*q))
			return type_error(fd, v, NULL, err);
	errno = 0;
	x = strtoll(buf, NULL, 10);
	if (errno == ERANGE || x > SCHEMA_INT_MAX || x < -SCHEMA_INT_MAX)
		return type_error(fd, v, " (out of range: integers must be "
				  "within +-9007199254740991)", err);
	*out = json_integer(x);
	return *out ? 0 : out_of_memory(err);
}

static bool is_nonfinite_word(const char *b, const char *e)
{
	size_t n;

	if (b < e && (*b == '+' || *b == '-'))
		b++;
	n = (size_t)(e - b);
	return (n == 3 && (!strncasecmp(b, "nan", 3) ||
			   !strncasecmp(b, "inf", 3))) ||
	       (n == 8 && !strncasecmp(b, "infinity", 8));
}

bool plg__is_decimal(const char *p, const char *e, bool *integral)
{
	size_t digits = 0;

	if (p < e && (*p == '+' || *p == '-'))
		p++;
	for (; p < e && is_digit(*p); p++)
		digits++;
	if (integral)
		*integral = p == e;
	if (p < e && *p == '.')
		for (p++; p < e && is_digit(*p); p++)
			digits++;
	if (!digits)
		return false;
	if (p < e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		if (p == e || !is_digit(*p))
			return false;
		while (p < e && is_digit(*p))
			p++;
	}
	return p == e;
}

static int coerce_float(const plg_field *fd, const json_t *v, json_t **out,
			core_err *err)
{
	const char *b = json_string_value(v), *e = b + json_string_length(v);
	char *copy;
	double d;

	trim(&b, &e);
	if (is_nonfinite_word(b, e))
		return type_error(fd, v, " (NaN and Infinity are not allowed "
				  "in rows)", err);
	/* Python's float(): digit groups may hold underscores */
	if (!(copy = malloc((size_t)(e - b) + 1)))
		return out_of_memory(err);
	if (!drop_underscores(b, e, copy, (size_t)(e - b) + 1) ||
	    !plg__is_decimal(copy, copy + strlen(copy), NULL)) {
		free(copy);
		return type_error(fd, v, NULL, err);
	}
	d = strtod(copy, NULL);
	free(copy);
	if (!isfinite(d))
		return type_error(fd, v, " (out of range for a double)", err);
	*out = json_real(d);
	return *out ? 0 : out_of_memory(err);
}

static int coerce_bool(const plg_field *fd, const json_t *v, json_t **out,
		       core_err *err)
{
	/* pydantic's lax bool: these words, any case, nothing around them */
	static const char *const words[] = {"true", "yes", "on", "t", "y", "1",
					    "false", "no", "off", "f", "n", "0"};
	const char *b = json_string_value(v);
	size_t i, n = json_string_length(v);

	for (i = 0; i < 12; i++)
		if (strlen(words[i]) == n && !strncasecmp(b, words[i], n)) {
			*out = json_boolean(i < 6);
			return 0;
		}
	return type_error(fd, v, " (true/false, yes/no, on/off, t/f, y/n or 1/0)", err);
}

/* Text from a text source: *out receives the converted value, or stays
 * NULL when the text stands as it is. */
static int coerce_text(const plg_field *fd, const json_t *v, json_t **out,
		       core_err *err)
{
	/* an empty cell is "" — a str, and no int, float or bool even when
	 * the field is optional (ELSPETH quarantines it) */
	switch (fd->type) {
	case PLG_F_INT:
		return coerce_int(fd, v, out, err);
	case PLG_F_FLOAT:
		return coerce_float(fd, v, out, err);
	case PLG_F_BOOL:
		return coerce_bool(fd, v, out, err);
	case PLG_F_STR:
	case PLG_F_ANY:
		break;
	}
	return 0;
}

static int check_type(const plg_field *fd, const json_t *v, core_err *err)
{
	json_int_t x;
	bool ok = true;

	switch (fd->type) {
	case PLG_F_STR:
		ok = json_is_string(v);
		break;
	case PLG_F_INT:
		ok = json_is_integer(v);
		x = ok ? json_integer_value(v) : 0;
		if (x > SCHEMA_INT_MAX || x < -SCHEMA_INT_MAX)
			return type_error(fd, v, " (out of range: integers "
					  "must be within +-9007199254740991)",
					  err);
		break;
	case PLG_F_FLOAT:
		ok = json_is_number(v);
		break;
	case PLG_F_BOOL:
		ok = json_is_boolean(v);
		break;
	case PLG_F_ANY:
		break;
	}
	return ok ? 0 : type_error(fd, v, NULL, err);
}

static int check_field(const plg_field *fd, const json_t *v, bool coerce,
		       json_t **out, core_err *err)
{
	*out = NULL;
	if (!v || json_is_null(v)) {
		/* `any` is Python's Any, which None is too: present and null is
		 * fine (ELSPETH 0.4.1 and 0.7.1 take it); missing is not */
		if (fd->optional || (v && fd->type == PLG_F_ANY))
			return 0;
		if (!v)
			return core_err_set(err, CORE_EDATA,
					    "field '%s': required field is "
					    "missing (expected %s)", fd->name,
					    type_names[fd->type]);
		return type_error(fd, v, NULL, err);
	}
	if (coerce && json_is_string(v))
		return coerce_text(fd, v, out, err);
	return check_type(fd, v, err);
}

static int check_extra(const plg_schema *s, json_t *row, core_err *err)
{
	const char *key;
	json_t *v;

	json_object_foreach(row, key, v)
		if (!declared(s, key))
			return core_err_set(err, CORE_EDATA,
					    "field '%s': not declared in the "
					    "schema (mode: fixed allows no "
					    "other fields; use mode: flexible "
					    "to allow them)", key);
	return 0;
}

typedef struct pending {
	const char *name;
	json_t *v;
} pending;

static int check_required(const plg_schema *s, const json_t *row,
			  const pending *pend, size_t np, core_err *err)
{
	const json_t *v;
	size_t i, j;

	for (i = 0; i < s->nrequired; i++) {
		v = json_object_get(row, s->required[i]);
		for (j = 0; j < np; j++)
			if (!strcmp(pend[j].name, s->required[i]))
				v = pend[j].v;
		if (!v || json_is_null(v))
			return core_err_set(err, CORE_EDATA,
					    "field '%s': required field is %s",
					    s->required[i],
					    v ? "null" : "missing");
	}
	return 0;
}

/* Checks the declared fields, collecting conversions in pend (*np). */
static int check_declared(const plg_schema *s, json_t *row, bool coerce,
			  pending *pend, size_t *np, core_err *err)
{
	const plg_field *fd;
	size_t i, present = 0;
	json_t *v;
	int rc;

	for (i = 0; i < s->nfields; i++) {
		fd = &s->fields[i];
		v = json_object_get(row, fd->name);
		present += v != NULL;
		if ((rc = check_field(fd, v, coerce, &pend[*np].v, err)))
			return rc;
		if (pend[*np].v)
			pend[(*np)++].name = fd->name;
	}
	if (s->mode == PLG_SCHEMA_FIXED && json_object_size(row) > present)
		return check_extra(s, row, err);
	return 0;
}

int plg__schema_apply(const plg_schema *s, json_t *row, bool coerce,
		      core_err *err)
{
	pending stack[32], *pend = stack;
	size_t np = 0, i;
	int rc = 0;

	if (!json_is_object(row))
		return core_err_set(err, CORE_EDATA, "expected a JSON object");
	if (!s)
		return 0;
	if (s->nfields > sizeof(stack) / sizeof(stack[0])) {
		pend = malloc(s->nfields * sizeof(*pend));
		if (!pend)
			return out_of_memory(err);
	}
	if (s->mode != PLG_SCHEMA_OBSERVED &&
	    (rc = check_declared(s, row, coerce, pend, &np, err)))
		goto out_free;
	if ((rc = check_required(s, row, pend, np, err)))
		goto out_free;
	for (i = 0; i < np; i++) {
		if (json_object_set_new(row, pend[i].name, pend[i].v)) {
			pend[i].v = NULL;
			rc = out_of_memory(err);
			break;
		}
		pend[i].v = NULL;
	}
out_free:
	for (i = 0; i < np; i++)
		json_decref(pend[i].v);
	if (pend != stack)
		free(pend);
	return rc;
}
