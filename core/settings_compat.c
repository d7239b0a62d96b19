/*
 * settings_compat.c — the ELSPETH keys around the pipeline itself
 * (ADR 0027): `secrets`, ELSPETH 0.7's `sources` map, `depends_on`, and
 * the refusal of the plugins that need a cloud service.
 *
 * The refusals run first, on the file parsed without ${VAR} expansion
 * (the pre-pass), as ELSPETH reads `secrets` from the raw YAML before it
 * expands anything: a pipeline that needs Azure Key Vault or Blob
 * Storage says so, not that one of the variables that service would
 * have supplied is unset.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/core_internal.h"

/* ELSPETH 0.4.1's plugins that cannot work without a service this build
 * has no client for, by the name its settings use. */
static const struct cloud_plugin {
	const char *name;
	const char *service;
} cloud_plugins[] = {
	{ "azure_blob", "Azure Blob Storage" },
	{ "dataverse", "Microsoft Dataverse" },
	{ "chroma_sink", "ChromaDB (a vector database)" },
	{ "rag_retrieval", "a vector store (ChromaDB or Azure AI Search)" },
	{ "azure_content_safety", "Azure AI Content Safety" },
	{ "azure_prompt_shield", "Azure AI Content Safety (Prompt Shields)" },
	{ "azure_batch_llm", "the Azure OpenAI Batch API" },
	/* ELSPETH 0.7.1's (ADR 0045) */
	{ "azure_document_intelligence", "Azure AI Document Intelligence" },
	{ "aws_bedrock_content_safety", "Amazon Bedrock Guardrails" },
	{ "aws_bedrock_prompt_shield", "Amazon Bedrock Guardrails" },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int refuse_plugin(const core_node *entry, core_err *err)
{
	const core_node *p = core_map_get(entry, "plugin");
	const core_node *prov = core_map_get(core_map_get(entry, "options"), "provider");

	if (!p || p->kind != CORE_NODE_SCALAR)
		return 0;
	/* ELSPETH 0.7.1's llm with provider: bedrock */
	if (prov && prov->kind == CORE_NODE_SCALAR && prov->value &&
	    !strcmp(prov->value, "bedrock") && !strcmp(p->value, "llm"))
		return core_err_at(err, CORE_EUNSUPPORTED, prov,
			"the llm provider 'bedrock' needs Amazon Bedrock, which this build "
			"does not support (providers here: openrouter, azure, openai)");
	for (size_t i = 0; i < COUNT(cloud_plugins); i++)
		if (!strcmp(p->value, cloud_plugins[i].name))
			return core_err_at(err, CORE_EUNSUPPORTED, p,
				"plugin '%s' needs %s, which this build does not support",
				p->value, cloud_plugins[i].service);
	return 0;
}

/* Every value of a map or item of a list: its plugin. */
static int refuse_plugins(const core_node *n, core_err *err)
{
	int rc = 0;

	if (n->kind == CORE_NODE_SCALAR)
		return 0;
	for (size_t i = 0; !rc && i < n->len; i++)
		rc = refuse_plugin(n->items[i], err);
	return rc;
}

static int refuse_secrets(const core_node *n, core_err *err)
{
	const core_node *src = core_map_get(n, "source");

	if (src && src->kind == CORE_NODE_SCALAR && !strcmp(src->value, "keyvault"))
		return core_err_at(err, CORE_EUNSUPPORTED, src,
			"secrets from a key vault need Azure Key Vault, which this build "
			"does not support: set the variables in the environment and write "
			"source: env (or leave the secrets section out)");
	return 0;
}

/* collection_probes: each names the vector store it asks. */
static int refuse_probes(const core_node *n, core_err *err)
{
	for (size_t i = 0; n->kind == CORE_NODE_SEQ && i < n->len; i++) {
		const core_node *p = core_map_get(n->items[i], "provider");

		if (p && p->kind == CORE_NODE_SCALAR)
			return core_err_at(err, CORE_EUNSUPPORTED, p,
				"collection probes ask a vector store ('%s'), which this "
				"build does not support", p->value);
	}
	return 0;
}

int core__refuse_cloud(const core_node *root, core_err *err)
{
	int rc = 0;

	for (size_t i = 0; !rc && root->kind == CORE_NODE_MAP && i < root->len; i++) {
		const char *key = root->keys[i]->value;
		const core_node *v = root->items[i];

		if (!strcmp(key, "source"))
			rc = refuse_plugin(v, err);
		else if (!strcmp(key, "sources") || !strcmp(key, "sinks") ||
			 !strcmp(key, "transforms") || !strcmp(key, "aggregations"))
			rc = refuse_plugins(v, err);
		else if (!strcmp(key, "secrets"))
			rc = refuse_secrets(v, err);
		else if (!strcmp(key, "collection_probes"))
			rc = refuse_probes(v, err);
	}
	return rc;
}

int core__settings_prepass(const char *name, const char *text, size_t len,
			   core_err *err)
{
	core_err ignored = { 0 };
	core_doc *doc = NULL;
	core_node *root = NULL;
	int rc = 0;

	/* A file that does not parse is reported by the real parse. */
	if (core_doc_parse(name, "", 0, &doc, &ignored))
		return 0;
	if (!core__doc_parse_data(doc, name, text, len, "", &root, &ignored) && root)
		rc = core__refuse_cloud(root, err);
	core_doc_free(doc);
	return rc;
}

int core__settings_prepass_file(const char *path, core_err *err)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	size_t len = 0, cap = 0, got;
	int rc = 0;

	if (!f)
		return 0;
	do {
		char *t;

		if (len + 4096 > cap) {
			cap = cap ? 2 * cap : 65536;
			if (!(t = realloc(text, cap))) {
				rc = core_err_set(err, CORE_ENOMEM, "out of memory");
				break;
			}
			text = t;
		}
		got = fread(text + len, 1, cap - len, f);
		len += got;
	} while (got > 0 && len < (64u << 20));
	fclose(f);
	if (!rc)
		rc = core__settings_prepass(path, text ? text : "", len, err);
	free(text);
	return rc;
}

