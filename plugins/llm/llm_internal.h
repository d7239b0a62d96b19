/*
 * llm_internal.h — what the files of plugins/llm/ share beyond the public
 * contract (plugins/llm/llm.h). Not a published API.
 */
#ifndef ELSPETH_LLM_INTERNAL_H
#define ELSPETH_LLM_INTERNAL_H

#include <stddef.h>

#include "core/core.h"
#include "plugins/llm/llm.h"
#include "plugins/template/template.h"

/* The <field>_usage value of a row: {prompt_tokens, completion_tokens},
 * those of the provider's usage that are non-negative integers (ELSPETH's
 * TokenUsage.to_dict: no total; {} when none is known). NULL when out of
 * memory. client.c. */
json_t *llm__usage(const json_t *usage);

/* A malloc'd copy of n strings (each strdup'd); NULL when out of memory.
 * The caller frees each string and the array. */
char **llm__dup_list(const char **v, size_t n);

/* Re-raises a template compile error in err at the template's node
 * (file, line, column, key path). Returns err->code. */
int llm__template_error(const core_node *at, core_err *err);

/* The prompt options of both transforms beyond the client's: template
 * (inline, or template_file's text, read when the settings load; its path
 * is then template_source) and lookup, the templates' `lookup` namespace
 * (a mapping, inline or lookup_file's; lookup_source). */
/* The prompt's options: template (or its file) and lookup (or its file). */
extern const plg_option llm__prompt_opts[];

/* Compiles src, the template at node `at` of options o; a compile error
 * names o's template_source, if any, and the node. */
int llm__template_compile(const core_node *o, const char *src,
			  const core_node *at, tpl_template **out,
			  core_err *err);
/* o's lookup as a new JSON object, or NULL when there is none. */
int llm__lookup(const core_node *o, json_t **out, core_err *err);

/* One typed output field {suffix, type, values} of a query (both
 * transforms' queries; multi_query.c): strings copied into f, released
 * with llm__field_release (also after an error). Config errors name the
 * node. */
int llm__field_parse(llm_field *f, const core_node *n, core_err *err);
void llm__field_release(llm_field *f);

/* `llm` with `queries:` — ELSPETH 0.4.1's multi-query shape (queries.c):
 * a map or list of queries, input_fields a mapping of template variable
 * to row field, typed output_fields, json_object or json_schema
 * response formats, columns {query}_{suffix} and
 * {query}_{response_field}[_usage|_model]. Opened by transform.c when
 * the options hold `queries`; the ops of plg__llm call these. */
typedef struct llm__query {
	char *name;
	char **vars, **cols;       /* input_fields: variable -> row field */
	size_t ninputs;
	tpl_template *tpl;         /* its own template, or NULL: the shared */
	llm_field *fields;         /* output_fields; none: the answer as text */
	size_t nfields;
	long long max_tokens;      /* 0: the transform's */
	json_t *response_format;   /* NULL without output_fields */
	char *col_content, *col_usage, *col_model; /* {name}_{response_field}.. */
} llm__query;

typedef struct llm__queries {
	llm_client client;
	tpl_template *tpl;         /* the transform's template */
	json_t *lookup;            /* NULL: none */
	llm__query *q;
	size_t nq;
	bool sequential;           /* pool_size 1 or absent: one at a time */
} llm__queries;

int llm__queries_open(const plg_env *env, const core_node *o,
		      llm__queries **out, core_err *err);
int llm__queries_process(llm__queries *q, const json_t *row, json_t **out,
			 plg_ctx *ctx, core_err *err);
llm_client *llm__queries_client(llm__queries *q);
void llm__queries_free(llm__queries *q); /* NULL allowed */
/* What an LLM transform's rows gain (plugins.h, plg_outputs): its
 * schema plus response_field, _usage and _model, or with `queries` each
 * query's {name}_{response_field} (and _usage, _model) and
 * {name}_{suffix} of its output_fields, as optional fields of any type. */
int llm__outputs(const core_node *o, plg_outputs *out, core_err *err);

#endif /* ELSPETH_LLM_INTERNAL_H */
