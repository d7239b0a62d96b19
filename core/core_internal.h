/* core_internal.h — shared between core's files; not a public contract. */
#ifndef ELSPETH_CORE_INTERNAL_H
#define ELSPETH_CORE_INTERNAL_H

#include "core/core.h"

/* An empty MAP node owned by doc that stands for the absent `key` of
 * parent: it carries the parent's position and the path "parent.key", so
 * that "missing required key" messages point somewhere useful. */
const core_node *core__doc_empty_map(core_doc *doc, const core_node *parent,
				     const char *key);

/* Nodes made after parsing, owned by doc (for settings_files.c). */
/* A quoted (string) scalar at at's position, path "parent.key". */
core_node *core__doc_scalar(core_doc *doc, const core_node *at,
			    const char *parent, const char *key,
			    const char *value, size_t len);
/* Sets key of map to value: the pair's value when key is there, else a
 * new pair (the key at at's position). 0 or CORE_ENOMEM. */
int core__doc_map_set(core_doc *doc, core_node *map, const core_node *at,
		      const char *key, core_node *value);
/* Removes key from map, if there. */
void core__doc_map_del(core_node *map, const char *key);
/* Parses the YAML text of a data file (named file in messages) into nodes
 * doc owns, their paths under root_path; ${VAR} is not expanded: the
 * file is data, not settings. *root is NULL for an empty text. */
int core__doc_parse_data(core_doc *doc, const char *file, const char *text,
			 size_t len, const char *root_path, core_node **root,
			 core_err *err);

/* settings_files.c: template_file, system_prompt_file and lookup_file of
 * transforms and aggregations, read into the settings (ELSPETH's
 * _expand_template_files). */
int core__expand_files(core_settings *s, core_err *err);

/* Key tables for settings sections: names, types, ranges, choices. */
typedef enum key_type {
	K_STR, K_INT, K_NUM, K_BOOL, K_MAP, K_SEQ, K_STRLIST, K_ENUM, K_ANY
} key_type;

typedef struct key_spec {
	const char *key;
	key_type type;
	bool required;
	double min, max;              /* K_INT, K_NUM */
	const char *const *choices;   /* K_ENUM */
} key_spec;

#define KEYS_MAX 24

/* Checks map against specs: no unknown keys, required keys present, every
 * present key of its type. */
int core__check_section(const core_node *map, const key_spec *specs,
			core_err *err);

/* settings.c / settings_dag.c */
const char *core__str_of(const core_node *map, const char *key);
const core_node *core__options_of(core_settings *s, const core_node *map);
int core__load_coalesce(core_settings *s, const core_node *seq, core_err *err);
int core__load_aggregations(core_settings *s, const core_node *seq,
			    core_err *err);
/* settings_compat.c (ADR 0027): plugins that need a cloud service and
 * secrets from a key vault are refused (CORE_EUNSUPPORTED at the key's
 * position), looking at the document root as written, sections in file
 * order. The pre-pass does so on text parsed without ${VAR} expansion,
 * before the real parse, so that refusal comes before an unset
 * variable's error; a text that does not parse is left to the real
 * parse (0). */
int core__refuse_cloud(const core_node *root, core_err *err);
int core__settings_prepass(const char *name, const char *text, size_t len,
			   core_err *err);
int core__settings_prepass_file(const char *path, core_err *err);
/* settings_sources.c (ADR 0044): `source` (0.4.1's format) or the
 * `sources` map and `queues` (0.7.1's): s->format, s->sources,
 * s->source (the first), s->queues; names checked as 0.7.1 does. */
int core__load_sources(core_settings *s, const core_node *root, core_err *err);
/* settings_v07.c: for a file in ELSPETH 0.7.1's format (it has
 * `sources:`), sets s->format and applies 0.7.1's meaning of the keys
 * the formats disagree on, before the sections are read. */
int core__v07_prepare(core_settings *s, const core_node *root, core_err *err);
/* settings.c: one source's map into *src. */
int core__load_source(core_settings *s, const core_node *n,
		      core_source_cfg *src, core_err *err);
int core__load_secrets(core_settings *s, const core_node *n, core_err *err);
int core__load_depends_on(core_settings *s, const core_node *n, core_err *err);
void core__depends_on_free(core_settings *s);
/* settings_rate.c */
int core__load_rate_limit(core_settings *s, const core_node *n, core_err *err);
/* settings_landscape.c: the landscape and payload_store sections (after
 * the sinks: the export's sink leaves them). */
int core__load_landscape(core_settings *s, const core_node *root, core_err *err);
/* settings_telemetry.c: the telemetry section (n: NULL when absent). */
int core__load_telemetry(core_settings *s, const core_node *n, core_err *err);

#endif
