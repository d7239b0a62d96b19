/* Tests of the settings document and the typed settings (core/). */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/core.h"

static const char *base =
	"source:\n"
	"  plugin: csv\n"
	"  on_success: out\n"
	"  options:\n"
	"    path: in.csv\n"
	"    on_validation_failure: discard\n"
	"sinks:\n"
	"  out: {plugin: csv, options: {path: out.csv}}\n";

static int load(const char *text, core_settings **s, core_err *err)
{
	memset(err, 0, sizeof(*err));
	return core_settings_parse("p.yaml", text, s, err);
}

static void expect_error(const char *text, int code, const char *needle)
{
	core_settings *s = NULL;
	core_err err;
	int rc = load(text, &s, &err);

	cr_assert_eq(rc, code, "rc %d, want %d: %s", rc, code, err.msg);
	cr_assert_null(s);
	cr_assert(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg, needle);
}

Test(settings, minimal_pipeline_loads)
{
	core_settings *s;
	core_err err;

	cr_assert_eq(load(base, &s, &err), 0, "%s", err.msg);
	cr_assert_str_eq(s->source.plugin, "csv");
	cr_assert_str_eq(s->source.on_validation_failure, "discard");
	cr_assert_eq(s->nsinks, 1);
	cr_assert_str_eq(s->sinks[0].name, "out");
	cr_assert_eq(strlen(s->config_hash), 64);
	cr_assert_eq(s->retry.max_attempts, 3);
	core_settings_free(s);
}

Test(settings, malformed_yaml_names_line_and_column)
{
	expect_error("source: [1, 2\nsinks: {}\n", CORE_ECONFIG, "p.yaml:");
	expect_error("source: [1, 2\nsinks: {}\n", CORE_ECONFIG, "malformed YAML");
}

Test(settings, unknown_key_suggests_near_match)
{
	char text[1024];

	snprintf(text, sizeof(text), "%stransfroms: []\n", base);
	expect_error(text, CORE_ECONFIG, "p.yaml:9:1: transfroms: unknown key 'transfroms' (did you mean 'transforms'?)");
}

Test(settings, unknown_nested_key_has_path)
{
	expect_error("source:\n  plugin: csv\n  on_succes: out\n  options: {on_validation_failure: discard}\n"
		     "sinks:\n  out: {plugin: csv}\n",
		     CORE_ECONFIG, "source.on_succes: unknown key 'on_succes' (did you mean 'on_success'?)");
}

Test(settings, wrong_type_says_what_was_expected)
{
	char text[1024];

	snprintf(text, sizeof(text), "%sretry: {max_attempts: lots}\n", base);
	expect_error(text, CORE_ECONFIG, "retry.max_attempts: expected an integer, got 'lots'");
	snprintf(text, sizeof(text), "%sretry: {max_attempts: 0}\n", base);
	expect_error(text, CORE_ECONFIG, "expected an integer from 1 to 1000, got 0");
	snprintf(text, sizeof(text), "%scheckpoint: {frequency: every_m}\n", base);
	expect_error(text, CORE_ECONFIG, "did you mean 'every_n'?");
}

Test(settings, env_var_expansion)
{
	core_settings *s;
	core_err err;

	setenv("ELSPETH_T_PATH", "from-env.csv", 1);
	unsetenv("ELSPETH_T_UNSET");
	cr_assert_eq(load("source:\n  plugin: csv\n  on_success: out\n  options:\n"
			  "    path: ${ELSPETH_T_PATH}\n    on_validation_failure: ${ELSPETH_T_UNSET:-discard}\n"
			  "sinks:\n  out: {plugin: csv, options: {path: \"x-${ELSPETH_T_PATH}\"}}\n",
			  &s, &err), 0, "%s", err.msg);
	cr_assert_str_eq(core_map_get(s->source.options, "path")->value, "from-env.csv");
	cr_assert_str_eq(s->source.on_validation_failure, "discard");
	cr_assert_str_eq(core_map_get(s->sinks[0].options, "path")->value, "x-from-env.csv");
	core_settings_free(s);
}

Test(settings, missing_env_var_is_named)
{
	unsetenv("ELSPETH_T_MISSING");
	expect_error("source:\n  plugin: csv\n  on_success: out\n  options:\n"
		     "    path: ${ELSPETH_T_MISSING}\n",
		     CORE_ECONFIG, "p.yaml:5:11: source.options.path: environment variable 'ELSPETH_T_MISSING' is not set");
}

