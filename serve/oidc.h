/*
 * oidc.h — bearer tokens from an OpenID Connect issuer (ELSPETH's `oidc`
 * auth provider; docs/serve.md "OIDC"): a JWT signed RS256 by a key of
 * the issuer's JWKS (found through {issuer}/.well-known/openid-
 * configuration), for our audience, not expired. The JWKS is fetched at
 * the first token and kept an hour; a failed refresh keeps the keys it
 * had, and a token signed by a key it does not know refreshes it (at most
 * once a minute: a new key after a rotation). Thread-safe.
 */
#ifndef ELSPETH_SERVE_OIDC_H
#define ELSPETH_SERVE_OIDC_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/core.h"

typedef struct srv_oidc srv_oidc;

/* issuer: https:// (http:// only on a loopback host, for tests);
 * CORE_ECONFIG otherwise. Nothing is fetched yet. */
int srv_oidc_open(const char *issuer, const char *audience, srv_oidc **out, core_err *err);
void srv_oidc_free(srv_oidc *o); /* NULL allowed */

/* Whether token is valid now; then *claims (may be NULL) receives its
 * payload (a new reference). why: a short reason when it is not. */
bool srv_oidc_check(srv_oidc *o, const char *token, json_t **claims, char *why, size_t cap);

#endif
