/*
 * auth.c — local users, tokens and the login brake (auth.h).
 *
 * The users file is JSON, {"users": {"NAME": "$argon2id$..."}}, written
 * whole to a temporary file and renamed (0600). A token is 32 random
 * bytes in hex; the server keeps only its SHA-256, the user and the
 * expiry. Failed logins hold the user and the client address for 2^(n-3)
 * seconds after the third in a row (at most 5 minutes); a success clears
 * the user's count. Password checks take libsodium's interactive cost
 * (Argon2id, 64 MiB), and an unknown user costs the same as a known one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "serve/auth.h"

#define HOLD_MAX_S 300

static bool good_name(const char *n)
{
	size_t len = strlen(n);

	if (!len || len >= AUTH_NAME_MAX)
		return false;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			return false;
	return true;
}

static int load_users(const char *file, json_t **out, bool may_miss, core_err *err)
{
	json_error_t je;
	json_t *j = json_load_file(file, 0, &je);

	if (!j && may_miss && access(file, F_OK) && errno == ENOENT) {
		*out = json_pack("{s:{}}", "users");
		return *out ? 0 : core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if (!j || !json_is_object(json_object_get(j, "users"))) {
		json_decref(j);
		return core_err_set(err, CORE_ECONFIG, "%s: not a users file (%s)", file,
				    j ? "no \"users\" object" : je.text);
	}
	*out = j;
	return 0;
}

int auth_adduser(const char *file, const char *name, const char *password, core_err *err)
{
	char hash[crypto_pwhash_STRBYTES], tmp[4200];
	json_t *users;
	int fd, rc;
	char *text;

	if (sodium_init() < 0)
		return core_err_set(err, CORE_EIO, "libsodium cannot start");
	if (!good_name(name))
		return core_err_set(err, CORE_ECONFIG, "user name '%s': 1 to 63 letters, digits, "
				    "'.', '_' or '-'", name);
	if (!password || !*password)
		return core_err_set(err, CORE_ECONFIG, "an empty password is refused");
	if ((rc = load_users(file, &users, true, err)))
		return rc;
	if (crypto_pwhash_str(hash, password, strlen(password), crypto_pwhash_OPSLIMIT_INTERACTIVE,
			      crypto_pwhash_MEMLIMIT_INTERACTIVE)) {
		json_decref(users);
		return core_err_set(err, CORE_ENOMEM, "out of memory hashing the password");
	}
	json_object_set_new(json_object_get(users, "users"), name, json_string(hash));
	text = json_dumps(users, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(users);
	if (!text)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	rc = fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	     write(fd, "\n", 1) != 1 || fsync(fd);
	if (fd >= 0)
		close(fd);
	free(text);
	if (rc || rename(tmp, file)) {
		unlink(tmp);
		return core_err_set(err, CORE_EIO, "%s: %s", file, strerror(errno));
	}
	return 0;
}

int auth_open(auth *a, const char *file, unsigned ttl_s, core_err *err)
{
	struct stat st;
	json_t *users;
	int rc;

	memset(a, 0, sizeof(*a));
	if (sodium_init() < 0)
		return core_err_set(err, CORE_EIO, "libsodium cannot start");
	if ((rc = load_users(file, &users, false, err)))
		return rc;
	rc = json_object_size(json_object_get(users, "users")) ? 0 :
	     core_err_set(err, CORE_ECONFIG, "%s has no user: add one with "
			  "`elspeth serve adduser NAME --users %s`", file, file);
	json_decref(users);
	if (rc)
		return rc;
	if (!stat(file, &st) && (st.st_mode & 077))
		return core_err_set(err, CORE_ECONFIG, "%s can be read by others (mode %o): "
				    "chmod 600 it", file, st.st_mode & 0777);
	snprintf(a->users, sizeof(a->users), "%s", file);
	a->ttl_ns = (uint64_t)(ttl_s ? ttl_s : 12 * 3600) * 1000000000u;
	pthread_mutex_init(&a->lock, NULL);
	return 0;
}

void auth_close(auth *a)
{
	pthread_mutex_destroy(&a->lock);
	sodium_memzero(a->tokens, sizeof(a->tokens));
}

/* ----------------------------------------------------------- brake */

static auth_fail *fail_of(auth *a, const char *who, bool make)
{
	uint64_t now = core_now_wall_ns();
	size_t oldest = 0;

	for (size_t i = 0; i < a->nfails; i++) {
		if (!strcmp(a->fails[i].who, who))
			return &a->fails[i];
		if (a->fails[i].until_ns < a->fails[oldest].until_ns)
			oldest = i;
	}
	if (!make)
		return NULL;
	if (a->nfails < AUTH_FAILS_MAX)
		oldest = a->nfails++;
	else if (a->fails[oldest].until_ns > now)
		return NULL; /* every slot is holding someone: keep them */
	memset(&a->fails[oldest], 0, sizeof(a->fails[oldest]));
	snprintf(a->fails[oldest].who, sizeof(a->fails[oldest].who), "%s", who);
	return &a->fails[oldest];
}

