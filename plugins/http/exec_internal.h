/*
 * exec_internal.h — what the executor's two files share: exec.c (the
 * loop, the transfers, what follows each attempt) and upstream.c (the
 * process's executor, its upstreams and clients: open, close, stats,
 * checkpoints).
 *
 * LOCKS. registry_lock (upstream.c) guards starting and stopping the
 * executor and its count of clients. x->lock guards everything else that
 * more than one thread touches: the upstream list, each upstream's queues,
 * gate and counters, the easy-handle free list, every batch's `left` and
 * cv. The executor thread alone touches the multi handle, the easy
 * handles and a job's transfer fields. Order: registry_lock, then x->lock.
 * plg_ctx callbacks (record_call, halt) are called without x->lock.
 */
#ifndef ELSPETH_HTTP_EXEC_INTERNAL_H
#define ELSPETH_HTTP_EXEC_INTERNAL_H

#include <pthread.h>

#include "plugins/http/http_internal.h"

typedef struct job job;

/* One http_run call: its jobs and the thread waiting for them. */
typedef struct batch {
	pthread_cond_t cv;
	size_t left;                   /* jobs not final (x->lock) */
	unsigned submitted, completed; /* orders (executor thread) */
	plg_ctx *ctx;
	const core_retry_cfg *retry;
	http_client *client;
} batch;

struct job {
	job *next;
	http_req *req;
	batch *b;
	CURL *easy;
	core_buf body;                 /* this attempt's answer */
	core_buf hdrs;                 /* its header lines (a web client's) */
	bool too_big;
	http_hints hints;              /* what this attempt's answer said */
	uint64_t queued_mono;          /* ready since */
	uint64_t due_mono;             /* delayed until */
	uint64_t first_capacity_mono;
	uint64_t submitted_wall, throttle_ns;
	uint64_t started_mono;         /* this attempt was dispatched */
	unsigned k;                    /* in flight with it (the gate's) */
	const char *why;               /* what held it back, or NULL */
	unsigned submit_order;
	unsigned transient_attempts;   /* attempts counted against retry */
	/* Tail control (ADR 0029). */
	double tail_s;                 /* this attempt's tail deadline, 0: none */
	bool tail_cut;                 /* cut once: later attempts get the
					* whole timeout */
	/* Hedging: a primary's copy (malloc'd; pending in upstream.hedges
	 * until due, then running), or a copy's primary. */
	job *hedge, *primary;
	bool idle_only;                /* a copy sent only if, when due, the
					* upstream has nothing else to send
					* and a slot free (hedge: idle) */
};

/* Clients that send to the same place with the same key and mode. */
typedef struct upstream {
	struct upstream *next;
	uint8_t key[CORE_SHA256_LEN];  /* of scheme, host, port, credential, mode */
	char *name;                    /* scheme://host:port, for messages */
	unsigned refs;                 /* clients */
	http_gate gate;
	job *ready, *ready_tail;       /* FIFO, retries at the front */
	job *delayed;                  /* by due_mono */
	unsigned active, peak_active;
	http_tail tail;                /* recent answer times */
	job *hedges;                   /* hedged copies not yet sent, by due */
	unsigned long long hedges_sent, hedges_won, tail_cuts;
	/* The server's capacity used (executor thread; read under x->lock):
	 * the time attempts held a slot there (all but refusals), from the
	 * first send to the last answer, and the slots it announced. */
	uint64_t busy_ns, first_send, last_done;
	unsigned slots;
	unsigned long long requests, capacity_errors;
	uint64_t refusing_since;       /* mono ns of the first capacity error
					* since the last success, 0: none
					* (the executor thread's alone) */
	char *halted;                  /* set: nothing more is sent, why */
} upstream;

struct http_client {
	http_cfg cfg;
	upstream *up;
};

typedef struct http_exec {
	pthread_t thread;
	pthread_mutex_t lock;
	CURLM *multi;
	int epfd;                      /* libcurl's sockets and wakefd */
	int wakefd;                    /* eventfd: http_run, shutdown */
	uint64_t curl_timer;           /* libcurl's next timeout (mono), 0: none */
	bool shutdown;
	upstream *ups;
	CURL **free_easy;              /* idle easy handles */
	unsigned nfree, max_free;
	uint64_t rng;
} http_exec;

/* The process's executor (NULL before the first http_open). */
extern http_exec *http__x;

/* The loop (exec.c): the executor thread's function. */
void *http__loop(void *arg);
/* Hands libcurl's socket and timer callbacks to the loop. */
void http__watch(http_exec *x);
/* Ends the loop's wait. */
void http__wake(http_exec *x);
/* Queues the first attempts of a batch's jobs (x->lock held). */
void http__submit(upstream *u, job *jobs, size_t n);

#endif /* ELSPETH_HTTP_EXEC_INTERNAL_H */
