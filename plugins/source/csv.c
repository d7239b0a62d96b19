/*
 * source_csv.c — the "csv" source: one row per CSV record, keyed by the
 * header (or `columns`), values as JSON strings unless the schema coerces
 * them.
 *
 * Nothing read is dropped: a record with the wrong number of fields, with
 * invalid UTF-8 or with an unterminated quote comes back as a row error
 * whose row holds the raw fields. Fields beyond the header are keyed
 * "_extra_1", "_extra_2", ...; missing trailing fields are absent. Such a
 * row is not checked against the schema (its error is the first problem).
 * Blank lines between records are skipped; an empty file gives no rows.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "plugins/plugins_internal.h"

typedef struct csv_src {
	FILE *fp;
	char *path;
	plg__csv_reader rd;
	char **cols; /* the row keys, after field_mapping */
	size_t ncols;
	char **raw;  /* the header's names as read (NULL with `columns`) */
	size_t nraw;
	plg_schema *schema;
	uint64_t size;      /* the file's size at open, for progress */
} csv_src;

static void csv_close(void *state)
{
	csv_src *s = state;
	size_t i;

	if (!s)
		return;
	plg__csv_reader_release(&s->rd);
	if (s->fp)
		fclose(s->fp);
	for (i = 0; i < s->ncols; i++)
		free(s->cols[i]);
	for (i = 0; i < s->nraw; i++)
		free(s->raw[i]);
	free(s->cols);
	free(s->raw);
	plg__schema_free(s->schema);
	free(s->path);
	free(s);
}

static int nomem(core_err *err)
{
	return core_err_set(err, CORE_ENOMEM, "out of memory");
}

/* One ASCII byte other than a quote or a line break; "\t" written as two
 * characters (as in a single-quoted YAML string) means a tab. */
static int parse_delim(const core_node *opts, char *out, core_err *err)
{
	const char *d = NULL;
	int rc;

	*out = ',';
	if ((rc = core_opt_str(opts, "delimiter", false, &d, err)) || !d)
		return rc;
	if (!strcmp(d, "\\t"))
		d = "\t";
	if (strlen(d) != 1 || (unsigned char)d[0] >= 0x80 || d[0] == '"' ||
	    d[0] == '\r' || d[0] == '\n')
		return core_err_at(err, CORE_ECONFIG,
				   core_map_get(opts, "delimiter"),
				   "the delimiter must be one ASCII "
				   "character other than '\"' or a line "
				   "break, got \"%s\"", d);
	*out = d[0];
	return 0;
}

static int add_col(csv_src *s, const char *name, size_t len)
{
	const char *b = name, *e = name + len;

	while (b < e && isspace((unsigned char)*b))
		b++;
	while (e > b && isspace((unsigned char)e[-1]))
		e--;
	s->cols[s->ncols] = strndup(b, (size_t)(e - b));
	if (!s->cols[s->ncols])
		return CORE_ENOMEM;
	s->ncols++;
	return 0;
}

#define NAME_HINT "name the columns with `columns` (and skip_rows: 1 to " \
	"skip the header)"

/* Empty or duplicate names; `what` says where they came from. */
static int check_cols(const csv_src *s, const core_node *at, const char *what,
		      core_err *err)
{
	size_t i, j;

	for (i = 0; i < s->ncols; i++) {
		if (!s->cols[i][0])
			return core_err_at(err, CORE_ECONFIG, at,
					   "%s: column %zu has no name; "
					   NAME_HINT, what, i + 1);
		for (j = 0; j < i; j++)
			if (!strcmp(s->cols[i], s->cols[j]))
				return core_err_at(err, CORE_ECONFIG, at,
					"%s: duplicate column name '%s' "
					"(columns %zu and %zu); " NAME_HINT,
					what, s->cols[i], j + 1, i + 1);
	}
	return 0;
}

static int alloc_cols(csv_src *s, size_t n, core_err *err)
{
	s->cols = calloc(n ? n : 1, sizeof(*s->cols));
	return s->cols ? 0 : nomem(err);
}

static int cols_from_list(csv_src *s, const core_node *n, core_err *err)
{
	const char **names = NULL;
	size_t len = 0, i;
	int rc;

	if ((rc = core_node_str_list(n, &names, &len, err)))
		return rc;
	if (!len)
		rc = core_err_at(err, CORE_ECONFIG, n,
				 "columns must name at least one column");
	else
		rc = alloc_cols(s, len, err);
	for (i = 0; !rc && i < len; i++)
		if (add_col(s, names[i], strlen(names[i])))
			rc = nomem(err);
	free(names);
	return rc ? rc : check_cols(s, n, "columns", err);
}

