/*
 * t_explain.c — explain_token: a token's complete lineage, as ELSPETH's
 * core/landscape/lineage.py explain() composes it and mcp/analyzers/
 * queries.py annotates it (flow_type on routing events, divert_summary).
 * A row_id is resolved to its one terminal token (or the one at `sink`);
 * the lineage's invariants (one group id per token, parents exactly when
 * a group id is set) are checked as ELSPETH checks them, and a violation
 * is an error, never a silent answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp_internal.h"

static const mcp__field token_fields[] = {
	{ "token_id", NULL, MCP__RAW }, { "row_id", NULL, MCP__RAW },
	{ "created_at", NULL, MCP__TIME }, { "run_id", NULL, MCP__RAW },
	{ "fork_group_id", NULL, MCP__RAW }, { "join_group_id", NULL, MCP__RAW },
	{ "expand_group_id", NULL, MCP__RAW }, { "branch_name", NULL, MCP__RAW },
	{ "step_in_pipeline", NULL, MCP__RAW }, { NULL }
};

#define STATE_HEAD \
	{ "state_id", NULL, MCP__RAW }, { "token_id", NULL, MCP__RAW }, \
	{ "node_id", NULL, MCP__RAW }, { "step_index", NULL, MCP__RAW }, \
	{ "attempt", NULL, MCP__RAW }, { "status", NULL, MCP__RAW }, \
	{ "input_hash", NULL, MCP__RAW }, { "started_at", NULL, MCP__TIME }

/* ELSPETH's four NodeState variants: each status has its own fields. */
static const mcp__field state_open[] = {
	STATE_HEAD, { "context_before_json", NULL, MCP__RAW }, { NULL }
};
static const mcp__field state_pending[] = {
	STATE_HEAD, { "completed_at", NULL, MCP__TIME }, { "duration_ms", NULL, MCP__RAW },
	{ "context_before_json", NULL, MCP__RAW }, { "context_after_json", NULL, MCP__RAW },
	{ NULL }
};
static const mcp__field state_completed[] = {
	STATE_HEAD, { "output_hash", NULL, MCP__RAW }, { "completed_at", NULL, MCP__TIME },
	{ "duration_ms", NULL, MCP__RAW }, { "context_before_json", NULL, MCP__RAW },
	{ "context_after_json", NULL, MCP__RAW }, { "success_reason_json", NULL, MCP__RAW },
	{ NULL }
};
static const mcp__field state_failed[] = {
	STATE_HEAD, { "completed_at", NULL, MCP__TIME }, { "duration_ms", NULL, MCP__RAW },
	{ "error_json", NULL, MCP__RAW }, { "output_hash", NULL, MCP__RAW },
	{ "context_before_json", NULL, MCP__RAW }, { "context_after_json", NULL, MCP__RAW },
	{ NULL }
};

static const mcp__field event_fields[] = {
	{ "event_id", NULL, MCP__RAW }, { "state_id", NULL, MCP__RAW },
	{ "edge_id", NULL, MCP__RAW }, { "routing_group_id", NULL, MCP__RAW },
	{ "ordinal", NULL, MCP__RAW }, { "mode", NULL, MCP__RAW },
	{ "created_at", NULL, MCP__TIME }, { "reason_hash", NULL, MCP__RAW },
	{ "reason_ref", NULL, MCP__RAW }, { NULL }
};

static const mcp__field verror_fields[] = {
	{ "error_id", NULL, MCP__RAW }, { "run_id", NULL, MCP__RAW },
	{ "node_id", NULL, MCP__RAW }, { "row_hash", NULL, MCP__RAW },
	{ "error", NULL, MCP__RAW }, { "schema_mode", NULL, MCP__RAW },
	{ "destination", NULL, MCP__RAW }, { "created_at", NULL, MCP__TIME },
	{ "row_data_json", NULL, MCP__RAW }, { NULL }
};

static const mcp__field terror_fields[] = {
	{ "error_id", NULL, MCP__RAW }, { "run_id", NULL, MCP__RAW },
	{ "token_id", NULL, MCP__RAW }, { "transform_id", NULL, MCP__RAW },
	{ "row_hash", NULL, MCP__RAW }, { "destination", NULL, MCP__RAW },
	{ "created_at", NULL, MCP__TIME }, { "row_data_json", NULL, MCP__RAW },
	{ "error_details_json", NULL, MCP__RAW }, { NULL }
};

