/*
 * manager.c — the telemetry manager (telemetry.h; ELSPETH's
 * TelemetryManager, docs/observability.md): a bounded queue of 1,000
 * events (ELSPETH's fixed size), one export thread, and ELSPETH's rules
 * for backpressure and failures:
 *
 *   - block: a full queue makes the producer wait, up to 30 s; then the
 *     event is dropped and counted;
 *   - drop: a full queue loses its oldest event for the new one, counted;
 *     a warning every 100 drops;
 *   - each event goes to every exporter in order; when all of them fail
 *     it is dropped, and after max_consecutive_failures such events in a
 *     row either the error is kept for tel_flush (fail_on_total_exporter_
 *     failure: true) or telemetry is switched off (false).
 *
 * Producers (the engine's threads) copy an event into a slot and return;
 * everything else — ids, JSON, hashing call bodies, the exporters' I/O —
 * happens on the export thread.
 */
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "telemetry/tel_internal.h"

#define QUEUE_CAP 1000        /* ELSPETH's INTERNAL_DEFAULTS queue_size */
#define BLOCK_TIMEOUT_S 30    /* ELSPETH's put(timeout=30.0) */
#define DROP_WARN_EVERY 100
/* The export thread is woken when this many events wait (or a run's
 * lifecycle event comes); else it looks every WAKE_MS: a futex wake per
 * event cost more than the event itself. */
#define WAKE_BATCH 64
#define WAKE_MS 20
#define WARN_KEEP 32          /* warnings held for tel_next_warning */

typedef struct exporter {
	const tel_exporter_ops *ops;
	void *state;
	char name[64];
	uint64_t failures;
	bool failing;              /* its last export failed */
} exporter;

/* A call's bodies, copied by the producer, hashed and parsed later. */
typedef struct call_copy {
	char *req, *resp;
	size_t req_len, resp_len;
	const char *call_type;
} call_copy;

typedef struct slot {
	tel_ev ev;
	call_copy call;
} slot;

struct tel_manager {
	tel_ctx x;
	exporter ex[TEL_MAX_EXPORTERS];
	size_t nex;
	unsigned mask;
	bool drop_mode, fail_on_total;
	bool has_metrics;          /* an exporter takes metric samples */
	uint64_t max_failures;
	char warns[WARN_KEEP][512]; /* under mu */
	size_t warn_head, warn_len;
	uint64_t warns_lost;

	pthread_mutex_t mu;
	pthread_cond_t not_empty, not_full, idle;
	slot *q;
	size_t head, len;
	bool busy;                 /* the thread holds an event */
	bool sleeping;             /* the thread waits for events */
	bool stopping, flush_req;
	pthread_t thread;
	bool started;

	/* the export thread's, read after it is joined or idle */
	uint64_t emitted, dropped, dropped_logged, consecutive;
	bool disabled;
	bool failed_total;
	core_err total_err;
};

/* ---------------------------------------------------------------- masks */

static unsigned mask_of(int granularity)
{
	unsigned m = 1u << ENG_EV_RUN_STARTED | 1u << ENG_EV_PHASE |
		     1u << ENG_EV_RUN_FINISHED;

	if (granularity >= CORE_TEL_ROWS)
		m |= 1u << ENG_EV_FIELDS | 1u << ENG_EV_ROW_CREATED |
		     1u << ENG_EV_TRANSFORM | 1u << ENG_EV_GATE | 1u << ENG_EV_TOKEN;
	if (granularity >= CORE_TEL_FULL)
		m |= 1u << ENG_EV_CALL;
	return m;
}

unsigned tel_event_mask(const tel_manager *m)
{
	return m ? m->mask : 0;
}

/* ---------------------------------------------------------------- warn */

