/*
 * record.c — a queued event as ELSPETH's event dataclass would give it
 * to an exporter (contracts/events.py, to_dict): its fields in their
 * declaration order, after run_id, None kept. Built on the stack, without
 * allocating (a `rows` run has two events a row). Ids are the SQL
 * trail's (docs/audit.md): run "7", row "row-7-42", token "tok-7-43",
 * state "st-7-88"; node ids are ELSPETH's kind_name_hash12.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "telemetry/tel_internal.h"

static const char *const type_names[TEL_TYPE_LAST] = {
	"RunStarted", "PhaseChanged", "FieldResolutionApplied", "RowCreated",
	"TransformCompleted", "GateEvaluated", "TokenCompleted",
	"ExternalCallCompleted", "RunFinished",
};

const char *tel__type_name(tel_type t)
{
	return t < TEL_TYPE_LAST ? type_names[t] : "Unknown";
}

/* ------------------------------------------------------------ fields */

static tel_field *add(tel_record *r, const char *key, tel_ftype t)
{
	tel_field *f = &r->f[r->n < TEL_FIELDS ? r->n++ : TEL_FIELDS - 1];

	*f = (tel_field){ .key = key, .type = t };
	return f;
}

static void str(tel_record *r, const char *key, const char *s)
{
	if (s)
		add(r, key, TEL_F_STR)->s = s;
	else
		add(r, key, TEL_F_NULL);
}

static void integer(tel_record *r, const char *key, int64_t i)
{
	add(r, key, TEL_F_INT)->i = i;
}

static void real(tel_record *r, const char *key, double d)
{
	add(r, key, TEL_F_REAL)->d = d;
}

static void json(tel_record *r, const char *key, const json_t *j)
{
	if (j && !json_is_null(j))
		add(r, key, TEL_F_JSON)->j = j;
	else
		add(r, key, TEL_F_NULL);
}

/* "kind-run-id" into the record's id slot k (decimal by hand: snprintf
 * is most of the cost of an event). */
static const char *ref(tel_record *r, int k, const char *kind, const char *run,
		       uint64_t id)
{
	char *b = r->ids[k], digits[24];
	size_t n = strlen(kind), rl = strlen(run), d = 0;

	if (n + rl + 24 > sizeof(r->ids[k]))
		rl = sizeof(r->ids[k]) - n - 24;
	memcpy(b, kind, n);
	b[n++] = '-';
	memcpy(b + n, run, rl);
	n += rl;
	b[n++] = '-';
	do
		digits[d++] = (char)('0' + id % 10);
	while ((id /= 10));
	while (d)
		b[n++] = digits[--d];
	b[n] = '\0';
	return b;
}

static const char *hash(const char *h)
{
	return h[0] ? h : NULL;
}

static const char *lower_outcome(const tel_ev *ev)
{
	/* ELSPETH calls a token whose error went to 'discard' quarantined;
	 * a run stopped on it, failed. */
	switch (ev->outcome) {
	case ENG_FAILED:
		return ev->discarded ? "quarantined" : "failed";
	case ENG_CONSUMED_IN_BATCH:
		return "consumed_in_batch";
	default:
		return "failed";
	}
}

static const tel_node *node_of(const tel_ctx *x, const tel_ev *ev)
{
	return ev->node >= 0 && (size_t)ev->node < x->nnodes ? &x->nodes[ev->node] : NULL;
}

static void node_fields(const tel_ctx *x, const tel_ev *ev, tel_record *r)
{
	const tel_node *n = node_of(x, ev);

	str(r, "node_id", n ? n->id : "");
	str(r, "plugin_name", n && n->plugin ? n->plugin : "");
}

/* TokenUsage.to_dict(): the counts the answer gave (a new object the
 * record owns), or NULL. */
static json_t *token_usage(const json_t *response)
{
	const json_t *u = json_object_get(response, "usage");
	json_t *out;

	if (!json_is_object(u) || !(out = json_object()))
		return NULL;
	if (json_is_integer(json_object_get(u, "prompt_tokens")))
		json_object_set(out, "prompt_tokens", json_object_get(u, "prompt_tokens"));
	if (json_is_integer(json_object_get(u, "completion_tokens")))
		json_object_set(out, "completion_tokens", json_object_get(u, "completion_tokens"));
	return out;
}

