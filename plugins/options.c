/* options.c — option checks several plugins share (plugins_internal.h). */
#include <stdlib.h>
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
	if (use == PLG__ENC_READ && !plg__codec_check(enc))
		return 0;
	if (use == PLG__ENC_READ)
		return core_err_at(err, CORE_ECONFIG, core_map_get(options, "encoding"),
				   "unknown encoding: %s", enc);
	return core_err_at(err, CORE_EUNSUPPORTED, core_map_get(options, "encoding"),
			   "encoding '%s' is not supported; only utf-8 is", enc);
}

void plg__py_repr(core_buf *b, const char *s)
{
	json_t *one = json_pack("[s]", s);
	size_t at = b->len;

	/* Python's str() of ['s'] is ['s']: its repr with the brackets */
	if (one && !core_py_str(b, one) && b->len >= at + 2) {
		memmove(b->data + at, b->data + at + 1, b->len - at - 2);
		b->len -= 2;
		b->data[b->len] = '\0';
	}
	json_decref(one);
}

const char *plg__opt_encoding_of(const core_node *options)
{
	const core_node *e = core_map_get(options, "encoding");

	return e && e->kind == CORE_NODE_SCALAR && !core_node_is_null(e) ? e->value : NULL;
}

const char *plg__opt_path(const core_node *options)
{
	const core_node *p = core_map_get(options, "path");

	return p && p->kind == CORE_NODE_SCALAR ? p->value : NULL;
}

const plg_option plg__schema_opts[] = {
	{ "schema", "object", false, "{\"mode\": \"observed\"}",
	  "the rows' schema: mode (observed, fixed, flexible), fields (\"name: type\", "
	  "'?' for optional), required_fields, guaranteed_fields, audit_fields "
	  "(docs/settings.md, \"The schema block\")" },
	{ NULL }
};

const plg_option plg__input_opts[] = {
	{ "required_input_fields", "array", false, NULL,
	  "fields a row must have: checked against the producer's schema before the "
	  "run, and per row (a row error)" },
	{ NULL }
};

#define MAX_KEYS 96

int plg__check_options(const core_node *opts, const plg_option *const *tables,
		      core_err *err)
{
	const char *keys[MAX_KEYS + 1];
	size_t n = 0;

	for (size_t t = 0; tables[t]; t++)
		for (const plg_option *f = tables[t]; f->name; f++) {
			if (n == MAX_KEYS)
				return core_err_set(err, CORE_EINTERNAL,
						    "a plugin has more than %d options", MAX_KEYS);
			keys[n++] = f->name;
		}
	keys[n] = NULL;
	return core_map_check_keys(opts, keys, err);
}

int plg__open_state(size_t size, int (*parse)(void *, const core_node *, core_err *),
		    void (*close_state)(void *), const core_node *options, void **state,
		    core_err *err)
{
	void *s = calloc(1, size);
	int rc;

	if (!s)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((rc = parse(s, options, err))) {
		close_state(s);
		return rc;
	}
	*state = s;
	return 0;
}
