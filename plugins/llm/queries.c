/*
 * queries.c — the settings of `llm` with `queries:`, ELSPETH 0.4.1's
 * multi-query shape (plugins/transforms/llm/multi_query.py,
 * resolve_queries; docs/settings.md "`llm` with `queries`"):
 *
 *   queries:                      a map (the key is the name) or a list
 *     <name>:                     (each item with `name`)
 *       input_fields: {var: field, ...}   required, non-empty: the
 *                     template sees row.<var> = the row's <field>, and
 *                     row.source_row = the whole row
 *       template:     optional; default: the transform's `template`
 *       output_fields: [{suffix, type, values}]  optional
 *       response_format: standard (json_object, the default) | structured
 *                     (json_schema "<name>_output")
 *       max_tokens:   optional; default: the transform's
 *
 * As ELSPETH: duplicate names, a template using {{ input_N }}, and two
 * queries giving the same {name}_{suffix} column are refused; unlike
 * ELSPETH, unknown keys in a query are too (it ignores them). Running the
 * queries is queries_run.c.
 */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/llm/llm_internal.h"
#include "plugins/plugins_internal.h"

static int nomem(core_err *err)
{
	return core_err_set(err, CORE_ENOMEM, "out of memory");
}

static void query_release(llm__query *q)
{
	free(q->name);
	for (size_t i = 0; i < q->ninputs; i++) {
		free(q->vars[i]);
		free(q->cols[i]);
	}
	free(q->vars);
	free(q->cols);
	tpl_free(q->tpl);
	for (size_t i = 0; i < q->nfields; i++)
		llm__field_release(&q->fields[i]);
	free(q->fields);
	json_decref(q->response_format);
	free(q->col_content);
	free(q->col_usage);
	free(q->col_model);
}

void llm__queries_free(llm__queries *m)
{
	if (!m)
		return;
	llm_client_release(&m->client);
	tpl_free(m->tpl);
	json_decref(m->lookup);
	for (size_t i = 0; i < m->nq; i++)
		query_release(&m->q[i]);
	free(m->q);
	free(m);
}

llm_client *llm__queries_client(llm__queries *m)
{
	return &m->client;
}

static char *join(const char *a, const char *b, const char *c)
{
	core_buf s = { 0 };

	core_buf_printf(&s, "%s%s%s", a, b, c);
	return core_buf_steal(&s);
}

/* input_fields: a non-empty map of template variable -> row field. */
static int parse_inputs(llm__query *q, const core_node *n, const core_node *at,
			core_err *err)
{
	if (!n)
		return core_err_at(err, CORE_ECONFIG, at, "query '%s' needs "
				   "input_fields: {variable: row field, ...}", q->name);
	if (n->kind != CORE_NODE_MAP || !n->len)
		return core_err_at(err, CORE_ECONFIG, n, "input_fields must be a "
				   "non-empty mapping of template variable to row "
				   "field ({input_1: text}), as in ELSPETH");
	q->vars = calloc(n->len, sizeof(*q->vars));
	q->cols = calloc(n->len, sizeof(*q->cols));
	if (!q->vars || !q->cols)
		return nomem(err);
	for (size_t i = 0; i < n->len; i++, q->ninputs++) {
		const char *col;
		int rc = core_node_str(n->items[i], &col, err);

		if (rc)
			return rc;
		q->vars[i] = strdup(n->keys[i]->value);
		q->cols[i] = strdup(col);
		if (!q->vars[i] || !q->cols[i])
			return nomem(err);
	}
	return 0;
}

/* ELSPETH refuses the positional variables of its older versions. */
static bool positional(const char *tpl)
{
	regex_t re;
	bool hit;

	if (regcomp(&re, "\\{\\{[[:space:]]*input_[0-9]+[[:space:]]*\\}\\}",
		    REG_EXTENDED | REG_NOSUB))
		return false;
	hit = !regexec(&re, tpl, 0, NULL, 0);
	regfree(&re);
	return hit;
}

/* {"type":"json_object"}, or ELSPETH's json_schema (no strict, no
 * additionalProperties): {"type":"json_schema","json_schema":{"name":
 * "<q>_output","schema":{"type":"object","properties":{..},"required":[..]}}} */
