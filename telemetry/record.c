/*
 * record.c — a queued event as ELSPETH's event dataclass would give it
 * to an exporter (contracts/events.py, to_dict): its fields in their
 * declaration order, after run_id, None kept as null. Ids are the SQL
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

void tel__iso(uint64_t at_ns, char out[40])
{
	time_t sec = (time_t)(at_ns / 1000000000u);
	unsigned long us = (unsigned long)(at_ns % 1000000000u / 1000u);
	struct tm tm;
	size_t n;

	gmtime_r(&sec, &tm);
	n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	if (us)
		n += (size_t)snprintf(out + n, 40 - n, ".%06lu", us);
	snprintf(out + n, 40 - n, "+00:00");
}

static json_t *ref(const tel_ctx *x, const char *kind, uint64_t id)
{
	char b[128];

	snprintf(b, sizeof(b), "%s-%s-%llu", kind, x->run_label, (unsigned long long)id);
	return json_string(b);
}

/* key: v (borrowed), or null when v is NULL. */
static void put(json_t *f, const char *key, json_t *v)
{
	json_object_set_new(f, key, v ? json_incref(v) : json_null());
}

static json_t *hash_or_null(const char *h)
{
	return h[0] ? json_string(h) : json_null();
}

/* Python's float for a duration in ns. */
static json_t *ms(uint64_t ns)
{
	return json_real((double)ns / 1e6);
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

/* TokenUsage.to_dict(): the counts the answer gave. */
static json_t *token_usage(const json_t *response)
{
	const json_t *u = json_object_get(response, "usage");
	json_t *out;

	if (!json_is_object(u))
		return json_null();
	out = json_object();
	if (json_is_integer(json_object_get(u, "prompt_tokens")))
		json_object_set(out, "prompt_tokens", json_object_get(u, "prompt_tokens"));
	if (json_is_integer(json_object_get(u, "completion_tokens")))
		json_object_set(out, "completion_tokens", json_object_get(u, "completion_tokens"));
	return out;
}

static void node_fields(const tel_ctx *x, const tel_ev *ev, json_t *f)
{
	const tel_node *n = ev->node >= 0 && (size_t)ev->node < x->nnodes ?
			    &x->nodes[ev->node] : NULL;

	json_object_set_new(f, "node_id", json_string(n ? n->id : ""));
	json_object_set_new(f, "plugin_name", json_string(n && n->plugin ? n->plugin : ""));
}

static void call_fields(const tel_ctx *x, const tel_ev *ev, json_t *f)
{
	const tel_node *n = ev->node >= 0 && (size_t)ev->node < x->nnodes ?
			    &x->nodes[ev->node] : NULL;
	const json_t *e = ev->extra;
	json_t *resp = json_object_get(e, "response");

	put(f, "call_type", json_object_get(e, "call_type"));
	json_object_set_new(f, "provider", json_string(n && n->provider ? n->provider :
						       n && n->plugin ? n->plugin : ""));
	json_object_set_new(f, "status", json_string(ev->ok ? "success" : "error"));
	json_object_set_new(f, "latency_ms", ms(ev->duration_ns));
	json_object_set_new(f, "state_id", ev->state ? ref(x, "st", ev->state) : json_null());
	json_object_set_new(f, "operation_id", json_null());
	json_object_set_new(f, "token_id", ref(x, "tok", ev->token));
	json_object_set_new(f, "request_hash", hash_or_null(ev->in_hash));
	json_object_set_new(f, "response_hash", hash_or_null(ev->out_hash));
	put(f, "request_payload", json_object_get(e, "request"));
	put(f, "response_payload", resp);
	json_object_set_new(f, "token_usage", token_usage(resp));
}

int tel__record(const tel_ctx *x, const tel_ev *ev, tel_record *out)
{
	json_t *f = json_object();

	out->type = tel__type_name(ev->type);
	out->at_ns = ev->at_ns;
	out->run_id = x->run_label;
	out->fields = f;
	if (!f)
		return CORE_ENOMEM;
	json_object_set_new(f, "run_id", json_string(x->run_label));
	switch (ev->type) {
	case TEL_RUN_STARTED:
		json_object_set_new(f, "config_hash", json_string(ev->in_hash));
		json_object_set_new(f, "source_plugin", json_string(x->source_plugin));
		break;
	case TEL_RUN_FINISHED:
		json_object_set_new(f, "status", json_string(ev->status));
		json_object_set_new(f, "row_count", json_integer((json_int_t)ev->rows));
		json_object_set_new(f, "duration_ms", ms(ev->duration_ns));
		break;
	case TEL_PHASE_CHANGED:
		json_object_set_new(f, "phase", json_string(ev->phase));
		json_object_set_new(f, "action", json_string(ev->action));
		break;
	case TEL_FIELD_RESOLUTION_APPLIED: {
		json_t *m = json_object_get(ev->extra, "mapping");

		json_object_set_new(f, "source_plugin", json_string(x->source_plugin));
		json_object_set_new(f, "field_count", json_integer((json_int_t)json_object_size(m)));
		put(f, "normalization_version", json_object_get(ev->extra, "version"));
		put(f, "resolution_mapping", m);
		break;
	}
	case TEL_ROW_CREATED:
		json_object_set_new(f, "row_id", ref(x, "row", ev->row));
		json_object_set_new(f, "token_id", ref(x, "tok", ev->token));
		json_object_set_new(f, "content_hash", hash_or_null(ev->in_hash));
		break;
	case TEL_TRANSFORM_COMPLETED:
		json_object_set_new(f, "row_id", ref(x, "row", ev->row));
		json_object_set_new(f, "token_id", ref(x, "tok", ev->token));
		node_fields(x, ev, f);
		json_object_set_new(f, "status", json_string(ev->ok ? "completed" : "failed"));
		json_object_set_new(f, "duration_ms", ms(ev->duration_ns));
		json_object_set_new(f, "input_hash", hash_or_null(ev->in_hash));
		json_object_set_new(f, "output_hash", hash_or_null(ev->out_hash));
		break;
	case TEL_GATE_EVALUATED:
		json_object_set_new(f, "row_id", ref(x, "row", ev->row));
		json_object_set_new(f, "token_id", ref(x, "tok", ev->token));
		node_fields(x, ev, f);
		json_object_set_new(f, "routing_mode", json_string(ev->mode));
		put(f, "destinations", ev->extra);
		break;
	case TEL_TOKEN_COMPLETED:
		json_object_set_new(f, "row_id", ref(x, "row", ev->row));
		json_object_set_new(f, "token_id", ref(x, "tok", ev->token));
		json_object_set_new(f, "outcome", json_string(lower_outcome(ev)));
		json_object_set_new(f, "sink_name", json_null());
		break;
	case TEL_EXTERNAL_CALL_COMPLETED:
		call_fields(x, ev, f);
		break;
	case TEL_TYPE_LAST:
	case TEL_METRICS: /* not an event (manager.c) */
		break;
	}
	return 0;
}
