/*
 * coalesce.c — joining the branch tokens of one fork (docs/architecture.md §7).
 *
 * Branch tokens park in a group keyed by (coalesce node, fork parent).
 * The walk of a row is depth first, so when every child of a fork has been
 * walked the group is final: it is resolved by its policy —
 *   require_all  every branch arrived, else the arrivals FAIL;
 *   quorum       at least quorum_count arrived, else the arrivals FAIL;
 *   best_effort  the branches that arrived within timeout_seconds of the
 *                first; later ones FAIL ("arrived after the timeout");
 *   first        the first to arrive; the others are COALESCED unused —
 * and merged — union (declared branch order, the later branch wins a
 * collision; collisions are recorded), nested ({branch: row}), select
 * (select_branch's row; FAIL when it did not arrive). Merged inputs are
 * COALESCED; the merged token is a new token whose parents are the inputs.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/walk_internal.h"

static group *find_group(walker *w, const dag_node *n, uint64_t fork_parent)
{
	for (size_t i = 0; i < w->ngroups; i++)
		if (w->groups[i].node == n && w->groups[i].fork_parent == fork_parent)
			return &w->groups[i];
	return NULL;
}

static group *new_group(walker *w, const dag_node *n, uint64_t fork_parent)
{
	size_t nb = n->coalesce->nbranches;
	group *gr;

	if (w->ngroups == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 4;
		group *v = realloc(w->groups, cap * sizeof(*v));

		if (!v)
			return NULL;
		w->groups = v;
		w->cap = cap;
	}
	gr = &w->groups[w->ngroups];
	*gr = (group){ .node = n, .fork_parent = fork_parent };
	gr->arrived = calloc(nb, sizeof(*gr->arrived));
	gr->arrived_ns = calloc(nb, sizeof(*gr->arrived_ns));
	gr->order = calloc(nb, sizeof(*gr->order));
	if (!gr->arrived || !gr->arrived_ns || !gr->order) {
		free(gr->arrived);
		free(gr->arrived_ns);
		free(gr->order);
		return NULL;
	}
	w->ngroups++;
	return gr;
}

int eng__coalesce_arrive(walker *w, tok *t, const dag_node *n, int port)
{
	const core_coalesce_cfg *cc = n->coalesce;
	group *gr;

	if (port < 0 || !t->fork_parent || !t->branch ||
	    strcmp(t->branch, cc->branches[port]))
		return core_err_set(w->err, CORE_EDATA,
			"row %llu: coalesce '%s': a token of branch '%s' arrived on the input "
			"of branch '%s'", (unsigned long long)w->seq, n->name,
			t->branch ? t->branch : "(none)", cc->branches[port]);
	gr = find_group(w, n, t->fork_parent);
	if (!gr && !(gr = new_group(w, n, t->fork_parent)))
		return core_err_set(w->err, CORE_ENOMEM, "out of memory");
	if (gr->arrived[port].data)
		return core_err_set(w->err, CORE_EINTERNAL,
			"row %llu: coalesce '%s': branch '%s' arrived twice",
			(unsigned long long)w->seq, n->name, t->branch);
	gr->arrived[port] = *t;
	gr->arrived_ns[port] = core_now_mono_ns();
	gr->order[port] = (unsigned)++gr->narrived;
	if (gr->narrived == 1)
		gr->first_ns = gr->arrived_ns[port];
	t->data = NULL; /* the group owns it now */
	return 0;
}

/* ----------------------------------------------------------- policies */

/* Which arrivals are used (take[i]); a reason when the join fails. */
static const char *select_inputs(const group *gr, bool *take)
{
	const core_coalesce_cfg *cc = gr->node->coalesce;
	size_t nb = cc->nbranches, n = 0;
	uint64_t limit = gr->first_ns + (uint64_t)(cc->timeout_seconds * 1e9);

	for (size_t i = 0; i < nb; i++) {
		take[i] = gr->arrived[i].data != NULL;
		if (cc->policy == CORE_POLICY_BEST_EFFORT && take[i] &&
		    gr->arrived_ns[i] > limit)
			take[i] = false;
		if (cc->policy == CORE_POLICY_FIRST && take[i] && n)
			take[i] = false;
		n += take[i];
	}
	if (cc->policy == CORE_POLICY_FIRST) {
		/* The first to arrive (by arrival order, never a clock tie),
		 * not the first declared. */
		size_t best = nb;

		for (size_t i = 0; i < nb; i++)
			if (gr->arrived[i].data &&
			    (best == nb || gr->order[i] < gr->order[best]))
				best = i;
		for (size_t i = 0; i < nb; i++)
			take[i] = i == best;
	}
	if (cc->policy == CORE_POLICY_REQUIRE_ALL && n < nb)
		return "not every branch arrived (policy require_all)";
	if (cc->policy == CORE_POLICY_QUORUM && n < (size_t)cc->quorum_count)
		return "too few branches arrived for the quorum";
	if (cc->merge == CORE_MERGE_SELECT) {
		for (size_t i = 0; i < nb; i++)
			if (!strcmp(cc->branches[i], cc->select_branch) && !take[i])
				return "select_branch did not arrive";
	}
	return n ? NULL : "no branch arrived";
}

