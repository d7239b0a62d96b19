/*
 * sink_csv.c — the "csv" sink: the bytes of ELSPETH's csv sink, which is
 * Python's csv.DictWriter with its default dialect.
 *
 * Layout: one header line, then one line per row, each ended by "\r\n"
 * (the dialect's line terminator, on every system). A field is quoted when
 * it holds the delimiter, '"', CR or LF, and a row of one empty field is
 * written as "" so it does not read back as a blank line; quotes inside
 * are doubled. Values are Python's str(): True/False, reals as repr(),
 * a dict or list as its repr(); null is an empty field. A row's byte range
 * covers its line including the "\r\n"; the header is never part of a
 * row's range.
 *
 * The header: the schema's fields when it declares any (fixed/flexible;
 * written at open, so an empty run still gives a header), else the first
 * row's keys (written with the first row). In append mode an existing
 * non-empty file keeps its header: a schema header must equal it, and rows
 * are checked against it. Rows follow Python's csv.DictWriter: a key not in
 * the header is a row error (CORE_EDATA naming it, nothing written), a
 * header field missing from the row is written empty.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugins/plugins_internal.h"

struct csv_sink {
	int collide;            /* PLG__COLLIDE_* */
	plg__outfile out;
	plg_schema *schema;
	char delim;
	bool header_done; /* the header is in the file */
	size_t nheader;   /* 0: not known yet */
	char **header;    /* the fields, in order */
	json_t *display;  /* {field: name in the header line} (headers:); NULL */
	bool strict;      /* every field must be in display (0.7.1) */
	core_buf line;    /* the row being formatted */
	core_buf val;     /* one value's text */
};

/* ------------------------------------------------------------- quoting */

static bool needs_quotes(const char *s, size_t n, char delim)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == delim || s[i] == '"' || s[i] == '\r' || s[i] == '\n')
			return true;
	return false;
}

static int put_quoted(core_buf *b, const char *s, size_t n)
{
	const char *end = s + n, *q;

	if (core_buf_putc(b, '"'))
		return CORE_ENOMEM;
	while ((q = memchr(s, '"', (size_t)(end - s)))) {
		if (core_buf_append(b, s, (size_t)(q - s) + 1) || core_buf_putc(b, '"'))
			return CORE_ENOMEM;
		s = q + 1;
	}
	if (core_buf_append(b, s, (size_t)(end - s)) || core_buf_putc(b, '"'))
		return CORE_ENOMEM;
	return 0;
}

static int put_field(core_buf *b, const char *s, size_t n, char delim)
{
	if (needs_quotes(s, n, delim))
		return put_quoted(b, s, n);
	return core_buf_append(b, s, n);
}

/* The text of a value, in s->val (strings are not copied): str(v), and
 * null as an empty field, as csv.DictWriter writes them. */
static int value_text(struct csv_sink *s, const json_t *v, const char **p,
		      size_t *n)
{
	if (json_is_string(v)) {
		*p = json_string_value(v);
		*n = json_string_length(v);
		return 0;
	}
	core_buf_reset(&s->val);
	if (!json_is_null(v) && core_py_str(&s->val, v))
		return CORE_ENOMEM;
	*p = s->val.data ? s->val.data : "";
	*n = s->val.len;
	return 0;
}

/* ---------------------------------------------------------- the header */

static int header_add(struct csv_sink *s, const char *name, size_t n)
{
	char **h = realloc(s->header, (s->nheader + 1) * sizeof(*h));

	if (!h)
		return CORE_ENOMEM;
	s->header = h;
	h[s->nheader] = strndup(name, n);
	if (!h[s->nheader])
		return CORE_ENOMEM;
	s->nheader++;
	return 0;
}

static void header_clear(struct csv_sink *s)
{
	for (size_t i = 0; i < s->nheader; i++)
		free(s->header[i]);
	free(s->header);
	s->header = NULL;
	s->nheader = 0;
}

static int format_header(struct csv_sink *s, core_buf *b)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < s->nheader; i++) {
		if (i)
			rc = core_buf_putc(b, s->delim);
		if (!rc) {
			const char *h = plg__display_name(s->display, s->header[i]);

			rc = put_field(b, h, strlen(h), s->delim);
		}
	}
	return rc ? rc : core_buf_puts(b, "\r\n");
}