static void failed(auth *a, const char *who)
{
	auth_fail *f = fail_of(a, who, true);
	unsigned hold;

	if (!f)
		return;
	f->count++;
	if (f->count >= 3) {
		hold = f->count - 3 < 9 ? 1u << (f->count - 3) : HOLD_MAX_S;
		f->until_ns = core_now_wall_ns() + (uint64_t)(hold > HOLD_MAX_S ? HOLD_MAX_S : hold) *
			      1000000000u;
	}
}

static unsigned held(auth *a, const char *who)
{
	auth_fail *f = fail_of(a, who, false);
	uint64_t now = core_now_wall_ns();

	return f && f->until_ns > now ? (unsigned)((f->until_ns - now) / 1000000000u) + 1 : 0;
}

/* ----------------------------------------------------------- tokens */

static void issue(auth *a, const char *user, char token[65])
{
	uint8_t raw[32];
	uint64_t now = core_now_wall_ns();
	size_t slot = a->ntokens;

	randombytes_buf(raw, sizeof(raw));
	core_hex(raw, sizeof(raw), token);
	for (size_t i = 0; i < a->ntokens; i++)
		if (a->tokens[i].expires_ns <= now) {
			slot = i;
			break;
		}
	if (slot == AUTH_TOKENS_MAX) /* full: the oldest goes */
		for (size_t i = slot = 0; i < a->ntokens; i++)
			if (a->tokens[i].expires_ns < a->tokens[slot].expires_ns)
				slot = i;
	if (slot == a->ntokens)
		a->ntokens++;
	core_sha256(token, 64, a->tokens[slot].hash);
	snprintf(a->tokens[slot].user, sizeof(a->tokens[slot].user), "%s", user);
	a->tokens[slot].expires_ns = now + a->ttl_ns;
}

static auth_token *find_token(auth *a, const char *token)
{
	uint8_t h[32];
	uint64_t now = core_now_wall_ns();

	if (!token || strlen(token) != 64)
		return NULL;
	core_sha256(token, 64, h);
	for (size_t i = 0; i < a->ntokens; i++)
		if (a->tokens[i].expires_ns > now && !sodium_memcmp(a->tokens[i].hash, h, 32))
			return &a->tokens[i];
	return NULL;
}

bool auth_check(auth *a, const char *token, char *user)
{
	auth_token *t;

	pthread_mutex_lock(&a->lock);
	if ((t = find_token(a, token)))
		snprintf(user, AUTH_NAME_MAX, "%s", t->user);
	pthread_mutex_unlock(&a->lock);
	return t != NULL;
}

bool auth_refresh(auth *a, const char *token, char fresh[65])
{
	auth_token *t;
	char user[AUTH_NAME_MAX];

	pthread_mutex_lock(&a->lock);
	if ((t = find_token(a, token))) {
		snprintf(user, sizeof(user), "%s", t->user);
		issue(a, user, fresh);
	}
	pthread_mutex_unlock(&a->lock);
	return t != NULL;
}

/* ------------------------------------------------------------ login */

/* A hash of a password nobody has: an unknown user costs a check too. */
static char dummy[crypto_pwhash_STRBYTES];
static pthread_once_t dummy_once = PTHREAD_ONCE_INIT;

static void dummy_make(void)
{
	if (crypto_pwhash_str(dummy, "-", 1, crypto_pwhash_OPSLIMIT_INTERACTIVE,
			      crypto_pwhash_MEMLIMIT_INTERACTIVE))
		dummy[0] = '\0';
}

auth_rc auth_login(auth *a, const char *addr, const char *user, const char *password,
		   char token[65], unsigned *retry_s)
{
	char by_user[AUTH_NAME_MAX + 64], by_addr[AUTH_NAME_MAX + 64];
	const char *hash = NULL;
	json_t *users = NULL;
	core_err err = { 0 };
	unsigned h;
	bool ok;

	pthread_once(&dummy_once, dummy_make);
	if (!dummy[0])
		return AUTH_ERROR;
	snprintf(by_user, sizeof(by_user), "user %.*s", AUTH_NAME_MAX - 1, user ? user : "");
	snprintf(by_addr, sizeof(by_addr), "addr %s", addr ? addr : "?");
	pthread_mutex_lock(&a->lock);
	h = held(a, by_user);
	if (held(a, by_addr) > h)
		h = held(a, by_addr);
	pthread_mutex_unlock(&a->lock);
	if (h) {
		*retry_s = h;
		return AUTH_SLOW_DOWN;
	}
	/* the file is read at each login: adduser takes effect at once */
	if (load_users(a->users, &users, false, &err))
		return AUTH_ERROR;
	if (user && password)
		hash = json_string_value(json_object_get(json_object_get(users, "users"), user));
	ok = !crypto_pwhash_str_verify(hash ? hash : dummy, password ? password : "",
				       password ? strlen(password) : 0) && hash;
	json_decref(users);
	pthread_mutex_lock(&a->lock);
	if (ok) {
		auth_fail *f = fail_of(a, by_user, false);

		if (f)
			f->count = 0, f->until_ns = 0;
		issue(a, user, token);
	} else {
		failed(a, by_user);
		failed(a, by_addr);
	}
	pthread_mutex_unlock(&a->lock);
	return ok ? AUTH_OK : AUTH_DENIED;
}
