/*
 * source_json.c — the "json" source: rows from a JSON array of objects
 * (format: json, optionally under `data_key`) or from JSON Lines (format:
 * jsonl, one object per line).
 *
 * json loads the whole document at open (a document that does not parse is
 * fatal there) and hands out its elements one by one, letting go of each as
 * it goes. jsonl reads a line per row: blank lines are skipped, and a line
 * that is not a JSON object is a row error whose row is {"_raw": line}.
 * A non-object element of a json array is a row error whose row is
 * {"_raw": element}. Rows are checked against the schema without coercion.
 *
 * In a pipeline in ELSPETH 0.7.1's format, an observed schema (a flexible
 * one: its undeclared fields) fixes each field's type at the field's
 * first value, as 0.7.1's schema contract does: int, float, str and bool
 * apart; a null, an object or a list first lets the field take anything.
 * A later value of another type (null aside) fails the row with 0.7.1's
 * message ("Field 'v' (v) expected type 'int', got 'str'"). A field's
 * first value fixes its type even in a row that fails. The fixed types
 * go into checkpoints (save/restore), so a resume keeps them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "plugins/plugins_internal.h"

typedef struct json_src {
	char *path;
	plg_schema *schema;
	FILE *fp;      /* jsonl */
	char *ln;      /* jsonl: getline buffer */
	size_t ln_cap;
	long line;
	json_t *array; /* json: the rows; taken elements become null */
	size_t index;
	/* 0.7.1's fixed types: field -> "int"|"float"|"str"|"bool"|"any",
	 * in the order the fields came; NULL: not kept (another format, a
	 * fixed schema). Under `lock` (save runs on another thread). */
	json_t *types;
	/* 0.7.1's field names: each key normalized (plg__field_name), then
	 * field_mapping; `seen` maps each name given so far to the key it
	 * came from, so a later key that lands on it is a collision. Under
	 * `lock`. NULL: keys as they are (0.4.1's format). */
	json_t *seen;
	json_t *fmap;  /* field_mapping: name -> name; NULL: none */
	bool locked;   /* `lock` is initialised */
	pthread_mutex_t lock;
} json_src;

static void json_close(void *state)
{
	json_src *s = state;

	if (!s)
		return;
	if (s->fp)
		fclose(s->fp);
	free(s->ln);
	json_decref(s->array);
	json_decref(s->types);
	json_decref(s->seen);
	json_decref(s->fmap);
	if (s->locked)
		pthread_mutex_destroy(&s->lock);
	plg__schema_free(s->schema);
	free(s->path);
	free(s);
}

static int nomem(core_err *err)
{
	return core_err_set(err, CORE_ENOMEM, "out of memory");
}

/* core_json_kind, with integers and reals both "a number". */
static const char *type_name(const json_t *v)
{
	return json_is_number(v) ? "a number" : core_json_kind(v);
}

/* Skips a UTF-8 byte order mark at the start of fp. */
static void skip_bom(FILE *fp)
{
	unsigned char b[3];

	if (fread(b, 1, 3, fp) != 3 || memcmp(b, "\xEF\xBB\xBF", 3))
		rewind(fp);
}

/* format: json|jsonl, else by the extension (.jsonl, .ndjson: jsonl). */
static int parse_format(const core_node *opts, const char *path, bool *jsonl,
			core_err *err)
{
	static const char *const formats[] = {"json", "jsonl", NULL};
	const core_node *f = core_map_get(opts, "format");
	const char *dot = strrchr(path, '.');
	int i, rc;

	if (f && !core_node_is_null(f)) {
		if ((rc = core_node_enum(f, formats, &i, err)))
			return rc;
		*jsonl = i == 1;
		return 0;
	}
	*jsonl = dot && (!strcasecmp(dot, ".jsonl") ||
			 !strcasecmp(dot, ".ndjson"));
	return 0;
}

