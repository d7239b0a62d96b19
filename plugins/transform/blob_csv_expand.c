/*
 * blob_csv_expand.c — ELSPETH 0.7.1's "blob_csv_expand" transform: a CSV
 * document held in the payload store, named by a row's blob_ref field,
 * expanded into one row per CSV data row (an expanding transform; ADR
 * 0045).
 *
 * The blob is the file ab/abcd... of the payload store's directory
 * (payload_store.base_path), its SHA-256 checked. It is decoded
 * (utf-8, utf-8-sig, ascii or latin-1) and read as Python's
 * csv.reader(strict=True) reads text opened with newline="": records of
 * the `delimiter`, '"' quoting with doubled quotes, a record per line
 * end (LF, CRLF or CR) outside quotes, a blank line an empty record.
 * `skip_rows` records are skipped, then the header is the next non-empty
 * record (its names normalized as the csv source's, then field_mapping)
 * unless `columns` names them; each later non-empty record is a row: the
 * input row, its CSV fields (strings), and with include_row_index the
 * record's 0-based index in `row_index_field`. Every failure is a row
 * error with 0.7.1's reason (invalid_blob_ref, blob_not_found,
 * blob_too_large, decode_failed, csv_exhausted_during_skip_rows,
 * csv_parse_error, csv_header_error, csv_config_error, field_collision,
 * too_many_rows, csv_column_count_mismatch, empty_csv).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plugins/plugins_internal.h"

#define DEFAULT_MAX_ROWS 100000
#define DEFAULT_MAX_BYTES (100LL * 1024 * 1024)
#define PY_FIELD_LIMIT 131072 /* csv.field_size_limit()'s default */

enum { ENC_UTF8, ENC_UTF8_SIG, ENC_ASCII, ENC_LATIN1 };

struct bce {
	plg_schema *schema;
	const char *ref_field, *index_field, *dir;
	char delim;
	int enc;
	long long skip, max_rows, max_bytes;
	const char **columns;
	size_t ncolumns;
	const core_node *mapping;
	bool include_index;
};

static const plg_option bce_own[] = {
	{ "blob_ref_field", "string", false, "\"blob_ref\"", "the field holding the blob's payload-store hash" },
	{ "delimiter", "string", false, "\",\"", "one character between fields" },
	{ "encoding", "string", false, "\"utf-8\"", "utf-8, utf-8-sig, ascii or latin-1" },
	{ "skip_rows", "integer", false, "0", "records skipped before the header or data" },
	{ "columns", "array", false, NULL, "the names of a headerless CSV's columns" },
	{ "field_mapping", "object", false, NULL, "normalized header -> output name" },
	{ "include_row_index", "boolean", false, "true", "add each row's index in the CSV" },
	{ "row_index_field", "string", false, "\"csv_row_index\"", "the index's field" },
	{ "max_output_rows", "integer", false, "100000", "the most rows one blob may give" },
	{ "max_blob_bytes", "integer", false, "104857600", "the largest blob read" },
	{ NULL }
};
static const plg_option *const bce_opts[] = { bce_own, plg__schema_opts, plg__input_opts, NULL };

static void bce_close(void *state)
{
	struct bce *t = state;

	if (!t)
		return;
	free(t->columns);
	plg__schema_free(t->schema);
	free(t);
}

