/*
 * plugins_internal.h — shared between the plugin implementations of this
 * module; not part of the public contract.
 */
#ifndef ELSPETH_PLUGINS_INTERNAL_H
#define ELSPETH_PLUGINS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plugins/plugins.h"

/* ---- the plugins, defined in their own files ---- */
extern const plg_source_ops plg__csv_source;
extern const plg_source_ops plg__json_source;
extern const plg_source_ops plg__text_source;
extern const plg_source_ops plg__aws_s3_source;
extern const plg_transform_ops plg__passthrough;
extern const plg_transform_ops plg__field_mapper;
extern const plg_transform_ops plg__truncate;
extern const plg_transform_ops plg__json_explode;
extern const plg_transform_ops plg__delay;
extern const plg_transform_ops plg__llm;
extern const plg_transform_ops plg__llm_multi_query;
extern const plg_transform_ops plg__web_scrape;
extern const plg_transform_ops plg__keyword_filter;
extern const plg_transform_ops plg__type_coerce;
extern const plg_transform_ops plg__value_transform;
extern const plg_transform_ops plg__line_explode;
extern const plg_transform_ops plg__blob_csv_expand;
extern const plg_transform_ops plg__blob_fetch;
extern const plg_aggregation_ops plg__batch_stats;
extern const plg_aggregation_ops plg__batch_replicate;
extern const plg_aggregation_ops plg__openrouter_batch_llm;
extern const plg_aggregation_ops plg__report_assemble;
extern const plg_aggregation_ops plg__batch_top_k;
extern const plg_aggregation_ops plg__batch_threshold_summary;
extern const plg_aggregation_ops plg__batch_data_quality_report;
extern const plg_aggregation_ops plg__batch_classifier_metrics;
extern const plg_aggregation_ops plg__batch_distribution_profile;
extern const plg_aggregation_ops plg__batch_outlier_annotator;
extern const plg_aggregation_ops plg__batch_effect_size;
extern const plg_aggregation_ops plg__batch_experiment_compare;
extern const plg_aggregation_ops plg__batch_drift_compare;
extern const plg_aggregation_ops plg__batch_paired_preference;
extern const plg_sink_ops plg__csv_sink;
extern const plg_sink_ops plg__json_sink;
extern const plg_sink_ops plg__text_sink;
extern const plg_sink_ops plg__aws_s3_sink;
extern const plg_sink_ops plg__database_sink;

/* ---- schema (ELSPETH's `schema` block) ----
 *
 *   schema:
 *     mode: observed | fixed | flexible
 *     fields: ["id: int", "score: float?", "name: str", "x: any"]
 *     required_fields: [id]            # optional
 *     guaranteed_fields: [id]          # optional
 *     audit_fields: [id]               # optional
 *
 * observed: anything goes, no checks. fixed: exactly the declared fields
 * (extra fields are errors). flexible: declared fields checked, extra
 * fields allowed. A field "name: type?" may be missing or null.
 */
typedef enum plg_ftype {
	PLG_F_STR, PLG_F_INT, PLG_F_FLOAT, PLG_F_BOOL, PLG_F_ANY
} plg_ftype;

typedef enum plg_schema_mode {
	PLG_SCHEMA_OBSERVED, PLG_SCHEMA_FIXED, PLG_SCHEMA_FLEXIBLE
} plg_schema_mode;

typedef struct plg_field {
	const char *name; /* owned by the schema */
	plg_ftype type;
	bool optional;
} plg_field;

typedef struct plg_schema {
	plg_schema_mode mode;
	const core_node *node;   /* the `schema` block; NULL when absent */
	size_t nfields;
	plg_field *fields;
	/* Names, owned by the schema. required_fields: checked on every row;
	 * guaranteed_fields: promised to the nodes downstream (ELSPETH's
	 * contracts); audit_fields: accepted, recorded, promise nothing. In
	 * fixed and flexible mode each names a declared field. */
	size_t nrequired;
	const char **required;
	size_t nguaranteed;
	const char **guaranteed;
	size_t naudit;
	const char **audit;
} plg_schema;

/* Parses the `schema` node (NULL: observed). */
int plg__schema_parse(const core_node *n, plg_schema **out, core_err *err);
void plg__schema_free(plg_schema *s);
/* Checks the `schema` of a plugin's options, for a plugin that does not
 * keep it; when required, a missing one is an error at opts. */