/* The rows array of the loaded document: root, or root[data_key]. */
static int find_rows(json_src *s, json_t *root, const core_node *opts,
		     core_err *err)
{
	const char *key = NULL;
	json_t *rows = root;
	int rc;

	if ((rc = core_opt_str(opts, "data_key", false, &key, err)))
		return rc;
	if (key && !json_is_object(root))
		return core_err_at(err, CORE_EDATA,
				   core_map_get(opts, "data_key"),
				   "%s: data_key needs a top-level object, the "
				   "file holds %s", s->path, type_name(root));
	if (key && !(rows = json_object_get(root, key)))
		return core_err_at(err, CORE_EDATA,
				   core_map_get(opts, "data_key"),
				   "%s: the top-level object has no key '%s'",
				   s->path, key);
	if (!json_is_array(rows))
		return core_err_set(err, CORE_EDATA,
				    "%s: expected %s to be an array of "
				    "objects, got %s%s", s->path,
				    key ? "the data_key value" : "the document",
				    type_name(rows),
				    key ? "" : " (set data_key if the rows "
				    "are under a key)");
	s->array = json_incref(rows);
	return 0;
}

static int load_json(json_src *s, const core_node *opts, core_err *err)
{
	json_error_t jerr;
	json_t *root;
	int rc;

	skip_bom(s->fp);
	root = json_loadf(s->fp, 0, &jerr);
	fclose(s->fp);
	s->fp = NULL;
	if (!root)
		return core_err_set(err, CORE_EDATA,
				    "%s: invalid JSON at line %d, column %d: "
				    "%s", s->path, jerr.line, jerr.column,
				    jerr.text);
	rc = find_rows(s, root, opts, err);
	json_decref(root);
	return rc;
}

static const plg_option json_own[] = {
	{ "path", "string", true, NULL,
	  "the file to read: a JSON array of objects, or JSON Lines" },
	{ "format", "string", false, NULL,
	  "json or jsonl; by default from the file's extension (.jsonl, .ndjson: jsonl)" },
	{ "data_key", "string", false, NULL,
	  "format json: the key of the top-level object that holds the array" },
	{ "encoding", "string", false, "\"utf-8\"",
	  "the file's encoding, by Python's codec name (others than UTF-8 are decoded at open)" },
	{ "field_mapping", "object", false, NULL,
	  "field name -> new name (0.7.1: after each key is normalized as a CSV header)" },
	{ "on_validation_failure", "string", true, NULL,
	  "where rows that fail the schema go: a sink's name, or discard" },
	{ NULL }
};
static const plg_option *const json_opts[] = { json_own, plg__schema_opts, NULL };

/* field_mapping: its values Python identifiers, no two the same (0.7.1's
 * messages). */
static int parse_fmap(json_src *s, const core_node *m, core_err *err)
{
	if (!m || core_node_is_null(m))
		return 0;
	if (m->kind != CORE_NODE_MAP)
		return core_err_at(err, CORE_ECONFIG, m, "expected a map of field name -> new name");
	if (!(s->fmap = json_object()))
		return nomem(err);
	for (size_t i = 0; i < m->len; i++) {
		const char *to;
		int rc = core_node_str(m->items[i], &to, err);

		if (rc)
			return rc;
		if (!plg__py_identifier(to))
			return core_err_at(err, CORE_ECONFIG, m->items[i], "field_mapping values[%zu] "
					   "'%s' is not a valid Python identifier", i, to);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(m->items[j]->value, to))
				return core_err_at(err, CORE_ECONFIG, m->items[i], "Duplicate field "
						   "names in field_mapping values: %s", to);
		if (json_object_set_new(s->fmap, m->keys[i]->value, json_string(to)))
			return nomem(err);
	}
	return 0;
}

