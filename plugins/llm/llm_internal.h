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
#define LLM__PROMPT_KEYS "template", "template_source", "lookup", "lookup_source"

/* Compiles src, the template at node `at` of options o; a compile error
 * names o's template_source, if any, and the node. */
int llm__template_compile(const core_node *o, const char *src,
			  const core_node *at, tpl_template **out,
			  core_err *err);
/* o's lookup as a new JSON object, or NULL when there is none. */
int llm__lookup(const core_node *o, json_t **out, core_err *err);

#endif /* ELSPETH_LLM_INTERNAL_H */
