/*
 * export_errors.c — ELSPETH's validation_errors and transform_errors from
 * ours: the sink or "discard" each went to, the row's data, and the
 * violation columns read off our schema check's messages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqltrail/export_internal.h"

#define ULL(v) ((unsigned long long)(v))

/* The sink an error edge of node leads to, or "discard". */
static const char *error_destination(const xp *x, uint32_t node, const char *label)
{
	for (size_t i = 0; i < x->nedges; i++)
		if (x->edges[i].from == node && !strcmp(x->edges[i].label, label) &&
		    x->edges[i].to < x->nnodes)
			return x->nodes[x->edges[i].to].name;
	return "discard";
}

/* A payload's text (NULL when absent), malloc'd. */
static char *payload_text(xp *x, const char *hash)
{
	const void *d;
	size_t n;
	char *s;

	if (!hash || !*hash || rec_get_payload(x->t, hash, &d, &n))
		return NULL;
	if ((s = malloc(n + 1))) {
		memcpy(s, d, n);
		s[n] = '\0';
	}
	return s;
}

/* ELSPETH's violation columns, read off our schema check's messages
 * (plugins/schema.c words them one of four ways, after "line N: "):
 *   field 'F': expected T, got V        type_mismatch, T, V's type
 *   field 'F': required field is missing (expected T)   missing_field
 *   field 'F': required field is null   missing_field
 *   field 'F': not declared in the schema ...           extra_field
 * Anything else (a malformed line, say) leaves them NULL. */
typedef struct violation {
	const char *type;
	char field[256];
	char expected[32];
	const char *actual;
} violation;

static const char *value_type(const char *v)
{
	if (*v == '"')
		return "str";
	if (!strncmp(v, "null", 4))
		return "NoneType";
	if (!strncmp(v, "true", 4) || !strncmp(v, "false", 5))
		return "bool";
	if (!strncmp(v, "an object", 9))
		return "dict";
	if (!strncmp(v, "an array", 8))
		return "list";
	return strpbrk(v, ".eE") ? "float" : "int";
}

static bool parse_violation(const char *msg, violation *out)
{
	const char *f = strstr(msg, "field '"), *end, *rest;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!f)
		return false;
	f += 7;
	if (!(end = strstr(f, "': ")))
		return false;
	n = (size_t)(end - f) < sizeof(out->field) ? (size_t)(end - f) : sizeof(out->field) - 1;
	memcpy(out->field, f, n);
	rest = end + 3;
	if (!strncmp(rest, "expected ", 9)) {
		const char *comma = strstr(rest, ", got ");

		if (!comma)
			return false;
		n = (size_t)(comma - rest - 9);
		snprintf(out->expected, sizeof(out->expected), "%.*s", (int)n, rest + 9);
		out->type = "type_mismatch";
		out->actual = value_type(comma + 6);
	} else if (!strncmp(rest, "required field is missing (expected ", 36)) {
		snprintf(out->expected, sizeof(out->expected), "%.*s",
			 (int)strcspn(rest + 36, ")"), rest + 36);
		out->type = "missing_field";
	} else if (!strncmp(rest, "required field is null", 22)) {
		out->type = "missing_field";
		out->actual = "NoneType";
	} else if (!strncmp(rest, "not declared in the schema", 26)) {
		out->type = "extra_field";
	} else {
		return false;
	}
	return true;
}

static int one_validation_error(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__ValidationErrorRecord *r = msg;
	xrow *s = &x->st[ST_VALIDATION_ERRORS];
	uint32_t source = x->source;
	const xnode *src;
	const char *mode;
	char *data;
	violation vi;
	const void *rv;
	size_t rl;
	rec_key k;
	uint64_t at = 0;
	int rc;

	(void)key, (void)klen;
	if (x->late)
		return 0; /* made at ingest: never late */
	rec_key_init(&k);
	rec_key_u64(&k, x->run);
	rec_key_u64(&k, r->row_id);
	if (!rec_get(x->t, REC_ROWS, &k, &rv, &rl)) {
		Elspeth__RowRecord *row = elspeth__row_record__unpack(NULL, rl, rv);

		if (row) {
			at = row->created_at_ns;
			source = row->source;
			elspeth__row_record__free_unpacked(row, NULL);
		}
	}
	src = source < x->nnodes ? &x->nodes[source] : NULL;
	mode = src ? json_string_value(json_object_get(
		json_object_get(src->config, "schema"), "mode")) : NULL;
	data = payload_text(x, r->data_ref);
	sqlt__bind_ref(x, s, 1, "ve", r->row_id);
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_text(s, 3, sqlt__node_id(x, source));
	sqlt__bind_text(s, 4, r->data_ref);
	sqlt__bind_text(s, 5, data);
	sqlt__bind_text(s, 6, r->error);
	sqlt__bind_text(s, 7, mode ? mode : "observed");
	sqlt__bind_text(s, 8, error_destination(x, source, "on_validation_failure"));
	sqlt__bind_time(s, 9, at ? at : x->rr->started_at_ns);
	if (parse_violation(r->error, &vi)) {
		sqlt__bind_text(s, 10, vi.type);
		sqlt__bind_text(s, 11, vi.field);
		sqlt__bind_text(s, 12, vi.field);
		sqlt__bind_nz(s, 13, vi.expected);
		sqlt__bind_text(s, 14, vi.actual);
	}
	rc = sqlt__step(x, ST_VALIDATION_ERRORS);
	free(data);
	return rc;
}

static int one_transform_error(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__TransformErrorRecord *r = msg;
	xrow *s = &x->st[ST_TRANSFORM_ERRORS];
	char *data = payload_text(x, r->data_ref);
	char *details = sqlt__json_text(json_pack("{s:s,s:b}", "message", r->error,
				       "retryable", r->retryable));
	uint64_t at;
	int rc;

	(void)key, (void)klen;
	if (x->late && !sqlt__late_state(x, r->state_id)) {
		free(data);
		free(details);
		return 0;
	}
	if (!details) {
		free(data);
		return core_err_set(x->err, CORE_ENOMEM, "out of memory");
	}
	at = sqlt__state_at(x, r->state_id);
	sqlt__bind_id(s, 1, "te-%s-%llu-%llu", x->rid, ULL(r->token_id), ULL(r->state_id));
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_ref(x, s, 3, "tok", r->token_id);
	sqlt__bind_text(s, 4, sqlt__node_id(x, r->node_id));
	sqlt__bind_text(s, 5, r->data_ref);
	sqlt__bind_text(s, 6, data);
	sqlt__bind_text(s, 7, details);
	sqlt__bind_text(s, 8, error_destination(x, r->node_id, "on_error"));
	sqlt__bind_time(s, 9, at ? at : x->rr->started_at_ns);
	rc = sqlt__step(x, ST_TRANSFORM_ERRORS);
	free(data);
	free(details);
	return rc;
}

const sqlt_pass sqlt__error_passes[2] = {
	{ REC_VALIDATION_ERRORS, &elspeth__validation_error_record__descriptor,
	  one_validation_error },
	{ REC_TRANSFORM_ERRORS, &elspeth__transform_error_record__descriptor,
	  one_transform_error },
};
