/*
 * auth.h — `elspeth serve`'s logins (docs/serve.md "Logins", ADR 0038):
 * local users in a file of their own (NAME and an Argon2id hash from
 * libsodium's crypto_pwhash_str), bearer tokens with an expiry kept in
 * the server's memory, and failed logins slowed down per user and per
 * client address.
 */
#ifndef ELSPETH_SERVE_AUTH_H
#define ELSPETH_SERVE_AUTH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"

#define AUTH_NAME_MAX 64
#define AUTH_TOKENS_MAX 4096
#define AUTH_FAILS_MAX 256

typedef struct auth_token {
	uint8_t hash[32];          /* SHA-256 of the token (the token itself is not kept) */
	char user[AUTH_NAME_MAX];
	uint64_t expires_ns;       /* wall clock */
} auth_token;

typedef struct auth_fail {
	char who[AUTH_NAME_MAX + 64]; /* "user NAME" or "addr IP" */
	unsigned count;
	uint64_t until_ns;         /* no login before this */
} auth_fail;

typedef struct auth {
	char users[4096];          /* the users file */
	uint64_t ttl_ns;           /* a token's life */
	pthread_mutex_t lock;
	auth_token tokens[AUTH_TOKENS_MAX];
	size_t ntokens;
	auth_fail fails[AUTH_FAILS_MAX];
	size_t nfails;
} auth;

/* Adds (or replaces) user name with password in the users file (created
 * 0600). CORE_ECONFIG: a bad name (letters, digits, '.', '_', '-'; 1–63)
 * or an empty password. */
int auth_adduser(const char *file, const char *name, const char *password, core_err *err);

/* Opens the users file for a server (it must exist and hold a user).
 * ttl_s: how long a token lives. */
int auth_open(auth *a, const char *file, unsigned ttl_s, core_err *err);
void auth_close(auth *a);

typedef enum auth_rc { AUTH_OK, AUTH_DENIED, AUTH_SLOW_DOWN, AUTH_ERROR } auth_rc;
/* A login: a new token in token (65 bytes) on AUTH_OK; AUTH_SLOW_DOWN
 * while the user or the address is held after failures (retry_s says
 * how long). */
auth_rc auth_login(auth *a, const char *addr, const char *user, const char *password,
		   char token[65], unsigned *retry_s);
/* The user of a token that has not expired (user: AUTH_NAME_MAX). */
bool auth_check(auth *a, const char *token, char *user);
/* A new token for the holder of a valid one. */
bool auth_refresh(auth *a, const char *token, char fresh[65]);

#endif
