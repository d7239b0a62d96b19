/* test_core_settings_compat.c — ELSPETH's keys around the pipeline
 * (ADR 0027): plugins that need a cloud service refused before ${VAR}
 * errors, `secrets`, 0.7's one-entry `sources` map, `depends_on`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "core/core.h"

TestSuite(compat, .timeout = 10);

#define SINKS "sinks:\n  out: {plugin: csv, on_write_failure: discard, options: {path: out.csv}}\n"
#define SOURCE "source:\n  plugin: csv\n  on_success: out\n" \
	"  options: {path: in.csv, on_validation_failure: discard}\n"

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

/* ------------------------------------------------------------- cloud */

Test(compat, cloud_plugins_refused_naming_the_service)
{
	expect_error("source:\n  plugin: azure_blob\n  on_success: out\n  options: {}\n" SINKS,
		     CORE_EUNSUPPORTED, "p.yaml:2:11: source.plugin: plugin 'azure_blob' "
		     "needs Azure Blob Storage, which this build does not support");
	expect_error(SOURCE "sinks:\n  out: {plugin: azure_blob, options: {}}\n",
		     CORE_EUNSUPPORTED, "sinks.out.plugin: plugin 'azure_blob' needs Azure Blob Storage");
	expect_error(SOURCE "sinks:\n  out: {plugin: chroma_sink}\n",
		     CORE_EUNSUPPORTED, "'chroma_sink' needs ChromaDB");
	expect_error(SOURCE "sinks:\n  out: {plugin: dataverse}\n",
		     CORE_EUNSUPPORTED, "needs Microsoft Dataverse");
	expect_error(SOURCE SINKS "transforms:\n- {name: r, plugin: rag_retrieval, input: out, on_success: out}\n",
		     CORE_EUNSUPPORTED, "transforms[0].plugin: plugin 'rag_retrieval' needs a vector store");
	expect_error(SOURCE SINKS "transforms:\n- {name: a, plugin: azure_content_safety}\n",
		     CORE_EUNSUPPORTED, "needs Azure AI Content Safety");
	expect_error(SOURCE SINKS "transforms:\n- {name: a, plugin: azure_prompt_shield}\n",
		     CORE_EUNSUPPORTED, "Prompt Shields");
	expect_error(SOURCE SINKS "aggregations:\n- {name: a, plugin: azure_batch_llm}\n",
		     CORE_EUNSUPPORTED, "aggregations[0].plugin: plugin 'azure_batch_llm' "
		     "needs the Azure OpenAI Batch API");
	expect_error(SOURCE SINKS "collection_probes:\n- {collection: c, provider: chroma}\n",
		     CORE_EUNSUPPORTED, "collection_probes[0].provider: collection probes ask a vector store");
}

Test(compat, cloud_refusal_comes_before_unset_variables)
{
	unsetenv("KW_TEST_UNSET_SAS");
	/* The variable is unset: the plugin is still what is reported. */
	expect_error("source:\n  plugin: azure_blob\n  on_success: out\n"
		     "  options: {sas_token: '${KW_TEST_UNSET_SAS}'}\n" SINKS,
		     CORE_EUNSUPPORTED, "plugin 'azure_blob' needs Azure Blob Storage");
	/* ... even when the cloud sink comes after the variable. */
	expect_error("source:\n  plugin: csv\n  on_success: out\n"
		     "  options: {path: '${KW_TEST_UNSET_SAS}', on_validation_failure: discard}\n"
		     "sinks:\n  out: {plugin: azure_blob}\n",
		     CORE_EUNSUPPORTED, "p.yaml:6:17: sinks.out.plugin");
	/* Set, the same. */
	setenv("KW_TEST_UNSET_SAS", "sv=1", 1);
	expect_error("source:\n  plugin: azure_blob\n  on_success: out\n"
		     "  options: {sas_token: '${KW_TEST_UNSET_SAS}'}\n" SINKS,
		     CORE_EUNSUPPORTED, "plugin 'azure_blob'");
	unsetenv("KW_TEST_UNSET_SAS");
	/* Without a cloud plugin the variable's error stands. */
	expect_error("source:\n  plugin: csv\n  on_success: out\n"
		     "  options: {path: '${KW_TEST_UNSET_SAS}', on_validation_failure: discard}\n"
		     SINKS, CORE_ECONFIG, "'KW_TEST_UNSET_SAS' is not set");
}