static int write_header(struct csv_sink *s, core_err *err)
{
	core_buf b;
	int rc;

	for (size_t i = 0; s->strict && i < s->nheader; i++)
		if ((rc = plg__display_unmapped(s->display, s->header[i], err)))
			return rc;
	core_buf_init(&b);
	rc = format_header(s, &b);
	if (rc)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else
		rc = plg__outfile_write(&s->out, b.data, b.len, err);
	core_buf_release(&b);
	s->header_done = !rc;
	return rc;
}

static bool has_field(const struct csv_sink *s, const char *name)
{
	for (size_t i = 0; i < s->nheader; i++)
		if (!strcmp(s->header[i], name))
			return true;
	return false;
}

/* The first record of an existing file as the header (none when empty). */
static int read_existing_header(struct csv_sink *s, const char *path,
				core_err *err)
{
	plg__csv_reader r;
	FILE *fp = fopen(path, "rb");
	int rc;

	if (!fp)
		return errno == ENOENT ? 0 : core_err_set(err, CORE_EIO,
			"cannot read the header of '%s': %s", path, strerror(errno));
	plg__csv_reader_init(&r, fp, s->delim);
	rc = plg__csv_reader_next(&r, err);
	if (rc == 1) {
		rc = 0;
		for (size_t i = 0; !rc && i < r.nfields; i++) {
			size_t n;
			const char *f = plg__csv_field(&r, i, &n), *k;
			json_t *v;

			/* a name written for a field (headers:) is that field,
			 * which one column only can stand for */
			json_object_foreach(s->display, k, v)
				if (json_string_length(v) == n &&
				    !memcmp(json_string_value(v), f, n) && !has_field(s, k)) {
					f = k;
					n = strlen(k);
					break;
				}
			if (header_add(s, f, n))
				rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		}
		s->header_done = !rc;
	}
	plg__csv_reader_release(&r);
	fclose(fp);
	return rc < 0 ? rc : 0;
}

static bool schema_has_fields(const plg_schema *sc)
{
	return sc && sc->mode != PLG_SCHEMA_OBSERVED && sc->nfields;
}

/* Appends "a, b, c" (the header) to the scratch buffer for messages. */
static const char *header_list(struct csv_sink *s)
{
	core_buf_reset(&s->val);
	for (size_t i = 0; i < s->nheader; i++)
		core_buf_printf(&s->val, "%s%s", i ? ", " : "", s->header[i]);
	return s->val.data ? s->val.data : "";
}

/* With a schema: the header is its fields; an existing one must match. */
static int header_from_schema(struct csv_sink *s, const core_node *opts,
			      core_err *err)
{
	const plg_schema *sc = s->schema;
	bool same = s->nheader == sc->nfields;

	for (size_t i = 0; same && i < sc->nfields; i++)
		same = !strcmp(s->header[i], sc->fields[i].name);
	if (s->header_done && !same)
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "schema"),
				   "the existing file '%s' has header (%s), which differs "
				   "from the schema's fields; write to a new file or use mode: write",
				   s->out.path, header_list(s));
	if (s->header_done)
		return 0;
	for (size_t i = 0; i < sc->nfields; i++)
		if (header_add(s, sc->fields[i].name, strlen(sc->fields[i].name)))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
	return write_header(s, err);
}

static int header_from_row(struct csv_sink *s, const json_t *row,
			   core_err *err)
{
	const char *key;
	json_t *v;

	if (!json_object_size(row))
		return core_err_set(err, CORE_EDATA,
				    "csv sink '%s': cannot take a header from a row with no fields",
				    s->out.path);
	json_object_foreach((json_t *)row, key, v) {
		if (header_add(s, key, strlen(key))) {
			header_clear(s);
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- rows */

static int extra_field(struct csv_sink *s, const json_t *row, core_err *err)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)row, key, v) {
		size_t i;

		for (i = 0; i < s->nheader; i++)
			if (!strcmp(key, s->header[i]))
				break;
		if (i == s->nheader)
			break;
	}
	return core_err_set(err, CORE_EDATA,
			    "field '%s' is not in the header of '%s' (%s); declare it "
			    "in the sink's schema or drop it with field_mapper",
			    key ? key : "?", s->out.path, header_list(s));
}