/* Two header names that normalize to one: ELSPETH's collision error,
 * naming both raw names. */
static int header_collision(const csv_src *s, const core_node *at,
			    core_err *err)
{
	size_t len, i, j;

	for (i = 0; i < s->ncols; i++)
		for (j = 0; j < i; j++) {
			if (strcmp(s->cols[i], s->cols[j]))
				continue;
			char a[128], b[128];

			snprintf(a, sizeof(a), "%s", plg__csv_field(&s->rd, j, &len));
			snprintf(b, sizeof(b), "%s", plg__csv_field(&s->rd, i, &len));
			return core_err_at(err, CORE_ECONFIG, at,
				"%s, header (line %ld): columns %zu ('%s') and "
				"%zu ('%s') both normalize to '%s'; " NAME_HINT
				" or rename them with field_mapping",
				s->path, s->rd.line, j + 1, a, i + 1, b, s->cols[i]);
		}
	return 0;
}

/* Reads the header record; each name is normalized as ELSPETH does
 * (plg__field_name: "Customer ID!!" is customer_id). An empty file
 * leaves no columns (no rows). */
static int cols_from_header(csv_src *s, const core_node *at, core_err *err)
{
	core_buf name = { 0 };
	const char *f;
	size_t i, len;
	int rc;

	rc = plg__csv_reader_next(&s->rd, err);
	if (rc <= 0)
		return rc ? core_err_prefix(err, "%s", s->path) : 0;
	if (s->rd.error[0])
		return core_err_set(err, CORE_EDATA, "%s: header: %s", s->path,
				    s->rd.error);
	if ((rc = alloc_cols(s, s->rd.nfields, err)))
		return rc;
	if (!(s->raw = calloc(s->rd.nfields ? s->rd.nfields : 1, sizeof(*s->raw))))
		return nomem(err);
	for (i = 0; !rc && i < s->rd.nfields; i++) {
		f = plg__csv_field(&s->rd, i, &len);
		if (!memchr(f, '\0', len) && !(s->raw[s->nraw++] = strndup(f, len)))
			rc = nomem(err);
		else if (memchr(f, '\0', len))
			rc = core_err_at(err, CORE_ECONFIG, at,
					 "%s: the header name of column %zu "
					 "holds a NUL byte", s->path, i + 1);
		else if (plg__field_name(f, len, &name) ||
			 add_col(s, name.data ? name.data : "", name.len))
			rc = nomem(err);
		else if (!name.len)
			rc = core_err_at(err, CORE_ECONFIG, at,
					 "%s, header (line %ld): column %zu "
					 "('%s') has no name once normalized; "
					 NAME_HINT, s->path, s->rd.line, i + 1, f);
	}
	core_buf_release(&name);
	return rc ? rc : header_collision(s, at, err);
}

static int find_col(const csv_src *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->ncols; i++)
		if (!strcmp(s->cols[i], name))
			return (int)i;
	return -1;
}

static int unknown_col(const csv_src *s, const core_node *key, core_err *err)
{
	char list[256];
	size_t i, n = 0;

	list[0] = '\0';
	for (i = 0; i < s->ncols && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s'%s'",
				      i ? ", " : "", s->cols[i]);
	if (n >= sizeof(list)) { /* cut at a UTF-8 character boundary */
		n = core_utf8_cut(list, sizeof(list) - 4);
		memcpy(list + n, "...", 4);
	}
	return core_err_at(err, CORE_ECONFIG, key,
			   "column '%s' is not a column of %s (its "
			   "columns are: %s)", key->value, s->path, list);
}

/* New names for the columns the mapping names (renamed[c], NULL when
 * unchanged); keys are matched against the original names. */
static int map_names(const csv_src *s, const core_node *m, char **renamed,
		     core_err *err)
{
	const char *to;
	size_t i;
	int c, rc;

	for (i = 0; i < m->len; i++) {
		if ((rc = core_node_str(m->items[i], &to, err)))
			return rc;
		if ((c = find_col(s, m->keys[i]->value)) < 0)
			return unknown_col(s, m->keys[i], err);
		if (!(renamed[c] = strdup(to)))
			return nomem(err);
	}
	return 0;
}