Test(compat, cloud_refusal_from_a_file_too)
{
	char path[] = "/tmp/kwcompatXXXXXX";
	int fd = mkstemp(path);
	const char *text = "secrets:\n  source: keyvault\n  vault_url: https://v.vault.azure.net\n"
			   "  mapping: {K: k}\n" SOURCE
			   "sinks:\n  out: {plugin: csv, options: {path: '${KW_TEST_NOPE}'}}\n";
	core_settings *s = NULL;
	core_err err = { 0 };
	FILE *f;

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	unsetenv("KW_TEST_NOPE");
	cr_assert_eq(core_settings_load(path, &s, &err), CORE_EUNSUPPORTED, "%s", err.msg);
	cr_assert(strstr(err.msg, ":2:11: secrets.source: secrets from a key vault need "
			 "Azure Key Vault"), "%s", err.msg);
	unlink(path);
}

/* ------------------------------------------------------------ secrets */

Test(compat, secrets_env_is_accepted)
{
	core_settings *s;
	core_err err;

	cr_assert_eq(load("secrets: {source: env}\n" SOURCE SINKS, &s, &err), 0, "%s", err.msg);
	core_settings_free(s);
	cr_assert_eq(load("secrets: {}\n" SOURCE SINKS, &s, &err), 0, "%s", err.msg);
	core_settings_free(s);
}

Test(compat, secrets_checked)
{
	expect_error("secrets: {source: vault}\n" SOURCE SINKS, CORE_ECONFIG, "secrets.source");
	expect_error("secrets: {source: env, extra: 1}\n" SOURCE SINKS, CORE_ECONFIG, "extra");
	expect_error("secrets: {source: env, mapping: {A: [1]}}\n" SOURCE SINKS,
		     CORE_ECONFIG, "secrets.mapping.A");
	expect_error("secrets:\n  source: keyvault\n" SOURCE SINKS, CORE_EUNSUPPORTED,
		     "p.yaml:2:11: secrets.source: secrets from a key vault need Azure Key Vault");
}

/* ------------------------------------------------------------ sources */

Test(compat, one_entry_sources_map_is_the_source)
{
	core_settings *s;
	core_err err;

	cr_assert_eq(load("sources:\n  orders:\n    plugin: csv\n    on_success: out\n"
			  "    options: {path: in.csv, on_validation_failure: discard}\n" SINKS,
			  &s, &err), 0, "%s", err.msg);
	cr_assert_str_eq(s->source.name, "orders");
	cr_assert_str_eq(s->source.plugin, "csv");
	cr_assert_str_eq(s->source.on_success, "out");
	cr_assert_str_eq(s->source.on_validation_failure, "discard");
	core_settings_free(s);
	cr_assert_eq(load(SOURCE SINKS, &s, &err), 0, "%s", err.msg);
	cr_assert_null(s->source.name);
	core_settings_free(s);
}

Test(compat, sources_errors)
{
	expect_error(SOURCE "sources:\n  a: {plugin: csv, on_success: out}\n" SINKS,
		     CORE_ECONFIG, "both 'source' (ELSPETH 0.4.1's format) and 'sources'");
	expect_error("sources: {}\n" SINKS, CORE_ECONFIG, "at least one");
	expect_error("sources:\n  a: {plugin: csv, on_success: out, option: {}}\n" SINKS,
		     CORE_ECONFIG, "option");
	expect_error("sources:\n  a: {plugin: azure_blob, on_success: out}\n" SINKS,
		     CORE_EUNSUPPORTED, "sources.a.plugin: plugin 'azure_blob'");
	/* 0.7.1's names: lowercase, a letter first, not reserved */
	expect_error("sources:\n  Orders: {plugin: csv, on_success: out}\n" SINKS,
		     CORE_ECONFIG, "p.yaml:2:3: sources.Orders: Source names must be lowercase");
	expect_error("sources:\n  __x: {plugin: csv, on_success: out}\n" SINKS,
		     CORE_ECONFIG, "contains invalid characters");
	expect_error("sources:\n  fork: {plugin: csv, on_success: out}\n" SINKS,
		     CORE_ECONFIG, "Source name 'fork' is reserved");
	expect_error("sources:\n  a: [1]\n" SINKS, CORE_ECONFIG, "expected a map");
}

#define TWO_SOURCES "sources:\n" \
	"  orders: {plugin: csv, on_success: inbound, options: {path: o.csv, on_validation_failure: discard}}\n" \
	"  refunds: {plugin: json, on_success: inbound, options: {path: r.json, on_validation_failure: discard}}\n"

