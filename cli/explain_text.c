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
	core_buf b = { 0 };

	if (!p || json_is_null(p))
		return;
	if (!data) {
		fprintf(f, "      %s: payload %.16s… is %s\n", label, str(p, "hash"),
			json_object_get(p, "purged") ? "purged (hash kept)" :
			json_object_get(p, "missing") ? "missing" : "undecodable");
		return;
	}
	core_json_append(&b, data, -1, 0);
	fprintf(f, "      %s: %s\n", label, b.data ? b.data : "?");
	core_buf_release(&b);
}

/* A body, shortened: the JSON or text as recorded, cut at 300 bytes. */
static void print_body(FILE *f, const char *label, const json_t *p)
{
	const json_t *data = json_object_get(p, "data");
	core_buf b = { 0 };

	if (!data)
		return;
	if (json_is_string(data))
		core_buf_puts(&b, json_string_value(data));
	else
		core_json_append(&b, data, -1, 0);
	if (b.data)
		fprintf(f, "          %s: %.300s%s\n", label, b.data, b.len > 300 ? "…" : "");
	core_buf_release(&b);
}

/* One outside call: index, query, outcome, timing (with what drove its
 * throttle wait, when recorded), order, bodies. A replayed call was not
 * sent: it names the call whose answer it reused. */
static void print_call(FILE *f, const json_t *r)
{
	const char *name = str(r, "name");
	/* what held it back: "pace", "retry-after-ms", ... (may be absent) */
	const char *why = str(r, "throttle_reason");

	if (!strcmp(str(r, "status"), "replayed")) {
		fprintf(f, "      call %lld%s%s%s: %s replayed (answer of call %s)\n",
			num(r, "call_index"), name[0] ? " [" : "", name,
			name[0] ? "]" : "", str(r, "call_type"),
			str(r, "replayed_from")[0] ? str(r, "replayed_from") : "?");
		print_body(f, "request", json_object_get(r, "request"));
		print_body(f, "response", json_object_get(r, "response"));
		return;
	}
	fprintf(f, "      call %lld%s%s%s: %s %s HTTP %lld in %.1f ms (throttle %.1f ms%s%s%s, sent #%lld, done #%lld)%s%s%s%s\n",
		num(r, "call_index"), name[0] ? " [" : "", name, name[0] ? "]" : "",
		str(r, "call_type"), str(r, "status"), num(r, "http_status"),
		json_real_value(json_object_get(r, "latency_ms")),
		json_real_value(json_object_get(r, "throttle_delay_ms")),
		why[0] ? " (" : "", why, why[0] ? ")" : "",
		num(r, "submit_order"), num(r, "complete_order"),
		str(r, "error_class")[0] ? ", " : "", str(r, "error_class"),
		str(r, "error")[0] ? ": " : "", str(r, "error"));
	print_body(f, "request", json_object_get(r, "request"));
	print_body(f, "response", json_object_get(r, "response"));
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
	json_array_foreach(json_object_get(st, "routing"), i, r) {
		if (!strcmp(str(r, "mode"), "copy"))
			fprintf(f, "      forked: condition gave '%s' -> branch '%s' -> %s\n",
				str(r, "reason"), str(r, "label"), str(r, "to"));
		else
			fprintf(f, "      routed: condition gave '%s' -> %s\n",
				str(r, "reason"), str(r, "to"));
	}
	if (json_object_get(st, "batch")) {
		const json_t *b = json_object_get(st, "batch"), *m;
		size_t k;

		fprintf(f, "      batch %lld (trigger %s at row %lld)%s, %zu members, tokens:",
			num(b, "batch_id"), str(b, "trigger"), num(b, "trigger_seq"),
			!strcmp(str(b, "status"), "superseded") ?
				" superseded: flushed again by a resume" : "",
			json_array_size(json_object_get(b, "members")));
		json_array_foreach(json_object_get(b, "members"), k, m)
			fprintf(f, " %lld", (long long)json_integer_value(m));
		fputc('\n', f);
	} else if (json_object_get(st, "context")) {
		char *ctx = json_dumps(json_object_get(st, "context"), JSON_COMPACT);

		fprintf(f, "      context: %s\n", ctx ? ctx : "?");
		free(ctx);
	}
	json_array_foreach(json_object_get(st, "calls"), i, r)
		print_call(f, r);
	if (!strcmp(kind, "transform"))
		print_payload(f, "output", json_object_get(st, "output"));
}

/* A token a resume abandoned (docs/audit.md): its work was cut off by the
 * crash and done again by newer tokens of the same row. */
static const json_t *superseded(const json_t *t)
{
	return json_object_get(t, "superseded");
}