/* Keeps a warning for tel_next_warning; mu held. */
static void warnf(tel_manager *m, const char *fmt, ...) CORE_PRINTF(2, 3);
static void warnf(tel_manager *m, const char *fmt, ...)
{
	va_list ap;

	if (m->warn_len == WARN_KEEP) {
		m->warns_lost++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(m->warns[(m->warn_head + m->warn_len) % WARN_KEEP], sizeof(m->warns[0]),
		  fmt, ap);
	va_end(ap);
	m->warn_len++;
}

bool tel_next_warning(tel_manager *m, char *buf, size_t cap)
{
	bool got = false;

	if (!m)
		return false;
	pthread_mutex_lock(&m->mu);
	if (m->warn_len) {
		snprintf(buf, cap, "%s", m->warns[m->warn_head]);
		m->warn_head = (m->warn_head + 1) % WARN_KEEP;
		m->warn_len--;
		got = true;
	} else if (m->warns_lost) {
		snprintf(buf, cap, "telemetry: %llu more warnings not shown",
			 (unsigned long long)m->warns_lost);
		m->warns_lost = 0;
		got = true;
	}
	pthread_mutex_unlock(&m->mu);
	return got;
}

/* ---------------------------------------------------------------- queue */

static void slot_release(slot *s)
{
	json_decref(s->ev.extra);
	free(s->call.req);
	free(s->call.resp);
	memset(s, 0, sizeof(*s));
}

static void count_drop(tel_manager *m)
{
	m->dropped++;
	if (m->dropped - m->dropped_logged >= DROP_WARN_EVERY) {
		warnf(m, "telemetry: %llu events dropped due to backpressure (%llu in all, "
		      "backpressure_mode %s)",
		      (unsigned long long)(m->dropped - m->dropped_logged),
		      (unsigned long long)m->dropped, m->drop_mode ? "drop" : "block");
		m->dropped_logged = m->dropped;
	}
}

static bool urgent(const slot *s)
{
	return s->ev.type == TEL_RUN_STARTED || s->ev.type == TEL_PHASE_CHANGED ||
	       s->ev.type == TEL_RUN_FINISHED;
}

/* Queues s[0..n) in order under one hold of the lock; each slot's
 * contents move into the queue or are released. */
static void push_many(tel_manager *m, slot *s, size_t n)
{
	struct timespec until;
	bool wake = false;

	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < n; i++) {
		if (m->stopping || m->disabled) {
			slot_release(&s[i]);
			continue;
		}
		if (m->len == QUEUE_CAP && m->drop_mode) {
			slot_release(&m->q[m->head]);  /* the oldest goes */
			m->head = (m->head + 1) % QUEUE_CAP;
			m->len--;
			count_drop(m);
		}
		if (m->len == QUEUE_CAP) {
			pthread_cond_signal(&m->not_empty);
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += BLOCK_TIMEOUT_S;
			while (m->len == QUEUE_CAP && !m->stopping)
				if (pthread_cond_timedwait(&m->not_full, &m->mu, &until) == ETIMEDOUT)
					break;
			if (m->len == QUEUE_CAP || m->stopping) {
				count_drop(m);
				slot_release(&s[i]);
				continue;
			}
		}
		m->q[(m->head + m->len) % QUEUE_CAP] = s[i];
		m->len++;
		wake |= urgent(&s[i]);
	}
	if (m->sleeping && (wake || m->len >= WAKE_BATCH))
		pthread_cond_signal(&m->not_empty);
	pthread_mutex_unlock(&m->mu);
}

/* A row's events wait in a small batch of their thread's and are queued
 * BATCH at a time: a lock taken per event was most of a `rows` run's
 * cost with many workers. A thread's batch is queued when full, before
 * any lifecycle event it sends, at its exit (the engine's workers end
 * before the run does), and by tel_flush for the thread that calls it.
 * Outside calls, which may come from the HTTP executor's long-lived
 * thread, are never held. */
#define BATCH 16
typedef struct batch {
	tel_manager *m;
	size_t n;
	slot s[BATCH];
} batch;

static pthread_key_t batch_key;
static pthread_once_t batch_once = PTHREAD_ONCE_INIT;

static void batch_drain(batch *b)
{
	if (b && b->n) {
		push_many(b->m, b->s, b->n);
		b->n = 0;
	}
}

static void batch_exit(void *p)
{
	batch_drain(p);
	free(p);
}

static void batch_key_make(void)
{
	pthread_key_create(&batch_key, batch_exit);
}