int plg__schema_check(const core_node *opts, bool required, core_err *err);
/* Validates row in place; when `coerce` (text sources like CSV), string
 * values are converted to the declared type ("42" -> 42). Errors are
 * CORE_EDATA naming the field and what was expected; on error the row is
 * left unchanged. */
int plg__schema_apply(const plg_schema *s, json_t *row, bool coerce,
		      core_err *err);

/* Whether [p, e) is a decimal number as text: [+-] digits [. digits]
 * [(e|E) [+-] digits] with at least one mantissa digit (no spaces, no
 * nan/inf). When it is, *integral (unless integral is NULL) tells whether
 * it is digits with an optional sign only. Used to read numbers from text
 * (schema.c, batch_stats.c). */
bool plg__is_decimal(const char *p, const char *e, bool *integral);

/* The option keys every plugin accepts besides its own. */
#define PLG_COMMON_KEYS "schema"
/* The same as tables (plugins/options.c): `schema` for every plugin, and
 * `required_input_fields` for transforms and aggregations. */
extern const plg_option plg__schema_opts[];
extern const plg_option plg__input_opts[];
/* core_map_check_keys against the keys of `tables` (a plugin's fields). */
int plg__check_options(const core_node *opts, const plg_option *const *tables,
		      core_err *err);
/* ... and every transform and aggregation: `required_input_fields`, the
 * fields it needs from upstream (checked before the run, contract.c). */
#define PLG_TRANSFORM_KEYS PLG_COMMON_KEYS, "required_input_fields"

/* ---- options several plugins share (plugins/options.c) ---- */

/* A field name option, required or not: as core_opt_str (*out untouched
 * when absent), and an empty name is CORE_ECONFIG. */
int plg__opt_field(const core_node *opts, const char *key, bool required,
		   const char **out, core_err *err);

/* Whose `encoding` option it is. */
typedef enum plg__encoding_use {
	PLG__ENC_READ,  /* a source: UTF-8 (utf-8-sig skips a byte order mark)
			 * or any codec iconv knows by Python's name (ADR 0056);
			 * else CORE_ECONFIG "unknown encoding" */
	PLG__ENC_WRITE, /* a sink: utf-8 or utf8; else CORE_EUNSUPPORTED */
} plg__encoding_use;

/* Checks the `encoding` option: absent, or one of use's names (any
 * case), is 0; anything else is an error naming it at its position. */
int plg__opt_encoding(const core_node *options, plg__encoding_use use,
		      core_err *err);

/* source/decode.c: whether a source can read enc (0, or -1: unknown),
 * and the file at path as UTF-8: opened as it is when enc is UTF-8 or
 * NULL, else decoded from enc into an unlinked temporary file. NULL with
 * errno set when it cannot be opened; with err set (errno EILSEQ or
 * EINVAL) when it cannot be decoded. */
int plg__codec_check(const char *enc);
/* Appends Python's repr() of the string s ('s', or "s" when it holds a '). */
void plg__py_repr(core_buf *b, const char *s);
/* The `encoding` option as written, or NULL (checked by plg__opt_encoding). */
const char *plg__opt_encoding_of(const core_node *options);
FILE *plg__open_decoded(const char *path, const char *enc, core_err *err);

/* The `path` option as it is written, or NULL (plg_source_ops.input). */
const char *plg__opt_path(const core_node *options);

/* ---- output files, shared by the sinks (defined in sink/file.c) ----
 * A buffered FILE* that counts the bytes in the file, so a sink can report
 * each row's byte range without ftell. */
typedef struct plg__outfile {
	int fd;
	bool open;
	char *path;   /* malloc'd copy, for messages */
	uint64_t pos; /* bytes in the file: the offset of the next write */
	uint64_t base;/* its size when opened (before anything was written) */
	core_sha256_stream *sha; /* of the bytes [base, pos) */
} plg__outfile;

/* Creates missing parent directories and opens path (its part file when
 * env's run is sharded: plg_part_path): truncated, or when
 * `append` positioned at its end (pos = its size), after adding a "\n" if
 * its last line lacks one. CORE_EIO naming the path and the OS reason. On
 * error f is left closed. */
int plg__outfile_open(plg__outfile *f, const plg_env *env, const char *path,
		      bool append, core_err *err);
