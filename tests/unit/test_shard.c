/* Tests of shard plans and manifests (shard/shard.h): shd_plan's ranges
 * cover rows 1..R with no gap or overlap for many (R, N), N > R and R = 0
 * included, in about equal shares; each range starts exactly where its
 * first row starts (read by the source itself from the range's start, a
 * shard reads the same rows, errors and "line N" as one read of the
 * whole file; and it ends where the next range starts) for CSV with a
 * header, quoted newlines, CRLF, a BOM, blank lines, skip_rows, columns,
 * no final newline, and for JSON Lines and JSON array sources; the
 * manifest's hashes are the file's; shd_load refuses a manifest after any
 * edit of its content (also one with a recomputed plan_hash whose ranges
 * overlap or leave a gap); shd_find_row agrees with the ranges;
 * shd_check_source refuses exactly the shards whose bytes changed; and
 * the plan refuses what cannot be sharded. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "shard/shard_internal.h"

/* One .timeout for every test of the binary (Criterion leaks in its
 * runner when timeouts differ). */
#define TIMEOUT 120

/* ---------------------------------------------------------------- helpers */

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/elspeth-shard-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];

	if (tmpdir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		cr_assert_eq(system(cmd), 0);
	}
}

TestSuite(shard, .init = setup, .fini = teardown, .timeout = TIMEOUT);

/* A path in the test's directory (static storage per call slot). */
static const char *tpath(const char *name)
{
	static char paths[8][256];
	static size_t next;
	char *p = paths[next++ % 8];

	snprintf(p, 256, "%s/%s", tmpdir, name);
	return p;
}

static void write_file(const char *path, const char *data, size_t n)
{
	FILE *f = fopen(path, "wb");

	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fwrite(data, 1, n, f), n);
	cr_assert_eq(fclose(f), 0);
}

static char *read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *b;
	long len;

	cr_assert_not_null(f, "%s", path);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)len + 1);
	cr_assert_not_null(b);
	cr_assert_eq(fread(b, 1, (size_t)len, f), (size_t)len);
	b[len] = '\0';
	fclose(f);
	*n = (size_t)len;
	return b;
}

/* A growing string. */
typedef struct sbuf {
	char *p;
	size_t n, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		cr_assert_geq(n, 0);
		if (b->p && b->n + (size_t)n < b->cap)
			break;
		b->cap = (b->cap + (size_t)n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		cr_assert_not_null(b->p);
		b->p[b->n] = '\0';
	}
	b->n += (size_t)n;
}

/* A graph of the settings text: source (its options given) -> sink out,
 * quarantine sink for rows failing validation, the Landscape in the
 * test's directory. `extra` is appended (more YAML, may be ""). */
typedef struct tpipe {
	core_settings *s;
	dag_graph *g;
} tpipe;

static void pipe_open(tpipe *p, const char *plugin, const char *source_options,
		      const char *extra)
{
	sbuf y = { 0 };
	core_err err = { 0 };

	sb_printf(&y,
		  "source:\n"
		  "  plugin: %s\n"
		  "  on_success: out\n"
		  "  options:\n"
		  "%s"
		  "    on_validation_failure: quarantine\n"
		  "sinks:\n"
		  "  out: {plugin: json, options: {path: \"%s/out.jsonl\"}}\n"
		  "  quarantine: {plugin: json, options: {path: \"%s/q.jsonl\"}}\n"
		  "landscape: {url: \"lmdb://%s/state\"}\n%s",
		  plugin, source_options, tmpdir, tmpdir, tmpdir, extra);
	cr_assert_eq(core_settings_parse("t.yaml", y.p, &p->s, &err), 0, "settings: %s\n%s",
		     err.msg, y.p);
	cr_assert_eq(dag_build(p->s, &p->g, &err), 0, "graph: %s\n%s", err.msg, y.p);
	cr_assert_eq(dag_open(p->g, false, &err), 0, "open: %s", err.msg);
	free(y.p);
}

static void pipe_close(tpipe *p)
{
	dag_free(p->g);
	core_settings_free(p->s);
}

/* A plan of n shards (the manifest at tmpdir/m.json), checked to be what
 * shd_load reads back. */
static shd_manifest *plan(tpipe *p, uint32_t n)
{
	shd_plan_opts o = { .shards = n, .output = tpath("m.json") };
	shd_manifest *m = NULL, *back = NULL;
	core_err err = { 0 };

	cr_assert_eq(shd_plan(p->g, "t.yaml", &o, &m, &err), 0, "plan of %u: %s", n, err.msg);
	cr_assert_not_null(m);
	cr_assert_eq(shd_load(o.output, &back, &err), 0, "load: %s", err.msg);
	cr_assert_eq(back->rows, m->rows);
	cr_assert_eq(back->nshards, m->nshards);
	cr_assert_str_eq(back->plan_hash, m->plan_hash);
	cr_assert_str_eq(back->source_sha256, m->source_sha256);
	cr_assert_eq(back->bytes, m->bytes);
	for (uint32_t k = 0; k < n; k++) {
		cr_assert_eq(back->ranges[k].first_row, m->ranges[k].first_row);
		cr_assert_eq(back->ranges[k].last_row, m->ranges[k].last_row);
		cr_assert_eq(back->ranges[k].start.offset, m->ranges[k].start.offset);
		cr_assert_eq(back->ranges[k].start.line, m->ranges[k].start.line);
		cr_assert_eq(back->ranges[k].byte_end, m->ranges[k].byte_end);
		cr_assert_str_eq(back->ranges[k].sha256, m->ranges[k].sha256);
	}
	shd_free(back);
	return m;
}

