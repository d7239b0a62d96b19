/*
 * hint_schema.c — the JSON shape a prompt asks for in words. ELSPETH's
 * example pipelines ask for JSON with `response_format: json_object` and
 * a system prompt such as
 *     Respond ONLY in JSON format: {"score": <number>, "rationale": "<explanation>"}
 * A real model answers with those keys; so does the mock (answer.h), by
 * reading such an object template out of the messages as a JSON Schema.
 */
#include "answer.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static const char *skip_ws(const char *p)
{
	while (*p && isspace((unsigned char)*p))
		p++;
	return p;
}

/* The schema type of the placeholder at p: a quoted value is a string;
 * true/false or <bool...> a boolean; a number with a point (0.0-1.0) or
 * <float> a number; any other number or <...> (<number>, <int>) an
 * integer; anything else (words: "positive" or "negative") a string. */
static const char *placeholder_type(const char *p)
{
	if (*p == '"')
		return "string";
	if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5) ||
	    !strncasecmp(p, "<bool", 5))
		return "boolean";
	if (!strncasecmp(p, "<float", 6) || !strncasecmp(p, "<decimal", 8))
		return "number";
	if (*p == '<')
		return "integer";
	if (isdigit((unsigned char)*p) || *p == '-') {
		while (isdigit((unsigned char)*p) || *p == '-')
			p++;
		return *p == '.' ? "number" : "integer";
	}
	return "string";
}

/* Reads `"key": placeholder` pairs of the object template opening at p
 * ('{') into props, up to its closing brace (not counted inside quotes).
 * Returns the number of keys. */
static size_t read_template(const char *p, json_t *props)
{
	size_t n = 0;

	for (p = skip_ws(p + 1); *p && *p != '}'; ) {
		const char *k, *e;
		char key[128];

		if (*p != '"')
			return n;
		k = p + 1;
		if (!(e = strchr(k, '"')) || e == k || (size_t)(e - k) >= sizeof(key))
			return n;
		p = skip_ws(e + 1);
		if (*p != ':')
			return n;
		memcpy(key, k, (size_t)(e - k));
		key[e - k] = '\0';
		p = skip_ws(p + 1);
		json_object_set_new(props, key,
				    json_pack("{s:s}", "type", placeholder_type(p)));
		n++;
		/* to the next key: past this value's quotes, commas, words */
		for (int q = 0; *p && (q || (*p != ',' && *p != '}')); p++)
			if (*p == '"')
				q = !q;
		if (*p == ',')
			p = skip_ws(p + 1);
	}
	return n;
}

json_t *mock_hint_schema(const char *text)
{
	json_t *props = json_object(), *s = NULL;

	for (const char *p = text ? strchr(text, '{') : NULL; p && !s;
	     p = strchr(p + 1, '{')) {
		json_object_clear(props);
		if (*skip_ws(p + 1) == '"' && read_template(p, props))
			s = json_pack("{s:s, s:O}", "type", "object", "properties",
				      props);
	}
	json_decref(props);
	return s;
}
