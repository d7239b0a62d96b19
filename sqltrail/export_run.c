/*
 * export_run.c — what a run has besides its rows: the checkpoint,
 * ELSPETH's operations, and our own tables (sink files, resumes,
 * superseded tokens, metric samples).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sqltrail/export_internal.h"

#define ULL(v) ((unsigned long long)(v))

typedef struct first_tok {
	uint64_t token;
} first_tok;

static int first_token_one(void *ctx, const void *key, size_t klen,
			   const void *val, size_t vlen)
{
	first_tok *f = ctx;

	(void)val, (void)vlen;
	if (klen >= 24)
		f->token = rec_key_get_u64(key, 16);
	return REC_SCAN_STOP;
}

/* The run's latest checkpoint, as ELSPETH's one row per checkpoint: its
 * token is the first token of the last row it counts released. */
static int write_checkpoint(xp *x)
{
	Elspeth__Checkpoint *c = NULL;
	xrow *s = &x->st[ST_CHECKPOINTS];
	first_tok f = { 0 };
	const void *v;
	size_t vl;
	json_t *aggs;
	char *aj = NULL;
	rec_key k;
	int rc;

	/* In the export's own snapshot (rec_ckpt_load would take another). */
	rec_key_init(&k);
	rec_key_u64(&k, x->run);
	rc = rec_get(x->t, REC_CHECKPOINTS, &k, &v, &vl);
	if (rc == REC_NOTFOUND)
		return 0;
	if (rc)
		return core_err_set(x->err, rc, "reading the checkpoint of run %s: %s",
				    x->rid, core_strerror(rc));
	if (!(c = elspeth__checkpoint__unpack(NULL, vl, v)))
		return core_err_set(x->err, CORE_EDATA,
				    "run %s: its checkpoint cannot be decoded", x->rid);
	rec_key_init(&k);
	rec_key_u64(&k, x->run);
	rec_key_u64(&k, c->released_through_seq);
	if (c->released_through_seq)
		rec_scan(x->t, REC_TOKENS_BY_ROW, &k, first_token_one, &f);
	if (!f.token) {
		rec_ckpt_free(c);
		return 0; /* nothing released yet: no token to name */
	}
	aggs = json_array();
	for (size_t i = 0; aggs && i < c->n_aggregations; i++) {
		json_t *m;

		if (!c->aggregations[i]->n_members)
			continue;
		m = json_array();

		for (size_t j = 0; m && j < c->aggregations[i]->n_members; j++) {
			char id[64];

			snprintf(id, sizeof(id), "tok-%s-%llu", x->rid,
				 ULL(c->aggregations[i]->members[j]->token_id));
			json_array_append_new(m, json_string(id));
		}
		json_array_append_new(aggs, json_pack("{s:s,s:o}", "node",
			sqlt__node_id(x, c->aggregations[i]->node_id), "members",
			m ? m : json_array()));
	}
	if (json_array_size(aggs))
		aj = sqlt__json_text(aggs);
	else
		json_decref(aggs);
	sqlt__bind_id(s, 1, "ckpt-%s-%u", x->rid, c->attempt);
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_ref(x, s, 3, "tok", f.token);
	/* the source the checkpoint stands in (several: ADR 0044) */
	sqlt__bind_text(s, 4, sqlt__node_id(x, c->source_pos_source < x->nnodes &&
		x->nodes[c->source_pos_source].kind &&
		!strcmp(x->nodes[c->source_pos_source].kind, "source") ?
		c->source_pos_source : x->source));
	sqlt__bind_i64(s, 5, (int64_t)c->released_through_seq);
	sqlt__bind_text(s, 6, aj);
	sqlt__bind_time(s, 7, c->created_at_ns);
	sqlt__bind_text(s, 8, c->topology_hash);
	sqlt__bind_text(s, 9, c->config_hash);
	sqlt__bind_i64(s, 10, c->format_version);
	rc = sqlt__step(x, ST_CHECKPOINTS);
	free(aj);
	rec_ckpt_free(c);
	return rc;
}

/* ----------------------------------------------------- ours, and the rest */

static int one_sink_file(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__SinkFileRecord *r = msg;
	xrow *s = &x->st[ST_OWN_SINK_FILES];

	(void)key, (void)klen;
	sqlt__bind_text(s, 1, x->rid);
	sqlt__bind_text(s, 2, sqlt__node_id(x, r->sink_node));
	sqlt__bind_text(s, 3, r->sink);
	sqlt__bind_text(s, 4, r->path);
	sqlt__bind_i64(s, 5, (int64_t)r->size);
	sqlt__bind_text(s, 6, r->content_hash);
	if (r->sink_node < x->nnodes) /* its sink_write operation's output */
		snprintf(x->nodes[r->sink_node].file_hash,
			 sizeof(x->nodes[r->sink_node].file_hash), "%s", r->content_hash);
	return sqlt__step(x, ST_OWN_SINK_FILES);
}