/* The ranges cover 1..rows once, in order, in shares of floor or ceil of
 * rows / n (exact while the plan keeps every row's start: rows < 2^18),
 * and shd_find_row names the shard of every row. */
static void check_cover(const shd_manifest *m, uint64_t rows, bool exact)
{
	uint64_t next = 1, lo = rows / m->nshards, hi = (rows + m->nshards - 1) / m->nshards;

	cr_assert_eq(m->rows, rows, "the plan counts %llu rows, want %llu",
		     (unsigned long long)m->rows, (unsigned long long)rows);
	for (uint32_t k = 0; k < m->nshards; k++) {
		const shd_range *r = &m->ranges[k];
		uint64_t n = r->last_row + 1 - r->first_row;

		cr_assert_eq(r->index, k);
		cr_assert_eq(r->first_row, next, "R=%llu N=%u: shard %u starts at row %llu, want %llu",
			     (unsigned long long)rows, m->nshards, k,
			     (unsigned long long)r->first_row, (unsigned long long)next);
		cr_assert_geq(r->last_row + 1, r->first_row);
		if (exact)
			cr_assert(n >= lo && n <= hi, "R=%llu N=%u: shard %u has %llu rows, want %llu..%llu",
				  (unsigned long long)rows, m->nshards, k, (unsigned long long)n,
				  (unsigned long long)lo, (unsigned long long)hi);
		if (m->bytes) {
			cr_assert_leq(r->start.offset, r->byte_end);
			if (k + 1 < m->nshards)
				cr_assert_eq(r->byte_end, m->ranges[k + 1].start.offset);
			if (k == 0)
				cr_assert_eq(r->start.offset, m->head_bytes);
		}
		next = r->last_row + 1;
	}
	cr_assert_eq(next, rows + 1, "R=%llu N=%u: the ranges end at %llu",
		     (unsigned long long)rows, m->nshards, (unsigned long long)(next - 1));
	cr_assert_eq(shd_find_row(m, 0), -1);
	cr_assert_eq(shd_find_row(m, rows + 1), -1);
	for (uint64_t seq = 1; seq <= rows; seq++) {
		int k = shd_find_row(m, seq);

		cr_assert(k >= 0 && m->ranges[k].first_row <= seq && seq <= m->ranges[k].last_row,
			  "R=%llu N=%u: shd_find_row(%llu) = %d", (unsigned long long)rows,
			  m->nshards, (unsigned long long)seq, k);
	}
}

/* One record as the source gives it: row, error, where. */
typedef struct rec {
	char *row, *error, *where;
} rec;

static void rec_take(rec *r, plg_source_row *s)
{
	r->row = json_dumps(s->row, JSON_SORT_KEYS | JSON_COMPACT);
	r->error = s->error ? strdup(s->error) : NULL;
	r->where = s->where ? strdup(s->where) : NULL;
	plg_source_row_release(s);
}

static bool str_same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Reads the whole source once (recs[0..rows)); then for each shard with
 * rows opens it again, seeks to the range's start and reads its rows:
 * each equal to the whole read's (row, error and "line N"); after them
 * the source stands at the next range's start (byte sources) or at its
 * end. `id_key`: each row's field holding its number (1..), or NULL. */