static batch *my_batch(void)
{
	pthread_once(&batch_once, batch_key_make);
	return pthread_getspecific(batch_key);
}

/* Takes s (its contents move into the queue, or are released). */
static void push(tel_manager *m, slot *s)
{
	batch *b = my_batch();

	if (s->ev.type != TEL_TRANSFORM_COMPLETED && s->ev.type != TEL_GATE_EVALUATED &&
	    s->ev.type != TEL_TOKEN_COMPLETED && s->ev.type != TEL_ROW_CREATED) {
		if (b && b->m == m)
			batch_drain(b); /* a thread's events stay in order */
		push_many(m, s, 1);
		return;
	}
	if (!b && (b = calloc(1, sizeof(*b))) && pthread_setspecific(batch_key, b)) {
		free(b);
		b = NULL;
	}
	if (!b) {
		push_many(m, s, 1);
		return;
	}
	if (b->m != m)
		batch_drain(b); /* another run's, from this thread */
	b->m = m;
	b->s[b->n++] = *s;
	if (b->n == BATCH)
		batch_drain(b);
}

/* --------------------------------------------------------- producers */

static char *copy_bytes(const void *p, size_t n)
{
	char *c;

	if (!p || !(c = malloc(n + 1)))
		return NULL;
	memcpy(c, p, n);
	c[n] = '\0';
	return c;
}

static void copy_hash(char dst[65], const char *src)
{
	size_t n = src ? strnlen(src, 64) : 0;

	memcpy(dst, src ? src : "", n);
	dst[n] = '\0';
}

void tel_engine_event(void *ctx, const eng_event *ev)
{
	tel_manager *m = ctx;
	slot s = { .ev = { .type = (tel_type)ev->kind, .at_ns = ev->at_ns,
			   .run_id = ev->run_id, .row = ev->row, .token = ev->token,
			   .state = ev->state, .rows = ev->rows,
			   .duration_ns = ev->duration_ns,
			   .node = ev->node ? ev->node->id : -1, .ok = ev->ok,
			   .discarded = ev->discarded, .outcome = ev->outcome,
			   .phase = ev->phase, .action = ev->action,
			   .status = ev->status, .mode = ev->mode } };

	if (!(m->mask & (1u << ev->kind)))
		return;
	copy_hash(s.ev.in_hash, ev->kind == ENG_EV_RUN_STARTED ? ev->settings_hash : ev->in_hash);
	copy_hash(s.ev.out_hash, ev->out_hash);
	switch (ev->kind) {
	case ENG_EV_FIELDS:
		/* A copy: reference counts are not for sharing across threads
		 * (jansson reads them unlocked). */
		s.ev.extra = json_pack("{s:o,s:s?,s:s?}", "mapping", json_deep_copy(ev->fields),
				       "version", ev->fields_version,
				       "plugin", ev->node ? ev->node->plugin : NULL);
		break;
	case ENG_EV_GATE: /* the names are the graph's: they outlive the run */
		if (ev->ndests <= TEL_DESTS) {
			memcpy(s.ev.dests, ev->dests, ev->ndests * sizeof(*ev->dests));
			s.ev.ndests = ev->ndests;
			break;
		}
		s.ev.extra = json_array();
		for (size_t i = 0; s.ev.extra && i < ev->ndests; i++)
			json_array_append_new(s.ev.extra, json_string(ev->dests[i]));
		break;
	case ENG_EV_CALL:
		s.ev.duration_ns = ev->call->completed_ns > ev->call->submitted_ns ?
				   ev->call->completed_ns - ev->call->submitted_ns : 0;
		s.call.req = copy_bytes(ev->call->request, ev->call->request_len);
		s.call.req_len = ev->call->request_len;
		s.call.resp = copy_bytes(ev->call->response, ev->call->response_len);
		s.call.resp_len = ev->call->response_len;
		s.call.call_type = ev->call->call_type; /* a literal */
		break;
	default:
		break;
	}
	push(m, &s);
}

