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
	if (s->types)
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
	  "utf-8 only (a source also takes utf-8-sig and utf_8 spellings; a byte order mark is skipped)" },
	{ "on_validation_failure", "string", true, NULL,
	  "where rows that fail the schema go: a sink's name, or discard" },
	{ NULL }
};
static const plg_option *const json_opts[] = { json_own, plg__schema_opts, NULL };

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
				    &s->schema, err)))
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
	if (env && env->v07 && s->schema->mode != PLG_SCHEMA_FIXED) {
		if (!(s->types = json_object())) {
			rc = nomem(err);
			goto out_close;
		}
		pthread_mutex_init(&s->lock, NULL);
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

/* The fixed types as [[field, type], ...]: an array keeps the order the
 * fields came in (a checkpoint writes objects with their keys sorted),
 * which orders a row's messages. */
static json_t *json_save(void *state)
{
	json_src *s = state;
	json_t *out, *v;
	const char *k;

	if (!s->types || !(out = json_array()))
		return NULL;
	pthread_mutex_lock(&s->lock);
	json_object_foreach(s->types, k, v)
		json_array_append_new(out, json_pack("[s,O]", k, v));
	pthread_mutex_unlock(&s->lock);
	return out;
}

static void json_restore(void *state, const json_t *saved)
{
	json_src *s = state;
	size_t i;
	json_t *p;

	if (!s->types || !json_is_array(saved))
		return;
	pthread_mutex_lock(&s->lock);
	json_array_foreach(saved, i, p)
		if (json_is_string(json_array_get(p, 0)) && json_is_string(json_array_get(p, 1)))
			json_object_set(s->types, json_string_value(json_array_get(p, 0)),
					json_array_get(p, 1));
	pthread_mutex_unlock(&s->lock);
}

/* Fills out->row/error/where; `what` is "line 4" or "index 3". */
static int finish_row(json_src *s, plg_source_row *out, json_t *row,
		      const char *what, const char *why, core_err *err)
{
	core_err e = {0};
	char msg[sizeof(e.msg) + 64];

	msg[0] = '\0';
	if (why)
		snprintf(msg, sizeof(msg), "%s: %s", what, why);
	else if (plg__schema_apply(s->schema, row, false, &e))
		snprintf(msg, sizeof(msg), "%s: %s", what, e.msg);
	else if (s->types && fixed_types(s, row, &out->reason))
		snprintf(msg, sizeof(msg), "%s: %s", what, out->reason);
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
