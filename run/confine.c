/*
 * confine.c — what the server and the MCP run tools ask of pipelines
 * posted to them (run.h): that their files stay under a root, and the
 * answer to a validation.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "run/run.h"

bool run_path_inside(const char *root, const char *p)
{
	char probe[PATH_MAX], real[PATH_MAX];
	size_t rl = strlen(root);
	char *slash;

	if (!*p || p[0] == '/' || p[0] == '~')
		return false;
	for (const char *q = p; (q = strstr(q, "..")); q += 2)
		if ((q == p || q[-1] == '/') && (q[2] == '\0' || q[2] == '/'))
			return false;
	if (snprintf(probe, sizeof(probe), "%s", p) >= (int)sizeof(probe))
		return false;
	while (!realpath(probe, real)) {
		if (errno != ENOENT || !(slash = strrchr(probe, '/')))
			return errno == ENOENT; /* nothing of it exists yet: the root's */
		*slash = '\0';
	}
	return !strncmp(real, root, rl) && (real[rl] == '\0' || real[rl] == '/');
}

/* A key whose value names a file or directory. */
static bool path_key(const char *k)
{
	size_t n = strlen(k);

	return !strcmp(k, "path") || !strcmp(k, "settings") || !strcmp(k, "url") ||
	       (n > 5 && !strcmp(k + n - 5, "_path")) || (n > 5 && !strcmp(k + n - 5, "_file"));
}

static int refuse(bool *outside, int rc)
{
	*outside = true;
	return rc;
}

static int check(const char *root, const core_node *n, const char *key, bool *outside,
		 core_err *err)
{
	int rc = 0;

	if (!n)
		return 0;
	if (n->kind == CORE_NODE_MAP) {
		for (size_t i = 0; !rc && i < n->len; i++)
			rc = check(root, n->items[i], n->keys[i]->value, outside, err);
		return rc;
	}
	/* depends_on runs pipelines whose own paths this check would not
	 * see */
	if (key && !strcmp(key, "depends_on") && !core_node_is_null(n))
		return refuse(outside, core_err_at(err, CORE_ECONFIG, n,
			"depends_on is not served: run the pipelines it names one "
			"after another"));
	if (n->kind == CORE_NODE_SEQ) {
		for (size_t i = 0; !rc && i < n->len; i++)
			rc = check(root, n->items[i], key, outside, err);
		return rc;
	}
	if (!key || !path_key(key) || !n->value || !*n->value)
		return 0;
	if (!strcmp(key, "url")) {
		const char *p = !strncmp(n->value, "sqlite:///", 10) ? n->value + 10 :
				!strncmp(n->value, "lmdb://", 7) ? n->value + 7 : NULL;

		if (!p || run_path_inside(root, p)) /* p NULL: not a file */
			return 0;
	} else if (run_path_inside(root, n->value)) {
		return 0;
	}
	return refuse(outside, core_err_at(err, CORE_ECONFIG, n,
		"'%s' is outside the server's root %s", n->value, root));
}

int run_confine(const char *root, const core_settings *s, bool *outside, core_err *err)
{
	*outside = false;
	return check(root, core_doc_root(s->doc), NULL, outside, err);
}

json_t *run_validation_json(bool ok, const char *error)
{
	json_t *v = json_pack("{s:b,s:[{s:s,s:b,s:s}],s:[]}", "is_valid", ok, "checks",
			      "name", "settings", "passed", ok, "detail",
			      ok ? "the settings load, the graph is wired and every plugin "
				   "accepts its options" : "the settings were refused",
			      "errors");

	if (v && error)
		json_array_append_new(json_object_get(v, "errors"),
			json_pack("{s:n,s:n,s:s,s:n}", "component_id", "component_type",
				  "message", error, "suggestion"));
	return v;
}