int plg__outfile_write(plg__outfile *f, const void *p, size_t n,
		       core_err *err);
/* Reopens the file of an earlier run at->pos bytes long (cut off after
 * it), positioned at its end; the running hash restarts from the bytes
 * [at->base, at->pos) read back. */
int plg__outfile_resume(plg__outfile *f, const plg_env *env,
			const char *path, const plg_sink_pos *at,
			core_err *err);
/* base, pos, the hash of what this run wrote, and the descriptor. */
void plg__outfile_position(const plg__outfile *f, plg_sink_pos *out);
int plg__outfile_flush(plg__outfile *f, core_err *err); /* fflush + fsync */
/* plg_sink_ops.target and .verify for the sinks that write the file their
 * `path` option names. */
const char *plg__outfile_target(const plg_env *env, const core_node *options);
/* ELSPETH 0.7.1's collision_policy of a file sink (ADR 0044): what a new
 * run does when its file exists. fail_if_exists refuses it here (open);
 * auto_increment is mapped to a free sibling by the engine before the
 * sinks open (plg_env_map_path); append_or_create is mode: append's. */
enum { PLG__COLLIDE_NONE, PLG__COLLIDE_FAIL, PLG__COLLIDE_INCREMENT,
       PLG__COLLIDE_APPEND };
extern const plg_option plg__collision_opts[];
/* ELSPETH's display headers of a file sink (ADR 0052): the `headers`
 * option (normalized, original or a map field -> name), checked; the
 * names it gives as a new object {field: name written} or NULL (the
 * field names as they are: normalized, or original with nothing known);
 * and one field's name written (the field itself when unmapped, as
 * ELSPETH falls back for fields a transform added). */
extern const plg_option plg__headers_opts[];
int plg__headers_check(const core_node *opts, core_err *err);
/* *strict: every field must be mapped (0.7.1's map; plg__display_unmapped
 * says which is not, with 0.7.1's words). */
json_t *plg__display_names(const plg_env *env, const core_node *opts, bool *strict);
const char *plg__display_name(const json_t *names, const char *field);
int plg__display_unmapped(const json_t *names, const char *field, core_err *err);
/* Reads and checks it against mode (append or write), as 0.7.1 does. */
int plg__opt_collision(const core_node *opts, bool append, int *policy,
		       core_err *err);
/* fail_if_exists: a new run's file (path, as its options name it) must
 * not exist. */
int plg__collision_check(const plg_env *env, const char *path, int policy,
			 core_err *err);
int plg__outfile_verify(const plg_env *env, const core_node *options,
			const plg_sink_pos *at, core_err *err);
/* Flushes, fsyncs and closes; f is zeroed. A closed f is a no-op. */
int plg__outfile_close(plg__outfile *f, core_err *err);

/* A file sink's option parser: fills state (the sink's zeroed struct) from
 * options as its open does before touching the file; *path receives the
 * `path` option and *append whether to append to the file. */
typedef int plg__sink_parse(void *state, const core_node *options,
			    const char **path, bool *append, core_err *err);
/* plg_sink_ops.check of a file sink: parses the options into a new state
 * of `size` bytes and frees it with close_state; no file is opened. */
int plg__sink_check(const core_node *options, size_t size,
		    plg__sink_parse *parse, int (*close_state)(void *, core_err *),
		    core_err *err);

/* ---- the CSV record reader (plugins/source/csv_reader.c) ----

 * An RFC 4180 record reader over a FILE*. Its UTF-8 checks are core's
 * (core_utf8_check, core_utf8_append_lossy).
 *
 * Dialect: a one-byte delimiter (not '"', CR or LF); fields may be quoted
 * with '"', a doubled quote inside quotes is one quote, and quoted fields
 * may hold delimiters, quotes, CR and LF. Records end with LF or CRLF (a
 * CR before the LF is dropped); the last record may lack a line end. A
 * UTF-8 byte order mark at the start of the file is skipped. Blank
 * physical lines between records are skipped (they are not records).
 * Leniency, as Python's csv module: a quote inside an unquoted field is a
 * literal character, and text after a closing quote is appended ("ab"c is
 * abc).
 *
 * Row errors do not stop the reader: a record holding invalid UTF-8 comes
 * back with its bad bytes replaced by U+FFFD and `error` naming the line and
 * field; an unterminated quote at end of file comes back as the last record
 * with `error` naming the line where it started. Every returned field is
 * therefore valid UTF-8 (it may contain NUL bytes; use the length).
 */