void tel_sample(tel_manager *m, const eng_sample *s)
{
	slot q = { .ev = { .type = TEL_METRICS, .at_ns = s->at_ns, .run_id = s->run_id,
			   .node = -1 } };
	json_t *j, *o, *c, *ups;

	if (!m || !m->has_metrics)
		return;
	o = json_object();
	for (int i = 0; o && i < ENG_OUTCOME_LAST; i++)
		if (s->outcomes[i])
			json_object_set_new(o, eng_outcome_name((eng_outcome)i),
					    json_integer((json_int_t)s->outcomes[i]));
	c = json_object();
	for (int i = 0; c && i < ENG_CALL_CLASSES; i++)
		if (s->calls_by_class[i])
			json_object_set_new(c, eng_call_classes[i],
					    json_integer((json_int_t)s->calls_by_class[i]));
	ups = json_array();
	for (size_t i = 0; ups && i < s->nupstreams; i++) {
		const plg_capacity *cap = &s->upstreams[i].cap;

		json_array_append_new(ups, json_pack("{s:s,s:s,s:I,s:I,s:f,s:f,s:I,s:f,s:f}",
			"node", s->upstreams[i].name, "upstream", cap->upstream ? cap->upstream : "",
			"requests", (json_int_t)cap->requests, "refusals", (json_int_t)cap->refusals,
			"pace", cap->rate, "window", cap->window, "in_flight", (json_int_t)cap->in_flight,
			"p50", cap->p50_s, "p99", cap->p99_s));
	}
	j = json_pack("{s:I,s:I,s:b,s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:I,s:o,s:o}",
		"at_ns", (json_int_t)s->at_ns, "elapsed_ns", (json_int_t)s->elapsed_ns,
		"final", s->final, "pulled", (json_int_t)s->pulled,
		"released", (json_int_t)s->released, "in_flight", (json_int_t)s->in_flight,
		"waiting", (json_int_t)s->waiting, "waiting_bytes", (json_int_t)s->waiting_bytes,
		"outcomes", o, "calls", (json_int_t)s->calls, "calls_ok", (json_int_t)s->calls_ok,
		"calls_replayed", (json_int_t)s->calls_replayed, "calls_by_class", c,
		"upstreams", ups);
	if (!j)
		return;
	q.ev.extra = j;
	push(m, &q);
}

void tel_phase(tel_manager *m, uint64_t run_id, const char *phase, const char *action)
{
	slot s = { .ev = { .type = TEL_PHASE_CHANGED, .at_ns = core_now_wall_ns(),
			   .run_id = run_id, .node = -1, .phase = phase, .action = action } };

	if (m)
		push(m, &s);
}

/* ------------------------------------------------------- export thread */

static void hex_of(const char *p, size_t n, char out[65])
{
	uint8_t d[CORE_SHA256_LEN];

	out[0] = '\0';
	if (!p)
		return;
	core_sha256(p, n, d);
	core_hex(d, sizeof(d), out);
}

/* A body as JSON (an object ELSPETH's CallPayload holds), else its text. */
static json_t *body_json(const char *p, size_t n)
{
	json_t *j;

	if (!p)
		return NULL;
	if ((j = json_loadb(p, n, JSON_DECODE_ANY, NULL)))
		return j;
	return json_stringn(p, n);
}

static void call_extra(slot *s)
{
	hex_of(s->call.req, s->call.req_len, s->ev.in_hash);
	hex_of(s->call.resp, s->call.resp_len, s->ev.out_hash);
	s->ev.extra = json_pack("{s:s,s:o?,s:o?}", "call_type",
				s->call.call_type ? s->call.call_type : "llm",
				"request", body_json(s->call.req, s->call.req_len),
				"response", body_json(s->call.resp, s->call.resp_len));
}

static void set_run_label(tel_manager *m, uint64_t run_id)
{
	if (run_id)
		snprintf(m->x.run_label, sizeof(m->x.run_label), "%llu",
			 (unsigned long long)run_id);
}

