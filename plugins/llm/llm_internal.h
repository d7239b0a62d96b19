/*
 * llm_internal.h — what the files of plugins/llm/ share beyond the public
 * contract (plugins/llm/llm.h). Not a published API.
 */
#ifndef ELSPETH_LLM_INTERNAL_H
#define ELSPETH_LLM_INTERNAL_H

#include <stddef.h>

#include "core/core.h"
#include "plugins/llm/llm.h"

/* A malloc'd copy of n strings (each strdup'd); NULL when out of memory.
 * The caller frees each string and the array. */
char **llm__dup_list(const char **v, size_t n);

/* Re-raises a template compile error in err at the template's node
 * (file, line, column, key path). Returns err->code. */
int llm__template_error(const core_node *at, core_err *err);

#endif /* ELSPETH_LLM_INTERNAL_H */
