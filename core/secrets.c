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

/* Where a url's password lies: that of its user info
 * ("scheme://user:PASSWORD@host…") or a password= query parameter (libpq
 * takes one: "…/db?sslmode=require&password=PASSWORD"). *pw..*pwe: the
 * password; *cut..*cute: what goes when the url is shown without it
 * (":PASSWORD", or the parameter with one of its separators). False
 * when s has no password. */
static bool url_password(const char *s, size_t *pw, size_t *pwe, size_t *cut,
			 size_t *cute)
{
	const char *auth = strstr(s, "://"), *end, *at = NULL, *colon, *q, *p;

	if (!auth)
		return false;
	auth += 3;
	end = auth + strcspn(auth, "/?#");
	for (const char *c = auth; c < end; c++)
		if (*c == '@')
			at = c;
	if (at && (colon = memchr(auth, ':', (size_t)(at - auth)))) {
		*cut = (size_t)(colon - s);
		*pw = *cut + 1;
		*pwe = *cute = (size_t)(at - s);
		return true;
	}
	if (!(q = strchr(end, '?')))
		return false;
	for (p = q + 1; *p; p += strcspn(p, "&#"), p += *p == '&') {
		if (*p == '#')
			return false;
		if (strncasecmp(p, "password=", 9))
			continue;
		*pw = (size_t)(p - s) + 9;
		*pwe = *pw + strcspn(p + 9, "&#");
		if (p[-1] == '&') {             /* "&password=X" */
			*cut = (size_t)(p - s) - 1;
			*cute = *pwe;
		} else if (s[*pwe] == '&') {    /* "?password=X&" -> "?" */
			*cut = (size_t)(p - s);
			*cute = *pwe + 1;
		} else {                        /* "?password=X" */
			*cut = (size_t)(p - s) - 1;
			*cute = *pwe;
		}
		return true;
	}
	return false;
}

char *core_url_sanitize(const char *url)
{
	size_t pw, pwe, cut, cute;
	char *out = strdup(url);

	while (out && url_password(out, &pw, &pwe, &cut, &cute))
		memmove(out + cut, out + cute, strlen(out + cute) + 1);
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
	size_t pw, pwe, cut, cute, n;
	char fp[128] = "", *url, *p;
	int rc = 0;

	if (!url_password(json_string_value(v), &pw, &pwe, &cut, &cute))
		return 0;
	if (!(url = strdup(json_string_value(v))))
		return CORE_ENOMEM;
	while (!rc && url_password(url, &pw, &pwe, &cut, &cute)) {
		if (!(p = strndup(url + pw, pwe - pw))) {
			rc = CORE_ENOMEM;
			break;
		}
		percent_decode(p);
		rc = core_fingerprint(p, fp, sizeof(fp));
		free(p);
		if (rc)
			break;
		n = strlen(url);
		if (key) {
			memmove(url + cut, url + cute, n - cute + 1);
			continue;
		}
		/* no member to keep it in: the fingerprint in its place */
		if (!(p = malloc(n + strlen(fp) + 1))) {
			rc = CORE_ENOMEM;
			break;
		}
		sprintf(p, "%.*s%s%s", (int)pw, url, fp, url + pwe);
		free(url);
		url = p;
		break; /* one password per url in an array */
	}
	if (!rc)
		rc = (key ? json_object_set_new(parent, key, json_string(url)) :
		      json_array_set_new(parent, index, json_string(url))) ? CORE_ENOMEM : 0;
	free(url);
	if (!rc && key) {
		char name[256];

		snprintf(name, sizeof(name), "%s_password_fingerprint", key);
		rc = json_object_set_new(extra, name, json_string(fp)) ? CORE_ENOMEM : 0;
	}
	return rc;
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
