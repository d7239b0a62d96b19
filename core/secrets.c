/*
 * secrets.c — secret option values never reach the audit trail, logs or
 * sinks: they are replaced by HMAC-SHA256 fingerprints keyed by
 * ELSPETH_FINGERPRINT_KEY, or by a redaction marker when that variable is
 * unset (ADR 0005).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/core.h"

static const char *const exact_names[] = {
	"api_key", "password", "token", "secret", "authorization",
	"connection_string", "credential", "credentials", "api-key", NULL
};
static const char *const suffixes[] = {
	"_key", "_secret", "_token", "_password", NULL
};

bool core_is_secret_name(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; exact_names[i]; i++)
		if (!strcasecmp(name, exact_names[i]))
			return true;
	for (size_t i = 0; suffixes[i]; i++) {
		size_t k = strlen(suffixes[i]);

		if (n > k && !strcasecmp(name + n - k, suffixes[i]))
			return true;
	}
	return false;
}

int core_fingerprint(const char *value, char *out, size_t cap)
{
	const char *key = getenv("ELSPETH_FINGERPRINT_KEY");
	char hex[CORE_SHA256_HEX_LEN + 1];

	if (!key || !key[0]) {
		snprintf(out, cap, "%s", CORE_REDACTED);
		return 0;
	}
	if (core_hmac_sha256_hex(key, value, strlen(value), hex))
		return CORE_EINTERNAL;
	snprintf(out, cap, "hmac-sha256:%s", hex);
	return 0;
}

static int redact_value(json_t *obj, const char *key, json_t *v)
{
	char fp[128];
	char *text;
	int rc;

	if (json_is_string(v)) {
		rc = core_fingerprint(json_string_value(v), fp, sizeof(fp));
	} else {
		/* A non-string secret (a number, a map): fingerprint its JSON. */
		text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!text)
			return CORE_ENOMEM;
		rc = core_fingerprint(text, fp, sizeof(fp));
		free(text);
	}
	if (rc)
		return rc;
	return json_object_set_new(obj, key, json_string(fp)) ? CORE_ENOMEM : 0;
}

/* Where the password of a url's user info lies ("scheme://user:PASSWORD@
 * host..."): [*from, *to); false when s is no such url. */
static bool url_password(const char *s, size_t *from, size_t *to)
{
	const char *auth = strstr(s, "://"), *end, *at = NULL, *colon;

	if (!auth)
		return false;
	auth += 3;
	end = auth + strcspn(auth, "/?#");
	for (const char *p = auth; p < end; p++)
		if (*p == '@')
			at = p;
	if (!at || !(colon = memchr(auth, ':', (size_t)(at - auth))))
		return false;
	*from = (size_t)(colon - s);
	*to = (size_t)(at - s);
	return true;
}

char *core_url_sanitize(const char *url)
{
	size_t from, to, n = strlen(url);
	const char *q;
	char *out = malloc(n + 1), *p;

	if (!out)
		return NULL;
	if (url_password(url, &from, &to)) {
		memcpy(out, url, from);
		memcpy(out + from, url + to, n - to + 1);
	} else {
		memcpy(out, url, n + 1);
	}
	/* libpq's ?password=... (and &password=...): the parameter goes */
	if ((q = strchr(out, '?'))) {
		for (p = (char *)q + 1; *p;) {
			size_t len = strcspn(p, "&");

			if (!strncasecmp(p, "password=", 9)) {
				memmove(p, p + len + (p[len] == '&'), strlen(p + len + (p[len] == '&')) + 1);
				continue;
			}
			p += len + (p[len] == '&');
		}
		n = strlen(out);
		while (n && (out[n - 1] == '&' || out[n - 1] == '?'))
			out[--n] = '\0';
	}
	return out;
}

/* %XX escapes decoded in place: the fingerprint is of the password
 * itself, not of how the url spells it. */
static void percent_decode(char *s)
{
	char *o = s;

	for (; *s; s++) {
		unsigned x;

		if (s[0] == '%' && isxdigit((unsigned char)s[1]) &&
		    isxdigit((unsigned char)s[2]) && sscanf(s + 1, "%2x", &x) == 1) {
			*o++ = (char)x;
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* A string holding a url with a password (a database sink's url):
 * the password is taken out of it, and its fingerprint kept in the
 * member KEY_password_fingerprint beside it (as ELSPETH records
 * landscape.url), or in place of the password inside an array. */
static int redact_url(json_t *parent, const char *key, size_t index,
		      json_t *v, json_t *extra)
{
	const char *s = json_string_value(v);
	size_t from, to, n = json_string_length(v);
	char fp[128], *clean, *pw;
	int rc;

	if (!url_password(s, &from, &to))
		return 0;
	if (!(pw = strndup(s + from + 1, to - from - 1)))
		return CORE_ENOMEM;
	percent_decode(pw);
	rc = core_fingerprint(pw, fp, sizeof(fp));
	free(pw);
	if (rc || !(clean = malloc(n + sizeof(fp) + 2)))
		return rc ? rc : CORE_ENOMEM;
	memcpy(clean, s, from);
	if (key)
		memcpy(clean + from, s + to, n - to + 1);
	else /* no member to keep it in: "scheme://user:FINGERPRINT@host" */
		sprintf(clean + from, ":%s%s", fp, s + to);
	rc = key ? json_object_set_new(parent, key, json_string(clean)) :
		   json_array_set_new(parent, index, json_string(clean));
	free(clean);
	if (!rc && key) {
		char name[256];

		snprintf(name, sizeof(name), "%s_password_fingerprint", key);
		rc = json_object_set_new(extra, name, json_string(fp));
	}
	return rc ? CORE_ENOMEM : 0;
}

int core_redact_secrets(json_t *v)
{
	json_t *item, *extra;
	const char *key;
	size_t i;
	int rc = 0;

	if (json_is_array(v)) {
		json_array_foreach(v, i, item) {
			rc = json_is_string(item) ? redact_url(v, NULL, i, item, NULL) :
			     core_redact_secrets(item);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (!json_is_object(v))
		return 0;
	/* Members are added after the walk (not during it). */
	if (!(extra = json_object()))
		return CORE_ENOMEM;
	json_object_foreach(v, key, item) {
		if (core_is_secret_name(key))
			rc = json_is_null(item) ? 0 : redact_value(v, key, item);
		else if (json_is_string(item))
			rc = redact_url(v, key, 0, item, extra);
		else
			rc = core_redact_secrets(item);
		if (rc)
			break;
	}
	if (!rc && json_object_update(v, extra))
		rc = CORE_ENOMEM;
	json_decref(extra);
	return rc;
}