static void check_boundaries(tpipe *p, const shd_manifest *m, const char *id_key)
{
	const dag_node *src = &p->g->nodes[0];
	const plg_source_ops *ops = src->sops;
	core_err err = { 0 };
	rec *all = calloc(m->rows + 1, sizeof(*all));
	plg_source_row sr;
	void *st = NULL;
	uint64_t n = 0;
	int rc;

	cr_assert_not_null(all);
	cr_assert_eq(ops->open(NULL, src->options, &st, &err), 0, "%s", err.msg);
	while ((rc = ops->next(st, &sr, &err)) == 1) {
		cr_assert_lt(n, m->rows, "the source gives more rows than the plan counted");
		rec_take(&all[n++], &sr);
	}
	cr_assert_eq(rc, 0, "%s", err.msg);
	ops->close(st);
	cr_assert_eq(n, m->rows);
	for (uint64_t i = 0; id_key && i < n; i++) {
		json_t *row = json_loads(all[i].row, 0, NULL);
		const json_t *v = json_object_get(row, id_key);
		long long id = json_is_integer(v) ? json_integer_value(v) :
			       json_is_string(v) ? atoll(json_string_value(v)) : -1;

		if (!v && all[i].error) { /* an invalid line: its raw text */
			char want[32];

			snprintf(want, sizeof(want), "\"id\": %llu,", (unsigned long long)(i + 1));
			v = json_object_get(row, "_raw");
			cr_assert(json_is_string(v) && strstr(json_string_value(v), want),
				  "row %llu: %s", (unsigned long long)(i + 1), all[i].row);
			json_decref(row);
			continue;
		}
		cr_assert_eq(id, (long long)(i + 1), "row %llu holds %s %lld: %s",
			     (unsigned long long)(i + 1), id_key, id, all[i].row);
		json_decref(row);
	}
	for (uint32_t k = 0; k < m->nshards; k++) {
		const shd_range *r = &m->ranges[k];
		eng_shard es;
		plg_source_pos at;

		if (r->last_row < r->first_row)
			continue;
		shd_engine_shard(m, k, &es);
		cr_assert_eq(es.first_seq, r->first_row);
		cr_assert_eq(es.last_seq, r->last_row);
		cr_assert_str_eq(es.manifest_hash, m->plan_hash);
		cr_assert_eq(ops->open(NULL, src->options, &st, &err), 0, "%s", err.msg);
		cr_assert_eq(ops->seek(st, &es.start, &err), 0, "shard %u: seek: %s", k, err.msg);
		for (uint64_t seq = r->first_row; seq <= r->last_row; seq++) {
			rec got;
			const rec *want = &all[seq - 1];

			rc = ops->next(st, &sr, &err);
			cr_assert_eq(rc, 1, "shard %u: row %llu: next gives %d (%s)", k,
				     (unsigned long long)seq, rc, err.msg);
			rec_take(&got, &sr);
			cr_assert(!strcmp(got.row, want->row) && str_same(got.error, want->error) &&
				  str_same(got.where, want->where),
				  "R=%llu N=%u shard %u (from offset %llu line %llu): row %llu is\n"
				  "  %s / %s / %s\nread from the start:\n  %s / %s / %s",
				  (unsigned long long)m->rows, m->nshards, k,
				  (unsigned long long)r->start.offset, (unsigned long long)r->start.line,
				  (unsigned long long)seq, got.row, got.error ? got.error : "-",
				  got.where ? got.where : "-", want->row,
				  want->error ? want->error : "-", want->where ? want->where : "-");
			free(got.row);
			free(got.error);
			free(got.where);
		}
		if (m->bytes && ops->position) {
			ops->position(st, &at);
			cr_assert_eq(at.offset, r->byte_end, "shard %u ends at byte %llu, the plan says %llu",
				     k, (unsigned long long)at.offset, (unsigned long long)r->byte_end);
			if (k + 1 < m->nshards)
				cr_assert_eq(at.line, m->ranges[k + 1].start.line,
					     "shard %u ends at line %llu, shard %u starts at line %llu", k,
					     (unsigned long long)at.line, k + 1,
					     (unsigned long long)m->ranges[k + 1].start.line);
		}
		if (r->last_row == m->rows) {
			rc = ops->next(st, &sr, &err);
			cr_assert_eq(rc, 0, "shard %u: a row after the last", k);
		}
		ops->close(st);
	}
	for (uint64_t i = 0; i < n; i++) {
		free(all[i].row);
		free(all[i].error);
		free(all[i].where);
	}
	free(all);
}

/* The manifest's hashes are the file's: the whole, the head and each
 * range's bytes. */
static void check_hashes(const shd_manifest *m)
{
	char hex[CORE_SHA256_HEX_LEN + 1];
	uint64_t size = 0, got;
	core_err err = { 0 };

	cr_assert_eq(core_sha256_file(m->source_path, UINT64_MAX, &size, hex, &err), 0);
	cr_assert_eq(size, m->source_size);
	cr_assert_str_eq(hex, m->source_sha256);
	if (!m->bytes)
		return;
	cr_assert_eq(core_sha256_file_range(m->source_path, 0, m->head_bytes, &got, hex, &err), 0);
	cr_assert_str_eq(hex, m->head_sha256);
	for (uint32_t k = 0; k < m->nshards; k++) {
		const shd_range *r = &m->ranges[k];

		cr_assert_eq(core_sha256_file_range(m->source_path, r->start.offset,
						    r->byte_end - r->start.offset, &got, hex, &err), 0);
		cr_assert_str_eq(hex, r->sha256, "shard %u's hash", k);
		cr_assert_eq(shd_check_source(m, k, &err), 0, "shard %u: %s", k, err.msg);
	}
}

/* ------------------------------------------------------------ the inputs */

enum {
	F_BOM = 1, F_CRLF = 2, F_QUOTED_NL = 4, F_BLANK = 8, F_BAD = 16,
	F_NO_FINAL_NL = 32, F_NO_HEADER = 64, F_SKIP = 128, F_SEMI = 256
};

/* A CSV file of `rows` rows: id, text (quoted, with newlines, quotes,
 * commas, UTF-8 per flags), n (an int; "x" in rows failing validation). */
static void make_csv(const char *path, uint64_t rows, unsigned flags)
{
	const char *nl = flags & F_CRLF ? "\r\n" : "\n";
	char d = flags & F_SEMI ? ';' : ',';
	sbuf b = { 0 };

	sb_printf(&b, "%s", "");
	if (flags & F_BOM)
		sb_printf(&b, "\xEF\xBB\xBF");
	if (flags & F_SKIP)
		sb_printf(&b, "# an export%s\"not, a header%s", nl, nl);
	if (!(flags & F_NO_HEADER))
		sb_printf(&b, "id%ctext%cn%s", d, d, nl);
	for (uint64_t i = 1; i <= rows; i++) {
		bool last = i == rows;

		if ((flags & F_BLANK) && i % 3 == 1)
			sb_printf(&b, "%s", nl);
		if ((flags & F_QUOTED_NL) && i % 2)
			sb_printf(&b, "%llu%c\"row %llu,%s\"\"second\"\" line\nthird ü\"%c%s%s",
				  (unsigned long long)i, d, (unsigned long long)i, nl, d,
				  (flags & F_BAD) && i % 5 == 0 ? "x" : "7",
				  last && (flags & F_NO_FINAL_NL) ? "" : nl);
		else
			sb_printf(&b, "%llu%cplain %llu%c%s%s", (unsigned long long)i, d,
				  (unsigned long long)i, d,
				  (flags & F_BAD) && i % 5 == 0 ? "x" : "7",
				  last && (flags & F_NO_FINAL_NL) ? "" : nl);
	}
	write_file(path, b.p, b.n);
	free(b.p);
}