static void dispatch(tel_manager *m, slot *s)
{
	tel_record r;
	size_t failed = 0;
	core_err err;

	if (s->ev.run_id)
		set_run_label(m, s->ev.run_id);
	if (s->ev.type == TEL_METRICS) {
		json_object_set_new(s->ev.extra, "run_id", json_string(m->x.run_label));
		for (size_t i = 0; i < m->nex; i++) {
			if (!m->ex[i].ops->metrics)
				continue;
			memset(&err, 0, sizeof(err));
			if (m->ex[i].ops->metrics(m->ex[i].state, s->ev.extra, &err)) {
				m->ex[i].failures++;
				pthread_mutex_lock(&m->mu);
				warnf(m, "telemetry exporter '%s': metrics not delivered: %s",
				      m->ex[i].name, err.msg);
				pthread_mutex_unlock(&m->mu);
			}
		}
		return;
	}
	if (s->ev.type == TEL_EXTERNAL_CALL_COMPLETED)
		call_extra(s);
	tel__record(&m->x, &s->ev, &r);
	for (size_t i = 0; i < m->nex; i++) {
		memset(&err, 0, sizeof(err));
		if (!m->ex[i].ops->export(m->ex[i].state, &r, &err)) {
			m->ex[i].failing = false;
			continue;
		}
		failed++;
		m->ex[i].failures++;
		if (!m->ex[i].failing) { /* once per streak of failures */
			pthread_mutex_lock(&m->mu);
			warnf(m, "telemetry exporter '%s' failed on %s: %s", m->ex[i].name,
			      r.type, err.msg);
			pthread_mutex_unlock(&m->mu);
		}
		m->ex[i].failing = true;
	}
	tel__record_release(&r);
	if (!m->nex || failed < m->nex) {
		m->emitted++;
		m->consecutive = 0;
		return;
	}
	m->consecutive++;
	pthread_mutex_lock(&m->mu);
	count_drop(m);
	if (m->consecutive >= m->max_failures && m->fail_on_total && !m->failed_total) {
		core_err_set(&m->total_err, CORE_EIO,
			"Exporter 'all' failed: All %zu exporters failed %llu consecutive times.",
			m->nex, (unsigned long long)m->consecutive);
		m->failed_total = true;
	} else if (m->consecutive >= m->max_failures && !m->fail_on_total && !m->disabled) {
		warnf(m, "telemetry disabled after repeated total failures (%llu consecutive, "
		      "%llu events dropped)", (unsigned long long)m->consecutive,
		      (unsigned long long)m->dropped);
		m->disabled = true;
	}
	pthread_mutex_unlock(&m->mu);
}

static void flush_exporters(tel_manager *m)
{
	core_err err;

	for (size_t i = 0; i < m->nex; i++) {
		memset(&err, 0, sizeof(err));
		if (m->ex[i].ops->flush && m->ex[i].ops->flush(m->ex[i].state, &err)) {
			m->ex[i].failures++;
			pthread_mutex_lock(&m->mu);
			warnf(m, "telemetry exporter '%s': flush failed: %s", m->ex[i].name,
			      err.msg);
			pthread_mutex_unlock(&m->mu);
		}
	}
}

static void idle_exporters(tel_manager *m)
{
	core_err err;

	for (size_t i = 0; i < m->nex; i++) {
		memset(&err, 0, sizeof(err));
		if (m->ex[i].ops->idle && m->ex[i].ops->idle(m->ex[i].state, &err)) {
			pthread_mutex_lock(&m->mu);
			warnf(m, "telemetry exporter '%s': %s", m->ex[i].name, err.msg);
			pthread_mutex_unlock(&m->mu);
		}
	}
}

