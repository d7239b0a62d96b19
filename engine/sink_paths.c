/*
 * sink_paths.c — which file each sink writes (ADR 0044). ELSPETH 0.7.1's
 * collision_policy auto_increment gives a new run a free sibling of an
 * existing file (out.jsonl → out-1.jsonl, ... as its
 * next_available_output_path does), and fail_if_exists refuses it before
 * any sink opens. Settled before the trail records the nodes (a sink's
 * record names the file it writes: a resume goes on writing it, resume.c)
 * and the sinks open (plg_env_map_path). And as 0.7.1 writes no file for a
 * sink that got no row, a completed run in its format removes one.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine_internal.h"

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* pathlib's stem-N + every suffix of the name ("a.tar.gz" → "a-1.tar.gz";
 * a leading dot is not a suffix). */
static int free_sibling(const char *path, char *out, size_t cap, core_err *err)
{
	const char *base = strrchr(path, '/');
	const char *dot;

	base = base ? base + 1 : path;
	dot = strchr(base + (*base == '.'), '.');
	if (!dot || !dot[1])
		dot = base + strlen(base);
	for (unsigned i = 1; i < 10000; i++) {
		if ((size_t)snprintf(out, cap, "%.*s-%u%s", (int)(dot - path), path, i, dot) >= cap)
			return core_err_set(err, CORE_ECONFIG, "sink path too long: %s", path);
		if (!exists(out))
			return 0;
	}
	return core_err_set(err, CORE_ECONFIG, "No free output path found near %s.", path);
}

int eng__sink_paths_new(eng_ctx *c, core_err *err)
{
	dag_graph *g = c->g;
	char to[4096];
	int rc;

	if (!(c->sink_fresh = calloc(g->nnodes, sizeof(*c->sink_fresh))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < g->nnodes; i++) {
		const dag_node *n = &g->nodes[i];
		const core_node *cp = core_map_get(n->options, "collision_policy");
		const char *path;

		if (n->kind != DAG_SINK)
			continue;
		path = dag_sink_target(g, n);
		c->sink_fresh[i] = path && !exists(path);
		if (!cp || !cp->value || !path || c->sink_fresh[i])
			continue;
		/* before any sink opens: a refused run writes nothing */
		if (!strcmp(cp->value, "fail_if_exists"))
			return core_err_set(err, CORE_ECONFIG,
				"sink '%s': Output path already exists: %s. Choose a different "
				"path or use collision_policy='auto_increment'.", n->name, path);
		if (strcmp(cp->value, "auto_increment"))
			continue;
		if ((rc = free_sibling(path, to, sizeof(to), err)) ||
		    (rc = plg_env_map_path(&g->env, path, to, err)))
			return core_err_prefix(err, "sink '%s'", n->name);
	}
	return 0;
}

void eng__sink_paths_unused(eng_ctx *c, const eng_summary *sum)
{
	static const char *const files[] = { "csv", "json", "text", NULL };
	dag_graph *g = c->g;

	/* only what this run made: not a file that was there before it, not
	 * one a resume found (it cannot tell) */
	for (size_t i = 0; c->sink_fresh && i < g->nnodes; i++) {
		const dag_node *n = &g->nodes[i];
		const core_node *mode = core_map_get(n->options, "mode");
		const char *path;
		size_t k;

		if (!c->sink_fresh[i] || n->kind != DAG_SINK || sum->per_sink[i] ||
		    (mode && mode->value && !strcmp(mode->value, "append")))
			continue;
		for (k = 0; files[k] && strcmp(files[k], n->plugin); k++)
			;
		if (files[k] && (path = dag_sink_target(g, n)))
			(void)unlink(path); /* gone already is as good */
	}
}
