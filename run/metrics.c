/*
 * metrics.c — a job's Prometheus endpoint (run_cfg.metrics_listen; ADR
 * 0033): GET /metrics answers the run's latest metric sample in the text
 * exposition format (version 0.0.4), while the job lives.
 *
 * DESIGN: the job's thread renders each sample into text as it comes
 * (about once a second) and swaps it in under `lock`; libmicrohttpd's
 * own thread answers a scrape with a copy of the last text. A scrape
 * never touches the engine, and a slow scraper never slows the run.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct run_metrics {
	struct MHD_Daemon *d;
	pthread_mutex_t lock;
	char *text;               /* the last rendering; NULL: none yet */
	size_t len;
	unsigned port;
	char settings[1024];      /* for elspeth_run_info */
};

/* ---------------------------------------------------------- rendering */

/* The text being rendered; rc is sticky (out of memory). */
typedef struct prom {
	core_buf b;
	int rc;
} prom;

static void put(prom *p, const char *fmt, ...) CORE_PRINTF(2, 3);
static void put(prom *p, const char *fmt, ...)
{
	va_list ap, ap2;
	int n;

	if (p->rc)
		return;
	va_start(ap, fmt);
	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	if (n < 0 || core_buf_reserve(&p->b, (size_t)n + 1))
		p->rc = CORE_ENOMEM;
	else
		p->b.len += (size_t)vsnprintf(p->b.data + p->b.len, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	va_end(ap);
}

/* A label value with \, " and newline escaped, as the format says. */
static void label(prom *p, const char *v)
{
	for (const char *c = v ? v : ""; *c; c++) {
		if (*c == '\\' || *c == '"')
			put(p, "\\%c", *c);
		else if (*c == '\n')
			put(p, "\\n");
		else
			put(p, "%c", *c);
	}
}

static void head(prom *b, const char *name, const char *type, const char *help)
{
	put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void value(prom *b, const char *name, double v)
{
	put(b, "%s %.17g\n", name, v);
}

static void one(prom *b, const char *name, const char *type, const char *help,
		double v)
{
	head(b, name, type, help);
	value(b, name, v);
}

/* name{node="…",upstream="…"} v, for each upstream of the sample. */
typedef double (*up_field)(const plg_capacity *c);

static void per_upstream(prom *b, const eng_sample *s, const char *name,
			 const char *type, const char *help, up_field f)
{
	if (!s->nupstreams)
		return;
	head(b, name, type, help);
	for (size_t i = 0; i < s->nupstreams; i++) {
		const eng_sample_upstream *u = &s->upstreams[i];

		put(b, "%s{node=\"", name);
		label(b, u->name);
		put(b, "\",upstream=\"");
		label(b, u->cap.upstream);
		put(b, "\"} %.17g\n", f(&u->cap));
	}
}

static double up_requests(const plg_capacity *c) { return (double)c->requests; }
static double up_refusals(const plg_capacity *c) { return (double)c->refusals; }
static double up_rate(const plg_capacity *c) { return c->rate; }
static double up_window(const plg_capacity *c) { return c->window; }
static double up_ceiling(const plg_capacity *c) { return c->ceiling; }
static double up_in_flight(const plg_capacity *c) { return c->in_flight; }
static double up_p50(const plg_capacity *c) { return c->p50_s; }
static double up_p99(const plg_capacity *c) { return c->p99_s; }
static double up_cuts(const plg_capacity *c) { return (double)c->tail_cuts; }
static double up_hedges(const plg_capacity *c) { return (double)c->hedges_sent; }

static const struct {
	const char *name, *type, *help;
	up_field f;
} up_metrics[] = {
	{ "elspeth_upstream_requests_total", "counter",
	  "Requests sent to the upstream (every attempt).", up_requests },
	{ "elspeth_upstream_refusals_total", "counter",
	  "Capacity refusals (429, 503 with a hint, ...) from the upstream.", up_refusals },
	{ "elspeth_upstream_pace_requests_per_second", "gauge",
	  "The pace the capacity control allows now (0: not paced).", up_rate },
	{ "elspeth_upstream_window_requests", "gauge",
	  "Requests in flight the capacity control allows now.", up_window },
	{ "elspeth_upstream_ceiling_requests", "gauge",
	  "Requests in flight at most (pool_size).", up_ceiling },
	{ "elspeth_upstream_in_flight_requests", "gauge",
	  "Requests in flight now.", up_in_flight },
	{ "elspeth_upstream_answer_p50_seconds", "gauge",
	  "Median time of the recent answers (0: too few yet).", up_p50 },
	{ "elspeth_upstream_answer_p99_seconds", "gauge",
	  "99th percentile time of the recent answers (0: too few yet).", up_p99 },
	{ "elspeth_upstream_tail_cuts_total", "counter",
	  "Attempts cut at the tail deadline and sent again.", up_cuts },
	{ "elspeth_upstream_hedges_total", "counter",
	  "Hedged copies sent.", up_hedges },
};

/* Each transform's, gate's and sink's time per visit, a histogram. */
static void node_durations(prom *b, const eng_sample *s)
{
	const char *name = "elspeth_node_duration_seconds";

	if (!s->nnodes)
		return;
	head(b, name, "histogram",
	     "Time of each visit of a node: a transform's attempt, a gate, a sink's write.");
	for (size_t i = 0; i < s->nnodes; i++) {
		const eng_sample_node *n = &s->nodes[i];

		for (int k = 0; k < ENG_DURATION_BUCKETS; k++) {
			put(b, "%s_bucket{node=\"", name);
			label(b, n->name);
			put(b, "\",kind=\"%s\",le=\"", n->kind);
			if (isinf(eng_duration_bounds[k]))
				put(b, "+Inf");
			else
				put(b, "%g", eng_duration_bounds[k]);
			put(b, "\"} %llu\n", (unsigned long long)n->le[k]);
		}
		put(b, "%s_sum{node=\"", name);
		label(b, n->name);
		put(b, "\",kind=\"%s\"} %.9g\n", n->kind, n->sum_s);
		put(b, "%s_count{node=\"", name);
		label(b, n->name);
		put(b, "\",kind=\"%s\"} %llu\n", n->kind, (unsigned long long)n->count);
	}
}

static void render(prom *b, const char *settings, const eng_sample *s)
{
	head(b, "elspeth_run_info", "gauge",
	     "The run being served: its id (0: not recorded), attempt and settings.");
	put(b, "elspeth_run_info{run_id=\"%llu\",attempt=\"%u\",settings=\"",
	    (unsigned long long)s->run_id, s->attempt);
	label(b, settings);
	put(b, "\"} 1\n");
	one(b, "elspeth_run_elapsed_seconds", "gauge",
	    "Seconds since the run (or this resume) started.", (double)s->elapsed_ns / 1e9);
	one(b, "elspeth_run_finished", "gauge",
	    "1 once the run's last sample is taken.", s->final);
	one(b, "elspeth_rows_pulled_total", "counter",
	    "Source rows pulled (the highest row number read).", (double)s->pulled);
	one(b, "elspeth_rows_released_total", "counter",
	    "Rows released to the sinks in source order (the highest row number).",
	    (double)s->released);
	one(b, "elspeth_rows_in_flight", "gauge",
	    "Rows being processed now.", (double)s->in_flight);
	one(b, "elspeth_rows_waiting", "gauge",
	    "Rows done and waiting for an earlier row before release.", (double)s->waiting);
	one(b, "elspeth_rows_waiting_bytes", "gauge",
	    "What the waiting rows hold (estimate).", (double)s->waiting_bytes);
	head(b, "elspeth_pull_held", "gauge",
	     "1 for what holds the next row back now: rows_in_flight, waiting_rows, "
	     "waiting_bytes; none when nothing does.");
	put(b, "elspeth_pull_held{by=\"");
	label(b, s->held_by && *s->held_by ? s->held_by : "none");
	put(b, "\"} 1\n");
	head(b, "elspeth_tokens_total", "counter", "Tokens by terminal outcome.");
	for (int i = 0; i < ENG_OUTCOME_LAST; i++) {
		put(b, "elspeth_tokens_total{outcome=\"");
		for (const char *c = eng_outcome_name((eng_outcome)i); *c; c++)
			put(b, "%c", (char)tolower((unsigned char)*c));
		put(b, "\"} %llu\n", (unsigned long long)s->outcomes[i]);
	}
	head(b, "elspeth_calls_total", "counter",
	     "Outside calls (every attempt) by result: ok, or the failure's class.");
	put(b, "elspeth_calls_total{result=\"ok\"} %llu\n",
	    (unsigned long long)s->calls_ok);
	for (int i = 0; i < ENG_CALL_CLASSES; i++)
		put(b, "elspeth_calls_total{result=\"%s\"} %llu\n",
		    eng_call_classes[i], (unsigned long long)s->calls_by_class[i]);
	one(b, "elspeth_calls_replayed_total", "counter",
	    "Recorded answers a resume reused instead of calling again.",
	    (double)s->calls_replayed);
	for (size_t i = 0; i < sizeof(up_metrics) / sizeof(up_metrics[0]); i++)
		per_upstream(b, s, up_metrics[i].name, up_metrics[i].type,
			     up_metrics[i].help, up_metrics[i].f);
	one(b, "elspeth_retries_total", "counter",
	    "Transform attempts made again after a retryable error.", (double)s->retries);
	one(b, "elspeth_checkpoints_total", "counter",
	    "Checkpoints written by this run (or resume).", (double)s->checkpoints);
	one(b, "elspeth_recorder_queued_records", "gauge",
	    "Audit records queued for the Landscape's writer.", (double)s->rec.queued);
	one(b, "elspeth_recorder_queued_bytes", "gauge",
	    "Bytes of the audit records queued for the writer.", (double)s->rec.queued_bytes);
	one(b, "elspeth_trail_bytes", "gauge",
	    "Bytes of the Landscape's file in use.", (double)s->rec.trail_bytes);
	node_durations(b, s);
}

int run__metrics_render(core_buf *out, const char *settings, const eng_sample *s)
{
	prom p = { .b = *out };

	render(&p, settings, s);
	*out = p.b;
	return p.rc;
}

void run__metrics_update(run_metrics *m, const eng_sample *s)
{
	core_buf b = { 0 };
	char *old;

	if (!m)
		return;
	if (run__metrics_render(&b, m->settings, s)) {
		core_buf_release(&b); /* out of memory: keep the last */
		return;
	}
	pthread_mutex_lock(&m->lock);
	old = m->text;
	m->len = b.len;
	m->text = core_buf_steal(&b);
	pthread_mutex_unlock(&m->lock);
	free(old);
}

/* ------------------------------------------------------------ serving */

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	static const char none[] = "# no sample yet: the run is starting\n";
	static const char missing[] = "not found: the metrics are at /metrics\n";
	run_metrics *m = cls;
	struct MHD_Response *r;
	unsigned status = MHD_HTTP_OK;
	enum MHD_Result rc;
	char *copy = NULL;
	size_t len = 0;

	(void)version;
	(void)upload;
	(void)con_cls;
	if (*upload_size) /* no body is wanted: drop it */
		*upload_size = 0;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return MHD_NO; /* closes the connection */
	if (strcmp(url, "/metrics")) {
		status = MHD_HTTP_NOT_FOUND;
		r = MHD_create_response_from_buffer(sizeof(missing) - 1, (void *)missing,
						    MHD_RESPMEM_PERSISTENT);
	} else {
		pthread_mutex_lock(&m->lock);
		if (m->text && (copy = malloc(m->len)))
			memcpy(copy, m->text, len = m->len);
		pthread_mutex_unlock(&m->lock);
		r = copy ? MHD_create_response_from_buffer(len, copy, MHD_RESPMEM_MUST_FREE)
			 : MHD_create_response_from_buffer(sizeof(none) - 1, (void *)none,
							   MHD_RESPMEM_PERSISTENT);
	}
	if (!r) {
		free(copy);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				status == MHD_HTTP_OK ? CONTENT_TYPE : "text/plain");
	rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

int run__metrics_start(const char *spec, const char *settings, run_metrics **out,
		       core_err *err)
{
	struct sockaddr_storage ss;
	run_metrics *m;
	const union MHD_DaemonInfo *info;
	bool v6 = false;
	int rc;

	*out = NULL;
	if ((rc = core_listen_addr("metrics listen address", spec, &ss, &v6, err)))
		return rc;
	if (!(m = calloc(1, sizeof(*m))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	pthread_mutex_init(&m->lock, NULL);
	snprintf(m->settings, sizeof(m->settings), "%s", settings ? settings : "");
	errno = 0;
	m->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
				(v6 ? MHD_USE_IPv6 : 0),
				0, NULL, NULL, answer, m,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
				MHD_OPTION_END);
	if (!m->d) {
		int e = errno;

		pthread_mutex_destroy(&m->lock);
		free(m);
		return core_err_set(err, CORE_EIO,
			"metrics listen address '%s': cannot listen there%s%s", spec,
			e ? ": " : "", e ? strerror(e) : "");
	}
	info = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
	m->port = info ? info->port : 0;
	*out = m;
	return 0;
}

unsigned run__metrics_port(const run_metrics *m)
{
	return m ? m->port : 0;
}

void run__metrics_stop(run_metrics *m)
{
	if (!m)
		return;
	MHD_stop_daemon(m->d);
	pthread_mutex_destroy(&m->lock);
	free(m->text);
	free(m);
}