/* The options as open reads them before it touches the file. */
static int json_options(json_src *s, const core_node *options, bool *jsonl,
			core_err *err)
{
	const char *path = NULL;
	int rc;

	if ((rc = plg__check_options(options, json_opts, err)) ||
	    (rc = core_opt_str(options, "path", true, &path, err)) ||
	    (rc = plg__opt_encoding(options, PLG__ENC_READ, err)) ||
	    (rc = parse_format(options, path, jsonl, err)) ||
	    (rc = plg__schema_parse(core_map_get(options, "schema"),
				    &s->schema, err)) ||
	    (rc = parse_fmap(s, core_map_get(options, "field_mapping"), err)))
		return rc;
	if (*jsonl && core_map_get(options, "data_key"))
		return core_err_at(err, CORE_ECONFIG,
				   core_map_get(options, "data_key"),
				   "data_key applies to format: json only");
	return (s->path = strdup(path)) ? 0 : nomem(err);
}

/* validate: the options alone. */
static int json_check(const core_node *options, core_err *err)
{
	json_src *s = calloc(1, sizeof(*s));
	bool jsonl = false;
	int rc;

	if (!s)
		return nomem(err);
	rc = json_options(s, options, &jsonl, err);
	json_close(s);
	return rc;
}

static int json_open(const plg_env *env, const core_node *options,
		     void **state, core_err *err)
{
	json_src *s;
	bool jsonl = false;
	int rc;

	if (!(s = calloc(1, sizeof(*s))))
		return nomem(err);
	if ((rc = json_options(s, options, &jsonl, err)))
		goto out_close;
	if (env && env->v07) {
		if ((s->schema->mode != PLG_SCHEMA_FIXED && !(s->types = json_object())) ||
		    !(s->seen = json_object())) {
			rc = nomem(err);
			goto out_close;
		}
		pthread_mutex_init(&s->lock, NULL);
		s->locked = true;
	}
	if (!(s->fp = plg__open_decoded(s->path, plg__opt_encoding_of(options), err))) {
		rc = errno == EILSEQ || errno == EINVAL ? err->code :
		     core_err_at(err, CORE_EIO, core_map_get(options, "path"),
				 "cannot open '%s': %s", s->path, strerror(errno));
		goto out_close;
	}
	if (!jsonl && (rc = load_json(s, options, err)))
		goto out_close;
	*state = s;
	return 0;
out_close:
	json_close(s);
	return rc;
}

/* {"_raw": v}, taking v's reference (a new reference, or NULL). */
static json_t *raw_row(json_t *v)
{
	json_t *row = v ? json_object() : NULL;

	if (row && json_object_set_new(row, "_raw", v)) {
		json_decref(row);
		return NULL;
	}
	if (!row)
		json_decref(v);
	return row;
}

/* ------------------------------------------- 0.7.1's fixed field types */

/* Python's type of v as 0.7.1's contract names it; "any" for what a
 * field's first value cannot fix (null, an object, a list). */
static const char *contract_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_INTEGER: return "int";
	case JSON_REAL: return "float";
	case JSON_STRING: return "str";
	case JSON_TRUE: case JSON_FALSE: return "bool";
	default: return "any";
	}
}

static bool declared(const plg_schema *sc, const char *name)
{
	for (size_t i = 0; sc->mode == PLG_SCHEMA_FLEXIBLE && i < sc->nfields; i++)
		if (!strcmp(sc->fields[i].name, name))
			return true;
	return false;
}

/* Fixes the types of row's new fields, then checks the others: true when
 * a value has another type than its field's, *reason (malloc'd) then
 * 0.7.1's message, the fields in the order they were fixed. */