static void call_fields(const tel_ctx *x, const tel_ev *ev, tel_record *r)
{
	const tel_node *n = node_of(x, ev);
	const json_t *e = ev->extra;
	const json_t *resp = json_object_get(e, "response");

	str(r, "call_type", json_string_value(json_object_get(e, "call_type")));
	str(r, "provider", n && n->provider ? n->provider : n && n->plugin ? n->plugin : "");
	str(r, "status", ev->ok ? "success" : "error");
	real(r, "latency_ms", (double)ev->duration_ns / 1e6);
	str(r, "state_id", ev->state ? ref(r, 2, "st", x->run_label, ev->state) : NULL);
	str(r, "operation_id", NULL);
	str(r, "token_id", ref(r, 1, "tok", x->run_label, ev->token));
	str(r, "request_hash", hash(ev->in_hash));
	str(r, "response_hash", hash(ev->out_hash));
	json(r, "request_payload", json_object_get(e, "request"));
	json(r, "response_payload", resp);
	r->owned = token_usage(resp);
	json(r, "token_usage", r->owned);
}

void tel__record(const tel_ctx *x, const tel_ev *ev, tel_record *r)
{
	const char *run = x->run_label;

	r->type = tel__type_name(ev->type);
	r->at_ns = ev->at_ns;
	r->run_id = run;
	r->n = 0;
	r->owned = NULL;
	str(r, "run_id", run);
	switch (ev->type) {
	case TEL_RUN_STARTED:
		str(r, "config_hash", ev->in_hash);
		str(r, "source_plugin", x->source_plugin);
		break;
	case TEL_RUN_FINISHED:
		str(r, "status", ev->status);
		integer(r, "row_count", (int64_t)ev->rows);
		real(r, "duration_ms", (double)ev->duration_ns / 1e6);
		break;
	case TEL_PHASE_CHANGED:
		str(r, "phase", ev->phase);
		str(r, "action", ev->action);
		break;
	case TEL_FIELD_RESOLUTION_APPLIED: {
		const json_t *m = json_object_get(ev->extra, "mapping");
		const char *plugin = json_string_value(json_object_get(ev->extra, "plugin"));

		str(r, "source_plugin", plugin ? plugin : x->source_plugin);
		integer(r, "field_count", (int64_t)json_object_size(m));
		str(r, "normalization_version",
		    json_string_value(json_object_get(ev->extra, "version")));
		json(r, "resolution_mapping", m);
		break;
	}
	case TEL_ROW_CREATED:
		str(r, "row_id", ref(r, 0, "row", run, ev->row));
		str(r, "token_id", ref(r, 1, "tok", run, ev->token));
		str(r, "content_hash", hash(ev->in_hash));
		break;
	case TEL_TRANSFORM_COMPLETED:
		str(r, "row_id", ref(r, 0, "row", run, ev->row));
		str(r, "token_id", ref(r, 1, "tok", run, ev->token));
		node_fields(x, ev, r);
		str(r, "status", ev->ok ? "completed" : "failed");
		real(r, "duration_ms", (double)ev->duration_ns / 1e6);
		str(r, "input_hash", hash(ev->in_hash));
		str(r, "output_hash", hash(ev->out_hash));
		break;
	case TEL_GATE_EVALUATED: {
		tel_field *f;

		str(r, "row_id", ref(r, 0, "row", run, ev->row));
		str(r, "token_id", ref(r, 1, "tok", run, ev->token));
		node_fields(x, ev, r);
		str(r, "routing_mode", ev->mode);
		if (ev->extra) {
			json(r, "destinations", ev->extra);
		} else {
			f = add(r, "destinations", TEL_F_STRS);
			f->strs = ev->dests;
			f->nstrs = ev->ndests;
		}
		break;
	}
	case TEL_TOKEN_COMPLETED:
		str(r, "row_id", ref(r, 0, "row", run, ev->row));
		str(r, "token_id", ref(r, 1, "tok", run, ev->token));
		str(r, "outcome", lower_outcome(ev));
		str(r, "sink_name", NULL);
		break;
	case TEL_EXTERNAL_CALL_COMPLETED:
		call_fields(x, ev, r);
		break;
	case TEL_TYPE_LAST:
	case TEL_METRICS: /* not an event (manager.c) */
		break;
	}
}

void tel__record_release(tel_record *r)
{
	json_decref(r->owned);
	r->owned = NULL;
}

json_t *tel__field_json(const tel_field *f)
{
	json_t *a;

	switch (f->type) {
	case TEL_F_STR:
		return json_string(f->s);
	case TEL_F_INT:
		return json_integer((json_int_t)f->i);
	case TEL_F_REAL:
		return json_real(f->d);
	case TEL_F_JSON:
		return json_deep_copy(f->j);
	case TEL_F_STRS:
		if (!(a = json_array()))
			return NULL;
		for (size_t i = 0; i < f->nstrs; i++)
			json_array_append_new(a, json_string(f->strs[i]));
		return a;
	case TEL_F_NULL:
		break;
	}
	return NULL;
}