static void csv_pipe(tpipe *p, const char *path, unsigned flags)
{
	char opts[1024];

	snprintf(opts, sizeof(opts),
		 "    path: \"%s\"\n"
		 "    schema: {mode: fixed, fields: [\"id: int\", \"text: str\", \"n: int\"]}\n"
		 "%s%s%s",
		 path, flags & F_SKIP ? "    skip_rows: 2\n" : "",
		 flags & F_NO_HEADER ? "    columns: [id, text, n]\n" : "",
		 flags & F_SEMI ? "    delimiter: \";\"\n" : "");
	pipe_open(p, "csv", opts, "");
}

/* JSON Lines: a BOM, CRLF, blank lines, invalid lines per flags. */
static void make_jsonl(const char *path, uint64_t rows, unsigned flags)
{
	const char *nl = flags & F_CRLF ? "\r\n" : "\n";
	sbuf b = { 0 };

	sb_printf(&b, "%s", flags & F_BOM ? "\xEF\xBB\xBF" : "");
	for (uint64_t i = 1; i <= rows; i++) {
		if ((flags & F_BLANK) && i % 3 == 1)
			sb_printf(&b, "  %s", nl);
		if ((flags & F_BAD) && i % 5 == 0)
			sb_printf(&b, "{\"id\": %llu, \"text\": broken%s", (unsigned long long)i, nl);
		else
			sb_printf(&b, "{\"id\": %llu, \"text\": \"row %llu\\nü\", \"n\": %s}%s",
				  (unsigned long long)i, (unsigned long long)i,
				  (flags & F_BAD) && i % 7 == 0 ? "\"x\"" : "7",
				  i == rows && (flags & F_NO_FINAL_NL) ? "" : nl);
	}
	write_file(path, b.p ? b.p : "", b.n);
	free(b.p);
}

/* A JSON document: rows under "data" (data_key) or the top-level array. */
static void make_json(const char *path, uint64_t rows, bool keyed)
{
	sbuf b = { 0 };

	sb_printf(&b, "%s", keyed ? "{\"meta\": 1, \"data\": [" : "[");
	for (uint64_t i = 1; i <= rows; i++)
		sb_printf(&b, "%s\n {\"id\": %llu, \"text\": \"row %llu\", \"n\": %s}", i > 1 ? "," : "",
			  (unsigned long long)i, (unsigned long long)i, i % 6 == 0 ? "\"x\"" : "7");
	sb_printf(&b, "%s", keyed ? "\n]}\n" : "\n]\n");
	write_file(path, b.p, b.n);
	free(b.p);
}

static void json_pipe(tpipe *p, const char *path, const char *format, bool keyed)
{
	char opts[1024];

	snprintf(opts, sizeof(opts),
		 "    path: \"%s\"\n"
		 "    format: %s\n%s"
		 "    schema: {mode: fixed, fields: [\"id: int\", \"text: str\", \"n: int\"]}\n",
		 path, format, keyed ? "    data_key: data\n" : "");
	pipe_open(p, "json", opts, "");
}

/* ------------------------------------------------------- (R, N) coverage */

static const uint64_t Rs[] = { 0, 1, 2, 3, 4, 5, 7, 10, 31, 64, 100, 257 };
static const uint32_t Ns[] = { 1, 2, 3, 4, 5, 7, 8, 13, 64, 300 };

/* Every (R, N) of the tables above for one input kind: coverage, equal
 * shares, shd_find_row, the boundaries and the hashes. */
static void sweep(unsigned flags, int kind)
{
	for (size_t i = 0; i < sizeof(Rs) / sizeof(Rs[0]); i++) {
		const char *path = tpath(kind == 0 ? "in.csv" : kind == 1 ? "in.jsonl" : "in.json");
		tpipe p;

		if (kind == 0)
			make_csv(path, Rs[i], flags);
		else if (kind == 1)
			make_jsonl(path, Rs[i], flags);
		else
			make_json(path, Rs[i], flags & 1);
		if (kind == 0)
			csv_pipe(&p, path, flags);
		else
			json_pipe(&p, path, kind == 1 ? "jsonl" : "json", kind == 2 && (flags & 1));
		for (size_t j = 0; j < sizeof(Ns) / sizeof(Ns[0]); j++) {
			shd_manifest *m = plan(&p, Ns[j]);

			check_cover(m, Rs[i], true);
			cr_assert_eq(m->bytes, kind != 2);
			check_boundaries(&p, m, "id");
			check_hashes(m);
			shd_free(m);
		}
		pipe_close(&p);
	}
}

Test(shard, csv_plain_ranges)
{
	sweep(0, 0);
}

Test(shard, csv_bom_crlf_quoted_newlines_blank_lines_bad_rows)
{
	sweep(F_BOM | F_CRLF | F_QUOTED_NL | F_BLANK | F_BAD, 0);
}

Test(shard, csv_lf_quoted_newlines_no_final_newline)
{
	sweep(F_QUOTED_NL | F_BAD | F_NO_FINAL_NL, 0);
}

Test(shard, csv_skip_rows_columns_delimiter)
{
	sweep(F_SKIP | F_QUOTED_NL | F_BAD | F_SEMI, 0);
	sweep(F_NO_HEADER | F_BOM | F_CRLF | F_QUOTED_NL | F_BLANK, 0);
}

