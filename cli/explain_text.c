/* explain_text.c — an explain document (docs/audit.md) for people. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char *str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static long long num(const json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

/* A payload reference: its data compactly, or why it is not there. */
static void print_payload(FILE *f, const char *label, const json_t *p)
{
	const json_t *data = json_object_get(p, "data");
	char *s;

	if (!p || json_is_null(p))
		return;
	if (!data) {
		fprintf(f, "      %s: payload %.16s… is %s\n", label, str(p, "hash"),
			json_object_get(p, "missing") ? "missing" : "undecodable");
		return;
	}
	s = json_dumps(data, JSON_COMPACT | JSON_ENCODE_ANY);
	fprintf(f, "      %s: %s\n", label, s ? s : "?");
	free(s);
}

static void print_state(FILE *f, const json_t *st)
{
	const char *kind = str(st, "kind");
	const json_t *r;
	size_t i;

	fprintf(f, "  %lld. %s '%s' [%s]%s: %s in %.3f ms", num(st, "step"), kind,
		str(st, "node"), str(st, "plugin"),
		num(st, "attempt") ? " (retry)" : "", str(st, "status"),
		json_real_value(json_object_get(st, "duration_ms")));
	if (num(st, "attempt"))
		fprintf(f, ", attempt %lld", num(st, "attempt") + 1);
	fputc('\n', f);
	fprintf(f, "      in %.16s…", str(st, "input_hash"));
	if (strcmp(str(st, "output_hash"), str(st, "input_hash")))
		fprintf(f, "  out %.16s…", str(st, "output_hash"));
	fputc('\n', f);
	if (json_object_get(st, "error"))
		fprintf(f, "      error: %s\n", str(st, "error"));
	json_array_foreach(json_object_get(st, "routing"), i, r)
		fprintf(f, "      routed: condition gave '%s' -> %s (%s)\n",
			str(r, "reason"), str(r, "to"), str(r, "mode"));
	json_array_foreach(json_object_get(st, "calls"), i, r)
		fprintf(f, "      call %lld: %s %s HTTP %lld in %.1f ms%s%s\n",
			num(r, "call_index"), str(r, "call_type"), str(r, "status"),
			num(r, "http_status"),
			json_real_value(json_object_get(r, "latency_ms")),
			str(r, "error_class")[0] ? ", " : "", str(r, "error_class"));
	if (!strcmp(kind, "transform"))
		print_payload(f, "output", json_object_get(st, "output"));
}

static void print_token(FILE *f, const json_t *t)
{
	const json_t *o = json_object_get(t, "outcome");
	const json_t *a = json_object_get(t, "artifact");
	const json_t *p;
	size_t i;

	fprintf(f, "Token %lld", num(t, "token_id"));
	json_array_foreach(json_object_get(t, "parents"), i, p)
		fprintf(f, "%s%lld", i ? ", " : " (from token ", num(p, "token_id"));
	fputs(json_array_size(json_object_get(t, "parents")) ? ")\n" : "\n", f);
	json_array_foreach(json_object_get(t, "states"), i, p)
		print_state(f, p);
	if (!o || json_is_null(o)) {
		fputs("  Outcome: none recorded (the run stopped or is still running)\n", f);
		return;
	}
	fprintf(f, "  Outcome: %s%s%s\n", str(o, "outcome"),
		str(o, "sink")[0] ? " to sink " : "", str(o, "sink"));
	if (json_object_get(o, "error"))
		print_payload(f, "error", json_object_get(o, "error"));
	if (a && !json_is_null(a))
		fprintf(f, "  Written: %s bytes %lld..%lld (%lld bytes), sha256 %.16s…\n",
			str(a, "path"), num(a, "offset"),
			num(a, "offset") + num(a, "length"), num(a, "length"),
			str(a, "content_hash"));
}

/* Terminal tokens that went to a sink. */
static size_t terminal_count(const json_t *tokens)
{
	const json_t *t;
	size_t i, n = 0;

	json_array_foreach(tokens, i, t)
		if (str(json_object_get(t, "outcome"), "sink")[0])
			n++;
	return n;
}

int cli_explain_text(FILE *f, const json_t *doc, const char *sink)
{
	const json_t *run = json_object_get(doc, "run");
	const json_t *row = json_object_get(doc, "row");
	const json_t *tokens = json_object_get(doc, "tokens"), *t;
	size_t i;

	if (!sink && terminal_count(tokens) > 1) {
		fprintf(stderr, "error: row %lld has several outputs; pick one with --sink:",
			num(row, "seq"));
		json_array_foreach(tokens, i, t)
			if (str(json_object_get(t, "outcome"), "sink")[0])
				fprintf(stderr, " %s", str(json_object_get(t, "outcome"), "sink"));
		fputs(" (or use --json to see them all)\n", stderr);
		return CLI_USAGE;
	}
	fprintf(f, "Run %lld (%s), settings %s, hashes %s\n", num(run, "run_id"),
		str(run, "status"), str(run, "settings_path"), str(run, "canonical_version"));
	fprintf(f, "Row %lld (%s), source hash %s\n", num(row, "seq"),
		str(row, "where")[0] ? str(row, "where") : "no position",
		str(row, "source_hash"));
	print_payload(f, "source (canonical)", json_object_get(row, "source"));
	if (json_object_get(row, "validation_error"))
		fprintf(f, "      validation error: %s\n", str(row, "validation_error"));
	json_array_foreach(tokens, i, t) {
		const char *ts = str(json_object_get(t, "outcome"), "sink");

		if (sink && strcmp(ts, sink))
			continue;
		print_token(f, t);
	}
	return CLI_OK;
}