static void *export_main(void *arg)
{
	tel_manager *m = arg;
	bool idle = false;         /* the exporters were told, nothing since */
	slot s;

	pthread_mutex_lock(&m->mu);
	for (;;) {
		/* Nothing queued: wait; after a quiet WAKE_MS the exporters
		 * hear that the queue is idle (a console writes its lines). */
		while (!m->len && !m->stopping && !m->flush_req) {
			struct timespec until;

			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += WAKE_MS * 1000000L;
			if (until.tv_nsec >= 1000000000L) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			m->sleeping = true;
			if (pthread_cond_timedwait(&m->not_empty, &m->mu, &until) == ETIMEDOUT &&
			    !m->len && !idle) {
				m->sleeping = false;
				pthread_mutex_unlock(&m->mu);
				idle_exporters(m);
				pthread_mutex_lock(&m->mu);
				idle = true;
			}
			m->sleeping = false;
		}
		idle = false;
		if (m->len) {
			s = m->q[m->head];
			memset(&m->q[m->head], 0, sizeof(slot));
			m->head = (m->head + 1) % QUEUE_CAP;
			m->len--;
			m->busy = true;
			pthread_cond_signal(&m->not_full);
			pthread_mutex_unlock(&m->mu);
			dispatch(m, &s);
			slot_release(&s);
			pthread_mutex_lock(&m->mu);
			m->busy = false;
			continue;
		}
		if (m->flush_req) {
			pthread_mutex_unlock(&m->mu);
			flush_exporters(m);
			pthread_mutex_lock(&m->mu);
			m->flush_req = false;
			pthread_cond_broadcast(&m->idle);
			continue;
		}
		if (m->stopping)
			break;
	}
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

/* ------------------------------------------------------------- nodes */

static const char *kind_prefix(dag_kind k)
{
	switch (k) {
	case DAG_SOURCE: return "source";
	case DAG_TRANSFORM: return "transform";
	case DAG_GATE: return "config_gate";
	case DAG_COALESCE: return "coalesce";
	case DAG_AGGREGATION: return "aggregation";
	case DAG_SINK: return "sink";
	case DAG_QUEUE: return "queue";
	}
	return "node";
}

static int build_nodes(tel_manager *m, const dag_graph *g, core_err *err)
{
	char h[65];
	int rc;

	m->x.nodes = calloc(g->nnodes ? g->nnodes : 1, sizeof(*m->x.nodes));
	if (!m->x.nodes)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	m->x.nnodes = g->nnodes;
	for (size_t i = 0; i < g->nnodes; i++) {
		const dag_node *n = &g->nodes[i];
		tel_node *t = &m->x.nodes[i];
		const core_node *p = core_map_get(n->options, "provider");

		if ((rc = eng_node_hash(n, h, err)))
			return rc;
		snprintf(t->id, sizeof(t->id), "%s_%s_%.12s", kind_prefix(n->kind),
			 n->kind == DAG_SOURCE ? n->plugin : n->name, h);
		t->plugin = n->kind == DAG_GATE ? n->name : n->plugin;
		/* the LLM client's provider: its option, else the plugin's
		 * default (azure_* are Azure's, the rest OpenRouter's) */
		t->provider = p && p->kind == CORE_NODE_SCALAR ? p->value :
			      !n->plugin || !strstr(n->plugin, "llm") ? NULL :
			      !strncmp(n->plugin, "azure", 5) ? "azure" : "openrouter";
	}
	m->x.source_plugin = g->nnodes ? g->nodes[0].plugin : "";
	return 0;
}

/* ------------------------------------------------------------- open */

const tel_exporter_ops *tel__exporter(const char *name)
{
	static const tel_exporter_ops *const all[] = {
		&tel__azure, &tel__console, &tel__datadog, &tel__otlp, NULL
	};

	for (size_t i = 0; all[i]; i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}

static int configure(const core_exporter_cfg *c, exporter *e, core_err *err)
{
	if (!(e->ops = tel__exporter(c->name)))
		return core_err_at(err, CORE_ECONFIG, core_map_get(c->node, "name"),
			"Exporter '%s' failed: Unknown exporter. Available exporters: "
			"['azure_monitor', 'console', 'datadog', 'otlp']", c->name);
	snprintf(e->name, sizeof(e->name), "%s", c->name);
	return e->ops->configure(c->options, &e->state, err);
}

int tel_check(const core_telemetry_cfg *cfg, core_err *err)
{
	int rc = 0;

	if (!cfg->enabled)
		return 0;
	if (cfg->nexporters > TEL_MAX_EXPORTERS)
		return core_err_at(err, CORE_ECONFIG, core_map_get(cfg->node, "exporters"),
				   "at most %d exporters", TEL_MAX_EXPORTERS);
	for (size_t i = 0; !rc && i < cfg->nexporters; i++) {
		exporter e = { 0 };

		rc = configure(&cfg->exporters[i], &e, err);
		if (e.ops && e.state)
			e.ops->close(e.state);
	}
	return rc;
}

static void free_manager(tel_manager *m)
{
	for (size_t i = 0; i < m->nex; i++)
		if (m->ex[i].state)
			m->ex[i].ops->close(m->ex[i].state);
	if (m->q)
		for (size_t i = 0; i < m->len; i++)
			slot_release(&m->q[(m->head + i) % QUEUE_CAP]);
	free(m->q);
	free(m->x.nodes);
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->not_empty);
	pthread_cond_destroy(&m->not_full);
	pthread_cond_destroy(&m->idle);
	free(m);
}

int tel_open(const core_settings *s, const dag_graph *g, tel_manager **out,
	     core_err *err)
{
	const core_telemetry_cfg *cfg = &s->telemetry;
	tel_manager *m;
	uint8_t rnd[16];
	int rc;

	*out = NULL;
	if (!cfg->enabled)
		return 0;
	if ((rc = tel_check(cfg, err)))
		return rc;
	if (!(m = calloc(1, sizeof(*m))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->not_empty, NULL);
	pthread_cond_init(&m->not_full, NULL);
	pthread_cond_init(&m->idle, NULL);
	m->mask = mask_of(cfg->granularity);
	m->drop_mode = cfg->backpressure_drop;
	m->fail_on_total = cfg->fail_on_total;
	m->max_failures = (uint64_t)cfg->max_consecutive_failures;
	/* An unrecorded run has no id: one like ELSPETH's (uuid4().hex). */
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		memset(rnd, 0, sizeof(rnd));
	core_hex(rnd, sizeof(rnd), m->x.run_label);
	if (!(m->q = calloc(QUEUE_CAP, sizeof(*m->q)))) {
		free_manager(m);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if ((rc = build_nodes(m, g, err))) {
		free_manager(m);
		return rc;
	}
	for (size_t i = 0; i < cfg->nexporters; i++, m->nex++)
		if ((rc = configure(&cfg->exporters[i], &m->ex[i], err))) {
			free_manager(m);
			return rc;
		}
	for (size_t i = 0; i < m->nex; i++)
		m->has_metrics |= m->ex[i].ops->metrics != NULL;
	if (!cfg->nexporters)
		warnf(m, "telemetry: Telemetry enabled but no exporters configured");
	if (pthread_create(&m->thread, NULL, export_main, m)) {
		free_manager(m);
		return core_err_set(err, CORE_EIO, "telemetry: cannot start its thread");
	}
	m->started = true;
	*out = m;
	return 0;
}

/* ------------------------------------------------------ flush, close */

int tel_flush(tel_manager *m, core_err *err)
{
	batch *b;

	if (!m)
		return 0;
	if ((b = my_batch()) && b->m == m)
		batch_drain(b);
	pthread_mutex_lock(&m->mu);
	m->flush_req = true;
	pthread_cond_signal(&m->not_empty);
	while (m->flush_req)
		pthread_cond_wait(&m->idle, &m->mu);
	pthread_mutex_unlock(&m->mu);
	if (m->failed_total) {
		*err = m->total_err;
		return err->code;
	}
	return 0;
}

void tel_close(tel_manager *m, tel_stats *st)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->stopping = true;
	pthread_cond_broadcast(&m->not_empty);
	pthread_cond_broadcast(&m->not_full);
	pthread_mutex_unlock(&m->mu);
	if (m->started)
		pthread_join(m->thread, NULL);
	if (st) {
		memset(st, 0, sizeof(*st));
		st->emitted = m->emitted;
		st->dropped = m->dropped;
		st->consecutive_failures = m->consecutive;
		st->disabled = m->disabled;
		st->nexporters = m->nex;
		for (size_t i = 0; i < m->nex; i++) {
			snprintf(st->exporters[i].name, sizeof(st->exporters[i].name), "%s",
				 m->ex[i].name);
			st->exporters[i].failures = m->ex[i].failures;
		}
	}
	free_manager(m);
}