Test(compat, several_sources_and_queues)
{
	core_settings *s;
	core_err err;

	cr_assert_eq(load(TWO_SOURCES "queues:\n  inbound: {description: both}\n" SINKS,
			  &s, &err), 0, "%s", err.msg);
	cr_assert_eq(s->format, CORE_FORMAT_V07);
	cr_assert_eq(s->nsources, 2);
	cr_assert_str_eq(s->sources[0].name, "orders");
	cr_assert_str_eq(s->sources[1].name, "refunds");
	cr_assert_str_eq(s->sources[1].plugin, "json");
	cr_assert_str_eq(s->source.name, "orders");
	cr_assert_eq(s->nqueues, 1);
	cr_assert_str_eq(s->queues[0].name, "inbound");
	cr_assert_str_eq(s->queues[0].description, "both");
	/* 0.7.1's default database */
	cr_assert_str_eq(s->landscape_url, "sqlite:///./data/audit.db");
	core_settings_free(s);
	cr_assert_eq(load(SOURCE SINKS, &s, &err), 0, "%s", err.msg);
	cr_assert_eq(s->format, CORE_FORMAT_V04);
	cr_assert_eq(s->nsources, 1);
	cr_assert_eq(s->nqueues, 0);
	core_settings_free(s);
	expect_error(SOURCE "queues: {q: {}}\n" SINKS, CORE_ECONFIG,
		     "ELSPETH 0.4.1's format (this file has 'source:') has no queues");
	expect_error(TWO_SOURCES "queues: {inbound: {size: 3}}\n" SINKS, CORE_ECONFIG,
		     "queues.inbound.size");
	expect_error(TWO_SOURCES "queues: {Inbound: {}}\n" SINKS, CORE_ECONFIG,
		     "Queue names must be lowercase");
	expect_error(TWO_SOURCES "queues: {inbound: 1}\n" SINKS, CORE_ECONFIG,
		     "expected a map");
}

