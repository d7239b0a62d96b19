/*
 * view.c — what the page shows of a run besides its status
 * (serve_internal.h): its latest metric sample, its graph and the
 * settings text it was started from.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_internal.h"

#define SETTINGS_MAX (1u << 20) /* the settings text served, at most */

static const char *const kind_names[] = {
	[DAG_SOURCE] = "source", [DAG_TRANSFORM] = "transform", [DAG_GATE] = "gate",
	[DAG_COALESCE] = "coalesce", [DAG_AGGREGATION] = "aggregation", [DAG_SINK] = "sink",
	[DAG_QUEUE] = "queue",
};

static json_t *upstreams_json(const eng_sample *s)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < s->nupstreams; i++) {
		const eng_sample_upstream *u = &s->upstreams[i];

		json_array_append_new(a, json_pack("{s:s,s:s?,s:f,s:f,s:I,s:I,s:I,s:I,s:s?,s:f,s:f}",
			"node", u->name, "upstream", u->cap.upstream,
			"rate", u->cap.rate, "window", u->cap.window,
			"ceiling", (json_int_t)u->cap.ceiling,
			"in_flight", (json_int_t)u->cap.in_flight,
			"requests", (json_int_t)u->cap.requests,
			"refusals", (json_int_t)u->cap.refusals,
			"held_by", u->cap.held_by,
			"p50_s", u->cap.p50_s, "p99_s", u->cap.p99_s));
	}
	return a;
}

json_t *srv__sample_json(const eng_sample *s)
{
	json_t *outcomes = json_object(), *classes = json_object(), *sinks = json_object();

	for (int i = 0; outcomes && i < ENG_OUTCOME_LAST; i++)
		if (s->outcomes[i])
			json_object_set_new(outcomes, eng_outcome_name((eng_outcome)i),
					    json_integer((json_int_t)s->outcomes[i]));
	for (int i = 0; classes && i < ENG_CALL_CLASSES; i++)
		if (s->calls_by_class[i])
			json_object_set_new(classes, eng_call_classes[i],
					    json_integer((json_int_t)s->calls_by_class[i]));
	for (size_t i = 0; sinks && i < s->nnodes; i++)
		if (!strcmp(s->nodes[i].kind, "sink"))
			json_object_set_new(sinks, s->nodes[i].name,
					    json_integer((json_int_t)s->nodes[i].count));
	return json_pack("{s:f,s:b,s:I,s:I,s:I,s:I,s:I,s:s,s:o,s:I,s:I,s:o,s:o,s:I,s:o}",
		"elapsed_seconds", (double)s->elapsed_ns / 1e9, "final", s->final,
		"rows_pulled", (json_int_t)s->pulled, "rows_released", (json_int_t)s->released,
		"in_flight", (json_int_t)s->in_flight, "waiting", (json_int_t)s->waiting,
		"waiting_bytes", (json_int_t)s->waiting_bytes,
		"held_by", s->held_by ? s->held_by : "",
		"outcomes", outcomes ? outcomes : json_object(),
		"calls", (json_int_t)s->calls, "calls_ok", (json_int_t)s->calls_ok,
		"calls_by_class", classes ? classes : json_object(),
		"sinks", sinks ? sinks : json_object(),
		"retries", (json_int_t)s->retries,
		"upstreams", upstreams_json(s));
}

void srv__job_sample(srv *s, srv_job *j, const eng_sample *smp)
{
	json_t *live = srv__sample_json(smp), *old;

	if (!live)
		return;
	pthread_mutex_lock(&s->lock);
	old = j->live;
	j->live = live;
	pthread_mutex_unlock(&s->lock);
	json_decref(old);
}

void srv__job_failure(srv *s, srv_job *j, uint64_t row, const char *node, const char *error)
{
	char at[40];
	json_t *e;

	core_iso_utc(core_now_wall_ns(), at);
	e = json_pack("{s:I,s:s?,s:s?,s:s}", "row", (json_int_t)row, "node", node,
		      "error", error, "at", at);
	if (!e)
		return;
	pthread_mutex_lock(&s->lock);
	if (!j->errors)
		j->errors = json_array();
	if (j->errors && !json_array_insert_new(j->errors, 0, e)) {
		e = NULL;
		while (json_array_size(j->errors) > SRV_ERRORS_KEPT)
			json_array_remove(j->errors, SRV_ERRORS_KEPT);
	}
	pthread_mutex_unlock(&s->lock);
	json_decref(e);
}

json_t *srv__live(srv *s, const char *id)
{
	json_t *out = NULL;
	srv_job *j;

	pthread_mutex_lock(&s->lock);
	if ((j = srv__find(s, id))) {
		out = j->live ? json_deep_copy(j->live) : json_object();
		if (out && j->live)
			json_object_set_new(out, "recent_errors",
					    j->errors ? json_deep_copy(j->errors) : json_array());
	}
	pthread_mutex_unlock(&s->lock);
	return out;
}

/* The graph is built before the job is queued and never changes after:
 * its names, kinds and edges are read while the run goes. */
static json_t *graph_json(const dag_graph *g)
{
	json_t *nodes = json_array(), *edges = json_array();

	for (size_t i = 0; nodes && i < g->nnodes; i++) {
		const dag_node *n = &g->nodes[i];

		json_array_append_new(nodes, json_pack("{s:I,s:s,s:s,s:s?}", "id", (json_int_t)i,
			"name", n->name, "kind", kind_names[n->kind], "plugin", n->plugin));
	}
	for (size_t i = 0; edges && i < g->nedges; i++) {
		const dag_edge *e = &g->edges[i];

		json_array_append_new(edges, json_pack("{s:i,s:i,s:s?,s:b}", "from", e->from,
			"to", e->to, "label", e->label, "divert", e->divert));
	}
	return json_pack("{s:o,s:o}", "nodes", nodes ? nodes : json_array(),
			 "edges", edges ? edges : json_array());
}

json_t *srv__graph(srv *s, const char *id)
{
	json_t *out = NULL;
	srv_job *j;

	pthread_mutex_lock(&s->lock);
	if ((j = srv__find(s, id)))
		out = graph_json(j->graph);
	pthread_mutex_unlock(&s->lock);
	return out;
}

/* The file as it is now (it may have changed since the run read it: the
 * answer says it is the file's text, not the run's). */
static json_t *file_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(SETTINGS_MAX + 1);
	size_t n = 0;
	json_t *out;

	if (!f || !buf) {
		if (f)
			fclose(f);
		free(buf);
		return json_null();
	}
	n = fread(buf, 1, SETTINGS_MAX + 1, f);
	fclose(f);
	out = n > SETTINGS_MAX ? json_null() : json_stringn(buf, n);
	free(buf);
	return out ? out : json_null();
}

json_t *srv__settings_text(srv *s, const char *id)
{
	char name[PATH_MAX];
	char *yaml = NULL;
	bool posted = false;
	json_t *text;
	srv_job *j;

	pthread_mutex_lock(&s->lock);
	if ((j = srv__find(s, id))) {
		snprintf(name, sizeof(name), "%s", j->name);
		posted = j->yaml != NULL;
		yaml = posted ? strdup(j->yaml) : NULL;
	}
	pthread_mutex_unlock(&s->lock);
	if (!j)
		return NULL;
	/* the path was checked to stay under the root (the working
	 * directory) when the run was posted */
	text = posted ? (yaml ? json_string(yaml) : json_null()) : file_text(name);
	free(yaml);
	return json_pack("{s:s,s:s,s:o}", "settings", name, "source",
			 posted ? "posted" : "file", "yaml", text ? text : json_null());
}
