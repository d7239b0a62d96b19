/*
 * run.c — the run: open, pull (stage 1), process (stage 2), release
 * (stage 3), close. Sequential scheduling: one row at a time.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

const char *eng_outcome_name(eng_outcome o)
{
	switch (o) {
	case ENG_COMPLETED:
		return "COMPLETED";
	case ENG_ROUTED:
		return "ROUTED";
	case ENG_FAILED:
		return "FAILED";
	case ENG_QUARANTINED:
		return "QUARANTINED";
	case ENG_OUTCOME_LAST:
		break;
	}
	return "UNKNOWN";
}

/* Stage 1: the next source record, numbered. 1 row, 0 end, <0 error. */
static int pull(const plg_source_ops *ops, void *src, uint64_t seq,
		eng_row *row, core_err *err)
{
	plg_source_row r = { 0 };
	int rc = ops->next(src, &r, err);

	if (rc <= 0)
		return rc;
	row->seq = seq;
	row->data = r.row;
	row->error = r.error;
	row->where = r.where;
	return 1;
}

static int run_rows(eng_ctx *c, void *src, eng_summary *sum, core_err *err)
{
	const plg_source_ops *sops = c->g->nodes[0].sops;
	int rc;

	for (uint64_t seq = 1;; seq++) {
		eng_row row = { 0 };
		eng_result res = { 0 };

		if (c->stop && *c->stop) {
			sum->interrupted = true;
			return 0;
		}
		rc = pull(sops, src, seq, &row, err);
		if (rc <= 0)
			return rc;
		sum->rows++;
		rc = eng__process_row(c, &row, &res, err);
		if (!rc)
			rc = eng__release(c, &res, sum, err);
		eng__result_release(&res);
		eng__row_release(&row);
		if (rc)
			return rc;
	}
}

/* Flushes (fsync) and closes every sink; the first error wins. */
static int close_sinks(dag_graph *g, int rc, core_err *err)
{
	int crc;

	if (rc) {
		dag_close(g, NULL);
		return rc;
	}
	for (size_t i = 0; i < g->nnodes && !rc; i++)
		if (g->nodes[i].kind == DAG_SINK && g->nodes[i].kstate)
			rc = g->nodes[i].kops->flush(g->nodes[i].kstate, err);
	crc = dag_close(g, rc ? NULL : err);
	return rc ? rc : crc;
}

static int run_graph(eng_ctx *c, eng_summary *sum, core_err *err)
{
	dag_graph *g = c->g;
	void *src = NULL;
	int rc;

	/* The source first: a missing input must not leave empty outputs. */
	if ((rc = g->nodes[0].sops->open(g->nodes[0].options, &src, err)))
		return rc;
	rc = dag_open(g, true, err);
	if (!rc)
		rc = run_rows(c, src, sum, err);
	g->nodes[0].sops->close(src);
	return close_sinks(g, rc, err);
}

int eng_run(dag_graph *g, const eng_opts *o, eng_summary *sum, core_err *err)
{
	uint64_t t0 = core_now_mono_ns();
	eng_audit audit;
	eng_ctx c = { .g = g, .audit = &audit, .stop = o ? o->stop : NULL };
	const char *status;
	core_err ferr = { 0 };
	int rc, frc;

	memset(sum, 0, sizeof(*sum));
	sum->per_sink = calloc(g->nnodes, sizeof(*sum->per_sink));
	if (!sum->per_sink)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = eng__audit_start(&audit, o ? o->rec : NULL, g,
			      o ? o->settings_path : NULL, err);
	if (rc)
		return rc;
	sum->run_id = audit.run_id;
	rc = run_graph(&c, sum, err);
	sum->wall_seconds = (double)(core_now_mono_ns() - t0) / 1e9;
	status = rc ? "failed" : sum->interrupted ? "interrupted" : "completed";
	frc = eng__audit_finish(&audit, sum, status, rc ? err->msg : NULL, &ferr);
	if (!rc && frc) {
		*err = ferr;
		rc = frc;
	}
	return rc;
}

void eng_summary_release(eng_summary *sum)
{
	free(sum->per_sink);
	sum->per_sink = NULL;
}