Test(shard, jsonl_bom_crlf_blank_and_invalid_lines)
{
	sweep(F_BOM | F_CRLF | F_BLANK | F_BAD, 1);
	sweep(F_NO_FINAL_NL, 1);
}

Test(shard, json_array_sources)
{
	sweep(0, 2); /* a top-level array */
	sweep(1, 2); /* under data_key */
}

/* "line N" of rows failing validation is the file's line, also for a
 * shard's first row (the plan's line): here every row of a CRLF file with
 * quoted newlines fails, and each shard's rows say their own lines. */
Test(shard, csv_line_numbers_are_global)
{
	const char *path = tpath("in.csv");
	shd_manifest *m;
	core_err err = { 0 };
	tpipe p;
	void *st;
	plg_source_row sr;

	make_csv(path, 40, F_CRLF | F_QUOTED_NL | F_BLANK | F_BAD | F_BOM);
	csv_pipe(&p, path, F_CRLF | F_QUOTED_NL | F_BLANK | F_BAD | F_BOM);
	m = plan(&p, 7);
	for (uint32_t k = 0; k < m->nshards; k++) {
		const shd_range *r = &m->ranges[k];
		const dag_node *src = &p.g->nodes[0];
		/* The line of row first_row: header 1; row i (odd: 3 lines, even:
		 * 1) after a blank line when i % 3 == 1. */
		uint64_t line = 2;
		char want[32];

		for (uint64_t i = 1; i < r->first_row; i++)
			line += (i % 3 == 1) + (i % 2 ? 3 : 1);
		line += r->first_row % 3 == 1;
		cr_assert_eq(src->sops->open(NULL, src->options, &st, &err), 0);
		cr_assert_eq(src->sops->seek(st, &r->start, &err), 0);
		cr_assert_eq(src->sops->next(st, &sr, &err), 1);
		snprintf(want, sizeof(want), "line %llu", (unsigned long long)line);
		cr_assert_not_null(sr.where);
		cr_assert_str_eq(sr.where, want, "shard %u's first row %llu", k,
				 (unsigned long long)r->first_row);
		plg_source_row_release(&sr);
		src->sops->close(st);
	}
	shd_free(m);
	pipe_close(&p);
}

/* More rows than the plan keeps starts of (2^18): the stride doubles,
 * shards start at kept rows; still every row once, boundaries exact. */
Test(shard, many_rows_stride)
{
	const char *path = tpath("big.csv");
	const uint64_t R = 600001;
	FILE *f = fopen(path, "w");
	shd_manifest *m;
	tpipe p;

	cr_assert_not_null(f);
	fputs("id,text,n\n", f);
	for (uint64_t i = 1; i <= R; i++)
		fprintf(f, i % 1000 ? "%llu,r,7\n" : "%llu,\"r\nr\",7\n", (unsigned long long)i);
	fclose(f);
	csv_pipe(&p, path, 0);
	for (uint32_t n = 1; n <= 9; n += 4) {
		m = plan(&p, n);
		check_cover(m, R, false);
		for (uint32_t k = 0; k < n; k++) {
			const shd_range *r = &m->ranges[k];
			const dag_node *src = &p.g->nodes[0];
			core_err err = { 0 };
			plg_source_row sr;
			void *st;

			cr_assert_gt(r->last_row + 1, r->first_row, "shard %u is empty", k);
			cr_assert_eq(src->sops->open(NULL, src->options, &st, &err), 0);
			cr_assert_eq(src->sops->seek(st, &r->start, &err), 0);
			cr_assert_eq(src->sops->next(st, &sr, &err), 1);
			cr_assert_eq(json_integer_value(json_object_get(sr.row, "id")),
				     (json_int_t)r->first_row, "shard %u of %u", k, n);
			plg_source_row_release(&sr);
			src->sops->close(st);
		}
		check_hashes(m);
		shd_free(m);
	}
	pipe_close(&p);
}

/* ------------------------------------------------------------ manifests */

/* Any edit of a byte of the manifest that changes its content (what JSON
 * it holds) is refused by shd_load; an edit of whitespace only is the
 * same document. */
Test(shard, manifest_any_edit_refused)
{
	const char *path = tpath("in.csv"), *mp = tpath("m.json");
	size_t n, same = 0, refused = 0;
	shd_manifest *m, *back;
	json_t *orig;
	char *text;
	tpipe p;

	make_csv(path, 50, F_QUOTED_NL | F_CRLF);
	csv_pipe(&p, path, F_QUOTED_NL | F_CRLF);
	m = plan(&p, 4);
	text = read_file(mp, &n);
	orig = json_loads(text, 0, NULL);
	cr_assert_not_null(orig);
	for (size_t i = 0; i < n; i++) {
		char c = text[i], e;
		core_err err = { 0 };
		json_t *doc;
		int rc;

		if (c >= '0' && c <= '8')
			e = (char)(c + 1);
		else if (c == '9')
			e = '0';
		else if (c >= 'a' && c <= 'z')
			e = c == 'f' ? 'a' : (char)(c + 1);
		else if (c >= 'A' && c <= 'Z')
			e = (char)(c + 32);
		else if (c == ' ' || c == '\n')
			e = 'x';
		else
			e = ' ';
		text[i] = e;
		write_file(mp, text, n);
		doc = json_loadb(text, n, 0, NULL);
		text[i] = c;
		rc = shd_load(mp, &back, &err);
		if (doc && json_equal(doc, orig)) {
			same++;
		} else {
			cr_assert_neq(rc, 0, "byte %zu ('%c' -> '%c') edited: the manifest is still read", i,
				      c, e);
			cr_assert_null(back);
			refused++;
		}
		if (!rc)
			shd_free(back);
		json_decref(doc);
	}
	cr_assert_gt(refused, n / 2);
	cr_log_info("%zu edits refused, %zu the same JSON", refused, same);
	json_decref(orig);
	free(text);
	shd_free(m);
	pipe_close(&p);
}

