/*
 * purge.c — which payloads `elspeth purge` may delete (ADR 0028): those
 * the rows of expired runs name (source rows, node state inputs and
 * outputs, error payloads) that no other run still needs. A run expires
 * when it completed more than retention_days ago. Unlike ELSPETH, a
 * failed or interrupted run never expires: it can still be resumed, and
 * a resume reads its rows' payloads back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder_internal.h"

typedef struct collect {
	json_t *set;                 /* hex -> null */
	const ProtobufCMessageDescriptor *d;
} collect;

static void add(json_t *set, const char *hex)
{
	if (hex && strlen(hex) == CORE_SHA256_HEX_LEN)
		json_object_set_new(set, hex, json_null());
}

static int one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	collect *c = ctx;
	ProtobufCMessage *m = protobuf_c_message_unpack(c->d, NULL, vlen, val);

	(void)key, (void)klen;
	if (!m)
		return CORE_EDATA;
	if (c->d == &elspeth__row_record__descriptor) {
		add(c->set, ((Elspeth__RowRecord *)m)->payload_ref);
		add(c->set, ((Elspeth__RowRecord *)m)->source_hash);
	} else if (c->d == &elspeth__node_state_record__descriptor) {
		add(c->set, ((Elspeth__NodeStateRecord *)m)->input_hash);
		add(c->set, ((Elspeth__NodeStateRecord *)m)->output_hash);
	} else if (c->d == &elspeth__token_outcome_record__descriptor) {
		add(c->set, ((Elspeth__TokenOutcomeRecord *)m)->error_hash);
	} else if (c->d == &elspeth__validation_error_record__descriptor) {
		add(c->set, ((Elspeth__ValidationErrorRecord *)m)->data_ref);
	} else if (c->d == &elspeth__transform_error_record__descriptor) {
		add(c->set, ((Elspeth__TransformErrorRecord *)m)->data_ref);
	}
	protobuf_c_message_free_unpacked(m, NULL);
	return 0;
}

static int run_hashes(rec_txn *t, uint64_t run, json_t *set)
{
	static const struct {
		rec_table t;
		const ProtobufCMessageDescriptor *d;
	} tabs[] = {
		{ REC_ROWS, &elspeth__row_record__descriptor },
		{ REC_NODE_STATES, &elspeth__node_state_record__descriptor },
		{ REC_TOKEN_OUTCOMES, &elspeth__token_outcome_record__descriptor },
		{ REC_VALIDATION_ERRORS, &elspeth__validation_error_record__descriptor },
		{ REC_TRANSFORM_ERRORS, &elspeth__transform_error_record__descriptor },
	};
	rec_key k;

	rec_key_init(&k);
	rec_key_u64(&k, run);
	for (size_t i = 0; i < sizeof(tabs) / sizeof(tabs[0]); i++) {
		collect c = { set, tabs[i].d };
		int rc = rec_scan(t, tabs[i].t, &k, one, &c);

		if (rc && rc != REC_SCAN_STOP)
			return rc;
	}
	return 0;
}

typedef struct runs_ctx {
	rec_txn *t;
	uint64_t cutoff_ns;
	json_t *expired, *active;
	json_t *per_run;             /* expired run id -> its hashes */
	rec_purge_plan *plan;
} runs_ctx;

static int one_run(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	runs_ctx *c = ctx;
	Elspeth__RunRecord *r = elspeth__run_record__unpack(NULL, vlen, val);
	uint64_t run = rec_key_get_u64(key, 0);
	bool expired;
	int rc = 0;

	(void)klen;
	if (!r)
		return CORE_EDATA;
	expired = !strcmp(r->status, "completed") && r->completed_at_ns &&
		  r->completed_at_ns < c->cutoff_ns;
	elspeth__run_record__free_unpacked(r, NULL);
	if (expired) {
		json_t *mine = json_object();
		char id[24];

		snprintf(id, sizeof(id), "%llu", (unsigned long long)run);
		if (!mine || (rc = run_hashes(c->t, run, mine))) {
			json_decref(mine);
			return rc ? rc : CORE_ENOMEM;
		}
		json_object_update(c->expired, mine);
		json_object_set_new(c->per_run, id, mine);
		return 0;
	}
	return run_hashes(c->t, run, c->active);
}

/* (run, hash) for every deletable hash of every expired run: what the
 * purge marks, so that a later run storing the same bytes again is not
 * covered by an earlier purge. */
static int marks_of(runs_ctx *c, rec_purge_plan *plan, core_err *err)
{
	const char *id, *hex;
	json_t *set, *v;

	json_object_foreach(c->per_run, id, set) {
		json_object_foreach(set, hex, v) {
			rec_purge_mark *g;

			if (json_object_get(c->active, hex))
				continue;
			if (!(g = realloc(plan->marks, (plan->nmarks + 1) * sizeof(*g))))
				return core_err_set(err, CORE_ENOMEM, "out of memory");
			plan->marks = g;
			g[plan->nmarks].run = strtoull(id, NULL, 10);
			memcpy(g[plan->nmarks].hex, hex, CORE_SHA256_HEX_LEN + 1);
			plan->nmarks++;
		}
	}
	return 0;
}

int rec_purge_find(rec_env *env, long long retention_days, uint64_t now_ns,
		   rec_purge_plan *plan, core_err *err)
{
	runs_ctx c = { .plan = plan };
	const char *hex;
	json_t *v;
	int rc;

	memset(plan, 0, sizeof(*plan));
	c.cutoff_ns = now_ns - (uint64_t)retention_days * 86400ULL * 1000000000ULL;
	c.expired = json_object();
	c.active = json_object();
	c.per_run = json_object();
	if (!c.expired || !c.active || !c.per_run) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = rec_read_begin(env, &c.t, err)))
		goto out;
	rc = rec_scan(c.t, REC_RUNS, NULL, one_run, &c);
	rec_read_end(c.t);
	if (rc && rc != REC_SCAN_STOP) {
		core_err_set(err, rc, "reading the runs' payload references: %s",
			     core_strerror(rc));
		goto out;
	}
	rc = 0;
	json_object_foreach(c.expired, hex, v) {
		char **g;

		if (json_object_get(c.active, hex))
			continue;
		if (!(g = realloc(plan->hex, (plan->n + 1) * sizeof(*g))) ||
		    !(g[plan->n] = strdup(hex))) {
			if (g)
				plan->hex = g;
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
			goto out;
		}
		plan->hex = g;
		plan->n++;
	}
	rc = marks_of(&c, plan, err);
out:
	json_decref(c.expired);
	json_decref(c.active);
	json_decref(c.per_run);
	if (rc)
		rec_purge_plan_release(plan);
	return rc;
}

void rec_purge_plan_release(rec_purge_plan *plan)
{
	if (!plan)
		return;
	for (size_t i = 0; i < plan->n; i++)
		free(plan->hex[i]);
	free(plan->hex);
	free(plan->marks);
	memset(plan, 0, sizeof(*plan));
}
