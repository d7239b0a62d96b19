/*
 * merge.c — `elspeth merge`: each sink's final file from the shards' part
 * files, in source order, after proving the shards are whole.
 *
 * A shard counts when the latest run of its Landscape completed, was run
 * from this plan over its range (its run record says so) and pulled
 * exactly the range's rows. Its part files must be the bytes its run
 * recorded at its end (size and SHA-256, checked while they are copied).
 * That is what makes the merged files exact; the rest of each shard's
 * trail is `verify --manifest`'s to check, which reads all of it and
 * takes about as long as the run (ADR 0020). Parts are joined as their sink describes them (plg_sink_frame):
 * the head (a CSV header, "[\n") of the first part with rows — every part
 * with rows must have the same head, else the shards wrote different
 * columns and the merge refuses — then each part's rows, joined, then the
 * tail. Each final file is written to FILE.merging and fsync'd; only when
 * every sink's is written are they renamed into place (a refused merge
 * writes nothing); merge.json, written last, maps each part to its bytes
 * in the final file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shard/shard_internal.h"

typedef struct part {
	char *path;
	uint64_t size;
	char sha256[CORE_SHA256_HEX_LEN + 1];
	plg_sink_frame frame;
} part;

/* ------------------------------------------------------------- shards */

/* The run is finished and read its whole range (shd_shard_run checked
 * that it is shard k of this plan). */
static int run_matches(const shd_manifest *m, uint32_t k, const json_t *run,
		       core_err *err)
{
	const shd_range *r = &m->ranges[k];
	const json_t *sh = json_object_get(run, "shard");
	const char *status = json_string_value(json_object_get(run, "status"));
	json_int_t id = json_integer_value(json_object_get(run, "run_id"));
	uint64_t rows = (uint64_t)json_integer_value(json_object_get(run, "rows"));

	if (!status || strcmp(status, "completed"))
		return core_err_set(err, CORE_EDATA,
			"shard %u: its run %lld is %s, not completed; finish it with:\n"
			"  elspeth run -s %s --manifest %s --shard %u --execute",
			k, (long long)id, status ? status : "?", m->settings_path, m->path, k);
	if (json_integer_value(json_object_get(sh, "first_row")) != (json_int_t)r->first_row ||
	    json_integer_value(json_object_get(sh, "last_row")) != (json_int_t)r->last_row ||
	    rows != r->last_row + 1 - r->first_row)
		return core_err_set(err, CORE_EDATA,
			"shard %u: its run read %llu rows, its range %llu..%llu has %llu",
			k, (unsigned long long)rows, (unsigned long long)r->first_row,
			(unsigned long long)r->last_row,
			(unsigned long long)(r->last_row + 1 - r->first_row));
	return 0;
}

int shd__open_run(const shd_manifest *m, uint32_t k, shd__run *s, core_err *err)
{
	char path[4096];
	json_t *run = NULL;
	struct stat st;
	int rc;

	if ((rc = shd_shard_run(m, k, &s->rec, &run, err)))
		return rc;
	if (!run) {
		bool exists = !shd_path(m, k, "landscape", path, sizeof(path), err) &&
			      !stat(path, &st);

		return core_err_set(err, CORE_EDATA, exists ?
			"shard %u: its Landscape holds no run; run it with:\n"
			"  elspeth run -s %s --manifest %s --shard %u --execute" :
			"shard %u has not run (no Landscape); run it with:\n"
			"  elspeth run -s %s --manifest %s --shard %u --execute",
			k, m->settings_path, m->path, k);
	}
	s->run = (uint64_t)json_integer_value(json_object_get(run, "run_id"));
	rc = run_matches(m, k, run, err);
	json_decref(run);
	return rc;
}

/* -------------------------------------------------------------- parts */

