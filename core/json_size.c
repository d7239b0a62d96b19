/*
 * json_size.c — what a JSON value holds in memory, for the engine's
 * waiting budget (docs/architecture.md §4; ADR 0029). An estimate of
 * jansson's heap, not its exact allocations: per value the struct and
 * allocator overhead, per string its bytes, per object key its bytes
 * and hash-table entry. Linear in the value's size, no allocation.
 */
#include <string.h>

#include "core/core.h"

#define VALUE_BYTES 48u /* a json_t with its allocator header */
#define ENTRY_BYTES 64u /* an object's hashtable entry (key, pair, list) */
#define ITEM_BYTES 8u   /* an array's pointer */

size_t core_json_heap_bytes(const json_t *v)
{
	size_t n = VALUE_BYTES;
	const char *key;
	json_t *item;
	size_t i;

	if (!v)
		return 0;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		json_object_foreach((json_t *)v, key, item)
			n += ENTRY_BYTES + strlen(key) + core_json_heap_bytes(item);
		break;
	case JSON_ARRAY:
		json_array_foreach(v, i, item)
			n += ITEM_BYTES + core_json_heap_bytes(item);
		break;
	case JSON_STRING:
		n += json_string_length(v) + 1;
		break;
	default:
		break;
	}
	return n;
}
