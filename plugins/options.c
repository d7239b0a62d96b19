/* options.c — option checks several plugins share (plugins_internal.h). */
#include <string.h>
#include <strings.h>

#include "plugins/plugins_internal.h"

int plg__opt_field(const core_node *opts, const char *key, bool required,
		   const char **out, core_err *err)
{
	int rc = core_opt_str(opts, key, required, out, err);

	if (!rc && *out && !(*out)[0])
		rc = core_err_at(err, CORE_ECONFIG, core_map_get(opts, key),
				 "expected a field name, got an empty string");
	return rc;
}

int plg__opt_encoding(const core_node *options, plg__encoding_use use,
		      core_err *err)
{
	/* A source skips a byte order mark, so it also takes the -sig
	 * forms, and Python's utf_8 spelling; a sink writes none. */
	static const char *const read_ok[] = { "utf-8", "utf8", "utf_8",
					       "utf-8-sig", "utf_8_sig", NULL };
	static const char *const write_ok[] = { "utf-8", "utf8", NULL };
	const char *const *ok = use == PLG__ENC_READ ? read_ok : write_ok;
	const char *enc = NULL;
	int rc;

	if ((rc = core_opt_str(options, "encoding", false, &enc, err)))
		return rc;
	if (!enc)
		return 0;
	for (size_t i = 0; ok[i]; i++)
		if (!strcasecmp(enc, ok[i]))
			return 0;
	if (use == PLG__ENC_READ)
		return core_err_at(err, CORE_ECONFIG, core_map_get(options, "encoding"),
				   "encoding '%s' is not supported: files must be "
				   "UTF-8 (convert with: iconv -f %s -t UTF-8)", enc,
				   enc);
	return core_err_at(err, CORE_EUNSUPPORTED, core_map_get(options, "encoding"),
			   "encoding '%s' is not supported; only utf-8 is", enc);
}

const char *plg__opt_path(const core_node *options)
{
	const core_node *p = core_map_get(options, "path");

	return p && p->kind == CORE_NODE_SCALAR ? p->value : NULL;
}
