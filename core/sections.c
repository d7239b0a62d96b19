/* sections.c — checking a settings section against its key table. */
#include <stdlib.h>

#include "core/core_internal.h"

/* Checks map against specs: no unknown keys, required keys present,
 * every present key of its type. */
int core__check_section(const core_node *map, const key_spec *specs,
			 core_err *err)
{
	const char *allowed[KEYS_MAX + 1];
	size_t n = 0;
	int rc, idx;

	for (; specs[n].key; n++) {
		if (n == KEYS_MAX)
			return core_err_set(err, CORE_EINTERNAL, "a section has more "
					    "than %d keys (KEYS_MAX)", KEYS_MAX);
		allowed[n] = specs[n].key;
	}
	allowed[n] = NULL;
	if ((rc = core_map_check_keys(map, allowed, err)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		const key_spec *k = &specs[i];
		const core_node *v = core_map_get(map, k->key);
		const char *s;
		long long ll;
		double d;
		bool b;

		if (!v || (core_node_is_null(v) && !k->required)) {
			if (k->required)
				return core_err_missing(err, map, k->key, k->key, NULL);
			continue;
		}
		switch (k->type) {
		case K_STR:
			rc = core_node_str(v, &s, err);
			break;
		case K_INT:
			rc = core_node_int(v, (long long)k->min, (long long)k->max, &ll, err);
			break;
		case K_NUM:
			rc = core_node_double(v, k->min, k->max, &d, err);
			break;
		case K_BOOL:
			rc = core_node_bool(v, &b, err);
			break;
		case K_MAP:
			rc = v->kind == CORE_NODE_MAP ? 0 :
				core_err_at(err, CORE_ECONFIG, v, "expected a map");
			break;
		case K_SEQ:
			rc = v->kind == CORE_NODE_SEQ ? 0 :
				core_err_at(err, CORE_ECONFIG, v, "expected a list");
			break;
		case K_STRLIST: {
			const char **list = NULL;
			size_t len;

			rc = core_node_str_list(v, &list, &len, err);
			free(list);
			break;
		}
		case K_ENUM:
			rc = core_node_enum(v, k->choices, &idx, err);
			break;
		case K_ANY:
			rc = 0;
			break;
		}
		if (rc)
			return rc;
	}
	return 0;
}