Test(settings, pipelining_and_checkpoint_bounds_checked)
{
	char text[2048];

	snprintf(text, sizeof(text), "%sconcurrency: {pipelining: {enabled: true, max_rows_in_flight: 64, max_completed_waiting: 8}}\n", base);
	expect_error(text, CORE_ECONFIG, "max_completed_waiting (8) is less than max_rows_in_flight (64)");
	snprintf(text, sizeof(text), "%scheckpoint: {enabled: true, checkpoint_interval: 100}\n", base);
	expect_error(text, CORE_ECONFIG, "checkpoint_interval applies to frequency: every_n only");
	snprintf(text, sizeof(text), "%scheckpoint: {frequency: every_n}\n", base);
	expect_error(text, CORE_ECONFIG, "frequency: every_n needs checkpoint_interval");
	snprintf(text, sizeof(text), "%scheckpoint: {frequency: every_n, checkpoint_interval: 0}\n", base);
	expect_error(text, CORE_ECONFIG, "checkpoint_interval");
	snprintf(text, sizeof(text), "%slandscape: {enabled: false}\ncheckpoint: {enabled: true}\n", base);
	expect_error(text, CORE_ECONFIG, "checkpoints are stored in the Landscape");
}

/* ELSPETH's concurrency.max_workers (its ConcurrencySettings: an int
 * > 0) is accepted and kept; 0 is refused at its line. */
Test(settings, concurrency_max_workers)
{
	char text[2048];
	core_settings *s;
	core_err err;

	snprintf(text, sizeof(text), "%sconcurrency: {max_workers: 16}\n", base);
	cr_assert_eq(load(text, &s, &err), 0, "%s", err.msg);
	cr_assert_eq(s->max_workers, 16);
	cr_assert(!s->pipelining, "max_workers alone does not pipeline rows");
	core_settings_free(s);
	snprintf(text, sizeof(text), "%s", base);
	cr_assert_eq(load(text, &s, &err), 0, "%s", err.msg);
	cr_assert_eq(s->max_workers, 0, "not given: no cap");
	core_settings_free(s);
	snprintf(text, sizeof(text), "%sconcurrency: {max_workers: 0}\n", base);
	expect_error(text, CORE_ECONFIG, "concurrency.max_workers");
}

Test(settings, checkpoint_defaults)
{
	char text[2048];
	core_settings *s;
	core_err err;

	snprintf(text, sizeof(text), "%s", base);
	cr_assert_eq(load(text, &s, &err), 0, "%s", err.msg);
	cr_assert(s->checkpoint_enabled);
	cr_assert_eq(s->checkpoint_frequency, CORE_CKPT_EVERY_ROW);
	core_settings_free(s);
	snprintf(text, sizeof(text), "%scheckpoint: {frequency: every_n, checkpoint_interval: 250}\n", base);
	cr_assert_eq(load(text, &s, &err), 0, "%s", err.msg);
	cr_assert_eq(s->checkpoint_frequency, CORE_CKPT_EVERY_N);
	cr_assert_eq(s->checkpoint_interval, 250);
	core_settings_free(s);
	snprintf(text, sizeof(text), "%slandscape: {enabled: false}\n", base);
	cr_assert_eq(load(text, &s, &err), 0, "%s", err.msg);
	cr_assert(!s->checkpoint_enabled, "no Landscape: no checkpoints");
	core_settings_free(s);
}

Test(settings, dag_sections_load)
{
	core_settings *s;
	core_err err;
	char text[2048];

	snprintf(text, sizeof(text), "%s"
		 "gates:\n  - {name: g, input: x, condition: 'True', routes: {'true': fork}, fork_to: [a, b]}\n"
		 "coalesce:\n  - {name: m, branches: {a: a_done, b: b_done}, policy: quorum, quorum_count: 1, merge: nested, on_success: out}\n"
		 "aggregations:\n  - {name: s, plugin: batch_stats, input: agg_in, on_success: out,"
		 " trigger: {count: 10, timeout_seconds: 2.5}, output_mode: passthrough, options: {value_field: v}}\n", base);
	cr_assert_eq(load(text, &s, &err), 0, "%s", err.msg);
	cr_assert_eq(s->gates[0].nfork_to, 2);
	cr_assert_str_eq(s->gates[0].fork_to[1], "b");
	cr_assert_eq(s->ncoalesce, 1);
	cr_assert_eq(s->coalesce[0].policy, CORE_POLICY_QUORUM);
	cr_assert_eq(s->coalesce[0].merge, CORE_MERGE_NESTED);
	cr_assert_str_eq(s->coalesce[0].inputs[1], "b_done");
	cr_assert_eq(s->naggregations, 1);
	cr_assert_eq(s->aggregations[0].trigger_count, 10);
	cr_assert(s->aggregations[0].passthrough);
	core_settings_free(s);
}

