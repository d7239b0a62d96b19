/*
 * serve.h — `elspeth serve`: runs started, watched and cancelled over
 * HTTP, on the run library (run/run.h; docs/serve.md, ADR 0038). The
 * routes are ELSPETH's where ELSPETH has one (its web API's paths and
 * answer shapes): GET /api/health, GET /api/catalog/{sources,transforms,
 * sinks}, POST /api/runs, GET /api/runs, GET /api/runs/{id}, POST
 * /api/runs/{id}/cancel; ours: GET /api/runs/{id}/rows/{n} (the row's
 * story), GET /api/runs/{id}/report, POST /api/runs/{id}/resume; and
 * WS /ws/runs/{id} with ELSPETH's RunEvent messages (ws.c).
 *
 * Every path a posted pipeline names stays under the server's root: the
 * server works in the root (relative paths are the root's), and refuses
 * absolute paths, `..` and symbolic links that lead out. Runs go one at a
 * time, in the order they were posted (they may share a Landscape).
 *
 * Logins: every route but /, /api/health, /api/auth/config and
 * /api/auth/login needs `Authorization: Bearer TOKEN` (the WebSocket
 * `?token=`) — a local user's (auth.h) or, in ELSPETH's `oidc` mode, an
 * OpenID Connect issuer's JWT (oidc.h) — unless no_auth, which serves
 * loopback addresses only. The page: GET / (serve/web/index.html).
 */
#ifndef ELSPETH_SERVE_H
#define ELSPETH_SERVE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "core/core.h"

typedef struct srv_cfg {
	const char *listen;        /* HOST:PORT, [V6]:PORT or PORT (loopback) */
	const char *root;          /* the directory runs are confined to */
	bool no_auth;              /* no logins: loopback addresses only */
	const char *users;         /* the users file (auth.h), unless no_auth */
	/* ELSPETH's oidc mode instead of users: the issuer (https://, or
	 * http:// on loopback), the audience its tokens must name, and the
	 * client id /api/auth/config tells the page (may be NULL). */
	const char *oidc_issuer, *oidc_audience, *oidc_client_id;
	unsigned token_hours;      /* a login's token lives this long (0: 12) */
	atomic_int *stop;          /* set (a signal handler) to stop serving */
	FILE *log;                 /* one line per run started and ended; NULL: none */
	/* Called once listening, with the port (0 asked: the one picked). */
	void (*ready)(void *ctx, unsigned port);
	void *ready_ctx;
} srv_cfg;

/* Serves until *cfg->stop is set; then cancels what runs (as SIGINT
 * would: resumable) and waits for it. CORE_ECONFIG: a bad address, a root
 * that is no directory, no users file nor issuer (or a users file under
 * the root, or one others can read), two of users, issuer and no_auth,
 * no_auth on a non-loopback address; CORE_EIO: cannot listen. */
int srv_main(const srv_cfg *cfg, core_err *err);

#endif /* ELSPETH_SERVE_H */
