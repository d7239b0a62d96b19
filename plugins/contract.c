/*
 * contract.c — schema contracts: what each node promises downstream and
 * asks of upstream, and the check of one edge (plugins.h; the rules and
 * why they are ELSPETH's: docs/adr/0034-schema-contracts.md).
 *
 * A contract holds up to three things: the consumer schema (what the
 * node takes: its `schema`), the producer schema (what its rows look
 * like, for the type check; NULL when nothing is known, as after a
 * field_mapper's observed output or a union coalesce) and two name sets,
 * the fields it guarantees and the fields it requires.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"

struct plg_contract {
	char *who;                 /* "csv", "passthrough", "coalesce:x" */
	char *in_class, *out_class;
	plg_schema *input;         /* consumer schema; NULL: takes anything */
	const plg_schema *output;  /* producer schema; NULL: unknown */
	plg_schema *own_output;    /* output, when built here */
	plg_outputs added;         /* fields the plugin adds (guaranteed) */
	size_t nguaranteed;
	const char **guaranteed;   /* borrowed from the schemas and `added` */
	size_t nrequired;
	const char **required;     /* borrowed from the options or schema */
	const core_node *required_at;
	bool unknown;              /* its outputs op refused its options: what
				    * leaves it is not judged (its own check
				    * reports the options) */
};

/* ------------------------------------------------------------ outputs */

int plg_outputs_add(plg_outputs *o, core_err *err, const char *fmt, ...)
{
	core_buf b = { 0 };
	va_list ap;
	char **grown;
	int rc;

	va_start(ap, fmt);
	rc = core_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (rc)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < o->nfields; i++)
		if (!strcmp(o->fields[i], b.data)) {
			core_buf_release(&b);
			return 0;
		}
	if (!(grown = realloc(o->fields, (o->nfields + 1) * sizeof(*grown)))) {
		core_buf_release(&b);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	o->fields = grown;
	if (o->types) {
		const char **t = realloc(o->types, (o->nfields + 1) * sizeof(*t));

		if (!t) {
			core_buf_release(&b);
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		}
		o->types = t;
		t[o->nfields] = NULL;
	}
	o->fields[o->nfields++] = core_buf_steal(&b);
	return 0;
}

int plg_outputs_type(plg_outputs *o, const char *name, const char *type,
		     core_err *err)
{
	for (size_t i = 0; i < o->nfields; i++) {
		if (strcmp(o->fields[i], name))
			continue;
		if (!o->types && !(o->types = calloc(o->nfields, sizeof(*o->types))))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		o->types[i] = type;
		return 0;
	}
	return 0;
}

void plg_outputs_release(plg_outputs *o)
{
	for (size_t i = 0; i < o->nfields; i++)
		free(o->fields[i]);
	free(o->fields);
	free(o->types);
	memset(o, 0, sizeof(*o));
}

/* ------------------------------------------------------------ helpers */

void plg_contract_free(plg_contract *c)
{
	if (!c)
		return;
	free(c->who);
	free(c->in_class);
	free(c->out_class);
	plg__schema_free(c->input);
	plg__schema_free(c->own_output);
	plg_outputs_release(&c->added);
	free(c->guaranteed);
	free(c->required);
	free(c);
}

static bool has(const char *const *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], name))
			return true;
	return false;
}