/* Edits whose plan_hash is recomputed (a forger who read shard.h): ranges
 * with a gap, an overlap, that end early or late are refused. */
static int load_forged(const char *mp, json_t *doc, core_err *err)
{
	char hash[CORE_SHA256_HEX_LEN + 1];
	shd_manifest *m = NULL;
	int rc;

	cr_assert_eq(shd__plan_hash(doc, hash, err), 0);
	json_object_set_new(doc, "plan_hash", json_string(hash));
	cr_assert_eq(shd__write_json(mp, doc, err), 0);
	rc = shd_load(mp, &m, err);
	shd_free(m);
	return rc;
}

Test(shard, manifest_forged_ranges_refused)
{
	const char *path = tpath("in.csv"), *mp = tpath("m.json");
	json_t *orig, *doc;
	json_error_t je;
	core_err err = { 0 };
	shd_manifest *m;
	tpipe p;

	make_csv(path, 30, 0);
	csv_pipe(&p, path, 0);
	m = plan(&p, 3);
	orig = json_load_file(mp, 0, &je);
	cr_assert_not_null(orig);
	/* Unchanged: read (the forging itself is right). */
	doc = json_deep_copy(orig);
	cr_assert_eq(load_forged(mp, doc, &err), 0, "%s", err.msg);
	json_decref(doc);
#define RANGE(d, k) json_array_get(json_object_get(d, "ranges"), k)
#define SET(d, k, key, v) json_object_set_new(RANGE(d, k), key, json_integer(v))
	/* A gap: shard 1 starts a row late. */
	doc = json_deep_copy(orig);
	SET(doc, 1, "first_row", 12);
	cr_assert_neq(load_forged(mp, doc, &err), 0);
	cr_assert(strstr(err.msg, "the manifest was edited"), "%s", err.msg);
	json_decref(doc);
	/* An overlap: shard 1 starts a row early. */
	doc = json_deep_copy(orig);
	SET(doc, 1, "first_row", 10);
	cr_assert_neq(load_forged(mp, doc, &err), 0);
	json_decref(doc);
	/* The last shard ends early, or late. */
	doc = json_deep_copy(orig);
	SET(doc, 2, "last_row", 29);
	cr_assert_neq(load_forged(mp, doc, &err), 0);
	json_decref(doc);
	doc = json_deep_copy(orig);
	SET(doc, 2, "last_row", 31);
	cr_assert_neq(load_forged(mp, doc, &err), 0);
	json_decref(doc);
	/* Fewer rows, more shards than ranges, a range before its start. */
	doc = json_deep_copy(orig);
	json_object_set_new(doc, "rows", json_integer(29));
	cr_assert_neq(load_forged(mp, doc, &err), 0);
	json_decref(doc);
	doc = json_deep_copy(orig);
	json_object_set_new(doc, "shards", json_integer(4));
	cr_assert_neq(load_forged(mp, doc, &err), 0);
	json_decref(doc);
	doc = json_deep_copy(orig);
	SET(doc, 1, "last_row", 9); /* 11..9: "empty" below empty */
	SET(doc, 2, "first_row", 10);
	cr_assert_neq(load_forged(mp, doc, &err), 0);
	json_decref(doc);
	/* Another format version. */
	doc = json_deep_copy(orig);
	json_object_set_new(doc, "elspeth_shards", json_integer(2));
	cr_assert_neq(load_forged(mp, doc, &err), 0);
	json_decref(doc);
#undef SET
#undef RANGE
	json_decref(orig);
	shd_free(m);
	pipe_close(&p);
}

Test(shard, manifest_missing_or_not_json)
{
	shd_manifest *m = NULL;
	core_err err = { 0 };

	cr_assert_neq(shd_load(tpath("none.json"), &m, &err), 0);
	cr_assert_null(m);
	cr_assert(strstr(err.msg, "no such manifest"), "%s", err.msg);
	write_file(tpath("bad.json"), "{\"elspeth_shards\": 1,", 21);
	cr_assert_neq(shd_load(tpath("bad.json"), &m, &err), 0);
	cr_assert_null(m);
	write_file(tpath("arr.json"), "[]\n", 3);
	cr_assert_neq(shd_load(tpath("arr.json"), &m, &err), 0);
	cr_assert_null(m);
}

/* shd_find_row with empty shards between full ones (N > R). */
Test(shard, find_row_with_empty_shards)
{
	const char *path = tpath("in.csv");
	tpipe p;

	make_csv(path, 3, 0);
	csv_pipe(&p, path, 0);
	for (uint32_t n = 1; n <= 12; n++) {
		shd_manifest *m = plan(&p, n);
		uint32_t empty = 0;

		check_cover(m, 3, true);
		for (uint32_t k = 0; k < n; k++)
			empty += m->ranges[k].last_row < m->ranges[k].first_row;
		cr_assert_eq(empty, n > 3 ? n - 3 : 0, "N=%u: %u empty shards", n, empty);
		for (uint64_t seq = 1; seq <= 3; seq++) {
			int k = shd_find_row(m, seq);

			/* (check_cover: k's range holds seq, so it is not empty) */
			cr_assert(n < 3 || m->ranges[k].first_row == seq, "N=%u row %llu: shard %d",
				  n, (unsigned long long)seq, k);
		}
		shd_free(m);
	}
	pipe_close(&p);
}