static const mcp__field outcome_fields[] = {
	{ "outcome_id", NULL, MCP__RAW }, { "run_id", NULL, MCP__RAW },
	{ "token_id", NULL, MCP__RAW }, { "outcome", NULL, MCP__RAW },
	{ "is_terminal", NULL, MCP__BOOL }, { "recorded_at", NULL, MCP__TIME },
	{ "sink_name", NULL, MCP__RAW }, { "batch_id", NULL, MCP__RAW },
	{ "fork_group_id", NULL, MCP__RAW }, { "join_group_id", NULL, MCP__RAW },
	{ "expand_group_id", NULL, MCP__RAW }, { "error_hash", NULL, MCP__RAW },
	{ "context_json", NULL, MCP__RAW }, { "expected_branches_json", NULL, MCP__RAW },
	{ NULL }
};

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Python's repr of a list or set of strings: ['a', 'b'], {'a'}, set(). */
static void py_strings(core_buf *b, const char *const *v, size_t n, bool set)
{
	if (set && !n) {
		core_buf_puts(b, "set()");
		return;
	}
	core_buf_putc(b, set ? '{' : '[');
	for (size_t i = 0; i < n; i++)
		core_buf_printf(b, "%s'%s'", i ? ", " : "", v[i]);
	core_buf_putc(b, set ? '}' : ']');
}

/* The terminal outcomes at sink (NULL: all) among outcomes. */
static size_t pick_terminal(const json_t *outcomes, const char *sink,
			    const char **ids, size_t cap, size_t *n_all)
{
	size_t i, n = 0;
	json_t *o;

	*n_all = 0;
	json_array_foreach(outcomes, i, o) {
		const char *on = str(o, "sink_name");

		if (!json_integer_value(json_object_get(o, "is_terminal")))
			continue;
		if (sink && (!on || strcmp(on, sink)))
			continue;
		if (n < cap)
			ids[n] = str(o, "token_id");
		n++;
	}
	*n_all = n;
	return n < cap ? n : cap;
}

/* Distinct sink names of the terminal outcomes, in their order. */
static size_t sink_names(const json_t *outcomes, const char **names, size_t cap)
{
	size_t i, n = 0, k;
	json_t *o;

	json_array_foreach(outcomes, i, o) {
		const char *on = str(o, "sink_name");

		if (!json_integer_value(json_object_get(o, "is_terminal")) || !on || !*on)
			continue;
		for (k = 0; k < n && strcmp(names[k], on); k++)
			;
		if (k == n && n < cap)
			names[n++] = on;
	}
	return n;
}

/* lineage.explain's row_id branch: the token to explain, or *token NULL
 * (nothing to explain: ELSPETH answers "not found"). */
static int resolve_row(mcp_server *s, const char *run, const char *row,
		       const char *sink, char **token, core_err *err)
{
	const char *ids[16];
	size_t n, shown;
	json_t *outcomes;
	core_buf b = { 0 };
	int rc;

	*token = NULL;
	rc = mcp__rows(s, &outcomes, err,
		       "SELECT token_outcomes.* FROM token_outcomes JOIN tokens "
		       "ON token_outcomes.token_id = tokens.token_id "
		       "WHERE tokens.row_id = ? AND token_outcomes.run_id = ? "
		       "ORDER BY token_outcomes.recorded_at", "ss", row, run);
	if (rc)
		return rc;
	shown = pick_terminal(outcomes, sink, ids, 16, &n);
	if (n == 1) {
		if (!(*token = strdup(ids[0])))
			rc = mcp__oom(err);
	} else if (n > 1 && sink) {
		py_strings(&b, ids, shown > 5 ? 5 : shown, false);
		rc = core_err_set(err, CORE_EDATA, "Row %s has %zu tokens at sink '%s'. "
				  "This may indicate fork paths reaching the same sink. "
				  "Use token_id for precision: %s%s", row, n, sink,
				  b.data ? b.data : "[]", n > 5 ? "..." : "");
	} else if (n > 1) {
		const char *names[16];

		py_strings(&b, names, sink_names(outcomes, names, 16), true);
		rc = core_err_set(err, CORE_EDATA, "Row %s has %zu terminal tokens across "
				  "sinks: %s. Provide sink parameter to disambiguate, or use "
				  "token_id for precision.", row, n, b.data ? b.data : "set()");
	}
	core_buf_release(&b);
	json_decref(outcomes);
	return rc;
}

