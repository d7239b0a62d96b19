/*
 * resume.c — eng_resume: finishes a run that stopped (a crash, SIGKILL,
 * an interrupt, a failure) from its latest checkpoint (docs/architecture.md §9, ADR
 * 0012, docs/resume.md).
 *
 * Before anything is written: the run is not completed, the settings and
 * topology hash as recorded, and every sink file still holds exactly what
 * the checkpoint counted (size, hash of the bytes). Then:
 *   - the crashed attempt's work after the checkpoint is marked
 *     superseded (recorder/checkpoint.c), new ids start above everything recorded;
 *   - sinks reopen at their checkpointed positions (the bytes after are
 *     cut off), the source moves on to the row after the checkpoint's
 *     frontier (a seek, or skipping rows);
 *   - aggregation buffers, plugin state (throttles) and the totals come
 *     back;
 *   - the checkpoint's unreleased rows go first through the normal
 *     pipeline: done rows with their recorded final tokens (not computed
 *     again), running rows from their recorded source payloads; answers
 *     their LLM calls got before the crash are replayed, not paid again;
 *   - then the source's rows, as in any run.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_internal.h"

struct eng_replay {
	rec_replay *r;
};

struct eng_pre {
	eng_row *rows;
	size_t n, next;
};

typedef struct eng_resume {
	rec_env *rec;
	Elspeth__RunRecord *run;
	Elspeth__Checkpoint *ck;
	uint32_t attempt;
	uint64_t started_ns;
	uint64_t superseded;
	eng_replay replay;
	eng_pre pre;
	uint64_t rows_reused, rows_rerun;
	int lock_fd;       /* rec_run_lock: no other process runs it */
	uint64_t replayed_before; /* by earlier attempts (checkpoint totals) */
} rstate;

/* ------------------------------------------------------------- reading */

/* The files the run's sinks write, as its node records name them
 * (collision_policy auto_increment moved them): the resume, and the
 * checks before it, are of those (ADR 0044). */
static int recorded_sink_paths(dag_graph *g, rec_env *rec, uint64_t run, core_err *err)
{
	rec_txn *t;
	int rc;

	if ((rc = rec_read_begin(rec, &t, err)))
		return rc;
	for (size_t i = 0; i < g->nnodes && !rc; i++) {
		Elspeth__NodeRecord *n;
		const char *path;
		const void *v;
		size_t vl;
		rec_key k;

		if (g->nodes[i].kind != DAG_SINK)
			continue;
		rec_key_init(&k);
		rec_key_u64(&k, run);
		rec_key_u32(&k, (uint32_t)i);
		if (rec_get(t, REC_NODES, &k, &v, &vl) ||
		    !(n = elspeth__node_record__unpack(NULL, vl, v)))
			continue; /* no record: the options' path */
		path = dag_sink_target(g, &g->nodes[i]);
		if (n->sink_path[0] && path && strcmp(path, n->sink_path))
			rc = plg_env_map_path(&g->env, path, n->sink_path, err);
		elspeth__node_record__free_unpacked(n, NULL);
	}
	rec_read_end(t);
	return rc;
}

static int load_run(rec_env *rec, uint64_t run, Elspeth__RunRecord **out,
		    core_err *err)
{
	const void *v;
	size_t vl;
	rec_txn *t;
	rec_key k;
	int rc;

	if ((rc = rec_read_begin(rec, &t, err)))
		return rc;
	rec_key_init(&k);
	rec_key_u64(&k, run);
	rc = rec_get(t, REC_RUNS, &k, &v, &vl);
	if (!rc && !(*out = elspeth__run_record__unpack(NULL, vl, v)))
		rc = CORE_EDATA;
	rec_read_end(t);
	if (rc == REC_NOTFOUND || rc == CORE_EDATA)
		return core_err_set(err, CORE_EDATA, "run %llu: no readable run record",
				    (unsigned long long)run);
	return rc ? core_err_set(err, rc, "run %llu: cannot read its run record: %s",
				 (unsigned long long)run, core_strerror(rc)) : 0;
}