static int add_name(const char ***v, size_t *n, const char *name)
{
	const char **grown;

	if (has(*v, *n, name))
		return 0;
	if (!(grown = realloc(*v, (*n + 1) * sizeof(*grown))))
		return CORE_ENOMEM;
	*v = grown;
	(*v)[(*n)++] = name;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* What a schema guarantees: its `guaranteed_fields` and, where it
 * declares fields, the required ones. */
static int guarantee_schema(plg_contract *c, const plg_schema *s)
{
	int rc = 0;

	for (size_t i = 0; !rc && s && i < s->nguaranteed; i++)
		rc = add_name(&c->guaranteed, &c->nguaranteed, s->guaranteed[i]);
	for (size_t i = 0; !rc && s && i < s->nfields; i++)
		if (!s->fields[i].optional)
			rc = add_name(&c->guaranteed, &c->nguaranteed, s->fields[i].name);
	return rc;
}

static char *dup_or_null(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*oom = true;
	return d;
}

/* ELSPETH's schema class names, for its messages. */
static const struct {
	const char *plugin, *in, *out;
} classes[] = {
	{ "csv", "CSVRowSchema", "CSVRowSchema" },
	{ "json", "JSONRowSchema", "JSONRowSchema" },
	{ "text", "TextSinkRowSchema", "TextRowSchema" },
	{ "database", "DatabaseRowSchema", NULL },
	{ "passthrough", "PassThroughInput", "PassThroughInput" },
	{ "truncate", "TruncateInput", "TruncateInput" },
	{ "keyword_filter", "KeywordFilterInput", "KeywordFilterInput" },
	{ "field_mapper", "FieldMapperInput", "FieldMapperOutput" },
	{ "json_explode", "JSONExplodeInput", "JSONExplodeOutput" },
	{ "batch_stats", "BatchStatsInput", "BatchStatsOutput" },
	{ "batch_replicate", "BatchReplicateInput", "BatchReplicateOutput" },
	{ "web_scrape", "WebScrapeSchema", "WebScrapeSchema" },
	{ "llm", "llmSchema", "llmOutputSchema" },
	{ "openrouter_batch_llm", "openrouter_batch_llmSchema",
	  "openrouter_batch_llmOutputSchema" },
};

static int set_classes(plg_contract *c, const char *name, const plg_outputs *o)
{
	const char *in = o->in_class, *out = o->out_class;
	core_buf b = { 0 };
	bool oom = false;

	for (size_t i = 0; !in && i < sizeof(classes) / sizeof(classes[0]); i++)
		if (!strcmp(classes[i].plugin, name)) {
			in = classes[i].in;
			out = classes[i].out;
		}
	if (!in && core_buf_printf(&b, "%sInput", name))
		return CORE_ENOMEM;
	c->in_class = in ? dup_or_null(in, &oom) : core_buf_steal(&b);
	c->out_class = dup_or_null(out ? out : c->in_class, &oom);
	return oom || !c->in_class ? CORE_ENOMEM : 0;
}

/* The producer schema of a plugin that adds `fields` as optional fields
 * of any type to a schema that declares fields: flexible, as ELSPETH
 * builds it for its LLM transforms. */
/* An added field's type (plg_outputs_type), PLG_F_ANY when not said. */
static plg_ftype added_type(const plg_outputs *o, size_t i)
{
	static const char *const names[] = { "str", "int", "float", "bool" };
	const char *t = o->types ? o->types[i] : NULL;

	for (size_t k = 0; t && k < sizeof(names) / sizeof(names[0]); k++)
		if (!strcmp(t, names[k]))
			return (plg_ftype)k;
	return PLG_F_ANY;
}

static int added_schema(plg_contract *c)
{
	const plg_schema *in = c->input;
	plg_schema *s = calloc(1, sizeof(*s));
	size_t n = in->nfields + c->added.nfields;

	if (!s || !(s->fields = calloc(n ? n : 1, sizeof(*s->fields)))) {
		free(s);
		return CORE_ENOMEM;
	}
	c->own_output = s;
	s->mode = PLG_SCHEMA_FLEXIBLE;
	s->node = in->node;
	for (size_t i = 0; i < n; i++) {
		const char *name = i < in->nfields ? in->fields[i].name :
				   c->added.fields[i - in->nfields];
		bool known = false;

		for (size_t j = 0; j < s->nfields; j++)
			known |= !strcmp(s->fields[j].name, name);
		if (known)
			continue;
		if (!(s->fields[s->nfields].name = strdup(name)))
			return CORE_ENOMEM;
		s->fields[s->nfields].type = i < in->nfields ? in->fields[i].type :
			added_type(&c->added, i - in->nfields);
		s->fields[s->nfields].optional = i < in->nfields ? in->fields[i].optional :
			added_type(&c->added, i - in->nfields) == PLG_F_ANY;
		s->nfields++;
	}
	c->output = s;
	return 0;
}

static int observed_schema(plg_contract *c)
{
	if (!(c->own_output = calloc(1, sizeof(*c->own_output))))
		return CORE_ENOMEM;
	c->own_output->mode = PLG_SCHEMA_OBSERVED;
	c->output = c->own_output;
	return 0;
}

/* `required_input_fields` when given and not empty, else the schema's
 * `required_fields` (ELSPETH's graph.py reads them in this order). */
static int requirements(plg_contract *c, const core_node *options, core_err *err)
{
	const core_node *n = core_map_get(options, "required_input_fields");
	const char **names = NULL;
	size_t len = 0;
	int rc;

	if (n && !core_node_is_null(n)) {
		if ((rc = core_node_str_list(n, &names, &len, err)))
			return rc;
		if (len) {
			c->required = names;
			c->nrequired = len;
			c->required_at = n;
			return 0;
		}
		free(names);
	}
	for (size_t i = 0; c->input && i < c->input->nrequired; i++)
		if (add_name(&c->required, &c->nrequired, c->input->required[i]))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
	c->required_at = c->input ? core_map_get(c->input->node, "required_fields") : NULL;
	return 0;
}

static int plugin_outputs(plg_kind kind, const char *name, const core_node *options,
			  plg_outputs *o, bool *unknown, core_err *err)
{
	int (*fn)(const core_node *, plg_outputs *, core_err *) = NULL;

	if (kind == PLG_TRANSFORM && plg_find_transform(name))
		fn = plg_find_transform(name)->outputs;
	else if (kind == PLG_AGGREGATION && plg_find_aggregation(name))
		fn = plg_find_aggregation(name)->outputs;
	core_err local = { 0 };
	int rc;

	/* A bad option is the plugin's own check's to report, with its
	 * context (open or check, later); the contract then knows less. */
	if (!fn || !(rc = fn(options, o, &local)))
		return 0;
	if (rc != CORE_ENOMEM) {
		*unknown = true;
		return 0;
	}
	*err = local;
	return rc;
}

static int contract_of(plg_kind kind, const char *name, const core_node *options,
		       bool v07, plg_contract **out, core_err *err)
{
	plg_contract *c = calloc(1, sizeof(*c));
	plg_schema *schema = NULL;
	int rc;

	*out = NULL;
	if (!c || !(c->who = strdup(name))) {
		free(c);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if ((rc = plg__schema_parse(core_map_get(options, "schema"), &schema, err)))
		goto fail;
	if (kind == PLG_SOURCE)
		c->output = c->own_output = schema; /* owned from here on */
	else
		c->input = schema;
	if ((rc = plugin_outputs(kind, name, options, &c->added, &c->unknown, err)) ||
	    (kind != PLG_SOURCE && (rc = requirements(c, options, err))))
		goto fail;
	if (v07 && c->added.shape == PLG_SHAPE_SAME && c->added.nfields)
		c->added.shape = PLG_SHAPE_ADDED;
	if (set_classes(c, name, &c->added))
		goto oom;
	if (kind == PLG_SOURCE || kind == PLG_SINK || c->added.shape == PLG_SHAPE_SAME ||
	    (c->added.shape == PLG_SHAPE_ADDED && schema->mode == PLG_SCHEMA_OBSERVED))
		c->output = schema;
	else if (c->added.shape == PLG_SHAPE_ADDED ? added_schema(c) : observed_schema(c))
		goto oom;
	if (kind != PLG_SINK) {
		if (guarantee_schema(c, schema))
			goto oom;
		for (size_t i = 0; i < c->added.nfields; i++)
			if (add_name(&c->guaranteed, &c->nguaranteed, c->added.fields[i]))
				goto oom;
	}
	*out = c;
	return 0;
oom:
	rc = core_err_set(err, CORE_ENOMEM, "out of memory");
fail:
	plg_contract_free(c);
	return rc;
}

/* Names every branch guarantees. */
static int intersect(plg_contract *c, const plg_contract *const *b, size_t n)
{
	if (!n || !b[0])
		return 0;
	for (size_t i = 0; i < b[0]->nguaranteed; i++) {
		const char *name = b[0]->guaranteed[i];
		bool all = true;

		for (size_t j = 1; j < n; j++)
			all &= b[j] && has(b[j]->guaranteed, b[j]->nguaranteed, name);
		if (all && add_name(&c->guaranteed, &c->nguaranteed, name))
			return CORE_ENOMEM;
	}
	return 0;
}

int plg_contract_coalesce(const char *who, const char *merge,
			  const char *const *names, const plg_contract *const *branches,
			  size_t n, size_t selected, plg_contract **out, core_err *err)
{
	plg_contract *c = calloc(1, sizeof(*c));
	const plg_contract *sel = selected < n ? branches[selected] : NULL;
	int rc = 0;

	*out = NULL;
	if (!c || !(c->who = strdup(who)) || !(c->in_class = strdup("")) ||
	    !(c->out_class = strdup(sel ? sel->out_class : ""))) {
		plg_contract_free(c);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if (!strcmp(merge, "select")) {
		c->output = sel ? sel->output : NULL;
		for (size_t i = 0; sel && !rc && i < sel->nguaranteed; i++)
			rc = add_name(&c->guaranteed, &c->nguaranteed, sel->guaranteed[i]);
	} else if (!strcmp(merge, "nested")) {
		for (size_t i = 0; !rc && i < n; i++)
			rc = add_name(&c->guaranteed, &c->nguaranteed, names[i]);
	} else {
		rc = intersect(c, branches, n);
	}
	if (rc) {
		plg_contract_free(c);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	*out = c;
	return 0;
}

/* --------------------------------------------------------------- edges */

static const char *type_name(const plg_field *f, char *buf, size_t cap)
{
	static const char *const names[] = { "str", "int", "float", "bool", "any" };

	snprintf(buf, cap, "%s%s", names[f->type], f->optional ? " | None" : "");
	return buf;
}

static const plg_field *field_of(const plg_schema *s, const char *name)
{
	for (size_t i = 0; i < s->nfields; i++)
		if (!strcmp(s->fields[i].name, name))
			return &s->fields[i];
	return NULL;
}

/* ELSPETH's type rule for a strict consumer (every transform and sink
 * is): the same type, or any; an optional value only where the consumer
 * allows None; int is not float. */
static bool compatible(const plg_field *got, const plg_field *want)
{
	return want->type == PLG_F_ANY ||
	       (got->type == want->type && (!got->optional || want->optional));
}

static void sep(core_buf *b, size_t mark, const char *s)
{
	core_buf_puts(b, b->len > mark ? s : "");
}

/* "Missing fields: ...; Type mismatches: ...; Extra fields forbidden by
 * consumer: ..." (ELSPETH's words, in its order), or nothing. */
static void incompatibility(const plg_schema *p, const plg_schema *c, core_buf *b)
{
	const char **extra = NULL;
	size_t nextra = 0, part;
	char t1[32], t2[32];

	part = b->len;
	for (size_t i = 0; i < c->nfields; i++)
		if (!field_of(p, c->fields[i].name) && !c->fields[i].optional) {
			core_buf_puts(b, b->len > part ? ", " : "Missing fields: ");
			core_buf_puts(b, c->fields[i].name);
		}
	part = b->len;
	for (size_t i = 0; i < c->nfields; i++) {
		const plg_field *got = field_of(p, c->fields[i].name);

		if (!got || compatible(got, &c->fields[i]))
			continue;
		core_buf_puts(b, b->len > part ? ", " : part ? "; Type mismatches: " :
			      "Type mismatches: ");
		core_buf_printf(b, "%s (expected %s, got %s)", c->fields[i].name,
				type_name(&c->fields[i], t1, sizeof(t1)),
				type_name(got, t2, sizeof(t2)));
	}
	if (c->mode != PLG_SCHEMA_FIXED)
		return;
	for (size_t i = 0; i < p->nfields; i++)
		if (!field_of(c, p->fields[i].name))
			add_name(&extra, &nextra, p->fields[i].name);
	if (nextra)
		qsort(extra, nextra, sizeof(*extra), by_name);
	for (size_t i = 0; i < nextra; i++) {
		if (!i)
			sep(b, 0, "; ");
		core_buf_puts(b, i ? ", " : "Extra fields forbidden by consumer: ");
		core_buf_puts(b, extra[i]);
	}
	free(extra);
}

/* Python's repr of a sorted list of names: ['a', 'b']. */
static void name_list(core_buf *b, const char *const *v, size_t n)
{
	const char **s = n ? malloc(n * sizeof(*s)) : NULL;

	if (n && !s)
		return;
	if (n)
		memcpy(s, v, n * sizeof(*s));
	if (n)
		qsort(s, n, sizeof(*s), by_name);
	core_buf_putc(b, '[');
	for (size_t i = 0; i < n; i++)
		core_buf_printf(b, "%s'%s'", i ? ", " : "", s[i]);
	core_buf_putc(b, ']');
	free(s);
}

static int contract_violation(const plg_contract *p, const plg_contract *c,
			      const char *from, const char *to, const char *label,
			      const char *by, core_err *err)
{
	const char **missing = NULL;
	size_t nmissing = 0;
	core_buf b = { 0 };
	int rc;

	for (size_t i = 0; i < c->nrequired; i++)
		if (!p || !has(p->guaranteed, p->nguaranteed, c->required[i]))
			add_name(&missing, &nmissing, c->required[i]);
	if (!nmissing)
		return 0;
	core_buf_printf(&b, "Schema contract violation: edge '%s' \u2192 '%s' (%s): "
			"consumer (%s) requires fields ", from, to, label, c->who);
	name_list(&b, c->required, c->nrequired);
	core_buf_printf(&b, "; producer (%s) guarantees ", by ? by : p ? p->who : "?");
	if (p && p->nguaranteed)
		name_list(&b, p->guaranteed, p->nguaranteed);
	else
		core_buf_puts(&b, "(none - dynamic schema)");
	core_buf_puts(&b, "; missing fields ");
	name_list(&b, missing, nmissing);
	core_buf_puts(&b, ". Add them to the producer's schema or guaranteed_fields, "
		      "or remove them from the consumer's required fields");
	rc = core_err_at(err, CORE_ECONFIG, c->required_at, "%s", b.data ? b.data : "");
	core_buf_release(&b);
	free(missing);
	return rc;
}

int plg_contract_edge(const plg_contract *p, const plg_contract *c,
		      const char *from, const char *to, const char *label,
		      const char *by, core_err *err)
{
	core_buf b = { 0 };
	int rc;

	if (!c || (p && p->unknown))
		return 0;
	if (c->nrequired && (rc = contract_violation(p, c, from, to, label, by, err)))
		return rc;
	if (!p || !p->output || !c->input || p->output->mode == PLG_SCHEMA_OBSERVED ||
	    c->input->mode == PLG_SCHEMA_OBSERVED)
		return 0;
	incompatibility(p->output, c->input, &b);
	if (!b.len)
		return 0;
	rc = core_err_at(err, CORE_ECONFIG, c->input->node,
			 "Edge from '%s' to '%s' (%s) invalid: producer schema '%s' "
			 "incompatible with consumer schema '%s': %s", from, to, label,
			 p->out_class, c->in_class, b.data);
	core_buf_release(&b);
	return rc;
}

int plg_contract_describe(const plg_contract *c, bool output, core_buf *b)
{
	static const char *const modes[] = { "observed", "fixed", "flexible" };
	const plg_schema *s = c ? (output ? c->output : c->input) : NULL;
	char t[32];

	if (!s)
		core_buf_puts(b, output ? "unknown fields" : "any fields");
	else if (s->mode == PLG_SCHEMA_OBSERVED)
		core_buf_puts(b, "observed");
	else {
		core_buf_printf(b, "%s {", modes[s->mode]);
		for (size_t i = 0; i < s->nfields; i++)
			core_buf_printf(b, "%s%s: %s", i ? ", " : "", s->fields[i].name,
					type_name(&s->fields[i], t, sizeof(t)));
		core_buf_putc(b, '}');
	}
	if (output && c) {
		core_buf_puts(b, "; guarantees ");
		name_list(b, c->guaranteed, c->nguaranteed);
	}
	if (!output && c && c->nrequired) {
		core_buf_puts(b, "; requires ");
		name_list(b, c->required, c->nrequired);
	}
	return b->data ? 0 : CORE_ENOMEM;
}

int plg_contract_of(plg_kind kind, const char *name, const core_node *options,
		    plg_contract **out, core_err *err)
{
	return contract_of(kind, name, options, false, out, err);
}

int plg_contract_of_v07(plg_kind kind, const char *name, const core_node *options,
			plg_contract **out, core_err *err)
{
	return contract_of(kind, name, options, true, out, err);
}