Test(settings, dag_section_errors)
{
	char text[2048];

	snprintf(text, sizeof(text), "%sgates:\n  - {name: g, input: x, condition: 'True', routes: {'true': fork}}\n", base);
	expect_error(text, CORE_ECONFIG, "a route goes to 'fork' but 'fork_to' lists no branches");
	snprintf(text, sizeof(text), "%scoalesce:\n  - {name: m, branches: [a, b], policy: quorum, on_success: out}\n", base);
	expect_error(text, CORE_ECONFIG, "policy quorum needs 'quorum_count'");
	snprintf(text, sizeof(text), "%scoalesce:\n  - {name: m, branches: [a, b], merge: select, select_branch: c, on_success: out}\n", base);
	expect_error(text, CORE_ECONFIG, "select_branch 'c' is not one of the branches");
	snprintf(text, sizeof(text), "%scoalesce:\n  - {name: m, branches: [a], on_success: out}\n", base);
	expect_error(text, CORE_ECONFIG, "at least 2 branches");
}

Test(settings, later_sections_are_type_checked_first)
{
	char text[2048];

	snprintf(text, sizeof(text), "%scoalesce:\n  - {name: m, branches: [a], policy: all_of_them, on_success: out}\n", base);
	expect_error(text, CORE_ECONFIG, "coalesce[0].policy: expected one of require_all, quorum, best_effort, first");
	snprintf(text, sizeof(text), "%saggregations:\n  - {name: a, plugin: p, input: x, on_success: out, trigger: {cuont: 1}}\n", base);
	expect_error(text, CORE_ECONFIG, "did you mean 'count'?");
}

Test(settings, duplicate_key_is_an_error)
{
	expect_error("source: {plugin: csv}\nsource: {plugin: json}\n", CORE_ECONFIG,
		     "duplicate key (first defined at line 1)");
}

Test(settings, missing_sections)
{
	expect_error("", CORE_ECONFIG, "empty");
	expect_error("sinks: {out: {plugin: csv}}\n", CORE_ECONFIG, "missing required section 'source'");
	expect_error("source:\n  plugin: csv\n  on_success: out\n  options: {on_validation_failure: discard}\n",
		     CORE_ECONFIG, "at least one sink");
	expect_error("source:\n  plugin: csv\n  on_success: out\nsinks: {out: {plugin: csv}}\n",
		     CORE_ECONFIG, "on_validation_failure");
}

/* A required key spelt wrong is named where it stands, with the key it
 * was meant to be (not only "missing"). */
Test(settings, a_misspelt_required_key_is_named)
{
	expect_error("source:\n  plugin: csv\n  on_success: out\n"
		     "  options: {on_validaton_failure: discard}\nsinks: {out: {plugin: csv}}\n",
		     CORE_ECONFIG, "4:13: source.options.on_validaton_failure: missing required "
		     "key 'options.on_validation_failure' (a sink name for rows that fail "
		     "validation, or 'discard'): 'on_validaton_failure' is not a key here (did "
		     "you mean 'on_validation_failure'?)");
	expect_error("source:\n  plugin: csv\n  on_sucess: out\n"
		     "  options: {on_validation_failure: discard}\nsinks: {out: {plugin: csv}}\n",
		     CORE_ECONFIG, "'on_sucess'");
}

/* YAML anchors, aliases and merge keys, as PyYAML reads them (ADR 0055). */
static json_t *doc_json(const char *text)
{
	core_doc *d = NULL;
	core_err err = { 0 };
	json_t *j;

	cr_assert_eq(core_doc_parse("t", text, strlen(text), &d, &err), 0, "%s", err.msg);
	j = core_node_to_json(core_doc_root(d));
	core_doc_free(d);
	return j;
}

static void expect_doc(const char *text, const char *want)
{
	json_t *j = doc_json(text);
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);

	cr_assert_str_eq(s, want, "for %s", text);
	free(s);
	json_decref(j);
}

static void expect_doc_error(const char *text, const char *needle)
{
	core_doc *d = NULL;
	core_err err = { 0 };

	cr_assert_neq(core_doc_parse("t", text, strlen(text), &d, &err), 0, "%s accepted", text);
	cr_assert_null(d);
	cr_assert(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg, needle);
}

Test(doc, aliases_copy_their_anchor)
{
	expect_doc("a: &x 1\nb: *x\n", "{\"a\":1,\"b\":1}");
	expect_doc("a: &m {k: [1, 2]}\nb: *m\nc: [*m, *m]\n",
		   "{\"a\":{\"k\":[1,2]},\"b\":{\"k\":[1,2]},\"c\":[{\"k\":[1,2]},{\"k\":[1,2]}]}");
	/* as PyYAML: an anchor name is defined once */
	expect_doc_error("a: &x 1\nb: *x\nc: &x 2\n", "duplicate anchor &x (first defined at line 1)");
}

