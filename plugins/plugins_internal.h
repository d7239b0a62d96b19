/*
 * plugins_internal.h — shared between the plugin implementations of this
 * module; not part of the public contract.
 */
#ifndef ELSPETH_PLUGINS_INTERNAL_H
#define ELSPETH_PLUGINS_INTERNAL_H

#include "plugins/plugins.h"

/* ---- the plugins, defined in their own files ---- */
extern const plg_source_ops plg__csv_source;
extern const plg_source_ops plg__json_source;
extern const plg_transform_ops plg__passthrough;
extern const plg_transform_ops plg__field_mapper;
extern const plg_transform_ops plg__truncate;
extern const plg_transform_ops plg__json_explode;
extern const plg_transform_ops plg__delay;
extern const plg_transform_ops plg__llm;
extern const plg_transform_ops plg__llm_multi_query;
extern const plg_aggregation_ops plg__batch_stats;
extern const plg_aggregation_ops plg__batch_replicate;
extern const plg_sink_ops plg__csv_sink;
extern const plg_sink_ops plg__json_sink;

/* ---- schema (ELSPETH's `schema` block) ----
 *
 *   schema:
 *     mode: observed | fixed | flexible
 *     fields: ["id: int", "score: float?", "name: str", "x: any"]
 *     required_fields: [id]            # optional
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
	size_t nfields;
	plg_field *fields;
	size_t nrequired;
	const char **required; /* names, owned by the schema */
} plg_schema;

/* Parses the `schema` node (NULL: observed). */
int plg__schema_parse(const core_node *n, plg_schema **out, core_err *err);
void plg__schema_free(plg_schema *s);
/* Validates row in place; when `coerce` (text sources like CSV), string
 * values are converted to the declared type ("42" -> 42). Errors are
 * CORE_EDATA naming the field and what was expected; on error the row is
 * left unchanged. */
int plg__schema_apply(const plg_schema *s, json_t *row, bool coerce,
		      core_err *err);

/* The option keys every plugin accepts besides its own. */
#define PLG_COMMON_KEYS "schema"

/* ---- output files, shared by the sinks (defined in sink_csv.c) ----
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

/* Creates missing parent directories and opens path: truncated, or when
 * `append` positioned at its end (pos = its size), after adding a "\n" if
 * its last line lacks one. CORE_EIO naming the path and the OS reason. On
 * error f is left closed. */
int plg__outfile_open(plg__outfile *f, const char *path, bool append,
		      core_err *err);
int plg__outfile_write(plg__outfile *f, const void *p, size_t n,
		       core_err *err);
/* Reopens the file of an earlier run at->pos bytes long (cut off after
 * it), positioned at its end; the running hash restarts from the bytes
 * [at->base, at->pos) read back. */
int plg__outfile_resume(plg__outfile *f, const char *path,
			const plg_sink_pos *at, core_err *err);
/* base, pos, the hash of what this run wrote, and the descriptor. */
void plg__outfile_position(const plg__outfile *f, plg_sink_pos *out);
int plg__outfile_flush(plg__outfile *f, core_err *err); /* fflush + fsync */
/* Flushes, fsyncs and closes; f is zeroed. A closed f is a no-op. */
int plg__outfile_close(plg__outfile *f, core_err *err);
/* Checks the `encoding` option: absent or utf-8 (CORE_EUNSUPPORTED else). */
int plg__opt_encoding(const core_node *options, core_err *err);



#endif /* ELSPETH_PLUGINS_INTERNAL_H */