/* Renames columns; every mapping key must name a column. */
static int apply_mapping(csv_src *s, const core_node *m, core_err *err)
{
	char **renamed;
	size_t i;
	int rc;

	if (!m || core_node_is_null(m))
		return 0;
	if (m->kind != CORE_NODE_MAP)
		return core_err_at(err, CORE_ECONFIG, m,
				   "expected a map of header name -> new name");
	if (!s->ncols) /* an empty file: nothing to rename */
		return 0;
	if (!(renamed = calloc(s->ncols, sizeof(*renamed))))
		return nomem(err);
	rc = map_names(s, m, renamed, err);
	for (i = 0; i < s->ncols; i++) {
		if (rc || !renamed[i]) {
			free(renamed[i]);
			continue;
		}
		free(s->cols[i]);
		s->cols[i] = renamed[i];
	}
	free(renamed);
	return rc ? rc : check_cols(s, m, "after field_mapping", err);
}

static int open_file(csv_src *s, const core_node *opts, char delim,
		     core_err *err)
{
	long long skip = 0;
	int rc;

	if ((rc = core_opt_int(opts, "skip_rows", 0, LONG_MAX, &skip, err)))
		return rc;
	s->fp = plg__open_decoded(s->path, plg__opt_encoding_of(opts), err);
	if (!s->fp && (errno == EILSEQ || errno == EINVAL))
		return err->code;
	if (!s->fp)
		return core_err_at(err, CORE_EIO, core_map_get(opts, "path"),
				   "cannot open '%s': %s", s->path,
				   strerror(errno));
	{
		struct stat st;

		if (!fstat(fileno(s->fp), &st) && S_ISREG(st.st_mode))
			s->size = (uint64_t)st.st_size;
	}
	plg__csv_reader_init(&s->rd, s->fp, delim);
	if ((rc = plg__csv_reader_skip_lines(&s->rd, skip, err)))
		return core_err_prefix(err, "%s", s->path);
	return 0;
}

static const plg_option csv_own[] = {
	{ "path", "string", true, NULL,
	  "the CSV file to read (RFC 4180, UTF-8)" },
	{ "delimiter", "string", false, "\",\"",
	  "one character between fields" },
	{ "skip_rows", "integer", false, "0",
	  "lines to skip before the header" },
	{ "columns", "array", false, NULL,
	  "the field names when the file has no header line" },
	{ "field_mapping", "object", false, NULL,
	  "header name -> field name, applied after the header is read" },
	{ "encoding", "string", false, "\"utf-8\"",
	  "the file's encoding, by Python's codec name (utf-8-sig skips a byte order mark; "
	  "others are decoded at open)" },
	{ "on_validation_failure", "string", true, NULL,
	  "where rows that fail the schema go: a sink's name, or discard" },
	{ NULL }
};
static const plg_option *const csv_opts[] = { csv_own, plg__schema_opts, NULL };

/* The options as open reads them before it touches the file. */
static int csv_options(csv_src *s, const core_node *options, char *delim,
		       core_err *err)
{
	const char *path = NULL;
	long long skip;
	int rc;

	if ((rc = plg__check_options(options, csv_opts, err)) ||
	    (rc = core_opt_str(options, "path", true, &path, err)) ||
	    (rc = plg__opt_encoding(options, PLG__ENC_READ, err)) ||
	    (rc = parse_delim(options, delim, err)) ||
	    (rc = core_opt_int(options, "skip_rows", 0, LONG_MAX, &skip, err)) ||
	    (rc = plg__schema_parse(core_map_get(options, "schema"),
				    &s->schema, err)))
		return rc;
	return (s->path = strdup(path)) ? 0 : nomem(err);
}

/* validate: the options, and the columns when the options list them. */
static int csv_check(const core_node *options, core_err *err)
{
	const core_node *cols = core_map_get(options, "columns");
	csv_src *s = calloc(1, sizeof(*s));
	char delim;
	int rc;

	if (!s)
		return nomem(err);
	rc = csv_options(s, options, &delim, err);
	if (!rc && cols && !core_node_is_null(cols) &&
	    !(rc = cols_from_list(s, cols, err)))
		rc = apply_mapping(s, core_map_get(options, "field_mapping"), err);
	csv_close(s);
	return rc;
}

static int csv_open(const plg_env *env, const core_node *options,
		    void **state, core_err *err)
{
	const core_node *cols = core_map_get(options, "columns");
	csv_src *s;
	char delim;
	int rc;

	(void)env; /* needs nothing of the run's */
	if (!(s = calloc(1, sizeof(*s))))
		return nomem(err);
	if ((rc = csv_options(s, options, &delim, err)))
		goto out_close;
	if ((rc = open_file(s, options, delim, err)))
		goto out_close;
	if (cols && !core_node_is_null(cols))
		rc = cols_from_list(s, cols, err);
	else
		rc = cols_from_header(s, core_map_get(options, "path"), err);
	if (rc || (rc = apply_mapping(s, core_map_get(options, "field_mapping"),
				      err)))
		goto out_close;
	*state = s;
	return 0;
out_close:
	csv_close(s);
	return rc;
}