Test(compat, v07_rules)
{
	/* 0.7.1's cloud plugins are refused naming the service */
	expect_error("sources:\n  a: {plugin: aws_bedrock_prompt_shield, on_success: out}\n"
		     SINKS, CORE_EUNSUPPORTED,
		     "plugin 'aws_bedrock_prompt_shield' needs Amazon Bedrock Guardrails");
	expect_error(TWO_SOURCES "transforms:\n- {name: l, plugin: llm, input: inbound, "
		     "on_success: out, options: {provider: bedrock}}\n" SINKS,
		     CORE_EUNSUPPORTED, "the llm provider 'bedrock' needs Amazon Bedrock");
	expect_error(TWO_SOURCES "landscape: {enabled: false}\n" SINKS, CORE_ECONFIG,
		     "landscape.enabled=false is not supported");
	expect_error(TWO_SOURCES "landscape: {enabled: False}\n" SINKS, CORE_ECONFIG,
		     "landscape.enabled=false is not supported");
	expect_error(TWO_SOURCES "checkpoint: {aggregation_boundaries: true}\n" SINKS,
		     CORE_ECONFIG, "removed in ELSPETH 0.7.1");
	/* 0.7.1's export (audit-export-v2): its keys and its rules */
	expect_error(TWO_SOURCES "landscape: {export: {enabled: true, sink: out}}\n"
		     SINKS, CORE_ECONFIG, "enabled audit export requires explicit fields: "
		     "total_record_limit, total_byte_limit, chunk_limit, per_chunk_record_limit, "
		     "per_chunk_byte_limit, spool_root, content_store");
	expect_error(TWO_SOURCES "landscape: {export: {signing_mode: hmac_sha256, "
		     "signer_key_id: k}}\n" SINKS, CORE_ECONFIG,
		     "hmac_sha256 signing requires a signing secret reference");
	expect_error(TWO_SOURCES "landscape: {export: {signer_key_id: k1}}\n" SINKS,
		     CORE_ECONFIG, "unsigned signing requires the typed UNSIGNED signer identity");
	expect_error(TWO_SOURCES "landscape: {export: {signing_mode: hmac_sha256, "
		     "signer_key_id: 'k y', signing_secret_ref: K}}\n" SINKS, CORE_ECONFIG,
		     "signer_key_id must be a bounded credential-free identifier");
	expect_error(TWO_SOURCES "landscape: {export: {signing_mode: hmac_sha256, "
		     "signer_key_id: k, signing_secret_ref: 'a-b'}}\n" SINKS, CORE_ECONFIG,
		     "signing_secret_ref must be an exact environment secret reference name");
	expect_error(TWO_SOURCES "landscape: {export: {chunk_limit: 0}}\n" SINKS,
		     CORE_ECONFIG, "chunk_limit");
	expect_error(TWO_SOURCES "landscape: {export: {exporter_version: ''}}\n" SINKS,
		     CORE_ECONFIG, "exporter_version must have 1 to 64 characters");
	expect_error(TWO_SOURCES "aggregations:\n- {name: b, plugin: openrouter_batch_llm, "
		     "input: x}\n" SINKS, CORE_ECONFIG, "was removed in ELSPETH 0.7.1");
	expect_error(TWO_SOURCES "transforms:\n- {name: l, plugin: llm, input: inbound, "
		     "on_success: out, options: {template: hi}}\n" SINKS, CORE_ECONFIG,
		     "the llm transform's template is 'prompt_template'");
	expect_error(TWO_SOURCES "coalesce:\n- {name: m, branches: [a, b], "
		     "union_collision_policy: maybe}\n" SINKS, CORE_ECONFIG, "maybe");
	/* 0.7.1 requires every transform's and aggregation's on_error and
	 * every sink's on_write_failure; 0.4.1 does not */
	expect_error(TWO_SOURCES "queues: {inbound: {}}\ntransforms:\n- {name: t, "
		     "plugin: passthrough, input: inbound, on_success: out}\n" SINKS,
		     CORE_ECONFIG, "transforms[0]: missing required key 'on_error' "
		     "(ELSPETH 0.7.1 requires it on every transform");
	expect_error(TWO_SOURCES "queues: {inbound: {}}\n"
		     "sinks:\n  out: {plugin: csv, options: {path: out.csv}}\n",
		     CORE_ECONFIG, "sinks.out: missing required key 'on_write_failure'");
	expect_error(TWO_SOURCES "queues: {inbound: {}}\naggregations:\n- {name: b, "
		     "plugin: batch_stats, input: inbound, trigger: {count: 2}, options: "
		     "{value_field: x, schema: {mode: observed}}}\n" SINKS, CORE_ECONFIG,
		     "aggregations[0]: missing required key 'on_error'");
	{
		core_settings *s = NULL;
		core_err err;

		cr_assert_eq(load(SOURCE "transforms:\n- {name: t, plugin: passthrough, "
				  "input: out, on_success: out}\n"
				  "sinks:\n  out: {plugin: csv, options: {path: out.csv}}\n", &s,
				  &err), 0, "0.4.1 requires neither: %s", err.msg);
		core_settings_free(s);
	}
	/* 0.4.1 has none of these */
	expect_error(SOURCE "coalesce:\n- {name: m, branches: [a, b], "
		     "union_collision_policy: fail}\n" SINKS, CORE_ECONFIG,
		     "unknown key 'union_collision_policy'");
}

/* --------------------------------------------------------- depends_on */

Test(compat, depends_on_is_checked)
{
	expect_error("depends_on: {name: a}\n" SOURCE SINKS, CORE_ECONFIG, "expected a list");
	expect_error("depends_on:\n- {name: a}\n" SOURCE SINKS, CORE_ECONFIG, "settings");
	expect_error("depends_on:\n- {name: a, settings: x.yaml, when: 1}\n" SOURCE SINKS,
		     CORE_ECONFIG, "when");
	expect_error("depends_on:\n- {name: '', settings: x.yaml}\n" SOURCE SINKS,
		     CORE_ECONFIG, "neither empty");
	expect_error("depends_on:\n- {name: a, settings: x.yaml}\n- {name: a, settings: y.yaml}\n"
		     SOURCE SINKS, CORE_ECONFIG, "dependency name 'a' is used twice");
}

Test(compat, depends_on_path_is_relative_to_the_settings_file)
{
	core_settings *s = NULL;
	core_err err = { 0 };

	cr_assert_eq(core_settings_parse("dir/sub/p.yaml",
		"depends_on:\n- {name: a, settings: ../idx.yaml}\n- {name: b, settings: /x/q.yaml}\n"
		SOURCE SINKS, &s, &err), 0, "%s", err.msg);
	cr_assert_eq(s->ndepends_on, 2);
	cr_assert_str_eq(s->depends_on[0].name, "a");
	cr_assert_str_eq(s->depends_on[0].path, "dir/sub/../idx.yaml");
	cr_assert_str_eq(s->depends_on[1].path, "/x/q.yaml");
	core_settings_free(s);
}
