/* core_internal.h — shared between core's files; not a public contract. */
#ifndef ELSPETH_CORE_INTERNAL_H
#define ELSPETH_CORE_INTERNAL_H

#include "core/core.h"

/* An empty MAP node owned by doc that stands for the absent `key` of
 * parent: it carries the parent's position and the path "parent.key", so
 * that "missing required key" messages point somewhere useful. */
const core_node *core__doc_empty_map(core_doc *doc, const core_node *parent,
				     const char *key);

#endif