/* ------------------------------------------------------------- merging */

static json_t *merge(const group *gr, const bool *take, json_t *collisions)
{
	const core_coalesce_cfg *cc = gr->node->coalesce;
	json_t *out = json_object();
	const char *key;
	json_t *v;

	for (size_t i = 0; out && i < cc->nbranches; i++) {
		const json_t *row = gr->arrived[i].data;

		if (!take[i])
			continue;
		if (cc->merge == CORE_MERGE_NESTED) {
			json_object_set(out, cc->branches[i], (json_t *)row);
		} else if (cc->merge == CORE_MERGE_SELECT) {
			if (!strcmp(cc->branches[i], cc->select_branch)) {
				json_decref(out);
				return json_copy((json_t *)row);
			}
		} else {
			json_object_foreach((json_t *)row, key, v) {
				json_t *had = json_object_get(out, key);

				if (had && cc->collision == CORE_COLLISION_FAIL) {
					json_object_set_new(collisions, key,
						json_string(cc->branches[i]));
					continue;
				}
				if (had && !json_equal(had, v))
					json_object_set_new(collisions, key,
						json_string(cc->branches[i]));
				if (!had || cc->collision == CORE_COLLISION_LAST_WINS)
					json_object_set(out, key, v);
			}
		}
	}
	return out;
}

static void describe(const group *gr, const bool *take, json_t *ctx)
{
	const core_coalesce_cfg *cc = gr->node->coalesce;
	static const char *const policies[] = { "require_all", "quorum", "best_effort", "first" };
	static const char *const merges[] = { "union", "nested", "select" };
	json_t *arr = json_array(), *miss = json_array(), *unused = json_array();

	for (size_t i = 0; i < cc->nbranches; i++) {
		if (take[i])
			json_array_append_new(arr, json_string(cc->branches[i]));
		else if (!gr->arrived[i].data)
			json_array_append_new(miss, json_string(cc->branches[i]));
		else
			json_array_append_new(unused, json_string(cc->branches[i]));
	}
	json_object_set_new(ctx, "policy", json_string(policies[cc->policy]));
	json_object_set_new(ctx, "merge", json_string(merges[cc->merge]));
	json_object_set_new(ctx, "merged", arr);
	json_object_set_new(ctx, "missing", miss);
	json_object_set_new(ctx, "not_used", unused);
}

/* ----------------------------------------------------------- resolving */

static void release_group(group *gr)
{
	for (size_t i = 0; i < gr->node->coalesce->nbranches; i++)
		json_decref(gr->arrived[i].data);
	free(gr->arrived);
	free(gr->arrived_ns);
	free(gr->order);
}