static int format_row(struct csv_sink *s, const json_t *row, core_err *err)
{
	size_t found = 0;
	int rc = 0;

	core_buf_reset(&s->line);
	for (size_t i = 0; !rc && i < s->nheader; i++) {
		const json_t *v = json_object_get(row, s->header[i]);
		const char *p = "";
		size_t n = 0;

		if (i)
			rc = core_buf_putc(&s->line, s->delim);
		if (v && !rc) {
			found++;
			rc = value_text(s, v, &p, &n);
		}
		if (!rc)
			rc = put_field(&s->line, p, n, s->delim);
	}
	if (rc)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (found != json_object_size(row))
		return extra_field(s, row, err);
	/* A lone empty field would read back as a blank line: quote it. */
	if (s->nheader == 1 && !s->line.len && core_buf_puts(&s->line, "\"\""))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return core_buf_puts(&s->line, "\r\n") ?
		core_err_set(err, CORE_ENOMEM, "out of memory") : 0;
}

static int csv_write(void *state, const json_t *row, plg_write_info *info,
		     core_err *err)
{
	struct csv_sink *s = state;
	int rc;

	if (!json_is_object(row))
		return core_err_set(err, CORE_EDATA, "csv sink: the row is not an object");
	if (!s->nheader) {
		rc = header_from_row(s, row, err);
		if (rc)
			return rc;
	}
	rc = format_row(s, row, err);
	if (rc)
		goto out_undo_header;
	if (!s->header_done) {
		rc = write_header(s, err);
		if (rc)
			goto out_undo_header;
	}
	info->offset = s->out.pos;
	info->len = s->line.len;
	info->bytes = s->line.data;
	return plg__outfile_write(&s->out, s->line.data, s->line.len, err);

out_undo_header:
	if (!s->header_done)
		header_clear(s); /* the next row will try again */
	return rc;
}

/* --------------------------------------------------------- open / close */

static const plg_option csvk_own[] = {
	{ "path", "string", true, NULL,
	  "the CSV file written (parent directories are created)" },
	{ "delimiter", "string", false, "\",\"",
	  "one character between fields" },
	{ "mode", "string", false, "\"write\"",
	  "write (replace the file) or append" },
	{ "encoding", "string", false, "\"utf-8\"",
	  "utf-8 only" },
	{ NULL }
};
static const plg_option *const csvk_opts[] = {
	csvk_own, plg__collision_opts, plg__headers_opts, plg__schema_opts, NULL
};

static int parse_options(void *state, const core_node *opts,
			 const char **path, bool *append, core_err *err)
{
	struct csv_sink *s = state;
	static const char *const modes[] = { "write", "append", NULL };
	const core_node *mode = core_map_get(opts, "mode");
	const char *delim = ",";
	int m = 0, rc;

	rc = plg__check_options(opts, csvk_opts, err);
	if (!rc)
		rc = core_opt_str(opts, "path", true, path, err);
	if (!rc)
		rc = core_opt_str(opts, "delimiter", false, &delim, err);
	if (!rc && (strlen(delim) != 1 || strchr("\"\r\n", delim[0])))
		rc = core_err_at(err, CORE_ECONFIG, core_map_get(opts, "delimiter"),
				 "expected one character other than a quote, CR or LF, got '%s'",
				 delim);
	if (!rc && mode)
		rc = core_node_enum(mode, modes, &m, err);
	if (!rc)
		rc = plg__opt_encoding(opts, PLG__ENC_WRITE, err);
	if (!rc)
		rc = plg__headers_check(opts, err);
	if (!rc)
		rc = plg__schema_parse(core_map_get(opts, "schema"), &s->schema, err);
	s->delim = delim[0];
	*append = m == 1;
	if (!rc)
		rc = plg__opt_collision(opts, *append, &s->collide, err);
	return rc;
}

static int csv_close(void *state, core_err *err);

/* Opens the file afresh (at == NULL) or at a checkpointed position: an
 * existing header (append mode, or a resumed file that has one) is read
 * back and a schema's must match it. */