static int parse_encoding(struct bce *t, const core_node *opts, core_err *err)
{
	static const struct { const char *name; int enc; } names[] = {
		{ "utf-8", ENC_UTF8 }, { "utf8", ENC_UTF8 }, { "utf_8", ENC_UTF8 },
		{ "utf-8-sig", ENC_UTF8_SIG }, { "utf_8_sig", ENC_UTF8_SIG },
		{ "ascii", ENC_ASCII }, { "us-ascii", ENC_ASCII },
		{ "latin-1", ENC_LATIN1 }, { "latin1", ENC_LATIN1 },
		{ "iso-8859-1", ENC_LATIN1 }, { "iso8859-1", ENC_LATIN1 },
	};
	const char *e = "utf-8";
	int rc = core_opt_str(opts, "encoding", false, &e, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(e, names[i].name)) {
			t->enc = names[i].enc;
			return 0;
		}
	return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "encoding"),
		"encoding '%s' is not supported here (utf-8, utf-8-sig, ascii, latin-1)", e);
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	struct bce *t = state;
	const core_node *n;
	const char *d = ",";
	int rc;

	t->ref_field = "blob_ref";
	t->index_field = "csv_row_index";
	t->include_index = true;
	t->max_rows = DEFAULT_MAX_ROWS;
	t->max_bytes = DEFAULT_MAX_BYTES;
	if ((rc = plg__check_options(opts, bce_opts, err)) ||
	    (rc = plg__opt_field(opts, "blob_ref_field", false, &t->ref_field, err)) ||
	    (rc = plg__opt_field(opts, "row_index_field", false, &t->index_field, err)) ||
	    (rc = core_opt_str(opts, "delimiter", false, &d, err)) ||
	    (rc = parse_encoding(t, opts, err)) ||
	    (rc = core_opt_int(opts, "skip_rows", 0, 1LL << 40, &t->skip, err)) ||
	    (rc = core_opt_bool(opts, "include_row_index", &t->include_index, err)) ||
	    (rc = core_opt_int(opts, "max_output_rows", 1, 1LL << 40, &t->max_rows, err)) ||
	    (rc = core_opt_int(opts, "max_blob_bytes", 1, 1LL << 50, &t->max_bytes, err)) ||
	    (rc = plg__schema_parse(core_map_get(opts, "schema"), &t->schema, err)))
		return rc;
	if (strlen(d) != 1)
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "delimiter"),
			"delimiter must be a single character, got '%s'", d);
	t->delim = d[0];
	if (!plg__py_identifier(t->index_field))
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "row_index_field"),
			"row_index_field must be a valid Python identifier, got '%s'", t->index_field);
	if ((n = core_map_get(opts, "columns")) && !core_node_is_null(n)) {
		if ((rc = core_node_str_list(n, &t->columns, &t->ncolumns, err)))
			return rc;
		for (size_t i = 0; i < t->ncolumns; i++)
			if (!plg__py_identifier(t->columns[i]))
				return core_err_at(err, CORE_ECONFIG, n->items[i],
					"columns: '%s' is not a valid Python identifier", t->columns[i]);
	}
	if ((n = core_map_get(opts, "field_mapping")) && !core_node_is_null(n)) {
		if (n->kind != CORE_NODE_MAP)
			return core_err_at(err, CORE_ECONFIG, n, "field_mapping must be a mapping");
		for (size_t i = 0; i < n->len; i++) {
			const char *to;

			if ((rc = core_node_str(n->items[i], &to, err)))
				return rc;
			if (!plg__py_identifier(to))
				return core_err_at(err, CORE_ECONFIG, n->items[i],
					"field_mapping values: '%s' is not a valid Python identifier", to);
		}
		t->mapping = n;
	}
	if (t->include_index && !strcmp(t->index_field, t->ref_field))
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "row_index_field"),
			"row_index_field '%s' collides with blob_ref_field", t->index_field);
	return 0;
}

static int bce_open(const plg_env *env, const core_node *options, void **state,
		    core_err *err)
{
	int rc = plg__open_state(sizeof(struct bce), parse_options, bce_close, options,
				 state, err);

	if (!rc)
		((struct bce *)*state)->dir = env && env->payload_dir ? env->payload_dir :
					      ".elspeth/payloads";
	return rc;
}

/* ------------------------------------------------------- the blob */