/* The join failed: every arrival fails with the reason. */
static int fail_group(walker *w, group *gr, const char *why)
{
	char msg[512];
	int rc = 0;

	snprintf(msg, sizeof(msg), "coalesce '%s': %s", gr->node->name, why);
	w->res->failed = true;
	for (size_t i = 0; i < gr->node->coalesce->nbranches && !rc; i++)
		if (gr->arrived[i].data)
			rc = eng__walk_error(w, &gr->arrived[i], DAG_DISCARD, ENG_FAILED,
					     gr->node->name, msg);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* union_collision_policy: fail — a field two branches give fails the
 * join and, as in ELSPETH 0.7.1 (its CoalesceCollisionError propagates),
 * stops the run, naming the fields as it does (sorted, a Python list).
 * The arrivals are FAILED first. */
static int fail_collisions(walker *w, group *gr, tok *m, json_t *collisions)
{
	const char **keys = calloc(json_object_size(collisions), sizeof(*keys));
	size_t n = 0;
	core_buf why;
	const char *k;
	json_t *v;
	int rc;

	json_decref(m->data);
	m->data = NULL;
	if (!keys) {
		json_decref(collisions);
		return core_err_set(w->err, CORE_ENOMEM, "out of memory");
	}
	json_object_foreach(collisions, k, v)
		keys[n++] = k;
	qsort(keys, n, sizeof(*keys), cmp_str);
	core_buf_init(&why);
	core_buf_printf(&why, "union merge collisions: [");
	for (size_t i = 0; i < n; i++)
		core_buf_printf(&why, "%s'%s'", i ? ", " : "", keys[i]);
	core_buf_printf(&why, "]");
	rc = fail_group(w, gr, why.data ? why.data : "union merge collisions");
	if (!rc) {
		w->failed_recorded = true; /* the arrivals have their outcome */
		rc = core_err_set(w->err, CORE_EDATA, "row %llu: coalesce '%s': %s",
				  (unsigned long long)w->seq, gr->node->name,
				  why.data ? why.data : "union merge collisions");
	}
	core_buf_release(&why);
	free(keys);
	json_decref(collisions);
	return rc;
}

/* Records the merge as the merged token's node state. */
static void record_merge(walker *w, const group *gr, tok *m, const bool *take,
			 json_t *collisions)
{
	json_t *ctx = json_object(), *inputs = json_object();
	eng_hash ih;
	char *cj;
	eng_state st = { .seq = w->seq, .token_id = m->id, .node = gr->node->id,
			 .step = m->step,
			 .ok = true, .in_hash = ih, .out_hash = m->hash };

	for (size_t i = 0; i < gr->node->coalesce->nbranches; i++)
		if (gr->arrived[i].data)
			json_object_set_new(inputs, gr->node->coalesce->branches[i],
					    json_string(gr->arrived[i].hash));
	eng__audit_payload(w->c->audit, w->seq, inputs, ih, w->err);
	describe(gr, take, ctx);
	json_object_set(ctx, "collisions", collisions);
	cj = json_dumps(ctx, JSON_COMPACT);
	st.context_json = cj;
	st.started_ns = st.completed_ns = core_now_wall_ns();
	eng__audit_state(w->c->audit, &st);
	free(cj);
	json_decref(ctx);
	json_decref(inputs);
}

static int join(walker *w, group *gr, const tok_ctx *ctx)
{
	const core_coalesce_cfg *cc = gr->node->coalesce;
	bool take[64] = { false };
	json_t *collisions = json_object();
	const char *why = NULL;
	tok m = { .branch = ctx->branch, .fork_parent = ctx->fork_parent,
		  .outer = ctx->outer };
	int rc = 0;

	if (cc->nbranches > 64 || (why = select_inputs(gr, take))) {
		json_decref(collisions);
		return fail_group(w, gr, cc->nbranches > 64 ? "too many branches" : why);
	}
	m.data = merge(gr, take, collisions);
	if (!m.data) {
		json_decref(collisions);
		return core_err_set(w->err, CORE_ENOMEM, "out of memory");
	}
	if (cc->collision == CORE_COLLISION_FAIL && json_object_size(collisions))
		return fail_collisions(w, gr, &m, collisions);
	m.id = eng__audit_token(w->c->audit, w->seq, 0, 0, ctx->branch);
	for (size_t i = 0; i < cc->nbranches; i++) {
		tok *in = &gr->arrived[i];

		if (!in->data)
			continue;
		if (in->step > m.step)
			m.step = in->step;
		if (take[i] || cc->policy == CORE_POLICY_FIRST) {
			eng__audit_parent(w->c->audit, w->seq, m.id, in->id, (unsigned)i);
			eng__walk_outcome(w, in, ENG_COALESCED, NULL);
		} else if ((rc = eng__walk_error(w, in, DAG_DISCARD, ENG_FAILED,
				gr->node->name, "arrived after the best_effort timeout")))
			break;
	}
	m.step++;
	if (!rc)
		rc = eng__audit_payload(w->c->audit, w->seq, m.data, m.hash, w->err);
	if (!rc)
		record_merge(w, gr, &m, take, collisions);
	json_decref(collisions);
	if (rc) {
		json_decref(m.data);
		return rc;
	}
	return eng__walk_merged(w, &m, gr->node->next);
}

int eng__coalesce_resolve(walker *w, uint64_t fork_parent, const tok_ctx *ctx)
{
	int rc = 0;

	/* Groups are taken out before joining: a merged token may open new
	 * groups (of an outer fork) while we iterate. */
	for (size_t i = 0; i < w->ngroups && !rc;) {
		group gr;

		if (w->groups[i].fork_parent != fork_parent) {
			i++;
			continue;
		}
		gr = w->groups[i];
		memmove(&w->groups[i], &w->groups[i + 1],
			(w->ngroups - i - 1) * sizeof(gr));
		w->ngroups--;
		rc = join(w, &gr, ctx);
		release_group(&gr);
	}
	return rc;
}

void eng__coalesce_abandon(walker *w)
{
	for (size_t i = 0; i < w->ngroups; i++) {
		group *gr = &w->groups[i];

		for (size_t p = 0; p < gr->node->coalesce->nbranches; p++)
			if (gr->arrived[p].data)
				eng__walk_outcome(w, &gr->arrived[p], ENG_FAILED,
						  "the run stopped before this coalesce joined");
		release_group(gr);
	}
	w->ngroups = 0;
}