/* -------------------------------------------------------------- secrets */

static const char *const secret_sources[] = { "env", "keyvault", NULL };
static const key_spec secrets_keys[] = {
	{ "source", K_ENUM, false, 0, 0, secret_sources },
	{ "vault_url", K_STR, false }, { "mapping", K_MAP, false }, { NULL }
};

int core__load_secrets(core_settings *s, const core_node *n, core_err *err)
{
	const core_node *m;
	int rc;

	(void)s;
	if (!n || core_node_is_null(n))
		return 0;
	if ((rc = core__check_section(n, secrets_keys, err)) ||
	    (rc = refuse_secrets(n, err)))
		return rc;
	/* source: env — ELSPETH does nothing: ${VAR} reads the environment
	 * as it always does. vault_url and mapping mean nothing then (it
	 * accepts them); their types are still checked. */
	if ((m = core_map_get(n, "mapping")))
		for (size_t i = 0; i < m->len; i++) {
			const char *v;

			if ((rc = core_node_str(m->items[i], &v, err)))
				return rc;
		}
	return 0;
}

/* ----------------------------------------------------------- depends_on */

static const key_spec depends_keys[] = {
	{ "name", K_STR, true }, { "settings", K_STR, true }, { NULL }
};

static int load_dependency(core_settings *s, const core_node *n, size_t i,
			   core_err *err)
{
	core_depends_cfg *d = &s->depends_on[i];
	const char *slash = strrchr(s->path, '/');
	int rc;

	if ((rc = core__check_section(n, depends_keys, err)))
		return rc;
	d->node = n;
	d->name = core__str_of(n, "name");
	d->settings = core__str_of(n, "settings");
	if (!d->name || !*d->name || !d->settings || !*d->settings)
		return core_err_at(err, CORE_ECONFIG, n, "a dependency needs a name and "
				   "a settings file, neither empty");
	for (size_t k = 0; k < i; k++)
		if (!strcmp(s->depends_on[k].name, d->name))
			return core_err_at(err, CORE_ECONFIG, core_map_get(n, "name"),
				"dependency name '%s' is used twice", d->name);
	/* Relative to the settings file's directory, as ELSPETH resolves it. */
	if (d->settings[0] == '/' || !slash)
		d->path = strdup(d->settings);
	else if ((d->path = malloc((size_t)(slash - s->path) + strlen(d->settings) + 2)))
		sprintf(d->path, "%.*s/%s", (int)(slash - s->path), s->path, d->settings);
	if (!d->path)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	s->ndepends_on++;
	return 0;
}

int core__load_depends_on(core_settings *s, const core_node *n, core_err *err)
{
	int rc;

	if (!n || core_node_is_null(n))
		return 0;
	if (n->kind != CORE_NODE_SEQ)
		return core_err_at(err, CORE_ECONFIG, n, "expected a list of dependencies "
				   "({name: ..., settings: path})");
	if (n->len > 20)
		return core_err_at(err, CORE_ECONFIG, n, "at most 20 dependencies, %zu given",
				   n->len);
	if (!n->len)
		return 0;
	if (!(s->depends_on = calloc(n->len, sizeof(*s->depends_on))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < n->len; i++)
		if ((rc = load_dependency(s, n->items[i], i, err)))
			return rc;
	/* `elspeth run --execute` runs them first (cli/cmd_run.c). */
	return 0;
}

void core__depends_on_free(core_settings *s)
{
	for (size_t i = 0; i < s->ndepends_on; i++)
		free(s->depends_on[i].path);
	free(s->depends_on);
}