static json_t *response_format(const llm__query *q, bool structured)
{
	json_t *props, *req, *name;

	if (!structured)
		return json_pack("{s:s}", "type", "json_object");
	props = json_object();
	req = json_array();
	for (size_t i = 0; props && req && i < q->nfields; i++) {
		const llm_field *f = &q->fields[i];
		json_t *p = f->type == LLM_T_ENUM ? json_pack("{s:s,s:[]}", "type", "string", "enum")
			: json_pack("{s:s}", "type", (const char *[]){ "string", "integer",
				"number", "boolean" }[f->type]);

		for (size_t v = 0; p && f->type == LLM_T_ENUM && v < f->nvalues; v++)
			json_array_append_new(json_object_get(p, "enum"), json_string(f->values[v]));
		json_object_set_new(props, f->suffix, p);
		json_array_append_new(req, json_string(f->suffix));
	}
	name = json_sprintf("%s_output", q->name);
	return json_pack("{s:s,s:{s:o,s:{s:s,s:o,s:o}}}", "type", "json_schema",
			 "json_schema", "name", name, "schema", "type", "object",
			 "properties", props, "required", req);
}

static int parse_outputs(llm__query *q, const core_node *n, core_err *err)
{
	int rc;

	if (!n || core_node_is_null(n))
		return 0;
	if (n->kind != CORE_NODE_SEQ)
		return core_err_at(err, CORE_ECONFIG, n, "output_fields must be a "
				   "list of {suffix, type}");
	if (n->len && !(q->fields = calloc(n->len, sizeof(*q->fields))))
		return nomem(err);
	for (size_t i = 0; i < n->len; i++) {
		rc = llm__field_parse(&q->fields[i], n->items[i], err);
		q->nfields++; /* released with the query, even half parsed */
		if (rc)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(q->fields[j].suffix, q->fields[i].suffix))
				return core_err_at(err, CORE_ECONFIG, n->items[i],
					"output field key collision: '%s_%s' is given twice",
					q->name, q->fields[i].suffix);
	}
	return 0;
}

static int parse_query(llm__query *q, const char *name,
		       const core_node *n, const char *rfield, core_err *err)
{
	static const char *const keys[] = { "name", "input_fields", "template",
					    "output_fields", "response_format",
					    "max_tokens", NULL };
	static const char *const formats[] = { "standard", "structured", NULL };
	const core_node *rf = core_map_get(n, "response_format");
	const char *tpl = NULL;
	int fmt = 0, rc;

	if (!(q->name = strdup(name)))
		return nomem(err);
	if ((rc = core_map_check_keys(n, keys, err)) ||
	    (rc = parse_inputs(q, core_map_get(n, "input_fields"), n, err)) ||
	    (rc = core_opt_str(n, "template", false, &tpl, err)) ||
	    (rf && (rc = core_node_enum(rf, formats, &fmt, err))) ||
	    (rc = core_opt_int(n, "max_tokens", 1, 1 << 30, &q->max_tokens, err)) ||
	    (rc = parse_outputs(q, core_map_get(n, "output_fields"), err)))
		return rc;
	if (tpl && positional(tpl))
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "template"),
				   "query '%s' template uses positional variables "
				   "({{ input_1 }}); map template variables to row "
				   "fields with input_fields instead", name);
	if (tpl && (rc = tpl_compile(tpl, &q->tpl, err)))
		return llm__template_error(core_map_get(n, "template"), err);
	if (q->nfields && !(q->response_format = response_format(q, fmt == 1)))
		return nomem(err);
	q->col_content = join(name, "_", rfield);
	q->col_usage = join(q->col_content ? q->col_content : "", "_usage", "");
	q->col_model = join(q->col_content ? q->col_content : "", "_model", "");
	return q->col_content && q->col_usage && q->col_model ? 0 : nomem(err);
}

/* Names unique; every {name}_{suffix} column given by one query only. */
static int check_unique(const llm__queries *m, size_t i, const core_node *at,
			core_err *err)
{
	const llm__query *q = &m->q[i];

	for (size_t j = 0; j < i; j++) {
		const llm__query *p = &m->q[j];

		if (!strcmp(p->name, q->name))
			return core_err_at(err, CORE_ECONFIG, at, "duplicate query "
					   "name '%s': each query needs its own (it "
					   "prefixes its columns)", q->name);
		for (size_t a = 0; a < p->nfields; a++)
			for (size_t b = 0; b < q->nfields; b++) {
				char *x = join(p->name, "_", p->fields[a].suffix);
				char *y = join(q->name, "_", q->fields[b].suffix);
				bool same = x && y && !strcmp(x, y);

				free(x);
				free(y);
				if (same)
					return core_err_at(err, CORE_ECONFIG, at,
						"output field key collision: column "
						"'%s_%s' is given by query '%s' and "
						"query '%s'", q->name, q->fields[b].suffix,
						p->name, q->name);
			}
	}
	return 0;
}