Test(doc, merge_keys_as_pyyaml)
{
	/* the map's own keys win, wherever they are; then the merged maps
	 * in order */
	expect_doc("base: &b {x: 1, y: 2}\nm: {x: 9, <<: *b}\n",
		   "{\"base\":{\"x\":1,\"y\":2},\"m\":{\"x\":9,\"y\":2}}");
	expect_doc("a: &a {x: 1}\nb: &b {x: 2, y: 2}\nm: {<<: [*a, *b], z: 3}\n",
		   "{\"a\":{\"x\":1},\"b\":{\"x\":2,\"y\":2},\"m\":{\"x\":1,\"y\":2,\"z\":3}}");
	expect_doc("m: {<<: {x: 1}, y: 2}\n", "{\"m\":{\"x\":1,\"y\":2}}");
	/* a quoted "<<" is an ordinary key */
	expect_doc("m: {'<<': 1}\n", "{\"m\":{\"<<\":1}}");
	expect_doc_error("m: {<<: 1}\n", "a merge key (<<) takes a map");
	expect_doc_error("m: {<<: [1]}\n", "a merge key (<<) takes a map");
}

Test(doc, alias_errors)
{
	expect_doc_error("a: *nope\n", "alias *nope names no anchor defined before it");
	/* an anchor is usable once its node is complete: no cycles */
	expect_doc_error("a: &x [1, *x]\n", "alias *x names no anchor");
	/* nested aliases cannot blow up ("billion laughs") */
	{
		char text[4096];
		size_t n = (size_t)snprintf(text, sizeof(text), "a0: &a0 [x, x]\n");

		for (int i = 1; i < 25; i++)
			n += (size_t)snprintf(text + n, sizeof(text) - n,
					      "a%d: &a%d [*a%d, *a%d]\n", i, i, i - 1, i - 1);
		expect_doc_error(text, "YAML aliases expand to more than 100000 values");
	}
	/* nor nest deeper than a written tree may */
	{
		char text[8192];
		size_t n = (size_t)snprintf(text, sizeof(text), "a0: &a0 x\n");

		for (int i = 1; i < 70; i++)
			n += (size_t)snprintf(text + n, sizeof(text) - n, "a%d: &a%d [*a%d]\n",
					      i, i, i - 1);
		expect_doc_error(text, "nesting deeper than 64 levels");
	}
}

Test(doc, an_alias_is_named_where_it_is_used)
{
	const char *text = "a: &m {k: [1, {z: 2}]}\nb:\n  c: *m\n  d: {<<: *m}\n";
	core_doc *d = NULL;
	core_err err = { 0 };
	const core_node *c, *dd;

	cr_assert_eq(core_doc_parse("t", text, strlen(text), &d, &err), 0, "%s", err.msg);
	c = core_map_get(core_map_get(core_doc_root(d), "b"), "c");
	dd = core_map_get(core_map_get(core_doc_root(d), "b"), "d");
	cr_assert_str_eq(c->path, "b.c");
	cr_assert_eq(c->line, 3, "the alias's own line");
	cr_assert_str_eq(core_map_get(c, "k")->items[1]->items[0]->path, "b.c.k[1].z");
	cr_assert_str_eq(core_map_get(dd, "k")->path, "b.d.k");
	core_doc_free(d);
}

Test(settings, config_hash_is_stable_and_sensitive)
{
	core_settings *a, *b, *c;
	core_err err;
	char text[1024];

	cr_assert_eq(load(base, &a, &err), 0);
	cr_assert_eq(load(base, &b, &err), 0);
	snprintf(text, sizeof(text), "%sretry: {max_attempts: 5}\n", base);
	cr_assert_eq(load(text, &c, &err), 0, "%s", err.msg);
	cr_assert_str_eq(a->config_hash, b->config_hash);
	cr_assert_str_neq(a->config_hash, c->config_hash);
	core_settings_free(a);
	core_settings_free(b);
	core_settings_free(c);
}

Test(doc, node_to_json_types_plain_scalars)
{
	core_doc *d;
	core_err err;
	json_t *j;
	char *s;

	const char *text = "{a: 1, b: '1', c: true, d: ~, e: 1.5, f: x}";

	cr_assert_eq(core_doc_parse("t", text, strlen(text), &d, &err), 0, "%s", err.msg);
	j = core_node_to_json(core_doc_root(d));
	s = json_dumps(j, JSON_COMPACT);
	cr_assert_str_eq(s, "{\"a\":1,\"b\":\"1\",\"c\":true,\"d\":null,\"e\":1.5,\"f\":\"x\"}");
	free(s);
	json_decref(j);
	core_doc_free(d);
}