static bool is_hash(const char *s, size_t n)
{
	if (n != CORE_SHA256_HEX_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* The blob's bytes into b; CORE_EDATA with 0.7.1's reason. */
static int read_blob(const struct bce *t, const char *ref, core_buf *b, core_err *err)
{
	char path[4096], hex[CORE_SHA256_HEX_LEN + 1];
	uint8_t d[CORE_SHA256_LEN];
	struct stat st;
	FILE *f;
	size_t got;

	snprintf(path, sizeof(path), "%s/%.2s/%s", t->dir, ref, ref);
	if (!(f = fopen(path, "rb")))
		return core_err_set(err, errno == ENOENT ? CORE_EDATA : CORE_EIO,
			"blob_not_found: field '%s': blob %s is not in the payload store %s (%s)",
			t->ref_field, ref, t->dir, strerror(errno));
	if (fstat(fileno(f), &st) == 0 && st.st_size > t->max_bytes) {
		fclose(f);
		return core_err_set(err, CORE_EDATA,
			"blob_too_large: field '%s': blob %s has %lld bytes, more than max_blob_bytes (%lld)",
			t->ref_field, ref, (long long)st.st_size, t->max_bytes);
	}
	core_buf_reset(b);
	if (core_buf_reserve(b, (size_t)st.st_size + 1)) {
		fclose(f);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	got = fread(b->data, 1, (size_t)st.st_size + 1, f);
	fclose(f);
	b->len = got;
	core_sha256(b->data, b->len, d);
	core_hex(d, sizeof(d), hex);
	if (strcmp(hex, ref)) /* ELSPETH's IntegrityError: the store is damaged */
		return core_err_set(err, CORE_EIO,
			"the payload store's blob %s (%s) has SHA-256 %s: the store is damaged",
			ref, path, hex);
	return 0;
}

/* Decodes the blob into UTF-8 text (out). */
static int decode(const struct bce *t, const char *ref, const core_buf *in,
		  core_buf *out, core_err *err)
{
	const char *s = in->data ? in->data : "";
	size_t n = in->len, bad;

	core_buf_reset(out);
	if (t->enc == ENC_LATIN1) {
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)s[i];
			char u[2] = { (char)(0xc0 | (c >> 6)), (char)(0x80 | (c & 0x3f)) };

			if (c < 0x80 ? core_buf_putc(out, (char)c) : core_buf_append(out, u, 2))
				return core_err_set(err, CORE_ENOMEM, "out of memory");
		}
		return core_buf_puts(out, "") ? core_err_set(err, CORE_ENOMEM, "out of memory") : 0;
	}
	if (t->enc == ENC_UTF8_SIG && n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3)) {
		s += 3;
		n -= 3;
	}
	bad = core_utf8_check(s, n);
	if (t->enc == ENC_ASCII)
		for (size_t i = 0; i < n && i < bad; i++)
			if ((unsigned char)s[i] >= 0x80) {
				bad = i;
				break;
			}
	if (bad < n)
		return core_err_set(err, CORE_EDATA,
			"decode_failed: field '%s': blob %s is not valid %s at byte %zu",
			t->ref_field, ref, t->enc == ENC_ASCII ? "ascii" : "utf-8",
			bad + (size_t)(s - (in->data ? in->data : "")));
	if (core_buf_append(out, s, n) || core_buf_puts(out, ""))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return 0;
}

/* ---------------------------------------- Python's csv.reader(strict) */

enum { ST_START_RECORD, ST_START_FIELD, ST_IN_FIELD, ST_IN_QUOTED,
       ST_QUOTE_IN_QUOTED, ST_EAT_CRNL };
#define EOL (-1)

typedef struct pycsv {
	const char *p, *end;  /* the text left */
	char delim;
	long line_num;        /* lines read (reader.line_num) */
	int state;
	core_buf field;
	json_t *rec;          /* the record being read: strings */
	char error[160];
} pycsv;

static int save_field(pycsv *r)
{
	return json_array_append_new(r->rec, json_stringn(r->field.data ? r->field.data : "",
							  r->field.len)) ? -1 : (core_buf_reset(&r->field), 0);
}

static int add_char(pycsv *r, char c)
{
	if (r->field.len >= PY_FIELD_LIMIT) {
		snprintf(r->error, sizeof(r->error), "field larger than field limit (%d)",
			 PY_FIELD_LIMIT);
		return 1;
	}
	return core_buf_putc(&r->field, c) ? -1 : 0;
}

/* One character (or EOL after each line): Modules/_csv.c's states with
 * the default dialect and strict=True. 1: a csv.Error (r->error). */