/* RowLineage: the row with its payload when the trail keeps payloads. */
static int source_row(mcp_server *s, const char *run, const json_t *token,
		      json_t **out, core_err *err)
{
	static const mcp__field f[] = {
		{ "row_id", NULL, MCP__RAW }, { "run_id", NULL, MCP__RAW },
		{ "source_node_id", NULL, MCP__RAW }, { "row_index", NULL, MCP__RAW },
		{ "source_data_hash", NULL, MCP__RAW }, { "created_at", NULL, MCP__TIME },
		{ NULL }
	};
	const char *row_id = str(token, "row_id");
	json_t *row, *data = NULL;
	bool avail;
	int rc = mcp__row(s, &row, err, "SELECT * FROM rows WHERE row_id = ?", "s", row_id);

	if (rc)
		return rc;
	if (!row)
		return core_err_set(err, CORE_EDATA, "Row '%s' of token '%s' is not in the "
				    "rows table: the audit trail is damaged", row_id,
				    str(token, "token_id"));
	if (strcmp(str(row, "run_id") ? str(row, "run_id") : "", run))
		rc = core_err_set(err, CORE_EDATA, "Row %s belongs to run %s, not %s",
				  row_id, str(row, "run_id"), run);
	if (!rc)
		rc = mcp__payload(s, str(row, "source_data_ref"), &data, err);
	if (!rc)
		rc = mcp__shape(row, f, out, err);
	json_decref(row);
	if (rc) {
		json_decref(data);
		return rc;
	}
	avail = data != NULL;
	rc = mcp__set(*out, "source_data", data ? data : json_null(), err);
	if (!rc)
		rc = mcp__set(*out, "payload_available", json_boolean(avail), err);
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

static int node_states(mcp_server *s, const char *token, json_t **out,
		       core_err *err)
{
	json_t *rows, *st, *list = json_array();
	size_t i;
	int rc = mcp__rows(s, &rows, err, "SELECT * FROM node_states WHERE token_id = ? "
			   "ORDER BY step_index, attempt", "s", token);

	json_array_foreach(rows, i, st) {
		const char *status = str(st, "status") ? str(st, "status") : "";
		const mcp__field *f = !strcmp(status, "open") ? state_open
			: !strcmp(status, "pending") ? state_pending
			: !strcmp(status, "completed") ? state_completed
			: !strcmp(status, "failed") ? state_failed : NULL;
		json_t *o;

		if (rc)
			break;
		if (!f)
			rc = core_err_set(err, CORE_EDATA, "Unknown status '%s' for state %s",
					  status, str(st, "state_id"));
		else if (!(rc = mcp__shape(st, f, &o, err)))
			rc = mcp__append(list, o, err);
	}
	json_decref(rows);
	if (rc || !list) {
		json_decref(list);
		return rc ? rc : mcp__oom(err);
	}
	*out = list;
	return 0;
}

static int routing_events(mcp_server *s, const char *token, json_t **out,
			  core_err *err)
{
	json_t *rows, *ev;
	size_t i;
	int rc = mcp__rows(s, &rows, err,
			   "SELECT routing_events.* FROM routing_events JOIN node_states "
			   "ON routing_events.state_id = node_states.state_id "
			   "WHERE node_states.token_id = ? ORDER BY node_states.step_index, "
			   "node_states.attempt, routing_events.ordinal, routing_events.event_id",
			   "s", token);

	if (!rc)
		rc = mcp__shape_all(rows, event_fields, out, err);
	json_decref(rows);
	json_array_foreach(rc ? NULL : *out, i, ev) {
		const char *mode = str(ev, "mode");
		bool divert = mode && !strcmp(mode, "divert");

		if ((rc = mcp__set(ev, "flow_type", json_string(divert ? "divert" : "normal"), err))) {
			json_decref(*out);
			break;
		}
	}
	return rc;
}

/* The token's group ids as lineage.explain checks them against its
 * parents: at most one of fork/join/expand, none empty, parents exactly
 * when one is set. */
static int check_groups(const json_t *token, size_t nparents, core_err *err)
{
	static const char *const kinds[] = { "fork", "join", "expand" };
	const char *id = str(token, "token_id"), *set[3];
	size_t nset = 0;

	for (int k = 0; k < 3; k++) {
		char key[32];
		const char *g;

		snprintf(key, sizeof(key), "%s_group_id", kinds[k]);
		g = str(token, key);
		if (g && !*g)
			return core_err_set(err, CORE_EDATA, "Audit integrity violation: token "
					    "'%s' has an empty %s. This indicates database "
					    "corruption.", id, key);
		if (g)
			set[nset++] = kinds[k];
	}
	if (nset > 1)
		return core_err_set(err, CORE_EDATA, "Audit integrity violation: token '%s' "
				    "has several group ids set (%s, %s): a token belongs "
				    "to exactly one lineage operation.", id, set[0], set[1]);
	if (nset && !nparents)
		return core_err_set(err, CORE_EDATA, "Audit integrity violation: token '%s' "
				    "has a %s_group_id but no parents in token_parents.",
				    id, set[0]);
	if (!nset && nparents)
		return core_err_set(err, CORE_EDATA, "Audit integrity violation: token '%s' "
				    "has parents in token_parents but no fork, join or "
				    "expand group id.", id);
	return 0;
}

static int parent_tokens(mcp_server *s, const json_t *token, json_t **out,
			 core_err *err)
{
	json_t *links, *link, *parent, *list = json_array();
	size_t i;
	int rc = mcp__rows(s, &links, err, "SELECT * FROM token_parents WHERE token_id = ? "
			   "ORDER BY ordinal", "s", str(token, "token_id"));

	if (!rc)
		rc = list ? check_groups(token, json_array_size(links), err) : mcp__oom(err);
	json_array_foreach(rc ? NULL : links, i, link) {
		const char *pid = str(link, "parent_token_id");
		json_t *o;

		if ((rc = mcp__row(s, &parent, err, "SELECT * FROM tokens WHERE token_id = ?",
				   "s", pid)))
			break;
		if (!parent) {
			rc = core_err_set(err, CORE_EDATA, "Audit integrity violation: parent "
					  "token '%s' of token '%s' does not exist.", pid,
					  str(token, "token_id"));
			break;
		}
		rc = mcp__shape(parent, token_fields, &o, err);
		json_decref(parent);
		if (rc || (rc = mcp__append(list, o, err)))
			break;
	}
	json_decref(links);
	if (rc)
		json_decref(list);
	else
		*out = list;
	return rc;
}

/* The last divert event's edge, or null. */
static int divert_summary(mcp_server *s, const json_t *events, json_t **out,
			  core_err *err)
{
	const json_t *last = NULL, *ev;
	const char *label;
	json_t *edge;
	size_t i;
	int rc;

	json_array_foreach(events, i, ev)
		if (!strcmp(str(ev, "mode") ? str(ev, "mode") : "", "divert"))
			last = ev;
	if (!last) {
		*out = json_null();
		return 0;
	}
	if ((rc = mcp__row(s, &edge, err, "SELECT * FROM edges WHERE edge_id = ?", "s",
			   str(last, "edge_id"))))
		return rc;
	if (!edge)
		return core_err_set(err, CORE_EDATA, "Audit integrity violation: edge '%s' "
				    "not found. A routing_event references a non-existent "
				    "edge.", str(last, "edge_id"));
	label = str(edge, "label") ? str(edge, "label") : "";
	*out = json_pack("{s:b, s:s, s:O, s:O, s:O, s:O}", "diverted", 1, "divert_type",
			 strstr(label, "__quarantine__") ? "quarantine" : "error",
			 "from_node", json_object_get(edge, "from_node_id"),
			 "to_sink", json_object_get(edge, "to_node_id"),
			 "edge_label", json_object_get(edge, "label"),
			 "reason_hash", json_object_get(last, "reason_hash"));
	json_decref(edge);
	return *out ? 0 : mcp__oom(err);
}

/* The remaining parts of the lineage, after the token and its row. */
static int lineage(mcp_server *s, const char *run, const json_t *token,
		   json_t *out, core_err *err)
{
	const char *tid = str(token, "token_id");
	const char *hash = str(json_object_get(out, "source_row"), "source_data_hash");
	json_t *v, *rows;
	int rc;

	if ((rc = node_states(s, tid, &v, err)) || (rc = mcp__set(out, "node_states", v, err)))
		return rc;
	if ((rc = routing_events(s, tid, &v, err)) ||
	    (rc = mcp__set(out, "routing_events", v, err)))
		return rc;
	if ((rc = mcp__rows(s, &rows, err, "SELECT calls.* FROM calls JOIN node_states "
			    "ON calls.state_id = node_states.state_id WHERE node_states.token_id = ? "
			    "ORDER BY node_states.step_index, node_states.attempt, calls.call_index",
			    "s", tid)))
		return rc;
	rc = mcp__shape_all(rows, mcp__call_fields, &v, err);
	json_decref(rows);
	if (rc || (rc = mcp__set(out, "calls", v, err)))
		return rc;
	if ((rc = parent_tokens(s, token, &v, err)) ||
	    (rc = mcp__set(out, "parent_tokens", v, err)))
		return rc;
	if ((rc = mcp__rows(s, &rows, err, "SELECT * FROM validation_errors "
			    "WHERE run_id = ? AND row_hash = ?", "ss", run, hash)))
		return rc;
	rc = mcp__shape_all(rows, verror_fields, &v, err);
	json_decref(rows);
	if (rc || (rc = mcp__set(out, "validation_errors", v, err)))
		return rc;
	if ((rc = mcp__rows(s, &rows, err, "SELECT * FROM transform_errors WHERE token_id = ?",
			    "s", tid)))
		return rc;
	rc = mcp__shape_all(rows, terror_fields, &v, err);
	json_decref(rows);
	if (rc || (rc = mcp__set(out, "transform_errors", v, err)))
		return rc;
	if ((rc = mcp__row(s, &rows, err, "SELECT * FROM token_outcomes WHERE token_id = ? "
			   "ORDER BY is_terminal DESC, recorded_at DESC LIMIT 1", "s", tid)))
		return rc;
	v = json_null();
	if (rows)
		rc = mcp__shape(rows, outcome_fields, &v, err);
	json_decref(rows);
	if (rc || (rc = mcp__set(out, "outcome", v, err)))
		return rc;
	if ((rc = divert_summary(s, json_object_get(out, "routing_events"), &v, err)))
		return rc;
	return mcp__set(out, "divert_summary", v, err);
}

static int explain(mcp_server *s, const char *run, const json_t *token,
		   json_t **out, core_err *err)
{
	json_t *o = json_object(), *v;
	int rc = o ? 0 : mcp__oom(err);

	if (!rc && !(rc = mcp__shape(token, token_fields, &v, err)))
		rc = mcp__set(o, "token", v, err);
	if (!rc && !(rc = source_row(s, run, token, &v, err)))
		rc = mcp__set(o, "source_row", v, err);
	if (!rc)
		rc = lineage(s, run, token, o, err);
	if (rc)
		json_decref(o);
	else
		*out = o;
	return rc;
}

int mcp__explain_token(mcp_server *s, const json_t *a, mcp_result *r,
		       core_err *err)
{
	const char *run = mcp__arg_str(a, "run_id");
	const char *tid = mcp__arg_str(a, "token_id"), *row = mcp__arg_str(a, "row_id");
	char *resolved = NULL;
	json_t *token;
	int rc;

	if (!tid && !row)
		return core_err_set(err, CORE_EDATA, "Must provide either token_id or row_id");
	if (!tid) {
		if ((rc = resolve_row(s, run, row, mcp__arg_str(a, "sink"), &resolved, err)))
			return rc;
		if (!resolved)
			goto not_found;
	}
	rc = mcp__row(s, &token, err, "SELECT * FROM tokens WHERE token_id = ?", "s",
		      tid ? tid : resolved);
	if (!rc && !token && resolved)
		rc = core_err_set(err, CORE_EDATA, "Token '%s' of row '%s' has an outcome "
				  "but is not in the tokens table: the audit trail is damaged",
				  resolved, row);
	free(resolved);
	if (rc)
		return rc;
	if (!token)
		goto not_found;
	rc = explain(s, run, token, &r->value, err);
	json_decref(token);
	return rc;
not_found:
	return mcp__answer_error(r, err, "Token or row not found, or no terminal tokens exist yet");
}
