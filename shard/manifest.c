/*
 * manifest.c — reading and checking a shard manifest (shard.h), and the
 * paths of a shard's files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shard/shard_internal.h"

void shd_free(shd_manifest *m)
{
	if (!m)
		return;
	free(m->path);
	free(m->dir);
	free(m->settings_path);
	free(m->source_plugin);
	free(m->source_path);
	for (uint32_t i = 0; m->sources && i < m->nsources; i++) {
		free(m->sources[i].name);
		free(m->sources[i].plugin);
		free(m->sources[i].path);
	}
	free(m->sources);
	free(m->ranges);
	free(m);
}

char *shd__workdir(const char *manifest)
{
	size_t n = strlen(manifest);
	char *dir;

	if (n > 5 && !strcmp(manifest + n - 5, ".json"))
		n -= 5;
	if ((dir = malloc(n + 3))) {
		memcpy(dir, manifest, n);
		memcpy(dir + n, ".d", 3);
	}
	return dir;
}

int shd__plan_hash(json_t *doc, char out[CORE_SHA256_HEX_LEN + 1], core_err *err)
{
	json_t *copy = json_deep_copy(doc);
	int rc;

	if (!copy)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	json_object_del(copy, "plan_hash");
	rc = core_hash_json(copy, out, err);
	json_decref(copy);
	return rc;
}

/* ------------------------------------------------------------- reading */

static int bad(core_err *err, const char *path, const char *what)
{
	return core_err_set(err, CORE_EDATA, "%s: not a shard manifest of this "
			    "version (%s); make it again with `elspeth shard plan`",
			    path, what);
}

static bool get_u64(const json_t *o, const char *key, uint64_t *out)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*out = (uint64_t)json_integer_value(v);
	return true;
}

static bool get_hex(const json_t *o, const char *key, char out[CORE_SHA256_HEX_LEN + 1],
		    bool may_be_empty)
{
	const char *s = json_string_value(json_object_get(o, key));

	if (!s || (strlen(s) != CORE_SHA256_HEX_LEN && !(may_be_empty && !s[0])))
		return false;
	snprintf(out, CORE_SHA256_HEX_LEN + 1, "%s", s);
	return true;
}

static char *get_str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? strdup(s) : NULL;
}

static bool range_from(const json_t *j, uint32_t k, shd_range *r)
{
	uint64_t line = 0;

	r->index = k;
	if (!get_u64(j, "first_row", &r->first_row) ||
	    !get_u64(j, "last_row", &r->last_row) ||
	    !get_u64(j, "offset", &r->start.offset) ||
	    !get_u64(j, "line", &line) || !get_u64(j, "byte_end", &r->byte_end) ||
	    !get_hex(j, "sha256", r->sha256, true))
		return false;
	r->start.line = line;
	/* several sources: the one the range starts in, and its rows before */
	if (json_object_get(j, "source")) {
		uint64_t src = 0;

		if (!get_u64(j, "source", &src) || src > UINT32_MAX ||
		    !get_u64(j, "index", &r->start.index))
			return false;
		r->start.source = (unsigned)src;
	}
	return true;
}

static bool sources_from(const json_t *arr, shd_manifest *m)
{
	size_t n = json_array_size(arr);

	if (n < 2 || n > 50 || !(m->sources = calloc(n, sizeof(*m->sources))))
		return false;
	m->nsources = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		const json_t *j = json_array_get(arr, i);
		struct shd_source *s = &m->sources[i];

		if (!(s->name = get_str(j, "name")) || !(s->plugin = get_str(j, "plugin")) ||
		    !(s->path = get_str(j, "path")) || !get_u64(j, "size", &s->size) ||
		    !get_hex(j, "sha256", s->sha256, false))
			return false;
	}
	return true;
}

/* The ranges follow each other from row 1 to the last row. */
static int check_ranges(const shd_manifest *m, core_err *err)
{
	uint64_t next = 1;

	for (uint32_t k = 0; k < m->nshards; k++) {
		const shd_range *r = &m->ranges[k];

		if (r->first_row != next || r->last_row + 1 < r->first_row)
			return core_err_set(err, CORE_EDATA,
				"%s: shard %u covers rows %llu..%llu, expected to start at row "
				"%llu: the manifest was edited", m->path, k,
				(unsigned long long)r->first_row,
				(unsigned long long)r->last_row, (unsigned long long)next);
		next = r->last_row + 1;
	}
	if (next != m->rows + 1)
		return core_err_set(err, CORE_EDATA,
			"%s: the shards end at row %llu, the source has %llu rows: "
			"the manifest was edited", m->path, (unsigned long long)(next - 1),
			(unsigned long long)m->rows);
	return 0;
}