static int one_resume(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__ResumeRecord *r = msg;
	xrow *s = &x->st[ST_OWN_RESUMES];

	(void)key, (void)klen;
	sqlt__bind_text(s, 1, x->rid);
	sqlt__bind_i64(s, 2, r->attempt);
	sqlt__bind_time(s, 3, r->started_at_ns);
	sqlt__bind_time(s, 4, r->completed_at_ns);
	sqlt__bind_text(s, 5, r->status);
	sqlt__bind_nz(s, 6, r->previous_status);
	sqlt__bind_i64(s, 7, (int64_t)r->from_released_seq);
	sqlt__bind_i64(s, 8, (int64_t)r->rows_reused);
	sqlt__bind_i64(s, 9, (int64_t)r->rows_rerun);
	sqlt__bind_i64(s, 10, (int64_t)r->tokens_superseded);
	sqlt__bind_i64(s, 11, (int64_t)r->calls_replayed);
	sqlt__bind_i64(s, 12, r->max_rows_in_flight);
	return sqlt__step(x, ST_OWN_RESUMES);
}

static int one_superseded(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__SupersededRecord *r = msg;
	xrow *s = &x->st[ST_OWN_SUPERSEDED];
	Elspeth__TokenOutcomeRecord *o = NULL;
	const void *v;
	size_t vl;
	rec_key k;
	int rc;

	(void)key, (void)klen;
	rec_key_init(&k);
	rec_key_u64(&k, x->run);
	rec_key_u64(&k, r->token_id);
	if (!rec_get(x->t, REC_TOKEN_OUTCOMES, &k, &v, &vl))
		o = elspeth__token_outcome_record__unpack(NULL, vl, v);
	sqlt__bind_ref(x, s, 1, "tok", r->token_id);
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_ref(x, s, 3, "row", r->row_id);
	sqlt__bind_i64(s, 4, r->attempt);
	sqlt__bind_nz(s, 5, r->reason);
	if (o) {
		char low[64];
		size_t i;

		for (i = 0; o->outcome[i] && i + 1 < sizeof(low); i++)
			low[i] = (char)(o->outcome[i] >= 'A' && o->outcome[i] <= 'Z' ?
					o->outcome[i] - 'A' + 'a' : o->outcome[i]);
		low[i] = '\0';
		sqlt__bind_text(s, 6, low);
		sqlt__bind_nz(s, 7, o->sink);
		elspeth__token_outcome_record__free_unpacked(o, NULL);
	}
	rc = sqlt__step(x, ST_OWN_SUPERSEDED);
	return rc;
}

/* The engine's metric samples (about one a second) and, per sample, the
 * capacity control of each LLM transform's upstream. */
static char *counts_json(ProtobufCMessage **items, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < n; i++) {
		const Elspeth__SampleCount *c = (const Elspeth__SampleCount *)items[i];

		json_object_set_new(o, c->name, json_integer((json_int_t)c->n));
	}
	return sqlt__json_text(o);
}

static int one_sample(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__SampleRecord *r = msg;
	xrow *s = &x->st[ST_OWN_SAMPLES];
	char *outcomes = counts_json((ProtobufCMessage **)r->outcomes, r->n_outcomes);
	char *classes = counts_json((ProtobufCMessage **)r->call_classes, r->n_call_classes);
	int rc;

	(void)key, (void)klen;
	if (!outcomes || !classes) {
		free(outcomes);
		free(classes);
		return core_err_set(x->err, CORE_ENOMEM, "out of memory");
	}
	sqlt__bind_text(s, 1, x->rid);
	sqlt__bind_i64(s, 2, r->attempt);
	sqlt__bind_i64(s, 3, r->index);
	sqlt__bind_time(s, 4, r->at_ns);
	sqlt__bind_ms(s, 5, r->elapsed_ns);
	sqlt__bind_i64(s, 6, r->final);
	sqlt__bind_i64(s, 7, (int64_t)r->pulled);
	sqlt__bind_i64(s, 8, (int64_t)r->released);
	sqlt__bind_i64(s, 9, (int64_t)r->in_flight);
	sqlt__bind_i64(s, 10, (int64_t)r->waiting);
	sqlt__bind_i64(s, 11, (int64_t)r->calls);
	sqlt__bind_i64(s, 12, (int64_t)r->calls_ok);
	sqlt__bind_i64(s, 13, (int64_t)r->calls_replayed);
	sqlt__bind_text(s, 14, outcomes);
	sqlt__bind_text(s, 15, classes);
	rc = sqlt__step(x, ST_OWN_SAMPLES);
	free(outcomes);
	free(classes);
	s = &x->st[ST_OWN_SAMPLE_UPSTREAMS];
	for (size_t i = 0; !rc && i < r->n_upstreams; i++) {
		const Elspeth__SampleUpstream *u = r->upstreams[i];

		sqlt__bind_text(s, 1, x->rid);
		sqlt__bind_i64(s, 2, r->attempt);
		sqlt__bind_i64(s, 3, r->index);
		sqlt__bind_text(s, 4, sqlt__node_id(x, u->node_id));
		sqlt__bind_text(s, 5, u->upstream);
		sqlt__bind_f64(s, 6, u->rate);
		sqlt__bind_f64(s, 7, u->window);
		sqlt__bind_i64(s, 8, u->ceiling);
		sqlt__bind_i64(s, 9, u->in_flight);
		sqlt__bind_i64(s, 10, (int64_t)u->requests);
		sqlt__bind_i64(s, 11, (int64_t)u->refusals);
		sqlt__bind_nz(s, 12, u->held_by);
		rc = sqlt__step(x, ST_OWN_SAMPLE_UPSTREAMS);
	}
	return rc;
}

