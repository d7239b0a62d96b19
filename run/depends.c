/*
 * depends.c — depends_on (ADR 0027): the pipelines a new run runs first,
 * on the job's thread, each a complete run of its own (its Landscape,
 * its trail), reported to the job's observer between a DEPENDENCY_STARTED
 * and a DEPENDENCY_ENDED event.
 *
 * Everything is loaded and checked before anything runs: a missing file,
 * settings that do not load, a cycle (by real path) or a chain deeper
 * than RUN_DEPENDS_MAX_DEPTH refuse the run with nothing written. Then
 * each runs in order, after its own dependencies (a diamond runs the
 * shared pipeline twice, as ELSPETH does); one that does not complete
 * stops the job before its own pipeline's first row.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"

/* One pipeline of the tree: its settings and graph, its dependencies. */
typedef struct dep {
	const core_depends_cfg *cfg; /* its entry in the parent's list */
	core_settings *s;
	dag_graph *g;
	struct dep *kids;
	size_t nkids;
} dep;

static void dep_free(dep *d)
{
	for (size_t i = 0; i < d->nkids; i++)
		dep_free(&d->kids[i]);
	free(d->kids);
	dag_free(d->g);
	core_settings_free(d->s);
}

/* The chain stack[0] -> ... -> stack[depth - 1] -> real, for messages. */
static void chain(core_buf *b, char **stack, int from, int depth, const char *real)
{
	for (int i = from; i < depth; i++)
		core_buf_printf(b, "%s -> ", stack[i]);
	core_buf_printf(b, "%s", real);
}

/* Loads the dependencies of s into d->kids, recursively; stack holds the
 * real paths of the pipelines being resolved, depth of them. */
static int load(const core_settings *s, dep *d, char **stack, int depth,
		core_err *err)
{
	int rc = 0;

	if (!s->ndepends_on)
		return 0;
	if (!(d->kids = calloc(s->ndepends_on, sizeof(*d->kids))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < s->ndepends_on; i++) {
		const core_depends_cfg *c = &s->depends_on[i];
		dep *k = &d->kids[d->nkids++];
		char *real = realpath(c->path, NULL);
		core_buf b = { 0 };

		k->cfg = c;
		if (!real)
			return core_err_at(err, CORE_ECONFIG, c->node,
					   "depends_on '%s': cannot open %s: %s", c->name,
					   c->path, strerror(errno));
		for (int j = 0; !rc && j < depth; j++)
			if (!strcmp(stack[j], real)) {
				chain(&b, stack, j, depth, real);
				rc = core_err_at(err, CORE_ECONFIG, c->node,
						 "depends_on '%s': circular dependency: %s",
						 c->name, b.data ? b.data : real);
			}
		core_buf_release(&b);
		if (!rc && depth >= RUN_DEPENDS_MAX_DEPTH)
			rc = core_err_at(err, CORE_ECONFIG, c->node,
					 "depends_on '%s': more than %d levels of dependencies (%s)",
					 c->name, RUN_DEPENDS_MAX_DEPTH, real);
		if (!rc && ((rc = core_settings_load(c->path, &k->s, err)) ||
			    (rc = dag_build(k->s, &k->g, err))))
			core_err_prefix(err, "depends_on '%s' of %s", c->name, s->path);
		if (!rc) {
			stack[depth] = real;
			rc = load(k->s, k, stack, depth + 1, err);
		}
		free(real);
	}
	return rc;
}

/* The tree of s's dependencies, loaded and checked, into root. */
static int load_tree(const core_settings *s, dep *root, core_err *err)
{
	char *stack[RUN_DEPENDS_MAX_DEPTH + 1];
	int rc;

	memset(root, 0, sizeof(*root));
	if (!s->ndepends_on)
		return 0;
	if (!(stack[0] = realpath(s->path, NULL)))
		return core_err_set(err, CORE_ECONFIG, "%s: %s", s->path, strerror(errno));
	rc = load(s, root, stack, 1, err);
	free(stack[0]);
	if (rc)
		dep_free(root);
	return rc;
}

int run_check_dependencies(const core_settings *s, core_err *err)
{
	dep root;
	int rc = load_tree(s, &root, err);

	if (!rc)
		dep_free(&root);
	return rc;
}

/* Runs d's dependencies, then d itself (d->g NULL: the root, whose own
 * run is the job's). */
static int run_tree(run_job *j, const dep *d, const char *parent, core_err *err)
{
	run_job sub;
	const run_result *r = &sub.res;
	int rc = 0;

	for (size_t i = 0; !rc && i < d->nkids; i++)
		rc = run_tree(j, &d->kids[i], d->s ? d->s->path : parent, err);
	if (rc || !d->g)
		return rc;
	memset(&sub, 0, sizeof(sub));
	sub.cfg = j->cfg; /* the same observer, stop flag and options */
	sub.cfg.graph = d->g;
	sub.cfg.settings_path = d->cfg->path;
	sub.cfg.database = NULL;
	sub.cfg.resume = NULL;
	sub.cfg.shard = NULL;
	run__emit(j, &(run_event){ .kind = RUN_EV_DEPENDENCY_STARTED,
				   .target = d->cfg->name, .path = d->cfg->path,
				   .graph = d->g });
	run__body(&sub);
	run__emit(j, &(run_event){ .kind = RUN_EV_DEPENDENCY_ENDED,
				   .target = d->cfg->name, .path = d->cfg->path,
				   .graph = d->g, .result = r });
	if (r->rc)
		rc = core_err_set(err, CORE_EDATA,
				  "dependency '%s' (%s) did not complete: %s; %s was not run",
				  d->cfg->name, d->cfg->path, r->err.msg, parent);
	else if (r->sum.interrupted || r->sum.halt_code)
		rc = core_err_set(err, r->sum.interrupted ? CORE_ESTOPPED : CORE_EDATA,
				  "dependency '%s' (%s) did not complete: %s; %s was not run",
				  d->cfg->name, d->cfg->path,
				  r->sum.halt_code ? r->sum.halt_msg : "interrupted", parent);
	eng_summary_release(&sub.res.sum);
	return rc;
}

int run__dependencies(run_job *j, core_err *err)
{
	const core_settings *s = j->cfg.graph->settings;
	dep root;
	int rc;

	if (s->ndepends_on && j->cfg.shard && !j->cfg.resume)
		run__emit(j, &(run_event){ .kind = RUN_EV_WARNING, .error =
			"a shard does not run depends_on (every shard would run it at "
			"once): run those pipelines before the shards" });
	if (!s->ndepends_on || j->cfg.resume || j->cfg.shard)
		return 0;
	if ((rc = load_tree(s, &root, err)))
		return rc;
	rc = run_tree(j, &root, s->path, err);
	dep_free(&root);
	return rc;
}