static bool fixed_types(json_src *s, const json_t *row, char **reason)
{
	core_buf b = { 0 };
	const char *k, *t;
	json_t *v;

	pthread_mutex_lock(&s->lock);
	json_object_foreach((json_t *)row, k, v)
		if (!json_object_get(s->types, k) && !declared(s->schema, k))
			json_object_set_new(s->types, k, json_string(contract_type(v)));
	json_object_foreach(s->types, k, v) {
		const json_t *got = json_object_get(row, k);

		t = json_string_value(v);
		if (!got || json_is_null(got) || !strcmp(t, "any") ||
		    !strcmp(t, contract_type(got)))
			continue;
		core_buf_printf(&b, "%sField '%s' (%s) expected type '%s', got '%s'",
				b.len ? "; " : "", k, k, t, core_py_type(got));
	}
	pthread_mutex_unlock(&s->lock);
	if (!b.len)
		return false;
	*reason = core_buf_reserve(&b, 0) ? NULL : b.data;
	if (!*reason)
		core_buf_release(&b);
	return *reason != NULL;
}

/* An object as [[key, value], ...], in its order. */
static json_t *pairs(const json_t *o)
{
	json_t *out = json_array(), *v;
	const char *k;

	json_object_foreach((json_t *)o, k, v)
		json_array_append_new(out, json_pack("[s,O]", k, v));
	return out;
}

static void unpairs(json_t *o, const json_t *a)
{
	size_t i;
	json_t *p;

	json_array_foreach(a, i, p)
		if (json_is_string(json_array_get(p, 0)) && json_is_string(json_array_get(p, 1)))
			json_object_set(o, json_string_value(json_array_get(p, 0)),
					json_array_get(p, 1));
}

/* {"types": [[field, type], ...], "names": [[name, key], ...]}: arrays
 * keep the order things came in (a checkpoint writes objects with their
 * keys sorted), which orders a row's messages. */
static json_t *json_save(void *state)
{
	json_src *s = state;
	json_t *out;

	if (!s->locked)
		return NULL;
	pthread_mutex_lock(&s->lock);
	out = json_pack("{s:o,s:o}", "types", s->types ? pairs(s->types) : json_array(),
			"names", pairs(s->seen));
	pthread_mutex_unlock(&s->lock);
	return out;
}

static void json_restore(void *state, const json_t *saved)
{
	json_src *s = state;

	if (!s->locked)
		return;
	pthread_mutex_lock(&s->lock);
	if (json_is_array(saved) && s->types) /* before session 42: the types alone */
		unpairs(s->types, saved);
	if (json_is_object(saved) && s->types)
		unpairs(s->types, json_object_get(saved, "types"));
	if (json_is_object(saved))
		unpairs(s->seen, json_object_get(saved, "names"));
	pthread_mutex_unlock(&s->lock);
}

/* ------------------------------------------------ 0.7.1's field names */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* check_normalization_collisions: each name two of keys[] (normalized:
 * eff[]) meet on, sorted, with the positions it came from. */
static void collisions(char **keys, char **eff, size_t n, core_buf *why)
{
	char **names = calloc(n ? n : 1, sizeof(*names));
	size_t nn = 0;

	for (size_t a = 0; names && a < n; a++) {
		bool dup = false, listed = false;

		for (size_t b = 0; b < n; b++)
			dup |= b != a && !strcmp(eff[a], eff[b]);
		for (size_t k = 0; k < nn; k++)
			listed |= !strcmp(names[k], eff[a]);
		if (dup && !listed)
			names[nn++] = eff[a];
	}
	if (names && nn) {
		qsort(names, nn, sizeof(*names), cmp_str);
		core_buf_puts(why, "Field name collision after normalization:");
	}
	for (size_t k = 0; names && k < nn; k++) {
		core_buf_printf(why, "\n  '%s' <- ", names[k]);
		for (size_t b = 0, c = 0; b < n; b++)
			if (!strcmp(eff[b], names[k]))
				core_buf_printf(why, "%scolumn %zu ('%s')", c++ ? ", " : "", b, keys[b]);
	}
	free(names);
}

