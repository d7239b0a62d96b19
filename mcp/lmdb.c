/*
 * lmdb.c — reading an LMDB Landscape: not yet. The tools read SQL, and the
 * export of the Landscape to ELSPETH's SQL schema (sqltrail, sqlt_export)
 * is being written; until it is in, an LMDB trail is refused with a
 * message saying so.
 */
#include "mcp/mcp_internal.h"

int mcp__open_lmdb(mcp_server *s, const char *dir, core_err *err)
{
	(void)s;
	return core_err_set(err, CORE_EUNSUPPORTED, "%s is an LMDB Landscape; this build "
			    "of elspeth mcp reads SQLite trails only (the SQL export it "
			    "needs is not in yet)", dir);
}