static int load_part(uint32_t k, shd__run *s, const dag_node *n, size_t node,
		     part *p, core_err *err)
{
	Elspeth__SinkFileRecord *f = NULL;
	const void *v;
	size_t vl;
	rec_txn *t;
	rec_key key;
	int rc;

	if ((rc = rec_read_begin(s->rec, &t, err)))
		return rc;
	rec_key_init(&key);
	rec_key_u64(&key, s->run);
	rec_key_u32(&key, (uint32_t)node);
	rc = rec_get(t, REC_SINK_FILES, &key, &v, &vl);
	if (!rc && !(f = elspeth__sink_file_record__unpack(NULL, vl, v)))
		rc = CORE_EDATA;
	if (!rc) {
		p->path = strdup(f->path);
		p->size = f->size;
		snprintf(p->sha256, sizeof(p->sha256), "%s", f->content_hash);
		elspeth__sink_file_record__free_unpacked(f, NULL);
	}
	rec_read_end(t);
	if (rc)
		return core_err_set(err, CORE_EDATA,
			"shard %u: run %llu recorded no file for sink '%s'", k,
			(unsigned long long)s->run, n->name);
	if (!p->path)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((rc = n->kops->frame(n->options, p->path, &p->frame, err)))
		return core_err_prefix(err, "shard %u, sink '%s'", k, n->name);
	if (p->frame.head + p->frame.tail > p->size)
		return core_err_set(err, CORE_EDATA, "shard %u: %s is shorter than "
				    "its run recorded", k, p->path);
	return 0;
}

static int read_at(const char *path, uint64_t off, size_t n, char *buf, core_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got = fd < 0 ? -1 : pread(fd, buf, n, (off_t)off);

	if (fd >= 0)
		close(fd);
	if (got != (ssize_t)n)
		return core_err_set(err, CORE_EIO, "cannot read %s: %s", path,
				    got < 0 ? strerror(errno) : "too short");
	return 0;
}

/* The part is the bytes its run recorded (hashed whole). */
static bool same_as_run(const part *p)
{
	char hex[CORE_SHA256_HEX_LEN + 1];
	uint64_t size;

	return !core_sha256_file(p->path, UINT64_MAX, &size, hex, NULL) &&
	       size == p->size && !strcmp(hex, p->sha256);
}

/* Every part with rows has the same head as the first (*first: its
 * index, or -1 when no part has rows). */
static int same_heads(const dag_node *n, part *parts, uint32_t np, int *first,
		      core_err *err)
{
	char *want = NULL, *got = NULL;
	int rc = 0;

	*first = -1;
	for (uint32_t k = 0; k < np && !rc; k++) {
		part *p = &parts[k];

		if (!p->frame.rows)
			continue;
		if (*first < 0) {
			*first = (int)k;
			if (!(want = malloc(p->frame.head + 1)))
				rc = CORE_ENOMEM;
			else
				rc = read_at(p->path, 0, p->frame.head, want, err);
			continue;
		}
		if (p->frame.head != parts[*first].frame.head) {
			rc = CORE_EDATA;
		} else if (!(got = realloc(got, p->frame.head + 1))) {
			rc = CORE_ENOMEM;
		} else if (!(rc = read_at(p->path, 0, p->frame.head, got, err)) &&
			   memcmp(want, got, p->frame.head)) {
			rc = CORE_EDATA;
		}
		if (rc == CORE_EDATA && (!same_as_run(p) || !same_as_run(&parts[*first]))) {
			const part *bad = same_as_run(p) ? &parts[*first] : p;

			core_err_set(err, CORE_EDATA,
				"shard %u: its part %s is not what its run wrote (edited "
				"since?): run the shard again after removing %s",
				bad == p ? k : (uint32_t)*first, bad->path, bad->path);
		}
		else if (rc == CORE_EDATA)
			core_err_set(err, CORE_EDATA,
				"sink '%s': shard %u wrote another header than shard %d "
				"(its first row has other fields): the merged file would "
				"differ from one run's; declare the sink's columns "
				"(schema mode: fixed) or run unsharded", n->name, k, *first);
	}
	free(want);
	free(got);
	return rc == CORE_ENOMEM ? core_err_set(err, rc, "out of memory") : rc;
}

/* ------------------------------------------------------------- writing */

typedef struct out {
	int fd;
	const char *path;
	uint64_t pos;
	core_sha256_stream *sha;
} out;