/* row with its keys as 0.7.1's JSON source gives them (its
 * resolve_field_names on the first row, extend_field_resolution on the
 * others): a key seen before keeps its name; a new one is normalized as
 * a CSV header, then renamed by field_mapping. `seen` (key -> name) is
 * the resolution, kept only when the row is taken. A key that normalizes
 * to nothing, or new keys that meet each other or an earlier name, refuse
 * the row (*why: 0.7.1's message; *res: the row as it came); a meeting
 * that field_mapping makes is the configuration's fault: CORE_ECONFIG,
 * as 0.7.1 stops there. Without `seen` (0.4.1's format) keys are only
 * renamed by field_mapping. */
static int names(json_src *s, json_t *row, json_t **res, core_buf *why, core_err *err)
{
	size_t n = json_object_size(row), nn = 0;
	char **raw = calloc(n ? n : 1, sizeof(*raw)), **eff = calloc(n ? n : 1, sizeof(*eff));
	const char **fin = calloc(n ? n : 1, sizeof(*fin));
	json_t *out = json_object(), *v;
	core_buf b = { 0 };
	bool first, mapping_fault = false;
	const char *k;
	int rc = raw && eff && fin && out ? 0 : CORE_ENOMEM;

	if (s->seen)
		pthread_mutex_lock(&s->lock);
	first = !s->seen || !json_object_size(s->seen);
	/* the new keys, normalized */
	json_object_foreach(row, k, v) {
		if (rc || (s->seen && json_object_get(s->seen, k)))
			continue;
		core_buf_reset(&b);
		if (s->seen ? plg__field_name(k, strlen(k), &b) : core_buf_puts(&b, k)) {
			rc = CORE_ENOMEM;
			break;
		}
		if (!b.len) {
			core_buf_printf(why, "Header '%s' normalizes to empty string", k);
			break;
		}
		raw[nn] = (char *)k;
		if (!(eff[nn++] = strdup(b.data)))
			rc = CORE_ENOMEM;
	}
	if (!rc && !why->len)
		collisions(raw, eff, nn, why);
	for (size_t i = 0; !rc && !why->len && !first && i < nn; i++) {
		json_object_foreach(s->seen, k, v) {
			core_buf_reset(&b);
			if (plg__field_name(k, strlen(k), &b))
				rc = CORE_ENOMEM;
			else if (!strcmp(b.data ? b.data : "", eff[i])) {
				core_buf_printf(why, "Field name collision after normalization:\n  "
						"'%s' <- previously seen field, current field '%s'",
						eff[i], raw[i]);
				break;
			}
		}
	}
	for (size_t i = 0; !rc && i < nn; i++) {
		const char *m = json_string_value(json_object_get(s->fmap, eff[i]));

		fin[i] = m ? m : eff[i];
	}
	/* names the new keys meet: an earlier row's, or each other's */
	for (size_t i = 0; !rc && !why->len && i < nn; i++) {
		const char *prev = NULL, *prev_eff = NULL, *old_eff = NULL;

		json_object_foreach(s->seen, k, v)
			if (!strcmp(json_string_value(v), fin[i])) {
				prev = "previously seen field";
				core_buf_reset(&b);
				if (plg__field_name(k, strlen(k), &b))
					rc = CORE_ENOMEM;
				old_eff = b.data;
				break;
			}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(fin[j], fin[i])) {
				prev = raw[j];
				prev_eff = eff[j];
			}
		if (!prev || rc)
			continue;
		mapping_fault = s->fmap && (json_object_get(s->fmap, eff[i]) ||
			(old_eff && strcmp(old_eff, fin[i])) ||
			(prev_eff && json_object_get(s->fmap, prev_eff)));
		core_buf_printf(why, "%s:\n  '%s' <- ", mapping_fault ?
				"field_mapping creates collision" :
				"Field name collision after normalization", fin[i]);
		plg__py_repr(why, prev);
		core_buf_puts(why, ", ");
		plg__py_repr(why, raw[i]);
	}
	for (size_t i = 0; !rc && !why->len && s->seen && i < nn; i++)
		if (json_object_set_new(s->seen, raw[i], json_string(fin[i])))
			rc = CORE_ENOMEM;
	if (s->seen)
		pthread_mutex_unlock(&s->lock);
	json_object_foreach(row, k, v) {
		const char *to;

		if (rc || why->len)
			break;
		if (s->seen) {
			pthread_mutex_lock(&s->lock);
			to = json_string_value(json_object_get(s->seen, k));
			pthread_mutex_unlock(&s->lock);
		} else {
			to = json_string_value(json_object_get(s->fmap, k));
			to = to ? to : k;
		}
		if (!to || json_object_set(out, to, v))
			rc = CORE_ENOMEM;
	}
	for (size_t i = 0; eff && i < nn; i++)
		free(eff[i]);
	free(raw);
	free(eff);
	free(fin);
	core_buf_release(&b);
	if (!rc && mapping_fault)
		rc = core_err_set(err, CORE_ECONFIG, "%s: %s", s->path, why->data);
	else if (rc)
		rc = core_err_set(err, rc, "out of memory");
	if (rc || why->len) {
		json_decref(out);
		*res = rc ? NULL : json_incref(row);
		return rc;
	}
	*res = out;
	return 0;
}