static int parse_queries(llm__queries *m, const core_node *qn,
			 const char *rfield, core_err *err)
{
	int rc;

	if (qn->kind == CORE_NODE_SCALAR || !qn->len)
		return core_err_at(err, CORE_ECONFIG, qn, "queries must be a "
				   "non-empty map of name: query, or list of "
				   "queries with a name");
	if (!(m->q = calloc(qn->len, sizeof(*m->q))))
		return nomem(err);
	for (size_t i = 0; i < qn->len; i++) {
		const core_node *n = qn->items[i];
		const char *name = NULL;

		if (n->kind != CORE_NODE_MAP)
			return core_err_at(err, CORE_ECONFIG, n, "a query must be a mapping");
		/* a map's key names its query (a `name` inside is ignored,
		 * as ELSPETH does) */
		if (qn->kind == CORE_NODE_MAP)
			name = qn->keys[i]->value;
		else if ((rc = core_opt_str(n, "name", true, &name, err)))
			return rc;
		if (!name || !name[0])
			return core_err_at(err, CORE_ECONFIG, n, "a query name must not be empty");
		m->nq++;
		if ((rc = parse_query(&m->q[i], name, n, rfield, err)) ||
		    (rc = check_unique(m, i, n, err)))
			return rc;
	}
	return 0;
}

static int queries_parse(llm__queries *m, const plg_env *env, const core_node *o,
			 core_err *err)
{
	const char *tpl = NULL, *rfield = "llm_response";
	long long pool = 1;
	int rc;

	if ((rc = plg__check_options(o, plg__llm.options, err)) ||
	    (rc = core_opt_str(o, "template", true, &tpl, err)) ||
	    (rc = plg__opt_field(o, "response_field", false, &rfield, err)) ||
	    (rc = core_opt_int(o, "pool_size", 1, 1 << 20, &pool, err)))
		return rc;
	if ((rc = llm__template_compile(o, tpl, core_map_get(o, "template"),
					&m->tpl, err)) ||
	    (rc = llm__lookup(o, &m->lookup, err)) ||
	    (rc = parse_queries(m, core_map_get(o, "queries"), rfield, err)))
		return rc;
	m->sequential = pool <= 1;
	if ((rc = llm_client_open(&m->client, env, o, err)))
		return rc;
	/* ELSPETH always sends a temperature (its default 0.0). */
	m->client.has_temperature = true;
	return 0;
}

int llm__queries_open(const plg_env *env, const core_node *o,
		      llm__queries **out, core_err *err)
{
	llm__queries *m = calloc(1, sizeof(*m));
	int rc;

	if (!m)
		return nomem(err);
	if ((rc = queries_parse(m, env, o, err))) {
		llm__queries_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

int llm__outputs(const core_node *o, plg_outputs *out, core_err *err)
{
	const core_node *qn = core_map_get(o, "queries");
	const char *rfield = "llm_response";
	llm__queries *m;
	int rc;

	out->shape = PLG_SHAPE_ADDED;
	if ((rc = plg__opt_field(o, "response_field", false, &rfield, err)))
		return rc;
	if (!qn || core_node_is_null(qn))
		return plg_outputs_add(out, err, "%s", rfield) ||
		       plg_outputs_add(out, err, "%s_usage", rfield) ||
		       plg_outputs_add(out, err, "%s_model", rfield) ? CORE_ENOMEM : 0;
	if (!(m = calloc(1, sizeof(*m))))
		return nomem(err);
	rc = parse_queries(m, qn, rfield, err);
	for (size_t i = 0; !rc && i < m->nq; i++) {
		const llm__query *q = &m->q[i];

		rc = plg_outputs_add(out, err, "%s", q->col_content) ||
		     plg_outputs_add(out, err, "%s", q->col_usage) ||
		     plg_outputs_add(out, err, "%s", q->col_model) ? CORE_ENOMEM : 0;
		for (size_t j = 0; !rc && j < q->nfields; j++)
			rc = plg_outputs_add(out, err, "%s_%s", q->name, q->fields[j].suffix);
	}
	llm__queries_free(m); /* its client was never opened: nothing to stop */
	return rc;
}
