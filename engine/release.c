/*
 * release.c — stage 3: writes a processed row's tokens to their sinks in
 * order. Audit before action (DESIGN.md §5.4): a token's outcome is
 * enqueued on the recorder before its sink write; the artifact follows.
 */
#include "engine/engine_internal.h"

int eng__release(eng_ctx *c, eng_result *res, eng_summary *sum,
		 core_err *err)
{
	dag_graph *g = c->g;
	bool ok = !res->failed;

	for (size_t i = 0; i < res->ntokens; i++) {
		eng_token *t = &res->tokens[i];
		plg_write_info info;
		uint64_t t0;
		dag_node *k;

		sum->outcomes[t->outcome]++;
		if (t->outcome == ENG_QUARANTINED)
			ok = false;
		eng__audit_outcome(c->audit, res->seq, t);
		if (t->sink == DAG_DISCARD) {
			sum->discarded++;
			continue;
		}
		k = &g->nodes[t->sink];
		t0 = core_now_wall_ns();
		if (k->kops->write(k->kstate, t->data, &info, err))
			return core_err_prefix(err, "row %llu: sink '%s'",
					       (unsigned long long)res->seq, k->name);
		eng__audit_artifact(c->audit, t, &info, t0);
		sum->per_sink[t->sink]++;
	}
	if (ok)
		sum->succeeded++;
	else if (res->failed)
		sum->failed++;
	else
		sum->quarantined++;
	sum->retries += res->retries;
	return 0;
}