static int from_json(shd_manifest *m, json_t *doc, core_err *err)
{
	const json_t *src = json_object_get(doc, "source");
	const json_t *set = json_object_get(doc, "settings");
	const json_t *ranges = json_object_get(doc, "ranges");
	char hash[CORE_SHA256_HEX_LEN + 1];
	uint64_t n = 0, par = 0;
	int rc;

	if (!json_is_integer(json_object_get(doc, "elspeth_shards")) ||
	    json_integer_value(json_object_get(doc, "elspeth_shards")) != SHD__FORMAT)
		return bad(err, m->path, "elspeth_shards is not 1");
	if (!get_hex(doc, "plan_hash", m->plan_hash, false))
		return bad(err, m->path, "no plan_hash");
	if ((rc = shd__plan_hash(doc, hash, err)))
		return rc;
	if (strcmp(hash, m->plan_hash))
		return core_err_set(err, CORE_EDATA,
			"%s: the manifest was edited since the plan wrote it (its "
			"plan_hash differs); make it again with `elspeth shard plan`",
			m->path);
	if (!(m->settings_path = get_str(set, "path")) ||
	    !get_hex(set, "config_hash", m->config_hash, false) ||
	    !get_hex(set, "topology_hash", m->topology_hash, false))
		return bad(err, m->path, "settings");
	if (!(m->source_plugin = get_str(src, "plugin")) ||
	    !(m->source_path = get_str(src, "path")) ||
	    !get_u64(src, "size", &m->source_size) ||
	    !get_hex(src, "sha256", m->source_sha256, false) ||
	    !get_u64(src, "head_bytes", &m->head_bytes) ||
	    !get_hex(src, "head_sha256", m->head_sha256, true))
		return bad(err, m->path, "source");
	m->bytes = json_is_true(json_object_get(src, "byte_positions"));
	m->nsources = 1;
	if (json_object_get(doc, "sources") &&
	    (!sources_from(json_object_get(doc, "sources"), m) || m->bytes))
		return bad(err, m->path, "sources");
	if (!get_u64(doc, "rows", &m->rows) || !get_u64(doc, "shards", &n) ||
	    !get_u64(doc, "parallel", &par) || n < 1 || n > SHD__MAX_SHARDS ||
	    par < 1 || !json_is_array(ranges) || json_array_size(ranges) != n)
		return bad(err, m->path, "shards");
	m->nshards = (uint32_t)n;
	m->parallel = (uint32_t)par;
	if (!(m->ranges = calloc(n, sizeof(*m->ranges))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (uint32_t k = 0; k < m->nshards; k++)
		if (!range_from(json_array_get(ranges, k), k, &m->ranges[k]))
			return bad(err, m->path, "ranges");
	return check_ranges(m, err);
}

int shd_load(const char *path, shd_manifest **out, core_err *err)
{
	shd_manifest *m = calloc(1, sizeof(*m));
	json_error_t je;
	json_t *doc;
	int rc;

	*out = NULL;
	if (!m)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!(m->path = strdup(path)) || !(m->dir = shd__workdir(path))) {
		shd_free(m);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if (!(doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je))) {
		rc = errno == ENOENT && je.line < 1 ?
			core_err_set(err, CORE_EIO, "%s: no such manifest (make one with "
				     "`elspeth shard plan`)", path) :
			core_err_set(err, CORE_EDATA, "%s:%d:%d: %s", path, je.line,
				     je.column, je.text);
		shd_free(m);
		return rc;
	}
	rc = from_json(m, doc, err);
	json_decref(doc);
	if (rc) {
		shd_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

/* -------------------------------------------------------------- checks */

int shd_check_settings(const shd_manifest *m, dag_graph *g, core_err *err)
{
	char topo[CORE_SHA256_HEX_LEN + 1];
	int rc;

	if (strcmp(g->settings->config_hash, m->config_hash))
		return core_err_set(err, CORE_ECONFIG,
			"the settings differ from those %s was planned with (%s): a "
			"shard must run the same pipeline, with the same environment "
			"variables", m->path, m->settings_path);
	if ((rc = eng_topology_hash(g, topo, err)))
		return rc;
	if (strcmp(topo, m->topology_hash))
		return core_err_set(err, CORE_ECONFIG,
			"the pipeline's topology differs from the one %s was planned "
			"with", m->path);
	return 0;
}

/* A source file as the plan read it: its size, and (whole) its hash. */
static int check_file(const char *path, uint64_t size, const char *sha256, bool whole,
		      core_err *err)
{
	char hex[CORE_SHA256_HEX_LEN + 1];
	struct stat st;
	uint64_t got;
	int rc;

	if (stat(path, &st))
		return core_err_set(err, CORE_EIO, "the source %s: %s", path, strerror(errno));
	if ((uint64_t)st.st_size != size)
		return core_err_set(err, CORE_EDATA,
			"the source %s has %llu bytes, the plan read %llu: it changed "
			"since `elspeth shard plan`", path,
			(unsigned long long)st.st_size, (unsigned long long)size);
	if (!whole)
		return 0;
	rc = core_sha256_file(path, UINT64_MAX, &got, hex, err);
	if (!rc && strcmp(hex, sha256))
		rc = core_err_set(err, CORE_EDATA, "the source %s changed since "
				  "`elspeth shard plan` (its SHA-256 differs)", path);
	return rc;
}

int shd_check_source(const shd_manifest *m, uint32_t k, core_err *err)
{
	const shd_range *r = &m->ranges[k];
	char hex[CORE_SHA256_HEX_LEN + 1];
	uint64_t got;
	int rc = 0;

	for (uint32_t i = 0; m->sources && i < m->nsources && !rc; i++)
		rc = check_file(m->sources[i].path, m->sources[i].size,
				m->sources[i].sha256, true, err);
	if (m->sources || rc ||
	    (rc = check_file(m->source_path, m->source_size, m->source_sha256, !m->bytes, err)) ||
	    !m->bytes)
		return rc;
	rc = core_sha256_file_range(m->source_path, 0, m->head_bytes, &got, hex, err);
	if (!rc && strcmp(hex, m->head_sha256))
		rc = core_err_set(err, CORE_EDATA, "the source %s changed since "
				  "`elspeth shard plan` (its first %llu bytes differ)",
				  m->source_path, (unsigned long long)m->head_bytes);
	if (!rc)
		rc = core_sha256_file_range(m->source_path, r->start.offset,
					    r->byte_end - r->start.offset, &got, hex, err);
	if (!rc && strcmp(hex, r->sha256))
		rc = core_err_set(err, CORE_EDATA, "the source %s changed since "
				  "`elspeth shard plan` (bytes %llu..%llu of shard %u differ)",
				  m->source_path, (unsigned long long)r->start.offset,
				  (unsigned long long)r->byte_end, k);
	return rc;
}

/* --------------------------------------------------------------- paths */

void shd_engine_shard(const shd_manifest *m, uint32_t k, eng_shard *out)
{
	const shd_range *r = &m->ranges[k];

	*out = (eng_shard){ .index = k, .count = m->nshards,
			    .first_seq = r->first_row, .last_seq = r->last_row,
			    .start = r->start, .manifest_hash = m->plan_hash };
	out->start.bytes = m->bytes;
}

double shd_capacity_share(const shd_manifest *m)
{
	uint32_t at_once = m->parallel < m->nshards ? m->parallel : m->nshards;

	return 1.0 / (at_once ? at_once : 1);
}

int shd_path(const shd_manifest *m, uint32_t k, const char *what, char *buf,
	     size_t cap, core_err *err)
{
	int n = what ? snprintf(buf, cap, "%s/shard-%04u/%s", m->dir, k, what)
		     : snprintf(buf, cap, "%s/shard-%04u", m->dir, k);

	if (n < 0 || (size_t)n >= cap)
		return core_err_set(err, CORE_ECONFIG, "%s: the path is too long", m->dir);
	return 0;
}

int shd_find_row(const shd_manifest *m, uint64_t seq)
{
	uint32_t lo = 0, hi = m->nshards;

	if (seq < 1 || seq > m->rows)
		return -1;
	while (lo < hi) { /* the first shard whose last row is >= seq */
		uint32_t mid = lo + (hi - lo) / 2;

		if (m->ranges[mid].last_row < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int)lo;
}
