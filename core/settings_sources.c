/*
 * settings_sources.c — where rows come from (ADR 0044): ELSPETH 0.4.1's
 * one `source`, or 0.7.1's `sources` map of named sources (ingested one
 * after another in file order) and its `queues`, the named pass-through
 * nodes that make a fan-in explicit. Which key a file uses decides its
 * format (core_settings.format).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

#define SOURCES_MAX 50     /* ELSPETH 0.7.1's ElspethSettings limits */
#define QUEUES_MAX 100
#define NODE_NAME_MAX 38

/* 0.7.1's rules for a source's or a queue's name, in its words. */
static int check_name(const core_node *key, const char *what, core_err *err)
{
	static const char *const reserved[] = { "continue", "fork", "on_success", NULL };
	const char *name = key->value ? key->value : "";

	for (const char *p = name; *p; p++)
		if (isupper((unsigned char)*p))
			return core_err_at(err, CORE_ECONFIG, key,
				"%s names must be lowercase: '%s'", what, name);
	if (strlen(name) > NODE_NAME_MAX)
		return core_err_at(err, CORE_ECONFIG, key,
			"%s name exceeds max length %d (got %zu)", what,
			NODE_NAME_MAX, strlen(name));
	if (!isalpha((unsigned char)name[0]))
		goto bad_chars;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
			goto bad_chars;
	for (size_t i = 0; reserved[i]; i++)
		if (!strcmp(name, reserved[i]))
			return core_err_at(err, CORE_ECONFIG, key,
				"%s name '%s' is reserved (reserved labels: continue, fork, "
				"on_success)", what, name);
	return 0;
bad_chars:
	return core_err_at(err, CORE_ECONFIG, key,
		"%s name '%s' contains invalid characters. Node names must start "
		"with a letter and contain only letters, digits, underscores, and "
		"hyphens.", what, name);
}

static int load_many(core_settings *s, const core_node *many, core_err *err)
{
	int rc;

	if (many->kind != CORE_NODE_MAP || many->len == 0)
		return core_err_at(err, CORE_ECONFIG, many,
			"expected a map of source name to source (at least one)");
	if (many->len > SOURCES_MAX)
		return core_err_at(err, CORE_ECONFIG, many,
			"%zu sources are given; at most %d", many->len, SOURCES_MAX);
	s->sources = calloc(many->len, sizeof(*s->sources));
	if (!s->sources)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < many->len; i++) {
		core_source_cfg *src = &s->sources[s->nsources];

		if ((rc = check_name(many->keys[i], "Source", err)))
			return rc;
		if (many->items[i]->kind != CORE_NODE_MAP)
			return core_err_at(err, CORE_ECONFIG, many->items[i],
				"expected a map (plugin, on_success, options)");
		if ((rc = core__load_source(s, many->items[i], src, err)))
			return rc;
		src->name = many->keys[i]->value;
		s->nsources++;
	}
	return 0;
}

static const key_spec queue_keys[] = {
	{ "description", K_STR, false }, { NULL }
};

static int load_queues(core_settings *s, const core_node *q, core_err *err)
{
	int rc;

	if (!q || core_node_is_null(q))
		return 0;
	if (s->format != CORE_FORMAT_V07)
		return core_err_at(err, CORE_ECONFIG, q,
			"queues: ELSPETH 0.4.1's format (this file has 'source:') has no "
			"queues; write the sources under 'sources:' (0.7.1's format) to "
			"use them");
	if (q->kind != CORE_NODE_MAP)
		return core_err_at(err, CORE_ECONFIG, q,
			"expected a map of queue name to {description}");
	if (q->len > QUEUES_MAX)
		return core_err_at(err, CORE_ECONFIG, q,
			"%zu queues are given; at most %d", q->len, QUEUES_MAX);
	s->queues = calloc(q->len ? q->len : 1, sizeof(*s->queues));
	if (!s->queues)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < q->len; i++) {
		const core_node *v = q->items[i];

		if ((rc = check_name(q->keys[i], "Queue", err)))
			return rc;
		if (v->kind != CORE_NODE_MAP)
			return core_err_at(err, CORE_ECONFIG, v,
				"expected a map (an empty one, {}, or {description: ...})");
		if ((rc = core__check_section(v, queue_keys, err)))
			return rc;
		s->queues[s->nqueues++] = (core_queue_cfg){ .node = v,
			.name = q->keys[i]->value,
			.description = core__str_of(v, "description") };
	}
	return 0;
}

int core__load_sources(core_settings *s, const core_node *root, core_err *err)
{
	const core_node *one = core_map_get(root, "source");
	const core_node *many = core_map_get(root, "sources");
	int rc;

	if (one && many)
		return core_err_at(err, CORE_ECONFIG, many,
			"both 'source' (ELSPETH 0.4.1's format) and 'sources' (0.7.1's) "
			"are given: write the sources under one of them");
	if (many) {
		s->format = CORE_FORMAT_V07;
		rc = load_many(s, many, err);
	} else {
		s->format = CORE_FORMAT_V04;
		s->sources = calloc(1, sizeof(*s->sources));
		if (!s->sources)
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		rc = core__load_source(s, one, &s->sources[0], err);
		if (!rc)
			s->nsources = 1;
	}
	if (rc)
		return rc;
	s->source = s->sources[0];
	return load_queues(s, core_map_get(root, "queues"), err);
}