static int csv_start(const plg_env *env, const core_node *options,
		     const plg_sink_pos *at, void **state, core_err *err)
{
	struct csv_sink *s = calloc(1, sizeof(*s));
	const char *path = NULL, *file;
	bool append = false;
	int rc;

	if (!s)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = parse_options(s, options, &path, &append, err);
	if (!rc)
		s->display = plg__display_names(env, options, &s->strict);
	if (!rc && at)
		rc = plg__outfile_resume(&s->out, env, path, at, err);
	/* The file it writes: a shard's part file (plg_part_path). */
	if (!rc && (at ? at->pos > 0 : append))
		rc = (file = plg_part_path(env, path)) ?
		     read_existing_header(s, file, err) :
		     core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!rc && !at)
		rc = plg__collision_check(env, path, s->collide, err);
	if (!rc && !at)
		rc = plg__outfile_open(&s->out, env, path, append, err);
	if (!rc && s->out.pos == 0 && s->header_done) {
		header_clear(s); /* the file was emptied meanwhile */
		s->header_done = false;
	}
	if (!rc && schema_has_fields(s->schema))
		rc = header_from_schema(s, options, err);
	if (rc) {
		csv_close(s, NULL);
		return rc;
	}
	*state = s;
	return 0;
}

static int csv_open(const plg_env *env, const core_node *options,
		    void **state, core_err *err)
{
	return csv_start(env, options, NULL, state, err);
}

static int csv_resume(const plg_env *env, const core_node *options,
		      const plg_sink_pos *at, void **state, core_err *err)
{
	return csv_start(env, options, at, state, err);
}

static void csv_position(void *state, plg_sink_pos *out)
{
	struct csv_sink *s = state;

	plg__outfile_position(&s->out, out);
	out->rows = 0; /* the header and the file say all a resume needs */
}

static int csv_check(const core_node *options, core_err *err)
{
	return plg__sink_check(options, sizeof(struct csv_sink), parse_options,
			       csv_close, err);
}

static int csv_flush(void *state, core_err *err)
{
	struct csv_sink *s = state;

	return plg__outfile_flush(&s->out, err);
}

static int csv_close(void *state, core_err *err)
{
	struct csv_sink *s = state;
	int rc;

	if (!s)
		return 0;
	rc = plg__outfile_close(&s->out, err);
	header_clear(s);
	json_decref(s->display);
	core_buf_release(&s->line);
	core_buf_release(&s->val);
	plg__schema_free(s->schema);
	free(s);
	return rc;
}

/* The header is the head; rows follow one per line; no tail. */
static int csv_frame(const core_node *options, const char *file,
		     plg_sink_frame *out, core_err *err)
{
	struct csv_sink s = { 0 };
	plg__csv_reader r;
	const char *path;
	bool append;
	struct stat st;
	FILE *fp;
	int rc;

	memset(out, 0, sizeof(*out));
	out->joiner = "";
	rc = parse_options(&s, options, &path, &append, err);
	plg__schema_free(s.schema);
	if (rc)
		return rc;
	if (!(fp = fopen(file, "rb")) || fstat(fileno(fp), &st)) {
		rc = core_err_set(err, CORE_EIO, "cannot read '%s': %s", file,
				  strerror(errno));
		if (fp)
			fclose(fp);
		return rc;
	}
	plg__csv_reader_init(&r, fp, s.delim);
	rc = plg__csv_reader_next(&r, err);
	if (rc == 1) {
		out->head = r.pos;
		out->rows = (uint64_t)st.st_size > r.pos;
		rc = 0;
	}
	plg__csv_reader_release(&r);
	fclose(fp);
	return rc;
}

const plg_sink_ops plg__csv_sink = {
	.name = "csv",
	.description = "Write rows to a CSV file (RFC 4180 quoting, header line)",
	.options = csvk_opts,
	.open = csv_open,
	.check = csv_check,
	.write = csv_write,
	.flush = csv_flush,
	.close = csv_close,
	.position = csv_position,
	.resume = csv_resume,
	.target = plg__outfile_target,
	.verify = plg__outfile_verify,
	.frame = csv_frame,
};