/* Fills out->row/error/where; `what` is "line 4" or "index 3". */
static int finish_row(json_src *s, plg_source_row *out, json_t *row,
		      const char *what, const char *why, core_err *err)
{
	core_err e = {0};
	char msg[sizeof(e.msg) + 64];

	core_buf named = { 0 };

	msg[0] = '\0';
	if (!why && (s->seen || s->fmap)) {
		json_t *n = NULL;
		int rc = names(s, row, &n, &named, err);

		json_decref(row);
		if (rc) {
			core_buf_release(&named);
			return rc;
		}
		row = n;
		/* 0.7.1's own message: held error sinks order by its hash */
		if (named.len && !(out->reason = strdup(named.data))) {
			json_decref(row);
			core_buf_release(&named);
			return nomem(err);
		}
		why = named.len ? named.data : NULL;
	}
	if (why)
		snprintf(msg, sizeof(msg), "%s: %s", what, why);
	else if (plg__schema_apply(s->schema, row, false, &e))
		snprintf(msg, sizeof(msg), "%s: %s", what, e.msg);
	else if (s->types && fixed_types(s, row, &out->reason))
		snprintf(msg, sizeof(msg), "%s: %s", what, out->reason);
	core_buf_release(&named);
	out->row = row;
	out->where = strdup(what);
	if (e.code == CORE_ENOMEM || !out->where ||
	    (msg[0] && !(out->error = strdup(msg)))) {
		free(out->reason);
		json_decref(out->row);
		free(out->where);
		memset(out, 0, sizeof(*out));
		return nomem(err);
	}
	return 1;
}

static int next_element(json_src *s, plg_source_row *out, core_err *err)
{
	char what[48], why[64];
	json_t *el;

	if (s->index >= json_array_size(s->array))
		return 0;
	el = json_incref(json_array_get(s->array, s->index));
	json_array_set_new(s->array, s->index, json_null());
	snprintf(what, sizeof(what), "index %zu", s->index++);
	if (json_is_object(el))
		return finish_row(s, out, el, what, NULL, err);
	snprintf(why, sizeof(why), "expected a JSON object, got %s",
		 type_name(el));
	if (!(el = raw_row(el)))
		return nomem(err);
	return finish_row(s, out, el, what, why, err);
}

/* The next non-blank line, without its line end, in *p and *n. 1, or 0 at
 * the end. */