/* An empty file (no header either): no rows, every shard empty, each
 * starting at byte 0; a shard of it reads nothing. */
Test(shard, empty_csv_file)
{
	const char *path = tpath("empty.csv");
	tpipe p;

	write_file(path, "", 0);
	csv_pipe(&p, path, 0);
	for (uint32_t n = 1; n <= 4; n++) {
		shd_manifest *m = plan(&p, n);

		check_cover(m, 0, true);
		for (uint32_t k = 0; k < n; k++) {
			cr_assert_eq(m->ranges[k].start.offset, 0);
			cr_assert_eq(m->ranges[k].byte_end, 0);
		}
		cr_assert_eq(m->source_size, 0);
		check_boundaries(&p, m, "id");
		check_hashes(m);
		shd_free(m);
	}
	pipe_close(&p);
}

/* The working directory is named after the manifest; shard paths. */
Test(shard, paths)
{
	const char *path = tpath("in.csv");
	shd_plan_opts o = { .shards = 2, .output = tpath("plan.json") };
	char buf[512], want[512];
	core_err err = { 0 };
	shd_manifest *m;
	tpipe p;

	make_csv(path, 4, 0);
	csv_pipe(&p, path, 0);
	cr_assert_eq(shd_plan(p.g, "t.yaml", &o, &m, &err), 0, "%s", err.msg);
	snprintf(want, sizeof(want), "%s/plan.d", tmpdir);
	cr_assert_str_eq(m->dir, want);
	cr_assert_eq(shd_path(m, 1, "parts", buf, sizeof(buf), &err), 0);
	snprintf(want, sizeof(want), "%s/plan.d/shard-0001/parts", tmpdir);
	cr_assert_str_eq(buf, want);
	cr_assert_neq(shd_path(m, 1, "parts", buf, 10, &err), 0);
	cr_assert_eq(m->parallel, 2);
	cr_assert_float_eq(shd_capacity_share(m), 0.5, 1e-12);
	shd_free(m);
	o.parallel = 1;
	o.shards = 5;
	cr_assert_eq(shd_plan(p.g, "t.yaml", &o, &m, &err), 0, "%s", err.msg);
	cr_assert_eq(m->parallel, 1);
	cr_assert_float_eq(shd_capacity_share(m), 1.0, 1e-12);
	shd_free(m);
	o.parallel = 9; /* more than the shards: all of them */
	cr_assert_eq(shd_plan(p.g, "t.yaml", &o, &m, &err), 0, "%s", err.msg);
	cr_assert_eq(m->parallel, 5);
	cr_assert_float_eq(shd_capacity_share(m), 0.2, 1e-12);
	shd_free(m);
	pipe_close(&p);
}

/* ---------------------------------------------------------------- source */

static void flip(const char *path, uint64_t at)
{
	size_t n;
	char *b = read_file(path, &n);

	cr_assert_lt(at, n);
	b[at] = b[at] == '7' ? '8' : '7';
	write_file(path, b, n);
	free(b);
}

/* A byte changed in shard k's range: shard k refused, the others not; in
 * the head (the header): all refused; a byte appended: all refused. */
Test(shard, check_source_bytes)
{
	const char *path = tpath("in.csv");
	core_err err = { 0 };
	shd_manifest *m;
	tpipe p;

	make_csv(path, 60, F_QUOTED_NL);
	csv_pipe(&p, path, F_QUOTED_NL);
	m = plan(&p, 4);
	for (uint32_t k = 0; k < 4; k++) {
		const shd_range *r = &m->ranges[k];

		make_csv(path, 60, F_QUOTED_NL);
		flip(path, r->byte_end - 2); /* the range's last field */
		for (uint32_t j = 0; j < 4; j++) {
			int rc = shd_check_source(m, j, &err);

			if (j == k) {
				cr_assert_neq(rc, 0, "shard %u's bytes changed, not refused", k);
				cr_assert(strstr(err.msg, "changed since"), "%s", err.msg);
			} else {
				cr_assert_eq(rc, 0, "shard %u refused after shard %u's bytes changed: %s",
					     j, k, err.msg);
			}
		}
	}
	make_csv(path, 60, F_QUOTED_NL);
	flip(path, 1); /* "id" -> ... */
	for (uint32_t j = 0; j < 4; j++)
		cr_assert_neq(shd_check_source(m, j, &err), 0, "the header changed: shard %u", j);
	make_csv(path, 60, F_QUOTED_NL);
	for (uint32_t j = 0; j < 4; j++)
		cr_assert_eq(shd_check_source(m, j, &err), 0, "%s", err.msg);
	{
		FILE *f = fopen(path, "a");

		fputs("61,x,7\n", f);
		fclose(f);
	}
	for (uint32_t j = 0; j < 4; j++)
		cr_assert_neq(shd_check_source(m, j, &err), 0, "a row appended: shard %u", j);
	shd_free(m);
	pipe_close(&p);
}