/* ELSPETH's operations: the source's load and each sink's writes. Ours
 * span the run: the load from its start to its last row, a sink's
 * writes from its first artifact to its last, with the sink file's hash
 * as the output (elspeth_sink_files). */
static int write_operations(xp *x)
{
	xrow *s = &x->st[ST_OPERATIONS];
	const char *st = x->rr->status;
	bool done = !strcmp(st, "completed");
	const char *status = done ? "completed" : !strcmp(st, "running") ? "open" : "failed";
	uint64_t end = x->last_row_at ? x->last_row_at : x->rr->started_at_ns;
	int rc;

	/* one load a source (ELSPETH 0.7.1's several: ADR 0044), the first
	 * under the id a run with one source has always had */
	for (uint32_t i = x->source; i < x->nnodes; i++) {
		if (!x->nodes[i].kind || strcmp(x->nodes[i].kind, "source"))
			continue;
		if (i == x->source)
			sqlt__bind_id(s, 1, "op-%s-source_load", x->rid);
		else
			sqlt__bind_id(s, 1, "op-%s-source_load-%u", x->rid, i);
		sqlt__bind_text(s, 2, x->rid);
		sqlt__bind_text(s, 3, sqlt__node_id(x, i));
		sqlt__bind_text(s, 4, "source_load");
		sqlt__bind_time(s, 5, x->rr->started_at_ns);
		sqlt__bind_time(s, 6, end);
		sqlt__bind_text(s, 7, status);
		if (!done)
			sqlt__bind_nz(s, 9, *x->rr->error ? x->rr->error : st);
		sqlt__bind_ms(s, 10, end - x->rr->started_at_ns);
		if ((rc = sqlt__step(x, ST_OPERATIONS)))
			return rc;
	}
	for (size_t i = 0; i < x->nnodes; i++) {
		const xnode *n = &x->nodes[i];

		if (!n->kind || strcmp(n->kind, "sink") || !n->writes)
			continue;
		sqlt__bind_id(s, 1, "op-%s-sink_write-%zu", x->rid, i);
		sqlt__bind_text(s, 2, x->rid);
		sqlt__bind_text(s, 3, n->id);
		sqlt__bind_text(s, 4, "sink_write");
		sqlt__bind_time(s, 5, n->first_write);
		sqlt__bind_time(s, 6, n->last_write);
		sqlt__bind_text(s, 7, status);
		sqlt__bind_nz(s, 8, n->file_hash);
		if (!done)
			sqlt__bind_nz(s, 9, *x->rr->error ? x->rr->error : st);
		sqlt__bind_ms(s, 10, n->last_write - n->first_write);
		if ((rc = sqlt__step(x, ST_OPERATIONS)))
			return rc;
	}
	return 0;
}

int sqlt__export_run_records(xp *x)
{
	int rc;

	if ((rc = sqlt__scan(x, REC_SINK_FILES, &elspeth__sink_file_record__descriptor, one_sink_file)) ||
	    (rc = sqlt__scan(x, REC_RESUMES, &elspeth__resume_record__descriptor, one_resume)) ||
	    (rc = sqlt__scan(x, REC_SUPERSEDED, &elspeth__superseded_record__descriptor, one_superseded)) ||
	    (rc = sqlt__scan(x, REC_SAMPLES, &elspeth__sample_record__descriptor, one_sample)) ||
	    (rc = write_checkpoint(x)))
		return rc;
	return write_operations(x);
}

void sqlt__now_iso(char out[64])
{
	struct timespec ts;
	struct tm tm;
	char day[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 64, "%s.%06ld+00:00", day, ts.tv_nsec / 1000);
}