static int step(pycsv *r, int c)
{
	bool nl = c == '\n' || c == '\r';

	switch (r->state) {
	case ST_START_RECORD:
		if (c == EOL)
			return 0; /* an empty record */
		if (nl) {
			r->state = ST_EAT_CRNL;
			return 0;
		}
		r->state = ST_START_FIELD;
		/* fall through */
	case ST_START_FIELD:
		if (nl || c == EOL) {
			r->state = c == EOL ? ST_START_RECORD : ST_EAT_CRNL;
			return save_field(r);
		}
		if (c == '"') {
			r->state = ST_IN_QUOTED;
			return 0;
		}
		if (c == r->delim)
			return save_field(r);
		r->state = ST_IN_FIELD;
		return add_char(r, (char)c);
	case ST_IN_FIELD:
		if (nl || c == EOL) {
			r->state = c == EOL ? ST_START_RECORD : ST_EAT_CRNL;
			return save_field(r);
		}
		if (c == r->delim) {
			r->state = ST_START_FIELD;
			return save_field(r);
		}
		return add_char(r, (char)c);
	case ST_IN_QUOTED:
		if (c == EOL)
			return 0;
		if (c == '"') {
			r->state = ST_QUOTE_IN_QUOTED;
			return 0;
		}
		return add_char(r, (char)c);
	case ST_QUOTE_IN_QUOTED:
		if (c == '"') {
			r->state = ST_IN_QUOTED;
			return add_char(r, '"');
		}
		if (c == r->delim) {
			r->state = ST_START_FIELD;
			return save_field(r);
		}
		if (nl || c == EOL) {
			r->state = c == EOL ? ST_START_RECORD : ST_EAT_CRNL;
			return save_field(r);
		}
		snprintf(r->error, sizeof(r->error), "'%c' expected after '\"'", r->delim);
		return 1;
	default: /* ST_EAT_CRNL */
		if (nl)
			return 0;
		if (c == EOL) {
			r->state = ST_START_RECORD;
			return 0;
		}
		snprintf(r->error, sizeof(r->error), "new-line character seen in unquoted "
			 "field - do you need to open the file with newline=''?");
		return 1;
	}
}

/* The next record into r->rec (a new array; [] for a blank line).
 * 1: a record; 0: the end; 2: a csv.Error (r->error); -1: no memory. */
static int next_record(pycsv *r)
{
	int rc;

	json_decref(r->rec);
	if (!(r->rec = json_array()))
		return -1;
	core_buf_reset(&r->field);
	r->state = ST_START_RECORD;
	do {
		const char *line = r->p;

		if (r->p == r->end) {
			if (r->field.len || r->state == ST_IN_QUOTED) {
				snprintf(r->error, sizeof(r->error), "unexpected end of data");
				return 2;
			}
			return 0;
		}
		/* a line, its end (\n, \r\n or \r) included, as newline="" gives */
		while (r->p < r->end && *r->p != '\n' && *r->p != '\r')
			r->p++;
		if (r->p < r->end && *r->p == '\r')
			r->p++;
		if (r->p < r->end && *r->p == '\n' && (r->p == line || r->p[-1] != '\n'))
			r->p++;
		r->line_num++;
		for (const char *q = line; q < r->p; q++) {
			if (!*q) {
				snprintf(r->error, sizeof(r->error), "line contains NUL");
				return 2;
			}
			if ((rc = step(r, (unsigned char)*q)))
				return rc < 0 ? -1 : 2;
		}
		if ((rc = step(r, EOL)))
			return rc < 0 ? -1 : 2;
	} while (r->state != ST_START_RECORD);
	return 1;
}

/* The next non-empty record (next_nonblank_record). */
static int next_nonblank(pycsv *r)
{
	int rc;

	while ((rc = next_record(r)) == 1 && !json_array_size(r->rec))
		;
	return rc;
}

/* ------------------------------------------------------- the rows */

/* The header: columns, or the record's names normalized, then
 * field_mapping (0.7.1's resolve_field_names). */