/* The record as a row: header keys, then "_extra_N" for surplus fields. */
static json_t *build_row(const csv_src *s)
{
	const plg__csv_reader *rd = &s->rd;
	json_t *row = json_object(), *v;
	char key[32];
	const char *f, *k;
	size_t i, len;

	for (i = 0; row && i < rd->nfields; i++) {
		f = plg__csv_field(rd, i, &len);
		k = s->cols[i < s->ncols ? i : 0];
		if (i >= s->ncols) {
			snprintf(key, sizeof(key), "_extra_%zu",
				 i - s->ncols + 1);
			k = key;
		}
		v = json_stringn_nocheck(f, len);
		if (!v || json_object_set_new_nocheck(row, k, v)) {
			json_decref(row);
			row = NULL;
		}
	}
	return row;
}

/* Says in buf why the row is bad; "" when it is good. 0 or CORE_ENOMEM. */
static int row_error(csv_src *s, json_t *row, char *buf, size_t cap,
		     core_err *err)
{
	const plg__csv_reader *rd = &s->rd;
	core_err e = {0};

	buf[0] = '\0';
	if (rd->error[0])
		snprintf(buf, cap, "%s", rd->error);
	else if (rd->nfields != s->ncols)
		snprintf(buf, cap, "line %ld: expected %zu fields, got %zu",
			 rd->line, s->ncols, rd->nfields);
	else if (plg__schema_apply(s->schema, row, true, &e)) {
		if (e.code == CORE_ENOMEM)
			return nomem(err);
		snprintf(buf, cap, "line %ld: %s", rd->line, e.msg);
	}
	return 0;
}

static int csv_next(void *state, plg_source_row *out, core_err *err)
{
	csv_src *s = state;
	char msg[sizeof(err->msg) + 32], where[32];
	int rc;

	memset(out, 0, sizeof(*out));
	rc = plg__csv_reader_next(&s->rd, err);
	if (rc <= 0)
		return rc ? core_err_prefix(err, "%s", s->path) : 0;
	if (!(out->row = build_row(s)))
		return nomem(err);
	if ((rc = row_error(s, out->row, msg, sizeof(msg), err)))
		goto out_release;
	snprintf(where, sizeof(where), "line %ld", s->rd.line);
	if (!(out->where = strdup(where)) ||
	    (msg[0] && !(out->error = strdup(msg)))) {
		rc = nomem(err);
		goto out_release;
	}
	return 1;
out_release:
	json_decref(out->row);
	free(out->where);
	memset(out, 0, sizeof(*out));
	return rc;
}

static int csv_skip(void *state, core_err *err)
{
	csv_src *s = state;
	int rc = plg__csv_reader_next(&s->rd, err);

	return rc < 0 ? core_err_prefix(err, "%s", s->path) : rc;
}

static void csv_progress(void *state, uint64_t *done, uint64_t *total)
{
	const csv_src *s = state;

	*done = s->rd.offset;
	*total = s->size;
}

static void csv_position(void *state, plg_source_pos *out)
{
	const csv_src *s = state;

	out->offset = s->rd.pos;
	out->line = (uint64_t)s->rd.lines_read + 1;
	out->bytes = true;
}

static int csv_seek(void *state, const plg_source_pos *at, core_err *err)
{
	csv_src *s = state;
	int rc = plg__csv_reader_seek(&s->rd, at->offset, (long)at->line, err);

	return rc ? core_err_prefix(err, "%s", s->path) : 0;
}

/* ELSPETH's field resolution: each header name as read -> the row's
 * key (normalized, then field_mapping), version 1.0.0 of its
 * normalization; none when `columns` names the fields. */
static json_t *csv_fields(void *state, const char **version)
{
	const csv_src *s = state;
	json_t *m;

	if (!s->raw)
		return NULL;
	if (!(m = json_object()))
		return NULL;
	for (size_t i = 0; i < s->ncols; i++)
		if (s->raw[i] && json_object_set_new(m, s->raw[i], json_string(s->cols[i]))) {
			json_decref(m);
			return NULL;
		}
	*version = "1.0.0";
	return m;
}

const plg_source_ops plg__csv_source = {
	.name = "csv",
	.description = "rows from a CSV file (RFC 4180, UTF-8)",
	.options = csv_opts,
	.open = csv_open,
	.check = csv_check,
	.next = csv_next,
	.close = csv_close,
	.progress = csv_progress,
	.position = csv_position,
	.seek = csv_seek,
	.skip = csv_skip,
	.input = plg__opt_path,
	.fields = csv_fields,
};
