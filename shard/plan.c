/*
 * plan.c — `elspeth shard plan`: numbers the source's rows once (with the
 * source plugin itself, so a shard's range starts exactly where the run
 * would read that row: quoted newlines, CRLF, a BOM, a header, blank
 * lines are the plugin's business), then hashes the file in one pass:
 * the whole, the bytes before the first row, and each shard's bytes.
 * Several sources (ADR 0044) are numbered as a run reads them, one after
 * another; a range starts in whichever source its first row is in (its
 * position names it) and may end in a later one, so only the files are
 * hashed, whole.
 *
 * Where each row starts is kept for every `stride`-th row only, in at
 * most MAX_MARKS marks (the stride doubles when they are full), so the
 * plan's memory does not grow with the source; a shard then starts at
 * the mark nearest below its share, off by less than a stride (4 rows
 * in a million).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shard/shard_internal.h"

#define MAX_MARKS (1u << 18)

typedef struct mark {
	uint64_t seq;        /* the row that starts here */
	plg_source_pos pos;  /* the source before it */
} mark;

typedef struct scan {
	mark *marks;
	size_t n;
	uint64_t stride;
	uint64_t rows;
	plg_source_pos end;  /* after the last row */
} scan;

/* ------------------------------------------------------------ refusals */

static const char *opt_value(const core_node *options, const char *key)
{
	const core_node *n = core_map_get(options, key);

	return n && n->kind == CORE_NODE_SCALAR ? n->value : NULL;
}

/* A source whose rows depend on the rows before it (0.7.1's fixed field
 * types: a JSON source, schema not fixed, in a 0.7.1-format file): no
 * shard may start inside it, where the types fixed before are unknown;
 * one that starts at its first row, or before it, reads them all. */
static bool fixes_types(const dag_graph *g, const dag_node *src)
{
	const core_node *schema = core_map_get(src->options, "schema");
	const char *mode = opt_value(schema, "mode");

	return g->settings->format == CORE_FORMAT_V07 && !strcmp(src->plugin, "json") &&
	       !(mode && !strcmp(mode, "fixed"));
}

/* What would make the merged files differ from one run's, or cannot be
 * merged at all, is refused before anything is read. */
static int shardable(const dag_graph *g, uint32_t shards, core_err *err)
{
	if (!g->settings->audit)
		return core_err_set(err, CORE_ECONFIG,
			"a sharded run needs the Landscape (its merge proves every row "
			"is in exactly one shard from it); landscape.enabled is false");
	for (size_t i = 0; i < g->nsources; i++) {
		const dag_node *src = &g->nodes[i];

		if (!src->sops->input || !src->sops->input(src->options))
			return core_err_set(err, CORE_ECONFIG,
				"source plugin %s names no input file, so it cannot be sharded",
				src->plugin);
		if (shards > 1 && (!src->sops->position || !src->sops->seek))
			return core_err_set(err, CORE_ECONFIG,
				"source plugin %s cannot start at a row, so it cannot be split "
				"into shards", src->plugin);
	}
	for (size_t i = 0; i < g->nnodes; i++) {
		const dag_node *n = &g->nodes[i];
		const char *mode;

		if (n->kind == DAG_AGGREGATION && shards > 1)
			return core_err_set(err, CORE_ECONFIG,
				"aggregation '%s': its batches would be cut at shard "
				"boundaries (a count, a timeout or the end of the source "
				"would close them elsewhere than in one run); a pipeline "
				"with aggregations runs as one shard (--shards 1)", n->name);
		if (n->kind != DAG_SINK)
			continue;
		if (!n->kops->frame || !n->kops->position || !n->kops->resume ||
		    !n->kops->target || !n->kops->target(NULL, n->options))
			return core_err_set(err, CORE_ECONFIG,
				"sink '%s' (plugin %s) cannot be merged from shards",
				n->name, n->plugin);
		if ((mode = opt_value(n->options, "collision_policy")) &&
		    strcmp(mode, "append_or_create"))
			return core_err_set(err, CORE_EUNSUPPORTED,
				"sink '%s': collision_policy %s cannot be sharded yet (the "
				"merge writes the file its options name); leave it out",
				n->name, mode);
		if ((mode = opt_value(n->options, "mode")) && !strcmp(mode, "append"))
			return core_err_set(err, CORE_ECONFIG,
				"sink '%s': mode: append cannot be sharded (the merge "
				"writes whole files); write to a new file (mode: write)",
				n->name);
	}
	return 0;
}