typedef struct plg__csv_span {
	size_t off, len; /* into data */
} plg__csv_span;

/* Zero-initialise or plg__csv_reader_init; plg__csv_reader_release frees.
 * The public fields describe the current record and are valid until the
 * next call on the reader. */
typedef struct plg__csv_reader {
	long line;        /* physical line (1-based) where the record starts */
	uint64_t offset;  /* byte offset in the file where it starts */
	size_t nfields;
	char error[256];  /* "" or the row error ("line 4, field 2: ...") */

	/* private */
	FILE *fp;         /* not owned */
	char delim;
	bool in_quotes;
	bool eof;
	long lines_read;
	uint64_t pos;     /* bytes consumed so far */
	char *ln;         /* getdelim buffer */
	size_t ln_cap;
	core_buf data;    /* field bytes, each field NUL-terminated */
	size_t fstart;    /* where the open field starts in data */
	core_buf scratch; /* for U+FFFD replacement */
	plg__csv_span *spans;
	size_t spans_cap;
} plg__csv_reader;

/* fp stays the caller's (it is never closed here); it should be opened in
 * binary mode at offset 0. */
void plg__csv_reader_init(plg__csv_reader *r, FILE *fp, char delim);
void plg__csv_reader_release(plg__csv_reader *r);

/* Reads the next record. 1: a record (check r->error for a row error);
 * 0: end of file; <0: fatal (CORE_EIO read error, CORE_ENOMEM), err set. */
int plg__csv_reader_next(plg__csv_reader *r, core_err *err);

/* Skips n physical lines (not records: quotes are not interpreted). 0, or
 * <0 with err set. Reaching end of file is not an error. */
int plg__csv_reader_skip_lines(plg__csv_reader *r, long long n, core_err *err);

/* Repositions at a record start previously reported by r->offset and
 * r->line (for resuming). 0, or CORE_EIO with err set. */
int plg__csv_reader_seek(plg__csv_reader *r, uint64_t offset, long line,
			 core_err *err);

/* ELSPETH's normalized name of a CSV header field raw[0..n) into out
 * (trimmed, lowercase, runs of non-word characters as one '_', none at
 * either end, '_' before a leading digit and after a Python keyword): ""
 * when nothing is left. 0 or CORE_ENOMEM. plugins/source/field_name.c. */
int plg__field_name(const char *raw, size_t n, core_buf *out);
/* plugins/options.c: a plugin's state of `size` bytes, zeroed, filled by
 * parse from its options (close_state frees it when that fails). */
int plg__open_state(size_t size, int (*parse)(void *, const core_node *, core_err *),
		    void (*close_state)(void *), const core_node *options, void **state,
		    core_err *err);
/* plugins/aggregation/summary.c, for ELSPETH 0.7.1's summarizing plugins:
 * 0.7.1's same_scalar_bucket_value (1, 1.0, true and "1" are four
 * values); the fixed fields a plugin's rows carry (shape observed);
 * CORE_EDATA in passthrough mode. */
bool plg__same_bucket(const json_t *a, const json_t *b);
int plg__outputs_list(plg_outputs *out, const char *const *fields, core_err *err);
int plg__summary_only(const char *plugin, bool passthrough, core_err *err);
/* Option `key` as 0.7.1's `str | int | bool | None` (a whole float is the
 * int; a blank string is refused): *out a new reference, NULL when absent
 * or null. On error *out may be set: the caller releases it. */
int plg__opt_scalar(const core_node *opts, const char *key, json_t **out,
		    core_err *err);
/* Python's str(v) in b, for messages: valid until b changes; "?" when out
 * of memory. */
const char *plg__py_str(core_buf *b, const json_t *v);
/* Whether s is a Python identifier that is not a keyword (non-ASCII
 * letters are taken as letters). */
bool plg__py_identifier(const char *s);

/* Field i (< r->nfields) of the current record, NUL-terminated; *len
 * receives its length (it may hold NUL bytes). */
static inline const char *plg__csv_field(const plg__csv_reader *r, size_t i,
					 size_t *len)
{
	*len = r->spans[i].len;
	return r->data.data + r->spans[i].off;
}

#endif /* ELSPETH_PLUGINS_INTERNAL_H */