static int put(out *o, const char *p, size_t n, core_err *err)
{
	core_sha256_stream_add(o->sha, p, n);
	o->pos += n;
	while (n) {
		ssize_t w = write(o->fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return core_err_set(err, CORE_EIO, "cannot write %s: %s", o->path,
					    strerror(errno));
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Copies bytes [from, to) of the part to o while hashing the whole part;
 * its hash must be the one its run recorded. */
static int copy_part(out *o, const part *p, uint64_t from, uint64_t to, uint32_t k,
		     core_err *err)
{
	static char buf[1 << 20];
	core_sha256_stream *sha = core_sha256_stream_new();
	char hex[CORE_SHA256_HEX_LEN + 1];
	int fd = open(p->path, O_RDONLY | O_CLOEXEC);
	uint64_t at = 0;
	int rc = 0;

	if (!sha || fd < 0) {
		rc = fd < 0 ? core_err_set(err, CORE_EDATA, "shard %u: its part %s: %s", k,
					   p->path, strerror(errno)) :
			      core_err_set(err, CORE_ENOMEM, "out of memory");
		goto done;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		uint64_t lo, hi;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0)
				rc = core_err_set(err, CORE_EIO, "cannot read %s: %s",
						  p->path, strerror(errno));
			break;
		}
		core_sha256_stream_add(sha, buf, (size_t)n);
		lo = from > at ? from : at;
		hi = to < at + (uint64_t)n ? to : at + (uint64_t)n;
		if (lo < hi && (rc = put(o, buf + (lo - at), (size_t)(hi - lo), err)))
			break;
		at += (uint64_t)n;
	}
	core_sha256_stream_hex(sha, hex);
	if (!rc && (at != p->size || strcmp(hex, p->sha256)))
		rc = core_err_set(err, CORE_EDATA,
			"shard %u: its part %s is not what its run wrote (%llu bytes "
			"recorded, %llu now, or other bytes): run the shard again after "
			"removing %s", k, p->path, (unsigned long long)p->size,
			(unsigned long long)at, p->path);
done:
	if (fd >= 0)
		close(fd);
	core_sha256_stream_free(sha);
	return rc;
}

/* The head or tail of a part (copy_part checks its hash with its rows). */
static int put_range(out *o, const part *p, uint64_t off, uint64_t n, core_err *err)
{
	char *buf = malloc(n + 1);
	int rc = buf ? read_at(p->path, off, (size_t)n, buf, err) :
		       core_err_set(err, CORE_ENOMEM, "out of memory");

	if (!rc)
		rc = put(o, buf, (size_t)n, err);
	free(buf);
	return rc;
}

static int write_final(const dag_node *n, part *parts, uint32_t np,
		       int first, json_t *map, out *o, core_err *err)
{
	const char *joiner = first >= 0 ? parts[first].frame.joiner : "";
	bool any = false;
	int rc = 0;

	if (first < 0) { /* no rows anywhere: every part is the same file */
		for (uint32_t k = 1; k < np && !rc; k++)
			if (strcmp(parts[k].sha256, parts[0].sha256))
				rc = core_err_set(err, CORE_EDATA,
					"sink '%s': shards 0 and %u wrote no rows but "
					"different files", n->name, k);
		if (!rc)
			rc = copy_part(o, &parts[0], 0, parts[0].size, 0, err);
		return rc;
	}
	if ((rc = put_range(o, &parts[first], 0, parts[first].frame.head, err)))
		return rc;
	for (uint32_t k = 0; k < np && !rc; k++) {
		const part *p = &parts[k];
		uint64_t body = p->size - p->frame.head - p->frame.tail;

		if (p->frame.rows && any)
			rc = put(o, joiner, strlen(joiner), err);
		json_array_append_new(map, json_pack("{s:i,s:s,s:s,s:I,s:I,s:I}",
			"shard", (int)k, "part", p->path, "part_sha256", p->sha256,
			"part_offset", (json_int_t)p->frame.head,
			"length", (json_int_t)(p->frame.rows ? body : 0),
			"final_offset", (json_int_t)o->pos));
		if (!rc && p->frame.rows)
			rc = copy_part(o, p, p->frame.head, p->size - p->frame.tail, k, err);
		else if (!rc) /* still the bytes its run recorded */
			rc = copy_part(o, p, 0, 0, k, err);
		any = any || p->frame.rows;
	}
	if (!rc)
		rc = put_range(o, &parts[first], parts[first].size - parts[first].frame.tail,
			       parts[first].frame.tail, err);
	return rc;
}

/* One sink: its parts from every shard, the final file, its map. */
static int merge_sink(const shd_manifest *m, shd__run *runs, const dag_node *n,
		      size_t node, json_t *sinks, core_err *err)
{
	part *parts = calloc(m->nshards, sizeof(*parts));
	/* The file the options name (no environment: no part file). */
	const char *path = n->kops->target(NULL, n->options);
	size_t tl = strlen(path) + 10;
	char *tmp = malloc(tl);
	out o = { .fd = -1, .sha = core_sha256_stream_new() };
	char hex[CORE_SHA256_HEX_LEN + 1];
	json_t *map = json_array();
	int first = -1, rc = 0;

	if (!parts || !tmp || !o.sha || !map) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto done;
	}
	for (uint32_t k = 0; k < m->nshards && !rc; k++)
		rc = load_part(k, &runs[k], n, node, &parts[k], err);
	if (!rc)
		rc = same_heads(n, parts, m->nshards, &first, err);
	if (rc)
		goto done;
	snprintf(tmp, tl, "%s.merging", path);
	o.path = tmp;
	if ((rc = core_mkdir_parents(tmp, err)))
		goto done;
	if ((o.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0) {
		rc = core_err_set(err, CORE_EIO, "cannot write %s: %s", tmp, strerror(errno));
		goto done;
	}
	rc = write_final(n, parts, m->nshards, first, map, &o, err);
	if (!rc && fsync(o.fd))
		rc = core_err_set(err, CORE_EIO, "cannot write %s: %s", tmp, strerror(errno));
	if (close(o.fd) && !rc)
		rc = core_err_set(err, CORE_EIO, "cannot write %s: %s", tmp, strerror(errno));
	if (rc) {
		unlink(tmp);
		goto done;
	}
	core_sha256_stream_hex(o.sha, hex);
	json_array_append_new(sinks, json_pack("{s:s,s:s,s:I,s:s,s:O,s:s}", "sink", n->name,
		"path", path, "size", (json_int_t)o.pos, "sha256", hex, "parts", map,
		"merging", tmp));
done:
	for (uint32_t k = 0; parts && k < m->nshards; k++)
		free(parts[k].path);
	free(parts);
	free(tmp);
	json_decref(map);
	core_sha256_stream_free(o.sha);
	return rc ? core_err_prefix(err, "merge") : 0;
}

/* A refused merge writes nothing: the files written so far go. */
static int drop_all(json_t *sinks, int rc)
{
	json_t *v;
	size_t i;

	json_array_foreach(sinks, i, v)
		unlink(json_string_value(json_object_get(v, "merging")));
	return rc;
}

/* Every sink's file was written whole: each takes its place. */
static int rename_all(json_t *sinks, core_err *err)
{
	json_t *v;
	size_t i;
	int rc = 0;

	json_array_foreach(sinks, i, v) {
		const char *tmp = json_string_value(json_object_get(v, "merging"));
		const char *path = json_string_value(json_object_get(v, "path"));

		if (!rc && rename(tmp, path))
			rc = core_err_set(err, CORE_EIO, "cannot rename %s to %s: %s", tmp,
					  path, strerror(errno));
		else if (!rc)
			core_fsync_dir_of(path);
		else
			unlink(tmp);
		json_object_del(v, "merging");
	}
	return rc;
}

int shd_merge(const shd_manifest *m, dag_graph *g, json_t **report, core_err *err)
{
	shd__run *runs = calloc(m->nshards, sizeof(*runs));
	json_t *sinks = json_array(), *doc = NULL;
	char path[4096];
	int rc = 0;

	if (report)
		*report = NULL;
	if (!runs || !sinks) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = shd_check_settings(m, g, err)))
		goto done;
	for (uint32_t k = 0; k < m->nshards && !rc; k++)
		rc = shd__open_run(m, k, &runs[k], err);
	for (size_t i = 0; i < g->nnodes && !rc; i++)
		if (g->nodes[i].kind == DAG_SINK)
			rc = merge_sink(m, runs, &g->nodes[i], i, sinks, err);
	rc = rc ? drop_all(sinks, rc) : rename_all(sinks, err);
	if (rc)
		goto done;
	doc = json_pack("{s:s,s:s,s:I,s:i,s:O}", "manifest", m->path,
			"plan_hash", m->plan_hash, "rows", (json_int_t)m->rows,
			"shards", (int)m->nshards, "sinks", sinks);
	if (snprintf(path, sizeof(path), "%s/merge.json", m->dir) >= (int)sizeof(path))
		rc = core_err_set(err, CORE_ECONFIG, "%s: the path is too long", m->dir);
	if (!rc)
		rc = shd__write_json(path, doc, err);
	if (!rc && report)
		*report = json_incref(doc);
done:
	for (uint32_t k = 0; runs && k < m->nshards; k++)
		if (runs[k].rec)
			rec_close(runs[k].rec, NULL);
	free(runs);
	json_decref(sinks);
	json_decref(doc);
	return rc;
}