static int headers_of(const struct bce *t, const json_t *raw, json_t *out,
		      core_err *err)
{
	core_buf nb = { 0 };
	size_t n = t->columns ? t->ncolumns : json_array_size(raw), i, j;
	int rc = 0;

	for (i = 0; !rc && i < n; i++) {
		const char *name;

		if (t->columns) {
			name = t->columns[i];
		} else {
			const json_t *h = json_array_get(raw, i);

			core_buf_reset(&nb);
			if (plg__field_name(json_string_value(h), json_string_length(h), &nb)) {
				rc = core_err_set(err, CORE_ENOMEM, "out of memory");
				break;
			}
			if (!nb.len) {
				rc = core_err_set(err, CORE_EDATA,
					"csv_header_error: Header '%s' normalizes to empty string",
					json_string_value(h));
				break;
			}
			name = nb.data;
		}
		for (j = 0; j < i; j++)
			if (!strcmp(json_string_value(json_array_get(out, j)), name))
				break;
		if (j < i)
			rc = core_err_set(err, CORE_EDATA,
				"csv_header_error: Field name collision after normalization: '%s' <- "
				"column %zu and column %zu", name, j, i);
		else if (json_array_append_new(out, json_string(name)))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	core_buf_release(&nb);
	if (rc || !t->mapping)
		return rc;
	for (i = 0; i < t->mapping->len; i++) {
		const char *from = t->mapping->keys[i]->value;

		for (j = 0; j < n && strcmp(json_string_value(json_array_get(out, j)), from); j++)
			;
		if (j == n)
			return core_err_set(err, CORE_EDATA,
				"csv_config_error: field_mapping key '%s' not found in the headers", from);
	}
	for (j = 0; j < n; j++) {
		const core_node *to = core_map_get(t->mapping, json_string_value(json_array_get(out, j)));

		if (to && json_array_set_new(out, j, json_string(to->value)))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	for (i = 0; i < n; i++)
		for (j = 0; j < i; j++)
			if (!strcmp(json_string_value(json_array_get(out, i)),
				    json_string_value(json_array_get(out, j))))
				return core_err_set(err, CORE_EDATA,
					"csv_header_error: field_mapping creates collision: '%s'",
					json_string_value(json_array_get(out, i)));
	return 0;
}

/* Output fields that collide with the input row's (0.7.1's check). */
static int collisions(const struct bce *t, const json_t *row, const json_t *heads,
		      core_err *err)
{
	core_buf b = { 0 };
	size_t i, n = 0;
	int rc = 0;

	for (i = 0; i < json_array_size(heads); i++) {
		const char *h = json_string_value(json_array_get(heads, i));

		if (json_object_get(row, h) || (t->include_index && !strcmp(h, t->index_field))) {
			core_buf_printf(&b, "%s'%s'", n++ ? ", " : "", h);
		}
	}
	if (t->include_index && json_object_get(row, t->index_field))
		core_buf_printf(&b, "%s'%s'", n++ ? ", " : "", t->index_field);
	if (n)
		rc = core_err_set(err, CORE_EDATA,
			"field_collision: CSV output fields collide with existing input fields: %s",
			b.data);
	core_buf_release(&b);
	return rc;
}

static int expand(const struct bce *t, const json_t *row, const char *ref,
		  const core_buf *text, json_t *rows, core_err *err)
{
	pycsv r = { .p = text->data ? text->data : "", .delim = t->delim };
	json_t *heads = json_array();
	long long count = 0;
	int rc = 0, got = 0;

	r.end = r.p + text->len;
	if (!heads)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (long long i = 0; !rc && i < t->skip; i++) {
		got = next_record(&r);
		if (got == 0)
			rc = core_err_set(err, CORE_EDATA,
				"csv_exhausted_during_skip_rows: skip_rows %lld, %lld rows skipped",
				t->skip, i);
		else if (got == 2)
			rc = core_err_set(err, CORE_EDATA,
				"csv_parse_error: skip_rows, row %lld (line %ld): %s", i + 1,
				r.line_num, r.error);
		else if (got < 0)
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if (!rc && !t->columns) {
		got = next_nonblank(&r);
		if (got == 2)
			rc = core_err_set(err, CORE_EDATA, "csv_parse_error: header (line %ld): %s",
					  r.line_num, r.error);
	}
	if (!rc && got < 0)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!rc && (t->columns || got == 1) &&
	    !(rc = headers_of(t, r.rec, heads, err)) && !(rc = collisions(t, row, heads, err))) {
		size_t want = json_array_size(heads);

		while (!rc && (got = next_nonblank(&r)) == 1) {
			json_t *o;

			if (++count > t->max_rows) {
				rc = core_err_set(err, CORE_EDATA,
					"too_many_rows: blob %s has more than max_output_rows (%lld) rows",
					ref, t->max_rows);
				break;
			}
			if (json_array_size(r.rec) != want) {
				rc = core_err_set(err, CORE_EDATA,
					"csv_column_count_mismatch: row %lld (line %ld) has %zu fields, "
					"the header %zu", count, r.line_num, json_array_size(r.rec), want);
				break;
			}
			if (!(o = json_deep_copy(row)))
				rc = core_err_set(err, CORE_ENOMEM, "out of memory");
			for (size_t i = 0; !rc && i < want; i++)
				if (json_object_set(o, json_string_value(json_array_get(heads, i)),
						    json_array_get(r.rec, i)))
					rc = core_err_set(err, CORE_ENOMEM, "out of memory");
			if (!rc && t->include_index &&
			    json_object_set_new(o, t->index_field, json_integer(count - 1)))
				rc = core_err_set(err, CORE_ENOMEM, "out of memory");
			if (rc || json_array_append_new(rows, o)) {
				json_decref(rc ? o : NULL);
				rc = rc ? rc : core_err_set(err, CORE_ENOMEM, "out of memory");
			}
		}
		if (!rc && got == 2)
			rc = core_err_set(err, CORE_EDATA, "csv_parse_error: data, row %lld (line %ld): %s",
					  count + 1, r.line_num, r.error);
		else if (!rc && got < 0)
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if (!rc && !json_array_size(rows))
		rc = core_err_set(err, CORE_EDATA, "empty_csv: field '%s': CSV blob %s had no data rows",
				  t->ref_field, ref);
	json_decref(r.rec);
	json_decref(heads);
	core_buf_release(&r.field);
	return rc;
}

static int bce_process(void *state, const json_t *row, json_t **out,
		       plg_ctx *ctx, core_err *err)
{
	const struct bce *t = state;
	const json_t *v = json_object_get(row, t->ref_field);
	core_buf raw = { 0 }, text = { 0 };
	json_t *rows;
	const char *ref;
	int rc;

	(void)ctx;
	if (!json_is_string(v))
		return core_err_set(err, CORE_EDATA,
			"Field '%s' must be a string payload-store hash, got %s", t->ref_field,
			v ? core_py_type(v) : "nothing");
	ref = json_string_value(v);
	if (!is_hash(ref, json_string_length(v)))
		return core_err_set(err, CORE_EDATA,
			"invalid_input: field '%s': invalid_blob_ref '%s': payload-store hash must "
			"be 64 lowercase hex characters", t->ref_field, ref);
	if (!(rows = json_array()))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	plg_blocking(ctx, true);
	rc = read_blob(t, ref, &raw, err);
	plg_blocking(ctx, false);
	if (!rc && !(rc = decode(t, ref, &raw, &text, err)))
		rc = expand(t, row, ref, &text, rows, err);
	core_buf_release(&raw);
	core_buf_release(&text);
	if (rc) {
		json_decref(rows);
		return rc;
	}
	*out = rows;
	return 0;
}

static int bce_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	struct bce t = { 0 };
	int rc = parse_options(&t, options, err);

	plg__schema_free(t.schema);
	out->shape = PLG_SHAPE_OBSERVED;
	for (size_t i = 0; !rc && i < t.ncolumns; i++)
		rc = plg_outputs_add(out, err, "%s", t.columns[i]);
	if (!rc && t.include_index)
		rc = plg_outputs_add(out, err, "%s", t.index_field);
	free(t.columns);
	return rc;
}

const plg_transform_ops plg__blob_csv_expand = {
	.name = "blob_csv_expand",
	.description = "One row per CSV data row of a payload-store blob (ELSPETH 0.7.1)",
	.options = bce_opts,
	.expands = true,
	.open = bce_open,
	.process = bce_process,
	.close = bce_close,
	.outputs = bce_outputs,
};
