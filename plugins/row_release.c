/* row_release.c — freeing a source record. */
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins.h"

void plg_source_row_release(plg_source_row *r)
{
	if (!r)
		return;
	json_decref(r->row);
	free(r->error);
	free(r->where);
	free(r->reason);
	memset(r, 0, sizeof(*r));
}