static int read_line(json_src *s, const char **p, size_t *n, core_err *err)
{
	ssize_t got;
	const char *b, *e;

	do {
		errno = 0;
		got = getline(&s->ln, &s->ln_cap, s->fp);
		if (got < 0) {
			if (errno == ENOMEM)
				return nomem(err);
			if (ferror(s->fp))
				return core_err_set(err, CORE_EIO,
						    "%s: read error after line "
						    "%ld: %s", s->path, s->line,
						    strerror(errno));
			return 0;
		}
		b = s->ln;
		e = b + got;
		if (++s->line == 1 && got >= 3 && !memcmp(b, "\xEF\xBB\xBF", 3))
			b += 3;
		while (e > b && (e[-1] == '\n' || e[-1] == '\r' ||
				 e[-1] == ' ' || e[-1] == '\t'))
			e--;
		while (b < e && (*b == ' ' || *b == '\t'))
			b++;
	} while (b == e);
	*p = b;
	*n = (size_t)(e - b);
	return 1;
}

static int next_line(json_src *s, plg_source_row *out, core_err *err)
{
	char what[48], why[256];
	json_error_t jerr;
	core_buf raw = {0};
	const char *p = NULL;
	json_t *row;
	size_t n = 0;
	int rc;

	if ((rc = read_line(s, &p, &n, err)) <= 0)
		return rc;
	snprintf(what, sizeof(what), "line %ld", s->line);
	row = json_loadb(p, n, JSON_DECODE_ANY, &jerr);
	if (json_is_object(row))
		return finish_row(s, out, row, what, NULL, err);
	if (row)
		snprintf(why, sizeof(why), "expected a JSON object, got %s",
			 type_name(row));
	else
		snprintf(why, sizeof(why), "invalid JSON at column %d: %s",
			 jerr.column, jerr.text);
	json_decref(row);
	if (core_utf8_append_lossy(&raw, p, n) || core_buf_reserve(&raw, 0) ||
	    !(row = raw_row(json_stringn(raw.data, raw.len)))) {
		core_buf_release(&raw);
		return nomem(err);
	}
	core_buf_release(&raw);
	return finish_row(s, out, row, what, why, err);
}

static int json_next(void *state, plg_source_row *out, core_err *err)
{
	json_src *s = state;

	memset(out, 0, sizeof(*out));
	return s->array ? next_element(s, out, err) : next_line(s, out, err);
}

static int json_skip(void *state, core_err *err)
{
	json_src *s = state;
	const char *p;
	size_t n;

	if (!s->array)
		return read_line(s, &p, &n, err);
	if (s->index >= json_array_size(s->array))
		return 0;
	s->index++;
	return 1;
}

/* jsonl: the byte offset and line count; json: the array index. */
static void json_position(void *state, plg_source_pos *out)
{
	const json_src *s = state;

	if (s->array) {
		out->offset = s->index;
		out->line = 0;
	} else {
		off_t o = ftello(s->fp);

		out->offset = o < 0 ? 0 : (uint64_t)o;
		out->line = (uint64_t)s->line;
		out->bytes = true;
	}
}

static int json_seek(void *state, const plg_source_pos *at, core_err *err)
{
	json_src *s = state;

	if (s->array) {
		if (at->offset > json_array_size(s->array))
			return core_err_set(err, CORE_EDATA,
				"%s: holds %zu rows, fewer than the %llu already read",
				s->path, json_array_size(s->array),
				(unsigned long long)at->offset);
		s->index = (size_t)at->offset;
		return 0;
	}
	if (fseeko(s->fp, (off_t)at->offset, SEEK_SET))
		return core_err_set(err, CORE_EIO, "%s: cannot seek to byte %llu: %s",
				    s->path, (unsigned long long)at->offset,
				    strerror(errno));
	s->line = (long)at->line;
	return 0;
}

const plg_source_ops plg__json_source = {
	.name = "json",
	.description = "rows from a JSON array of objects or a JSON Lines file",
	.options = json_opts,
	.open = json_open,
	.check = json_check,
	.next = json_next,
	.close = json_close,
	.position = json_position,
	.seek = json_seek,
	.skip = json_skip,
	.input = plg__opt_path,
	.save = json_save,
	.restore = json_restore,
};
