/*
 * telemetry.h — ELSPETH's telemetry for a run (docs/observability.md,
 * ADR 0037): the events the engine reports (eng_opts.event) and the
 * run library's own, filtered by the settings' granularity, put on a
 * bounded queue, and sent on a thread of their own to the exporters the
 * `telemetry:` block names (console, otlp, datadog, azure_monitor).
 *
 * A manager belongs to one run (or resume). Thread rules: tel_event,
 * tel_phase and tel_engine_event may be called from any thread until
 * tel_flush; they copy what they need and return (mode `block` waits
 * while the queue is full, up to 30 s, then drops the event; mode `drop`
 * drops the oldest queued event instead, so a slow or dead exporter
 * never slows the run). tel_flush and tel_close are called by the thread
 * that opened the manager, once the run has ended.
 */
#ifndef ELSPETH_TELEMETRY_H
#define ELSPETH_TELEMETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "dag/dag.h"
#include "engine/engine.h"

typedef struct tel_manager tel_manager;

/* What a manager did, for the run's summary (ELSPETH's "Telemetry
 * manager closing" line). */
#define TEL_MAX_EXPORTERS 16
typedef struct tel_stats {
	uint64_t emitted;          /* events at least one exporter took */
	uint64_t dropped;          /* queue full (drop, or block timed out),
				    * or every exporter failed */
	uint64_t consecutive_failures; /* of all exporters at once, at the end */
	bool disabled;             /* after max_consecutive_failures, with
				    * fail_on_total_exporter_failure false */
	size_t nexporters;
	struct {
		char name[64];
		uint64_t failures; /* export or flush calls that failed */
	} exporters[TEL_MAX_EXPORTERS];
} tel_stats;

/* Checks the telemetry block as a run opens it, connecting to nothing:
 * every exporter's name and options, when enabled (ELSPETH checks them
 * only then). CORE_ECONFIG naming file:line:col, the key and the
 * exporter, in ELSPETH's words ("Invalid format 'xml'. Must be one of:
 * json, pretty"). */
int tel_check(const core_telemetry_cfg *cfg, core_err *err);

/* Opens the exporters of s->telemetry and starts the export thread for
 * a run of g. *out is NULL when telemetry is disabled. */
int tel_open(const core_settings *s, const dag_graph *g, tel_manager **out,
	     core_err *err);

/* What went wrong that the run survives (an exporter that failed, events
 * dropped, telemetry switched off), oldest first, one per call into buf:
 * false when there is none. Any thread. */
bool tel_next_warning(tel_manager *m, char *buf, size_t cap);

/* The engine's callback (eng_opts.event, event_ctx = the manager) and the
 * kinds the granularity wants (eng_opts.event_mask). */
void tel_engine_event(void *ctx, const eng_event *ev);
unsigned tel_event_mask(const tel_manager *m);

/* The engine's metric sample (eng_opts.sample), for exporters that send
 * metrics (otlp): copied and queued like an event, whatever the
 * granularity. The job's thread. */
void tel_sample(tel_manager *m, const eng_sample *s);

/* A PhaseChanged the run library reports (e.g. export, exporting). */
void tel_phase(tel_manager *m, uint64_t run_id, const char *phase, const char *action);

/* Waits for every queued event to be exported, then flushes each
 * exporter (a batch still held is sent). An exporter whose flush fails
 * is warned about. Returns CORE_EIO with ELSPETH's message ("Exporter
 * 'all' failed: All 1 exporters failed 10 consecutive times.") when every
 * exporter failed max_consecutive_failures times in a row and
 * fail_on_total_exporter_failure is true; the run's own result stands. */
int tel_flush(tel_manager *m, core_err *err);

/* Stops the thread (after what is queued), closes the exporters and
 * frees m. stats may be NULL. NULL m allowed. */
void tel_close(tel_manager *m, tel_stats *stats);

#endif /* ELSPETH_TELEMETRY_H */
