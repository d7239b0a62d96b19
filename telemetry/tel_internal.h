/* tel_internal.h — shared between telemetry's files; not a contract. */
#ifndef ELSPETH_TEL_INTERNAL_H
#define ELSPETH_TEL_INTERNAL_H

#include <jansson.h>

#include "telemetry/telemetry.h"

/* ELSPETH's event types (contracts/events.py), in eng_event_kind's order
 * where the engine reports them. */
typedef enum tel_type {
	TEL_RUN_STARTED, TEL_PHASE_CHANGED, TEL_FIELD_RESOLUTION_APPLIED,
	TEL_ROW_CREATED, TEL_TRANSFORM_COMPLETED, TEL_GATE_EVALUATED,
	TEL_TOKEN_COMPLETED, TEL_EXTERNAL_CALL_COMPLETED, TEL_RUN_FINISHED,
	TEL_TYPE_LAST,
	TEL_METRICS = 64           /* not an event: a metric sample (extra) */
} tel_type;

const char *tel__type_name(tel_type t);

/* One queued event: what the exporter thread needs, copied. */
#define TEL_DESTS 8
typedef struct tel_ev {
	tel_type type;
	uint64_t at_ns, run_id, row, token, state, rows, duration_ns;
	int node;                  /* the graph's node index, -1: none */
	bool ok, discarded;
	eng_outcome outcome;
	char in_hash[65], out_hash[65];
	const char *phase, *action, *status, *mode; /* static strings */
	/* GATE: where it went (the graph's names, valid for the run) */
	const char *dests[TEL_DESTS];
	size_t ndests;
	json_t *extra;             /* owned: FIELDS {mapping, version}; GATE
				    * [dests] beyond TEL_DESTS; CALL {type,
				    * request, response}; METRICS the sample */
} tel_ev;

/* One field of an event, as ELSPETH's to_dict() gives it. Strings and
 * JSON are borrowed (the event's slot, the graph, the record). */
typedef enum tel_ftype { TEL_F_NULL, TEL_F_STR, TEL_F_INT, TEL_F_REAL, TEL_F_JSON,
			 TEL_F_STRS } tel_ftype;
typedef struct tel_field {
	const char *key;
	tel_ftype type;
	const char *s;             /* STR */
	int64_t i;                 /* INT */
	double d;                  /* REAL */
	const json_t *j;           /* JSON: a mapping or a list */
	const char *const *strs;   /* STRS: a list of strings */
	size_t nstrs;
} tel_field;

#define TEL_FIELDS 16
/* An event as exporters see it: its type and time, and its fields —
 * run_id first, then the event's in its declaration order, None kept as
 * TEL_F_NULL. Built without allocating. */
typedef struct tel_record {
	const char *type;
	uint64_t at_ns;            /* wall clock */
	const char *run_id;
	tel_field f[TEL_FIELDS];
	size_t n;
	char ids[4][96];           /* the ids the fields point to */
	json_t *owned;             /* what a field's JSON needed made (a
				    * call's token usage); released by
				    * tel__record_release */
} tel_record;

/* The node names ELSPETH gives (kind_name_hash12) and their plugins. */
typedef struct tel_node {
	char id[192];
	const char *plugin;        /* ELSPETH's plugin_name: a gate's name */
	const char *provider;      /* an LLM transform's provider option */
} tel_node;

typedef struct tel_ctx {
	char run_label[64];        /* the run id as the SQL trail writes it */
	tel_node *nodes;
	size_t nnodes;
	const char *source_plugin;
} tel_ctx;

/* The fields of ev (x: names of the run and its nodes). */
void tel__record(const tel_ctx *x, const tel_ev *ev, tel_record *out);
void tel__record_release(tel_record *r);
/* A field as JSON (a new reference; NULL for TEL_F_NULL or no memory). */
json_t *tel__field_json(const tel_field *f);


/* An exporter. configure checks options (NULL: none) and may keep
 * pointers into them (the settings outlive the manager); it connects to
 * nothing. export returns 0, or an error (err set) when the event could
 * not be delivered — it counts towards the failure rules. */
typedef struct tel_exporter_ops {
	const char *name;
	int (*configure)(const core_node *options, void **state, core_err *err);
	int (*export)(void *state, const tel_record *r, core_err *err);
	int (*flush)(void *state, core_err *err);
	void (*close)(void *state);
	/* Optional: the run's metrics (a sample as tel_sample makes it:
	 * counters so far and gauges now), about once a second; the
	 * exporter decides how often it sends. */
	int (*metrics)(void *state, const json_t *sample, core_err *err);
	/* Optional: the queue is empty for now (a console writes the lines
	 * it holds). A failure is warned about, not counted. */
	int (*idle)(void *state, core_err *err);
} tel_exporter_ops;

extern const tel_exporter_ops tel__console, tel__otlp, tel__datadog, tel__azure;
const tel_exporter_ops *tel__exporter(const char *name);

/* Option checks in ELSPETH's words, the error at the option's position
 * (or the options' / exporter's when absent), prefixed "Exporter 'NAME'
 * failed: " as ELSPETH's TelemetryExporterError prints. */
typedef struct tel_opts {
	const char *exporter;
	const core_node *map;      /* may be NULL */
	const core_node *at;       /* where to point when a key is absent */
} tel_opts;
int tel__fail(const tel_opts *o, const char *key, core_err *err, const char *fmt, ...)
	CORE_PRINTF(4, 5);
/* A string; absent or null: *out untouched (required: ELSPETH's
 * message `missing`). nullable: null is allowed (*out NULL). */
int tel__opt_str(const tel_opts *o, const char *key, const char *missing,
		 bool nullable, const char **out, core_err *err);
/* An integer >= min (bools count, as in Python). */
int tel__opt_int(const tel_opts *o, const char *key, const char *missing,
		 long long min, long long *out, core_err *err);
/* A map of strings to strings (null: none), e.g. headers. */
int tel__opt_headers(const tel_opts *o, const char *key, json_t **out, core_err *err);

/* ELSPETH's trace id of a run: the first 16 bytes of SHA-256(run id). */
uint8_t *tel__trace_id(const char *run_id, uint8_t out[16]);


#endif
