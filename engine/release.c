/* release.c — stage 3: writes a processed row's tokens to their sinks. */
#include "engine/engine_internal.h"

int eng__release(dag_graph *g, eng_result *res, eng_summary *sum,
		 core_err *err)
{
	bool ok = !res->failed;

	for (size_t i = 0; i < res->ntokens; i++) {
		eng_token *t = &res->tokens[i];
		plg_write_info info;
		dag_node *k;

		sum->outcomes[t->outcome]++;
		if (t->outcome == ENG_QUARANTINED)
			ok = false;
		if (t->sink == DAG_DISCARD) {
			sum->discarded++;
			continue;
		}
		k = &g->nodes[t->sink];
		if (k->kops->write(k->kstate, t->data, &info, err))
			return core_err_prefix(err, "row %llu: sink '%s'",
					       (unsigned long long)res->seq, k->name);
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