static void print_token(FILE *f, const json_t *t)
{
	const json_t *o = json_object_get(t, "outcome");
	const json_t *a = json_object_get(t, "artifact");
	const json_t *s = superseded(t);
	const json_t *p;
	size_t i;

	fprintf(f, "Token %lld", num(t, "token_id"));
	json_array_foreach(json_object_get(t, "parents"), i, p)
		fprintf(f, "%s%lld", i ? ", " : " (from token ", num(p, "token_id"));
	fputs(json_array_size(json_object_get(t, "parents")) ? ")" : "", f);
	if (s)
		fprintf(f, " — SUPERSEDED by resume %lld: %s", num(s, "attempt"),
			str(s, "reason")[0] ? str(s, "reason") : "abandoned");
	fputc('\n', f);
	json_array_foreach(json_object_get(t, "states"), i, p)
		print_state(f, p);
	if (!o || json_is_null(o)) {
		fputs(s ? "  Outcome: none (abandoned by the resume)\n" :
			  "  Outcome: none recorded (the run stopped or is still running)\n", f);
		return;
	}
	fprintf(f, "  Outcome: %s%s%s\n", str(o, "outcome"),
		str(o, "sink")[0] ? " to sink " : "", str(o, "sink"));
	if (json_object_get(o, "error"))
		print_payload(f, "error", json_object_get(o, "error"));
	if (a && !json_is_null(a))
		fprintf(f, "  Written: %s bytes %lld..%lld (%lld bytes), sha256 %.16s…%s\n",
			str(a, "path"), num(a, "offset"),
			num(a, "offset") + num(a, "length"), num(a, "length"),
			str(a, "content_hash"),
			s ? " (abandoned: not part of the final output)" : "");
	if (a && json_object_get(a, "final"))
		fprintf(f, "  Merged: %s bytes %lld..%lld\n",
			str(json_object_get(a, "final"), "path"),
			num(json_object_get(a, "final"), "offset"),
			num(json_object_get(a, "final"), "offset") + num(a, "length"));
}

/* A run's resumes, one line each (nothing for a run never resumed). */
static void print_resumes(FILE *f, const json_t *resumes)
{
	const json_t *r;
	size_t i;

	json_array_foreach(resumes, i, r)
		fprintf(f, "Resume %lld (%s): from the checkpoint after row %lld, "
			"%lld rows reused, %lld rerun, %lld tokens superseded, "
			"%lld calls replayed\n", num(r, "attempt"), str(r, "status"),
			num(r, "from_released_seq"), num(r, "rows_reused"),
			num(r, "rows_rerun"), num(r, "tokens_superseded"),
			num(r, "calls_replayed"));
}

/* The number of different sinks the row's tokens reached; superseded
 * tokens do not count (their output was rewritten by the resume's). */
static size_t sink_count(const json_t *tokens, json_t *names)
{
	const json_t *t;
	size_t i;

	json_array_foreach(tokens, i, t) {
		const char *s = str(json_object_get(t, "outcome"), "sink");

		if (s[0] && !superseded(t))
			json_object_set_new(names, s, json_true());
	}
	return json_object_size(names);
}

int cli_explain_text(FILE *f, const json_t *doc, const char *sink)
{
	const json_t *run = json_object_get(doc, "run");
	const json_t *row = json_object_get(doc, "row");
	const json_t *tokens = json_object_get(doc, "tokens"), *t;
	json_t *names = json_object();
	const char *name;
	size_t i;

	if (!sink && sink_count(tokens, names) > 1) {
		fprintf(stderr, "error: row %lld has outputs in several sinks; pick one with --sink:",
			num(row, "seq"));
		json_object_foreach(names, name, t)
			fprintf(stderr, " %s", name);
		fputs(" (or use --json to see them all)\n", stderr);
		json_decref(names);
		return CLI_USAGE;
	}
	json_decref(names);
	fprintf(f, "Run %lld (%s), settings %s, hashes %s\n", num(run, "run_id"),
		str(run, "status"), str(run, "settings_path"), str(run, "canonical_version"));
	print_resumes(f, json_object_get(doc, "resumes"));
	fprintf(f, "Row %lld (%s), source hash %s\n", num(row, "seq"),
		str(row, "where")[0] ? str(row, "where") : "no position",
		str(row, "source_hash"));
	if (json_object_get(row, "source_node"))
		fprintf(f, "      from source '%s', its row %lld (0-based)\n",
			str(row, "source_node"), num(row, "source_row_index"));
	print_payload(f, "source (canonical)", json_object_get(row, "source"));
	if (json_object_get(row, "validation_error"))
		fprintf(f, "      validation error: %s\n", str(row, "validation_error"));
	json_array_foreach(tokens, i, t) {
		const char *ts = str(json_object_get(t, "outcome"), "sink");

		/* With --sink: that sink's tokens and the ones leading to them. */
		if (sink && ts[0] && strcmp(ts, sink))
			continue;
		print_token(f, t);
	}
	return CLI_OK;
}
