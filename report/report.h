/*
 * report.h — the public contract of the report module: one run of the
 * Landscape as one self-contained HTML page (`elspeth report`,
 * docs/report.md). The page needs nothing but itself: no script, no
 * style sheet, font or image from elsewhere; its charts are inline SVG
 * drawn here. What it shows: the run's header, its graph, rows over time
 * and LLM calls over time (from the metric samples, table `samples`), the
 * capacity control of each LLM upstream, latency per node, outcomes per
 * sink, the slowest rows and the rows with errors, each with its story
 * (what `elspeth explain --row N` shows) further down the page.
 *
 * Thread rules: rpt_write reads the Landscape in read transactions of its
 * own; call it from any thread, on an environment open for reading (a
 * run may be writing it meanwhile: the page shows what was committed).
 */
#ifndef ELSPETH_REPORT_H
#define ELSPETH_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "recorder/recorder.h"

typedef struct rpt_opts {
	size_t max_rows;  /* slowest rows and rows with errors, each; 0: 20 */
} rpt_opts;

/* Appends the page of run `run` of env to out (o may be NULL: the
 * defaults). 0; CORE_EDATA when the run is not in the trail; a read
 * error (its message in err); CORE_ENOMEM. On error out may hold part of
 * the page. A run without samples (written before they existed) or
 * without LLM calls gets "no data" where those charts would be. */
int rpt_write(rec_env *env, uint64_t run, const rpt_opts *o, core_buf *out,
	      core_err *err);

#endif /* ELSPETH_REPORT_H */