/* The JSON payload hex of row seq's story (a row, a token's data). */
static int load_json(rec_env *rec, uint64_t run, uint64_t seq, const char *hex,
		     json_t **out, core_err *err)
{
	const void *p;
	json_error_t je;
	size_t len;
	rec_txn *t;
	int rc;

	*out = NULL;
	if ((rc = rec_read_begin(rec, &t, err)))
		return rc;
	rc = rec_txn_row(t, run, seq);
	if (!rc)
		rc = rec_get_payload(t, hex, &p, &len);
	if (!rc && !(*out = json_loadb(p, len, JSON_DECODE_ANY, &je)))
		rc = CORE_EDATA;
	rec_read_end(t);
	if (rc == REC_NOTFOUND || rc == CORE_EDATA)
		return core_err_set(err, CORE_EDATA,
			"the checkpoint names payload %.16s..., which the Landscape %s",
			hex, rc == REC_NOTFOUND ? "lacks" : "cannot decode");
	return rc ? core_err_set(err, rc,
		"the checkpoint names payload %.16s..., which the Landscape "
		"cannot read: %s", hex, core_strerror(rc)) : 0;
}

/* ------------------------------------------------------------ tokens */

static eng_outcome outcome_of(const char *name)
{
	for (int o = 0; o < ENG_OUTCOME_LAST; o++)
		if (!strcmp(eng_outcome_name((eng_outcome)o), name))
			return (eng_outcome)o;
	return ENG_FAILED;
}

/* The graph's own copy of a fork branch name (tokens point into it). */
static const char *branch_of(const dag_graph *g, const char *name)
{
	if (!name[0])
		return NULL;
	for (size_t i = 0; i < g->nnodes; i++)
		for (size_t b = 0; b < g->nodes[i].nfork; b++)
			if (!strcmp(g->nodes[i].fork_branches[b], name))
				return g->nodes[i].fork_branches[b];
	return NULL;
}

