/* error_class.c — the names of the error classes of outside calls
 * (plugins.h, PLG_ERROR_CLASS_MAP). */
#include <string.h>

#include "plugins/plugins.h"

const char *plg_error_class_name(plg_error_class c)
{
	switch (c) {
	case PLG_CLASS_OK:
		return "ok";
#define CLASS_NAME(cls, name) case PLG_CLASS_##cls: return name;
	PLG_ERROR_CLASS_MAP(CLASS_NAME)
#undef CLASS_NAME
	case PLG_CLASS_LAST:
		break;
	}
	return "unknown";
}

plg_error_class plg_error_class_of(const char *name)
{
	int c;

	if (!name)
		return PLG_CLASS_LAST;
	for (c = 0; c < PLG_CLASS_LAST; c++)
		if (!strcmp(plg_error_class_name((plg_error_class)c), name))
			return (plg_error_class)c;
	return PLG_CLASS_LAST;
}
