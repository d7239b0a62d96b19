/*
 * secrets.c — secret option values never reach the audit trail, logs or
 * sinks: they are replaced by HMAC-SHA256 fingerprints keyed by
 * ELSPETH_FINGERPRINT_KEY, or by a redaction marker when that variable is
 * unset (ADR 0005).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

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
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1];

	if (!key || !key[0]) {
		snprintf(out, cap, "%s", CORE_REDACTED);
		return 0;
	}
	if (!HMAC(EVP_sha256(), key, (int)strlen(key),
		  (const unsigned char *)value, strlen(value), mac, &len))
		return CORE_EINTERNAL;
	core_hex(mac, len, hex);
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

int core_redact_secrets(json_t *v)
{
	const char *key;
	json_t *item;
	size_t i;
	int rc;

	if (json_is_array(v)) {
		json_array_foreach(v, i, item)
			if ((rc = core_redact_secrets(item)))
				return rc;
		return 0;
	}
	if (!json_is_object(v))
		return 0;
	json_object_foreach(v, key, item) {
		if (core_is_secret_name(key))
			rc = json_is_null(item) ? 0 : redact_value(v, key, item);
		else
			rc = core_redact_secrets(item);
		if (rc)
			return rc;
	}
	return 0;
}