static int token_from(eng_ctx *c, uint64_t seq, const Elspeth__CheckpointToken *m,
		      eng_token *t, core_err *err)
{
	int rc = 0;

	memset(t, 0, sizeof(*t));
	t->token_id = m->token_id;
	t->to = (eng_dest_kind)m->to;
	t->node = m->node_id;
	t->outcome = outcome_of(m->outcome);
	t->step = m->step;
	t->branch = branch_of(c->g, m->branch);
	snprintf(t->hash, sizeof(t->hash), "%s", m->data_ref);
	snprintf(t->order_key, sizeof(t->order_key), "%s", m->order_key);
	if (m->error[0] && !(t->error = strdup(m->error)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (m->data_json[0]) {
		json_error_t je;

		if (!(t->data = json_loads(m->data_json, JSON_DECODE_ANY, &je)))
			rc = core_err_set(err, CORE_EDATA,
				"the checkpoint's data of token %llu is undecodable: %s",
				(unsigned long long)t->token_id, je.text);
	} else if (m->data_ref[0]) {
		rc = load_json(c->resume->rec, c->resume->ck->run_id, seq, m->data_ref,
			       &t->data, err);
	}
	if (!rc && t->to != ENG_TO_DISCARD &&
	    (t->node < 0 || (size_t)t->node >= c->g->nnodes))
		rc = core_err_set(err, CORE_EDATA,
				  "the checkpoint sends token %llu to node %d, which the pipeline lacks",
				  (unsigned long long)t->token_id, t->node);
	if (rc) {
		json_decref(t->data);
		free(t->error);
	}
	return rc;
}

/* ------------------------------------------------ the checkpoint's rows */

static int done_row(eng_ctx *c, const Elspeth__CheckpointRow *m, eng_row *row,
		    core_err *err)
{
	eng_result *res = calloc(1, sizeof(*res));
	int rc = 0;

	if (!res)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	res->seq = m->seq;
	res->failed = m->failed;
	res->retries = m->retries;
	for (size_t i = 0; i < m->n_tokens && !rc; i++) {
		eng_token t;

		if ((rc = token_from(c, m->seq, m->tokens[i], &t, err)))
			break;
		if (eng__result_add(res, &t)) {
			json_decref(t.data);
			free(t.error);
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		}
	}
	row->ready = res;
	return rc;
}

/* Where the checkpoint's source stands. */
static plg_source_pos ck_pos(const Elspeth__Checkpoint *ck)
{
	return (plg_source_pos){ ck->source_offset, ck->source_line,
		.source = ck->source_pos_source, .index = ck->source_pos_index };
}

static int pre_build(eng_ctx *c, rstate *r, core_err *err)
{
	const Elspeth__Checkpoint *ck = r->ck;
	int rc = 0;

	if (!ck->n_rows)
		return 0;
	if (!(r->pre.rows = calloc(ck->n_rows, sizeof(*r->pre.rows))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < ck->n_rows && !rc; i++) {
		const Elspeth__CheckpointRow *m = ck->rows[i];
		eng_row *row = &r->pre.rows[i];

		row->seq = m->seq;
		snprintf(row->hash, sizeof(row->hash), "%s", m->payload_ref);
		row->pos = (plg_source_pos){ m->after_offset, m->after_line,
			.source = m->after_source, .index = m->after_index };
		row->has_pos = m->has_after_pos;
		if (m->seq != ck->released_through_seq + 1 + i)
			rc = core_err_set(err, CORE_EDATA,
				"the checkpoint's rows are not consecutive after row %llu",
				(unsigned long long)ck->released_through_seq);
		else if (m->done) {
			rc = done_row(c, m, row, err);
			r->rows_reused++;
		} else {
			/* Read again from the source when it opens. */
			row->before = (plg_source_pos){ m->source_offset, m->source_line,
				.source = m->before_source, .index = m->before_index };
			row->has_before = m->has_source_pos;
			r->rows_rerun++;
		}
		/* A checkpoint may name it: it is recorded (crashed attempt). */
		atomic_store(&row->recorded, true);
		r->pre.n++;
	}
	if (!rc && ck->has_source_pos) {
		eng_row *last = &r->pre.rows[r->pre.n - 1];

		last->pos = ck_pos(ck);
		last->has_pos = true;
	}
	return rc;
}

int eng__pre_next(eng_ctx *c, uint64_t seq, eng_row *row)
{
	eng_pre *p = c->pre;

	if (!p || p->next >= p->n || p->rows[p->next].seq != seq)
		return 0;
	*row = p->rows[p->next];
	memset(&p->rows[p->next], 0, sizeof(*row));
	p->next++;
	return 1;
}

uint64_t eng__pre_last(const eng_ctx *c)
{
	const eng_pre *p = c->pre;

	return p && p->n ? p->rows[p->n - 1].seq : 0;
}

static void pre_free(eng_pre *p)
{
	for (size_t i = 0; i < p->n; i++)
		eng__row_release(&p->rows[i]);
	free(p->rows);
	memset(p, 0, sizeof(*p));
}

/* ------------------------------------------------------------ replay */

bool eng__replay_find(eng_ctx *c, uint64_t seq, int node, const void *req,
		      size_t len, char **resp, size_t *resp_len,
		      const char **from)
{
	uint8_t d[CORE_SHA256_LEN];
	char hex[CORE_SHA256_HEX_LEN + 1];

	if (!c->replay || !rec_replay_size(c->replay->r))
		return false;
	core_sha256(req, len, d);
	core_hex(d, sizeof(d), hex);
	return rec_replay_find(c->replay->r, seq, (uint32_t)node, hex, resp,
				resp_len, from);
}

/* ------------------------------------------------- opening and restoring */

/* The pre row with seq, if it is to be read again (not done). */
static eng_row *rerun_row(eng_pre *p, uint64_t seq)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->rows[i].seq == seq)
			return p->rows[i].ready ? NULL : &p->rows[i];
	return NULL;
}

/* Takes the source's next record as row's data: it must be the record
 * the run had read (the same canonical hash). */
static int reread(eng_ctx *c, void *src, eng_row *row, core_err *err)
{
	const plg_source_ops *sops = c->sops;
	plg_source_row r = { 0 };
	eng_hash h;
	int n = sops->next(src, &r, err);

	if (n <= 0) {
		plg_source_row_release(&r);
		return n < 0 ? n : core_err_set(err, CORE_EDATA,
			"row %llu: the source now ends before it", (unsigned long long)row->seq);
	}
	if ((n = core_hash_json(r.row, h, err))) {
		plg_source_row_release(&r);
		return n;
	}
	if (row->hash[0] && strcmp(h, row->hash)) {
		plg_source_row_release(&r);
		return core_err_set(err, CORE_EDATA,
			"row %llu of the source differs from what the run read: the input "
			"changed since the run stopped; put it back and resume again",
			(unsigned long long)row->seq);
	}
	row->data = r.row;
	row->error = r.error;
	row->where = r.where;
	row->reason = r.reason;
	row->source = r.source;
	row->source_index = r.source_index;
	if (sops->position) {
		sops->position(src, &row->pos);
		row->has_pos = true;
	}
	return 0;
}

/* The source on to the row after the checkpoint's frontier; the rows it
 * was still processing read again on the way (by seeking when every
 * position is known, else by reading from the start). */
static int source_on(eng_ctx *c, void *src, core_err *err)
{
	const Elspeth__Checkpoint *ck = c->resume->ck;
	const plg_source_ops *sops = c->sops;
	eng_pre *pre = &c->resume->pre;
	bool seek = sops->seek && sops->position && ck->has_source_pos;
	int rc = 0;

	for (size_t i = 0; i < pre->n && seek; i++)
		seek = pre->rows[i].ready || pre->rows[i].has_before;
	if (!seek) {
		for (uint64_t seq = 1; seq <= ck->pulled_through_seq && !rc; seq++) {
			eng_row *row = rerun_row(pre, seq);
			plg_source_row r = { 0 };
			int n;

			if (row) {
				rc = reread(c, src, row, err);
				continue;
			}
			n = sops->next(src, &r, err);
			plg_source_row_release(&r);
			if (n == 0)
				rc = core_err_set(err, CORE_EDATA,
					"the source now ends after %llu rows; the run had read %llu",
					(unsigned long long)seq - 1,
					(unsigned long long)ck->pulled_through_seq);
			else if (n < 0)
				rc = n;
		}
		return rc;
	}
	for (size_t i = 0; i < pre->n && !rc; i++) {
		eng_row *row = &pre->rows[i];
		bool last = i + 1 == pre->n;

		if (row->ready)
			continue;
		if (!(rc = sops->seek(src, &row->before, err)))
			rc = reread(c, src, row, err);
		if (last) /* the checkpoint's position is the one kept */
			row->pos = ck_pos(ck);
	}
	if (!rc && ck->pulled_through_seq) {
		plg_source_pos at = ck_pos(ck);

		rc = sops->seek(src, &at, err);
	}
	return rc;
}

/* Puts back what plugins of kind k kept (transforms: a throttle;
 * sources: 0.7.1's fixed field types, before any row is read again). */
static void restore_plugins(eng_ctx *c, dag_kind k)
{
	const Elspeth__Checkpoint *ck = c->resume->ck;

	for (size_t i = 0; i < ck->n_plugins; i++) {
		const Elspeth__CheckpointPlugin *p = ck->plugins[i];
		dag_node *n = p->node_id < c->g->nnodes ? &c->g->nodes[p->node_id] : NULL;
		json_t *saved;

		if (!n || n->kind != k ||
		    (k == DAG_TRANSFORM && !(n->tops->restore && n->tstate)) ||
		    (k == DAG_SOURCE && !(n->sops->restore && c->src)))
			continue;
		if (!(saved = json_loads(p->state_json, 0, NULL)))
			continue;
		if (k == DAG_TRANSFORM)
			n->tops->restore(n->tstate, saved);
		else
			n->sops->restore(eng__sources_inst(c->g, c->src, (unsigned)n->id), saved);
		json_decref(saved);
	}
}

int eng__resume_open(eng_ctx *c, void *src, core_err *err)
{
	const Elspeth__Checkpoint *ck = c->resume->ck;
	dag_graph *g = c->g;
	int rc;

	restore_plugins(c, DAG_SOURCE);
	if ((rc = source_on(c, src, err)))
		return core_err_prefix(err, "resume: source");
	/* The sinks, at their checkpointed positions. */
	for (size_t i = 0; i < ck->n_sinks && !rc; i++) {
		const Elspeth__CheckpointSink *s = ck->sinks[i];
		dag_node *n = &g->nodes[s->node_id];
		plg_sink_pos at = { .base = s->start, .pos = s->position,
				    .rows = s->rows, .fd = -1 };

		snprintf(at.hash, sizeof(at.hash), "%s", s->prefix_hash);
		if ((rc = n->kops->resume(&g->env, n->options, &at, &n->kstate, err)))
			core_err_prefix(err, "resume: sink '%s'", n->name);
	}
	return rc;
}

int eng__resume_restore(eng_ctx *c, eng_summary *sum, core_err *err)
{
	const Elspeth__Checkpoint *ck = c->resume->ck;
	const Elspeth__CheckpointTotals *t = ck->totals;
	int rc = 0;

	for (size_t i = 0; i < ck->n_aggregations && !rc; i++) {
		const Elspeth__CheckpointAggregation *a = ck->aggregations[i];

		/* a checkpoint from before the counts were kept has 0: at
		 * least the members it holds were taken */
		rc = eng__aggs_set_counts(c, (int)a->node_id,
			a->accepted > a->n_members ? a->accepted : a->n_members,
			a->flushes, err);
		for (size_t j = 0; j < a->n_members && !rc; j++) {
			eng_token tok;

			if ((rc = token_from(c, a->members[j]->seq, a->members[j], &tok, err)))
				break;
			rc = eng__aggs_put_back(c, a->members[j]->seq, &tok, a->age_ns, err);
			json_decref(tok.data);
			free(tok.error);
		}
	}
	restore_plugins(c, DAG_TRANSFORM);
	if (t) {
#define RESTORE(f) sum->f = t->f;
		ENG_CKPT_TOTALS(RESTORE)
#undef RESTORE
		for (size_t i = 0; i < t->n_outcomes && i < ENG_OUTCOME_LAST; i++)
			sum->outcomes[i] = t->outcomes[i];
		for (size_t i = 0; i < t->n_per_sink && i < c->g->nnodes; i++)
			sum->per_sink[i] = t->per_sink[i];
		/* Calls of the earlier attempts count in the run's totals. */
		atomic_store(&c->calls, t->calls);
		atomic_store(&c->calls_ok, t->calls_ok);
		atomic_store(&c->calls_replayed, t->calls_replayed);
		c->resume->replayed_before = t->calls_replayed;
		for (size_t i = 0; i < t->n_calls_by_class && i < ENG_CALL_CLASSES; i++)
			atomic_store(&c->calls_by_class[i], t->calls_by_class[i]);
	}
	if (c->ckpt) /* aggregation_only counts batches from here */
		c->ckpt->batches = sum->batches;
	sum->rows_reused = c->resume->rows_reused;
	sum->rows_rerun = c->resume->rows_rerun;
	sum->tokens_superseded = c->resume->superseded;
	return rc;
}

uint32_t eng__resume_attempt(const eng_ctx *c)
{
	return c->resume->attempt;
}

static void put_resume_record(rstate *r, const char *status,
			      const eng_summary *sum, unsigned in_flight)
{
	Elspeth__ResumeRecord m = ELSPETH__RESUME_RECORD__INIT;
	rec_key k;

	rec_key_init(&k);
	rec_key_u64(&k, r->run->run_id);
	rec_key_u32(&k, r->attempt);
	m.run_id = r->run->run_id;
	m.attempt = r->attempt;
	m.started_at_ns = r->started_ns;
	m.completed_at_ns = strcmp(status, "running") ? core_now_wall_ns() : 0;
	m.status = (char *)status;
	m.from_released_seq = r->ck->released_through_seq;
	m.rows_reused = r->rows_reused;
	m.rows_rerun = r->rows_rerun;
	m.tokens_superseded = r->superseded;
	m.calls_replayed = sum ? sum->replayed_now : 0;
	m.max_rows_in_flight = in_flight;
	m.previous_status = r->run->status;
	rec_put_msg(r->rec, REC_RESUMES, &k, &m.base);
}

void eng__resume_finish(eng_ctx *c, eng_summary *sum, const char *status)
{
	sum->replayed_now = sum->calls_replayed - c->resume->replayed_before;
	put_resume_record(c->resume, status, sum, sum->in_flight);
}

/* ------------------------------------------------------------ planning */

/* A run killed before its first checkpoint (while it was starting):
 * nothing was released, so it resumes from the start — with every sink
 * at 0 bytes, which is only known for sinks that truncate their file. */
static int start_checkpoint(dag_graph *g, const Elspeth__RunRecord *run,
			    Elspeth__Checkpoint **out, core_err *err)
{
	Elspeth__Checkpoint ck = ELSPETH__CHECKPOINT__INIT;
	Elspeth__CheckpointSink *sinks = calloc(g->nnodes, sizeof(*sinks));
	Elspeth__CheckpointSink **ptrs = calloc(g->nnodes, sizeof(*ptrs));
	char empty[CORE_SHA256_HEX_LEN + 1];
	uint8_t d[CORE_SHA256_LEN];
	uint8_t *buf = NULL;
	int rc = 0;

	if (!sinks || !ptrs) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	core_sha256("", 0, d);
	core_hex(d, sizeof(d), empty);
	ck.format_version = REC_CKPT_FORMAT_VERSION;
	ck.run_id = run->run_id;
	ck.reason = "none (stopped while starting)";
	ck.topology_hash = run->topology_hash;
	ck.config_hash = run->config_hash;
	for (size_t i = 0; i < g->nnodes; i++) {
		const dag_node *n = &g->nodes[i];
		const core_node *mode = core_map_get(n->options, "mode");
		Elspeth__CheckpointSink *m = &sinks[ck.n_sinks];

		if (n->kind != DAG_SINK)
			continue;
		if (mode && mode->kind == CORE_NODE_SCALAR && !strcmp(mode->value, "append")) {
			rc = core_err_set(err, CORE_EDATA,
				"run %llu stopped before its first checkpoint, and sink '%s' appends "
				"to its file, so what it held before the run is unknown; start a new run",
				(unsigned long long)run->run_id, n->name);
			goto out;
		}
		elspeth__checkpoint_sink__init(m);
		m->node_id = (uint32_t)i;
		m->name = (char *)n->name;
		m->path = (char *)dag_sink_target(g, n);
		m->prefix_hash = empty;
		ptrs[ck.n_sinks++] = m;
	}
	ck.sinks = ptrs;
	/* Packed and unpacked, so rec_ckpt_free can free it like a loaded one. */
	if (!(buf = malloc(elspeth__checkpoint__get_packed_size(&ck) + 1))) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	*out = elspeth__checkpoint__unpack(NULL, elspeth__checkpoint__pack(&ck, buf), buf);
	if (!*out)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
out:
	free(buf);
	free(ptrs);
	free(sinks);
	return rc;
}

/* Checks that sink n's output holds what checkpoint entry s says it had
 * written (the sink's verify), naming the sink in the error. */
static int check_sink(const dag_graph *g, const dag_node *n,
		      const Elspeth__CheckpointSink *s, core_err *err)
{
	plg_sink_pos at = { .base = s->start, .pos = s->position, .fd = -1 };
	int rc;

	if (!n->kops->verify)
		return 0;
	snprintf(at.hash, sizeof(at.hash), "%s", s->prefix_hash ? s->prefix_hash : "");
	if ((rc = n->kops->verify(&g->env, n->options, &at, err)))
		core_err_prefix(err, "sink '%s'", n->name);
	return rc;
}

/* Checks everything a resume needs before it writes; fills r. */
static int prepare(dag_graph *g, rec_env *rec, const char *spec, rstate *r,
		   core_err *err)
{
	eng_hash topo;
	uint64_t run;
	int rc;

	if ((rc = rec_resolve_run(rec, spec, &run, err)) ||
	    (rc = rec_run_lock(rec, run, &r->lock_fd, err)) ||
	    (rc = load_run(rec, run, &r->run, err)))
		return rc;
	if (!strcmp(r->run->status, "completed"))
		return core_err_set(err, CORE_EDATA,
			"run %llu completed; there is nothing to resume", (unsigned long long)run);
	if ((rc = eng__topology_hash(g, topo, err)))
		return rc;
	/* Killed while starting: the provisional record has no topology
	 * hash yet; the config hash still decides. */
	if (r->run->topology_hash[0] && strcmp(topo, r->run->topology_hash))
		return core_err_set(err, CORE_EDATA,
			"run %llu was run with another pipeline (topology hash %.12s..., "
			"these settings give %.12s...); resume with the settings it ran with",
			(unsigned long long)run, r->run->topology_hash, topo);
	if (strcmp(g->settings->config_hash, r->run->config_hash))
		return core_err_set(err, CORE_EDATA,
			"the settings changed since run %llu (config hash %.12s..., now %.12s...); "
			"resume with the settings it ran with", (unsigned long long)run,
			r->run->config_hash, g->settings->config_hash);
	/* The sinks verify (and later resume) what this run wrote, in the
	 * files it wrote. */
	eng__set_run_key(g, r->run->run_id, r->run->started_at_ns);
	if ((rc = recorded_sink_paths(g, rec, run, err)))
		return rc;
	rc = rec_ckpt_load(rec, run, &r->ck, err);
	/* Checkpoints on, none written: killed while starting. */
	if (rc == REC_NOTFOUND && g->settings->checkpoint_enabled)
		rc = start_checkpoint(g, r->run, &r->ck, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < r->ck->n_sinks; i++) {
		const Elspeth__CheckpointSink *s = r->ck->sinks[i];
		const dag_node *n = s->node_id < g->nnodes ? &g->nodes[s->node_id] : NULL;

		if (!n || n->kind != DAG_SINK || strcmp(n->name, s->name))
			return core_err_set(err, CORE_EDATA,
				"the checkpoint names sink '%s', which the pipeline lacks", s->name);
		if ((rc = check_sink(g, n, s, err)))
			return rc;
	}
	return 0;
}

static json_t *plan_json(const rstate *r)
{
	const Elspeth__Checkpoint *ck = r->ck;
	json_t *sinks = json_array(), *aggs = json_array(), *plan;
	size_t done = 0;

	for (size_t i = 0; i < ck->n_rows; i++)
		done += ck->rows[i]->done;
	for (size_t i = 0; i < ck->n_sinks; i++)
		json_array_append_new(sinks, json_pack("{s:s,s:s,s:I,s:I}",
			"name", ck->sinks[i]->name, "path", ck->sinks[i]->path,
			"position", (json_int_t)ck->sinks[i]->position,
			"rows", (json_int_t)(ck->totals && ck->sinks[i]->node_id < ck->totals->n_per_sink ?
				ck->totals->per_sink[ck->sinks[i]->node_id] : 0)));
	for (size_t i = 0; i < ck->n_aggregations; i++) {
		const Elspeth__CheckpointAggregation *a = ck->aggregations[i];
		bool sink = false; /* a held sink's buffer (ADR 0048) */

		for (size_t k = 0; k < ck->n_sinks && !sink; k++)
			sink = ck->sinks[k]->node_id == a->node_id;
		json_array_append_new(aggs, json_pack("{s:s,s:I,s:f,s:b}",
			"name", a->name, "buffered", (json_int_t)a->n_members,
			"age_seconds", (double)a->age_ns / 1e9, "held_sink", sink));
	}
	plan = json_pack("{s:I,s:s,s:i,s:{s:s,s:I,s:I,s:I,s:I,s:I,s:b,s:I},s:o,s:o,s:o}",
		"run_id", (json_int_t)r->run->run_id, "status", r->run->status,
		"next_attempt", (int)r->attempt,
		"checkpoint", "reason", ck->reason,
		"created_at_ns", (json_int_t)ck->created_at_ns,
		"released_through_seq", (json_int_t)ck->released_through_seq,
		"completed_waiting", (json_int_t)done,
		"in_flight", (json_int_t)(ck->n_rows - done),
		"source_continues_after_seq", (json_int_t)ck->pulled_through_seq,
		"source_done", ck->source_done,
		"source_offset", (json_int_t)ck->source_offset,
		"sinks", sinks, "aggregations", aggs,
		"coalesce", json_array());
	/* Why it stopped, when the run recorded it: a failure, or a
	 * halt's message (an exhausted account: top it up first). */
	if (plan && r->run->error && r->run->error[0])
		json_object_set_new(plan, "error", json_string(r->run->error));
	return plan;
}

/* --------------------------------------------------------------- entry */

static void resume_free(dag_graph *g, rstate *r)
{
	eng__set_run_key(g, 0, 0);
	if (r->lock_fd >= 0)
		close(r->lock_fd);
	pre_free(&r->pre);
	rec_replay_free(r->replay.r);
	rec_ckpt_free(r->ck);
	if (r->run)
		elspeth__run_record__free_unpacked(r->run, NULL);
}

/* Marks the crashed attempt's work, loads the replay answers and the
 * checkpoint's rows; the run record says running again. */
static int start(eng_ctx *c, rstate *r, eng_audit *audit, const eng_opts *o,
		 core_err *err)
{
	uint64_t next[3];
	int rc;

	if ((rc = rec_ckpt_next_ids(r->rec, r->ck, &next[0], &next[1], &next[2], err)) ||
	    (rc = rec_ckpt_supersede(r->rec, r->ck, r->attempt, next[0], next[2],
				 &r->superseded, err)) ||
	    (rc = rec_replay_load(r->rec, r->ck, &r->replay.r, err)) ||
	    (rc = pre_build(c, r, err)) ||
	    (rc = eng__audit_resume(audit, r->rec, c->g, o->settings_path, o->shard, r->run,
				    next, err)))
		return rc;
	put_resume_record(r, "running", NULL, eng__rows_in_flight(c->g, o));
	rec_story_attempt(r->rec, r->attempt); /* its fragments' keys */
	c->replay = &r->replay;
	c->pre = &r->pre;
	c->start_seq = r->ck->released_through_seq;
	c->start_pos = ck_pos(r->ck);
	c->has_start_pos = !r->ck->n_rows && r->ck->has_source_pos;
	return 0;
}

int eng_resume(dag_graph *g, const eng_opts *o, const char *run_spec,
	       bool execute, json_t **plan, eng_summary *sum, core_err *err)
{
	/* o is required (engine.h: the Landscape is o->rec). */
	rstate r = { .rec = o->rec, .started_ns = core_now_wall_ns(),
		     .lock_fd = -1 };
	eng_audit audit;
	eng_ctx c = { .g = g, .audit = &audit, .stop = o->stop, .opts = o,
		      .t0_mono = core_now_mono_ns(), .resume = &r };
	int rc;

	memset(sum, 0, sizeof(*sum));
	if (plan)
		*plan = NULL;
	if ((rc = eng_opts_check(o, err)))
		return rc;
	if (!r.rec)
		return core_err_set(err, CORE_ECONFIG,
			"resume needs the Landscape, which landscape.enabled: false turns off");
	if (!(sum->per_sink = calloc(g->nnodes, sizeof(*sum->per_sink))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = prepare(g, r.rec, run_spec, &r, err);
	if (!rc)
		rc = rec_resume_count(r.rec, r.run->run_id, &r.attempt, err);
	if (!rc) {
		r.attempt++;
		sum->run_id = r.run->run_id;
		if (plan)
			*plan = plan_json(&r);
	}
	if (!rc && o->shard)
		rc = eng__shard_setup(&c, o->shard, err);
	if (!rc && execute && !(rc = start(&c, &r, &audit, o, err)))
		rc = eng__run_ctx(&c, sum, err);
	resume_free(g, &r);
	return rc;
}