/* ------------------------------------------------------------- numbering */

static int add_mark(scan *s, uint64_t seq, const plg_source_pos *pos)
{
	if (s->n == MAX_MARKS) { /* keep every other: the stride doubles */
		size_t kept = 0;

		for (size_t i = 0; i < s->n; i++)
			if ((s->marks[i].seq - 1) % (2 * s->stride) == 0)
				s->marks[kept++] = s->marks[i];
		s->n = kept;
		s->stride *= 2;
		if ((seq - 1) % s->stride)
			return 0;
	}
	s->marks[s->n++] = (mark){ seq, *pos };
	return 0;
}

/* Numbers the rows as a run reads them (several sources: one after
 * another, positions naming the source). */
static int number_rows(const dag_graph *g, scan *s, core_err *err)
{
	const plg_source_ops *ops;
	plg_source_pos pos = { 0 };
	void *state = NULL;
	int rc;

	s->stride = 1;
	if (!(s->marks = malloc(MAX_MARKS * sizeof(*s->marks))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((rc = eng_sources_open(g, &ops, &state, err)))
		return core_err_prefix(err, "shard plan: source");
	for (;;) {
		plg_source_row r;

		if (ops->position)
			ops->position(state, &pos);
		if (s->rows % s->stride == 0)
			add_mark(s, s->rows + 1, &pos);
		if (ops->skip) {
			if ((rc = ops->skip(state, err)) <= 0)
				break;
		} else {
			if ((rc = ops->next(state, &r, err)) <= 0)
				break;
			plg_source_row_release(&r);
		}
		s->rows++;
	}
	s->end = pos;
	ops->close(state);
	return rc < 0 ? core_err_prefix(err, "shard plan: source, after row %llu",
					(unsigned long long)s->rows) : 0;
}

/* The mark to start shard k at: the nearest at or below its share. */
static const mark *start_of(const scan *s, uint32_t k, uint32_t shards)
{
	uint64_t want = s->rows * k / shards; /* rows before shard k */
	size_t i = (size_t)(want / s->stride);

	return i < s->n ? &s->marks[i] : NULL; /* NULL: at the end */
}

static void make_ranges(const scan *s, shd_range *r, uint32_t shards)
{
	for (uint32_t k = 0; k < shards; k++) {
		const mark *m = start_of(s, k, shards);

		r[k].index = k;
		r[k].first_row = m ? m->seq : s->rows + 1;
		r[k].start = m ? m->pos : s->end;
	}
	for (uint32_t k = 0; k < shards; k++) {
		r[k].last_row = k + 1 < shards ? r[k + 1].first_row - 1 : s->rows;
		r[k].byte_end = k + 1 < shards ? r[k + 1].start.offset : s->end.offset;
	}
}

/* ------------------------------------------------------------- hashing */

/* Hashing the segments of a bytes source in one pass: the head (before
 * the first row), then each range; they follow each other. */
typedef struct segs {
	shd_manifest *m;
	core_sha256_stream *cur;
	uint32_t k;          /* 0: the head; k: range k - 1; past nshards: done */
	uint64_t end;        /* where segment k ends */
} segs;

/* Closes every segment that ends at `at` (empty ranges end where they
 * start). */
static int segs_close(segs *s, uint64_t at)
{
	while (s->k <= s->m->nshards && at == s->end) {
		core_sha256_stream_hex(s->cur, s->k ? s->m->ranges[s->k - 1].sha256 :
				       s->m->head_sha256);
		core_sha256_stream_free(s->cur);
		s->cur = NULL;
		if (++s->k > s->m->nshards)
			break;
		if (!(s->cur = core_sha256_stream_new()))
			return CORE_ENOMEM;
		s->end = s->m->ranges[s->k - 1].byte_end;
	}
	return 0;
}

static int segs_add(segs *s, const char *p, size_t n, uint64_t *at)
{
	while (n) {
		size_t take = n;

		if (s->k > s->m->nshards) {
			*at += n;
			return 0;
		}
		if (s->end - *at < take)
			take = (size_t)(s->end - *at);
		core_sha256_stream_add(s->cur, p, take);
		p += take;
		n -= take;
		*at += take;
		if (segs_close(s, *at))
			return CORE_ENOMEM;
	}
	return 0;
}

/* One read of the file: its whole hash and, for a bytes source, the
 * head's and each range's. */
static int hash_source(shd_manifest *m, core_err *err)
{
	static char buf[1 << 20];
	core_sha256_stream *all = core_sha256_stream_new();
	segs sg = { .m = m, .cur = core_sha256_stream_new(), .end = m->head_bytes };
	uint64_t total = 0, at = 0;
	int fd = -1, rc = 0;

	if (!all || !sg.cur || (m->bytes && segs_close(&sg, 0))) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	if ((fd = open(m->source_path, O_RDONLY | O_CLOEXEC)) < 0) {
		rc = core_err_set(err, CORE_EIO, "cannot read %s: %s", m->source_path,
				  strerror(errno));
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = core_err_set(err, CORE_EIO, "cannot read %s: %s",
					  m->source_path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		total += (uint64_t)n;
		core_sha256_stream_add(all, buf, (size_t)n);
		if (m->bytes && segs_add(&sg, buf, (size_t)n, &at)) {
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
			break;
		}
	}
	m->source_size = total;
	core_sha256_stream_hex(all, m->source_sha256);
	if (!rc && m->bytes && sg.k <= m->nshards)
		rc = core_err_set(err, CORE_EDATA, "%s changed while it was planned "
				  "(it ends before the rows read)", m->source_path);
out:
	if (fd >= 0)
		close(fd);
	core_sha256_stream_free(all);
	core_sha256_stream_free(sg.cur);
	return rc;
}

/* ------------------------------------------------------------- writing */

static json_t *manifest_json(const shd_manifest *m)
{
	json_t *ranges = json_array();
	json_t *doc;

	for (uint32_t k = 0; ranges && k < m->nshards; k++) {
		const shd_range *r = &m->ranges[k];

		json_t *j = json_pack("{s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:s}",
			"shard", (int)k, "first_row", (json_int_t)r->first_row,
			"last_row", (json_int_t)r->last_row,
			"rows", (json_int_t)(r->last_row + 1 - r->first_row),
			"offset", (json_int_t)r->start.offset,
			"line", (json_int_t)r->start.line,
			"byte_end", (json_int_t)r->byte_end, "sha256", r->sha256);

		if (j && m->sources) { /* the source it starts in, its rows before */
			json_object_set_new(j, "source", json_integer(r->start.source));
			json_object_set_new(j, "index", json_integer((json_int_t)r->start.index));
		}
		json_array_append_new(ranges, j);
	}
	doc = json_pack("{s:i,s:{s:s,s:s,s:s},s:{s:s,s:s,s:I,s:s,s:b,s:I,s:s},"
			"s:I,s:i,s:i,s:f,s:o}",
		"elspeth_shards", SHD__FORMAT,
		"settings", "path", m->settings_path, "config_hash", m->config_hash,
		"topology_hash", m->topology_hash,
		"source", "plugin", m->source_plugin, "path", m->source_path,
		"size", (json_int_t)m->source_size, "sha256", m->source_sha256,
		"byte_positions", m->bytes, "head_bytes", (json_int_t)m->head_bytes,
		"head_sha256", m->head_sha256,
		"rows", (json_int_t)m->rows, "shards", (int)m->nshards,
		"parallel", (int)m->parallel, "capacity_share", shd_capacity_share(m),
		"ranges", ranges);
	if (doc && m->sources) {
		json_t *list = json_array();

		for (uint32_t i = 0; list && i < m->nsources; i++)
			json_array_append_new(list, json_pack("{s:s,s:s,s:s,s:I,s:s}",
				"name", m->sources[i].name, "plugin", m->sources[i].plugin,
				"path", m->sources[i].path, "size", (json_int_t)m->sources[i].size,
				"sha256", m->sources[i].sha256));
		json_object_set_new(doc, "sources", list);
	}
	return doc;
}

/* Several sources: each file's name, plugin, size and hash (a shard
 * checks them whole: a range may span files, so no range is hashed). */
static int hash_sources(const dag_graph *g, shd_manifest *m, core_err *err)
{
	int rc = 0;

	if (!(m->sources = calloc(g->nsources, sizeof(*m->sources))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	m->nsources = (uint32_t)g->nsources;
	for (uint32_t i = 0; i < m->nsources && !rc; i++) {
		const dag_node *n = &g->nodes[i];
		struct shd_source *s = &m->sources[i];

		if (!(s->name = strdup(n->name)) || !(s->plugin = strdup(n->plugin)) ||
		    !(s->path = strdup(n->sops->input(n->options))))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		rc = core_sha256_file(s->path, UINT64_MAX, &s->size, s->sha256, err);
	}
	if (!rc) {
		m->source_size = m->sources[0].size;
		memcpy(m->source_sha256, m->sources[0].sha256, sizeof(m->source_sha256));
	}
	return rc;
}

int shd__write_json(const char *path, const json_t *doc, core_err *err)
{
	size_t n = strlen(path) + 8;
	char *tmp = malloc(n);
	FILE *f = NULL;
	int rc = 0;

	if (!tmp)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	snprintf(tmp, n, "%s.tmp", path);
	if (!(f = fopen(tmp, "w")) || json_dumpf(doc, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) ||
	    fputc('\n', f) == EOF || fflush(f) || fsync(fileno(f)))
		rc = core_err_set(err, CORE_EIO, "cannot write %s: %s", tmp, strerror(errno));
	if (f && fclose(f) && !rc)
		rc = core_err_set(err, CORE_EIO, "cannot write %s: %s", tmp, strerror(errno));
	if (!rc && rename(tmp, path))
		rc = core_err_set(err, CORE_EIO, "cannot rename %s to %s: %s", tmp, path,
				  strerror(errno));
	if (rc)
		unlink(tmp);
	else
		core_fsync_dir_of(path);
	free(tmp);
	return rc;
}

int shd_plan(dag_graph *g, const char *settings_path, const shd_plan_opts *o,
	     shd_manifest **out, core_err *err)
{
	const dag_node *src = &g->nodes[0];
	shd_manifest *m = calloc(1, sizeof(*m));
	scan s = { 0 };
	json_t *doc = NULL;
	int rc;

	if (out)
		*out = NULL;
	if (!m)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	m->nshards = o->shards;
	m->parallel = o->parallel && o->parallel < o->shards ? o->parallel : o->shards;
	if ((rc = shardable(g, o->shards, err)))
		goto out;
	if (!(m->path = strdup(o->output)) || !(m->dir = shd__workdir(o->output)) ||
	    !(m->settings_path = strdup(settings_path)) ||
	    !(m->source_plugin = strdup(src->plugin)) ||
	    !(m->source_path = strdup(src->sops->input(src->options))) ||
	    !(m->ranges = calloc(o->shards, sizeof(*m->ranges)))) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	snprintf(m->config_hash, sizeof(m->config_hash), "%s", g->settings->config_hash);
	if ((rc = eng_topology_hash(g, m->topology_hash, err)) ||
	    (rc = number_rows(g, &s, err)))
		goto out;
	m->rows = s.rows;
	make_ranges(&s, m->ranges, m->nshards);
	for (uint32_t k = 1; k < m->nshards && !rc; k++) {
		const plg_source_pos *at = &m->ranges[k].start;
		const dag_node *in = &g->nodes[at->source < g->nsources ? at->source : 0];

		if (m->ranges[k].first_row <= m->rows && fixes_types(g, in) &&
		    (g->nsources > 1 ? at->index > 0 : m->ranges[k].first_row > 1))
			rc = core_err_set(err, CORE_EUNSUPPORTED,
				"source '%s': in ELSPETH 0.7.1's format a JSON source with a "
				"schema that is not fixed fixes each field's type at its first "
				"value, which shard %u, starting at its row %llu, would not "
				"see; declare the schema (mode: fixed), or run it as one shard "
				"(--shards 1)", in->name, k, (unsigned long long)(g->nsources > 1 ?
				at->index + 1 : m->ranges[k].first_row));
	}
	if (rc)
		goto out;
	m->nsources = 1;
	m->bytes = g->nsources == 1 && s.marks[0].pos.bytes;
	m->head_bytes = m->bytes ? m->ranges[0].start.offset : 0;
	if ((rc = g->nsources > 1 ? hash_sources(g, m, err) : hash_source(m, err)))
		goto out;
	if (!(doc = manifest_json(m))) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = shd__plan_hash(doc, m->plan_hash, err)))
		goto out;
	json_object_set_new(doc, "plan_hash", json_string(m->plan_hash));
	rc = shd__write_json(o->output, doc, err);
out:
	json_decref(doc);
	free(s.marks);
	if (rc || !out)
		shd_free(m);
	else
		*out = m;
	return rc;
}