Test(shard, check_source_json_document)
{
	const char *path = tpath("in.json");
	core_err err = { 0 };
	shd_manifest *m;
	tpipe p;

	make_json(path, 20, false);
	json_pipe(&p, path, "json", false);
	m = plan(&p, 3);
	cr_assert_eq(m->bytes, false);
	for (uint32_t j = 0; j < 3; j++)
		cr_assert_eq(shd_check_source(m, j, &err), 0, "%s", err.msg);
	flip(path, 40);
	for (uint32_t j = 0; j < 3; j++)
		cr_assert_neq(shd_check_source(m, j, &err), 0, "shard %u", j);
	shd_free(m);
	pipe_close(&p);
}

/* ------------------------------------------------------------- refusals */

static int plan_rc(tpipe *p, uint32_t n, core_err *err)
{
	shd_plan_opts o = { .shards = n, .output = tpath("r.json") };

	return shd_plan(p->g, "t.yaml", &o, NULL, err);
}

Test(shard, refuses_what_cannot_be_sharded)
{
	const char *path = tpath("in.csv");
	char opts[512];
	core_err err = { 0 };
	tpipe p;

	make_csv(path, 10, 0);
	snprintf(opts, sizeof(opts), "    path: \"%s\"\n", path);
	/* An aggregation: one shard only. */
	{
		sbuf y = { 0 };

		sb_printf(&y,
			  "source: {plugin: csv, on_success: agg_in, options: {path: \"%s\", "
			  "on_validation_failure: discard}}\n"
			  "aggregations:\n"
			  "  - {name: stats, plugin: batch_stats, input: agg_in, on_success: out,\n"
			  "     trigger: {count: 3}, output_mode: transform, options: {value_field: n}}\n"
			  "sinks:\n  out: {plugin: csv, options: {path: \"%s/o.csv\"}}\n"
			  "landscape: {url: \"lmdb://%s/state\"}\n", path, tmpdir, tmpdir);
		cr_assert_eq(core_settings_parse("t.yaml", y.p, &p.s, &err), 0, "%s", err.msg);
		cr_assert_eq(dag_build(p.s, &p.g, &err), 0, "%s", err.msg);
		free(y.p);
		cr_assert_eq(plan_rc(&p, 2, &err), CORE_ECONFIG);
		cr_assert(strstr(err.msg, "aggregation 'stats'") && strstr(err.msg, "--shards 1"),
			  "%s", err.msg);
		cr_assert_eq(access(tpath("r.json"), F_OK), -1, "a manifest was written");
		cr_assert_eq(plan_rc(&p, 1, &err), 0, "one shard: %s", err.msg);
		cr_assert_eq(unlink(tpath("r.json")), 0);
		pipe_close(&p);
	}
	/* A sink that appends. */
	{
		sbuf y = { 0 };

		sb_printf(&y,
			  "source: {plugin: csv, on_success: out, options: {path: \"%s\", "
			  "on_validation_failure: discard}}\n"
			  "sinks:\n  out: {plugin: json, options: {path: \"%s/o.jsonl\", mode: append}}\n"
			  "landscape: {url: \"lmdb://%s/state\"}\n", path, tmpdir, tmpdir);
		cr_assert_eq(core_settings_parse("t.yaml", y.p, &p.s, &err), 0, "%s", err.msg);
		cr_assert_eq(dag_build(p.s, &p.g, &err), 0, "%s", err.msg);
		free(y.p);
		cr_assert_eq(plan_rc(&p, 1, &err), CORE_ECONFIG);
		cr_assert(strstr(err.msg, "mode: append cannot be sharded"), "%s", err.msg);
		pipe_close(&p);
	}
	/* No Landscape. */
	{
		sbuf y = { 0 };

		sb_printf(&y,
			  "source: {plugin: csv, on_success: out, options: {path: \"%s\", "
			  "on_validation_failure: discard}}\n"
			  "sinks:\n  out: {plugin: json, options: {path: \"%s/o.jsonl\"}}\n"
			  "landscape: {enabled: false}\n", path, tmpdir);
		cr_assert_eq(core_settings_parse("t.yaml", y.p, &p.s, &err), 0, "%s", err.msg);
		cr_assert_eq(dag_build(p.s, &p.g, &err), 0, "%s", err.msg);
		free(y.p);
		cr_assert_eq(plan_rc(&p, 2, &err), CORE_ECONFIG);
		cr_assert(strstr(err.msg, "Landscape"), "%s", err.msg);
		pipe_close(&p);
	}
	cr_assert_eq(access(tpath("r.json"), F_OK), -1, "a refused plan wrote its manifest");
}

/* The plan reads the settings' hashes: another settings text (another
 * sink path) is refused by shd_check_settings; the same is accepted. */
Test(shard, check_settings)
{
	const char *path = tpath("in.csv");
	char opts[512];
	core_err err = { 0 };
	shd_manifest *m;
	tpipe p, q;

	make_csv(path, 10, 0);
	snprintf(opts, sizeof(opts), "    path: \"%s\"\n", path);
	pipe_open(&p, "csv", opts, "");
	m = plan(&p, 2);
	cr_assert_eq(shd_check_settings(m, p.g, &err), 0, "%s", err.msg);
	pipe_open(&q, "csv", opts, "retry: {max_attempts: 5}\n");
	cr_assert_neq(shd_check_settings(m, q.g, &err), 0);
	cr_assert(strstr(err.msg, "settings differ"), "%s", err.msg);
	pipe_close(&q);
	shd_free(m);
	pipe_close(&p);
}
