/*
 * audit_export.c — landscape.export (ADR 0028): the records of
 * audit_records.c, signed as ELSPETH's LandscapeExporter signs them, and
 * its CSV form (one file per record type). The run is first written to a
 * private SQL trail (a temporary file) so that the records carry the ids
 * and values `elspeth export --sqlite` gives.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sqltrail/sqltrail_internal.h"

typedef struct signer {
	const char *key;
	core_buf chain;               /* the signatures, in order */
	size_t count;
	sqlt_record_fn fn;
	void *ctx;
} signer;

/* hex HMAC-SHA256 of rec's canonical JSON (rec without "signature"). */
static int sign_one(const char *key, const json_t *rec, char hex[65], core_err *err)
{
	char *canon = NULL;
	size_t len = 0;
	int rc = core_canon(rec, &canon, &len, err);

	if (rc)
		return rc;
	rc = core_hmac_sha256_hex(key, canon, len, hex);
	free(canon);
	return rc ? core_err_set(err, rc, "HMAC-SHA256 failed") : 0;
}

static int sign_record(void *ctx, json_t *rec, core_err *err)
{
	signer *s = ctx;
	char hex[65];
	int rc;

	s->count++;
	if (!s->key)
		return s->fn(s->ctx, rec, err);
	if ((rc = sign_one(s->key, rec, hex, err)))
		return rc;
	json_object_set_new(rec, "signature", json_string(hex));
	core_buf_append(&s->chain, hex, 64);
	return s->fn(s->ctx, rec, err);
}

static int manifest(signer *s, const char *rid, core_err *err)
{
	unsigned char d[32];
	char final[65], sig[65], at[64];
	json_t *m;
	int rc;

	core_sha256(s->chain.data ? s->chain.data : "", s->chain.len, d);
	core_hex(d, sizeof(d), final);
	sqlt__now_iso(at);
	m = json_pack("{s:s,s:s,s:I,s:s,s:s,s:s,s:s}", "record_type", "manifest",
		      "run_id", rid, "record_count", (json_int_t)s->count,
		      "final_hash", final, "hash_algorithm", "sha256",
		      "signature_algorithm", "hmac-sha256", "exported_at", at);
	if (!m)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!(rc = sign_one(s->key, m, sig, err))) {
		json_object_set_new(m, "signature", json_string(sig));
		rc = s->fn(s->ctx, m, err);
	}
	json_decref(m);
	return rc;
}

int sqlt__with_run_db(rec_env *env, uint64_t run, bool payloads,
		      sqlt_db_fn fn, void *ctx, core_err *err)
{
	sqlt_opts o = { .payloads = payloads };
	const char *tmp = getenv("TMPDIR");
	char path[4096], rid[32];
	sqlite3 *db = NULL;
	int fd, rc;

	snprintf(path, sizeof(path), "%s/elspeth-audit-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if ((fd = mkstemp(path)) < 0)
		return core_err_set(err, CORE_EIO, "creating a temporary file in %s: %s",
				    tmp && *tmp ? tmp : "/tmp", strerror(errno));
	close(fd);
	snprintf(rid, sizeof(rid), "%llu", (unsigned long long)run);
	if ((rc = sqlt_export(env, run, path, &o, err)))
		goto out;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		rc = sqlt__db_error(db, err, "opening the run's SQL trail");
		goto out;
	}
	rc = fn(ctx, db, rid, err);
out:
	sqlite3_close(db);
	unlink(path);
	return rc;
}

static int records_of(void *ctx, sqlite3 *db, const char *rid, core_err *err)
{
	signer *s = ctx;
	int rc = sqlt__audit_records(db, rid, NULL, sign_record, s, err);

	return !rc && s->key ? manifest(s, rid, err) : rc;
}

int sqlt_audit_records(rec_env *env, uint64_t run, const char *signing_key,
		       sqlt_record_fn fn, void *ctx, core_err *err)
{
	signer s = { .key = signing_key, .fn = fn, .ctx = ctx };

	int rc = sqlt__with_run_db(env, run, false, records_of, &s, err);

	core_buf_release(&s.chain);
	return rc;
}

/* ------------------------------------------------------------------ csv */

typedef struct group {
	char type[32];
	json_t *rows;                 /* flattened records */
	json_t *keys;                 /* object used as a set */
} group;

struct sqlt_csv {
	group g[32];
	size_t n;
	bool v2;                      /* 0.7.1's CSVFormatter (ADR 0053) */
};
typedef struct sqlt_csv csvx;


static void py_str(core_buf *b, const char *s)
{
	core_buf_putc(b, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		unsigned c = *p;
		uint32_t cp;
		int n;

		if (c == '"' || c == '\\') {
			core_buf_printf(b, "\\%c", c);
			p++;
			continue;
		}
		if (c >= 0x20 && c < 0x7f) {
			core_buf_putc(b, (char)c);
			p++;
			continue;
		}
		if (c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f') {
			core_buf_printf(b, "\\%c", c == '\n' ? 'n' : c == '\r' ? 'r' :
					c == '\t' ? 't' : c == '\b' ? 'b' : 'f');
			p++;
			continue;
		}
		n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
		cp = n == 1 ? c : c & (0x7f >> n);
		for (int i = 1; i < n && p[i]; i++)
			cp = (cp << 6) | (p[i] & 0x3f);
		p += n;
		if (cp >= 0x10000) {
			cp -= 0x10000;
			core_buf_printf(b, "\\u%04x\\u%04x", 0xd800 + (cp >> 10),
					0xdc00 + (cp & 0x3ff));
		} else {
			core_buf_printf(b, "\\u%04x", cp);
		}
	}
	core_buf_putc(b, '"');
}

void sqlt__py_json(core_buf *b, const json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		core_buf_putc(b, '{');
		i = 0;
		json_object_foreach((json_t *)v, k, x) {
			core_buf_puts(b, i++ ? ", " : "");
			py_str(b, k);
			core_buf_puts(b, ": ");
			sqlt__py_json(b, x);
		}
		core_buf_putc(b, '}');
		return;
	case JSON_ARRAY:
		core_buf_putc(b, '[');
		json_array_foreach(v, i, x) {
			core_buf_puts(b, i ? ", " : "");
			sqlt__py_json(b, x);
		}
		core_buf_putc(b, ']');
		return;
	case JSON_STRING:
		py_str(b, json_string_value(v));
		return;
	default:
		core_json_append(b, v, -1, 0);
		return;
	}
}

/* 0.7.1 defuses spreadsheet formulas: a text starting with = + - @ or
 * a tab, CR or LF gets a leading '. */
static json_t *defused(json_t *v)
{
	const char *s = json_string_value(v);
	char *t;
	json_t *d;

	if (!s || !*s || !strchr("=+-@\t\r\n", *s))
		return json_incref(v);
	if (!(t = malloc(strlen(s) + 2)))
		return NULL;
	t[0] = '\'';
	strcpy(t + 1, s);
	d = json_string(t);
	free(t);
	return d;
}

/* CSVFormatter.flatten: nested objects as dotted keys, lists as JSON;
 * v2 (0.7.1's): an empty object as "{}", formulas defused. */
static int flatten(json_t *out, const char *prefix, const json_t *rec, bool v2,
		   core_err *err)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)rec, k, v) {
		char key[512];
		int rc;

		snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "." : "", k);
		if (json_is_object(v) && !(v2 && !json_object_size(v))) {
			if ((rc = flatten(out, key, v, v2, err)))
				return rc;
			continue;
		}
		if (json_object_get(out, key))
			return core_err_set(err, CORE_EDATA,
				"CSV flatten key collision: '%s' already exists. Audit "
				"export would lose data.", key);
		if (json_is_array(v)) {
			core_buf b = { 0 };

			sqlt__py_json(&b, v);
			json_object_set_new(out, key, json_string(b.data ? b.data : "[]"));
			core_buf_release(&b);
		} else if (json_is_object(v)) {
			json_object_set_new(out, key, json_string("{}"));
		} else {
			json_object_set_new(out, key, v2 ? defused(v) : json_incref(v));
		}
	}
	return 0;
}

int sqlt__csv_collect(void *ctx, json_t *rec, core_err *err)
{
	csvx *c = ctx;
	const char *type = json_string_value(json_object_get(rec, "record_type"));
	json_t *flat = json_object();
	const char *k;
	json_t *v;
	size_t i;
	int rc;

	for (i = 0; i < c->n && strcmp(c->g[i].type, type); i++)
		;
	if (i == c->n) {
		if (c->n == sizeof(c->g) / sizeof(c->g[0]))
			return core_err_set(err, CORE_EINTERNAL, "too many record types");
		snprintf(c->g[i].type, sizeof(c->g[i].type), "%s", type);
		c->g[i].rows = json_array();
		c->g[i].keys = json_object();
		c->n++;
	}
	if (!flat)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((rc = flatten(flat, "", rec, c->v2, err))) {
		json_decref(flat);
		return rc;
	}
	json_object_foreach(flat, k, v)
		json_object_set(c->g[i].keys, k, json_null());
	json_array_append_new(c->g[i].rows, flat);
	return 0;
}

/* Python csv (QUOTE_MINIMAL, "\r\n"): a field with a comma, quote, CR
 * or LF is quoted, its quotes doubled; None is empty; bools True/False;
 * numbers as repr. */
static void csv_text(core_buf *b, const char *s);

static void csv_field(core_buf *b, const json_t *v)
{
	core_buf t = { 0 };
	const char *s;

	if (!v || json_is_null(v))
		return;
	if (json_is_boolean(v)) {
		core_buf_puts(b, json_is_true(v) ? "True" : "False");
		return;
	}
	if (!json_is_string(v)) {
		core_json_append(&t, v, -1, 0);
		s = t.data ? t.data : "";
	} else {
		s = json_string_value(v);
	}
	csv_text(b, s);
	core_buf_release(&t);
}

static void csv_text(core_buf *b, const char *s)
{
	if (strpbrk(s, ",\"\r\n")) {
		core_buf_putc(b, '"');
		for (const char *p = s; *p; p++) {
			if (*p == '"')
				core_buf_putc(b, '"');
			core_buf_putc(b, *p);
		}
		core_buf_putc(b, '"');
	} else {
		core_buf_puts(b, s);
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int write_group(const char *dir, const group *g, bool v2, core_err *err)
{
	size_t nk = json_object_size(g->keys), i = 0, r;
	const char **keys = calloc(nk ? nk : 1, sizeof(*keys));
	core_buf b = { 0 };
	char path[4200];
	const char *k;
	json_t *v, *row;
	FILE *f;
	int rc = 0;

	if (!keys)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	json_object_foreach(g->keys, k, v)
		keys[i++] = k;
	qsort(keys, nk, sizeof(*keys), cmp_str);
	for (i = 0; i < nk; i++) {
		core_buf_puts(&b, i ? "," : "");
		csv_text(&b, keys[i]);
	}
	core_buf_puts(&b, "\r\n");
	json_array_foreach(g->rows, r, row) {
		for (i = 0; i < nk; i++) {
			core_buf_puts(&b, i ? "," : "");
			csv_field(&b, json_object_get(row, keys[i]));
		}
		core_buf_puts(&b, "\r\n");
	}
	snprintf(path, sizeof(path), "%s/%s.csv", dir, g->type);
	if (v2) { /* 0.7.1's bundle files are private */
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		f = fd < 0 ? NULL : fdopen(fd, "wb");
		if (fd >= 0 && !f)
			close(fd);
	} else {
		f = fopen(path, "wb");
	}
	if (!f || fwrite(b.data, 1, b.len, f) != b.len ||
	    fflush(f) || fsync(fileno(f)))
		rc = core_err_set(err, CORE_EIO, "writing %s: %s", path, strerror(errno));
	if (f && fclose(f) && !rc)
		rc = core_err_set(err, CORE_EIO, "writing %s: %s", path, strerror(errno));
	core_buf_release(&b);
	free(keys);
	return rc;
}

/* Path(p).with_suffix(""): the last component's extension removed. */
static void strip_suffix(const char *p, char *out, size_t cap)
{
	const char *slash = strrchr(p, '/'), *base = slash ? slash + 1 : p;
	const char *dot = strrchr(base, '.');

	if (dot && dot != base)
		snprintf(out, cap, "%.*s", (int)(dot - p), p);
	else
		snprintf(out, cap, "%s", p);
}

static int mkdirs(char *dir, core_err *err)
{
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0777) && errno != EEXIST) {
			*p = '/';
			return core_err_set(err, CORE_EIO, "creating %s: %s", dir, strerror(errno));
		}
		*p = '/';
	}
	if (mkdir(dir, 0777) && errno != EEXIST)
		return core_err_set(err, CORE_EIO, "creating %s: %s", dir, strerror(errno));
	return 0;
}

sqlt_csv *sqlt__csv_new(bool v2)
{
	sqlt_csv *c = calloc(1, sizeof(*c));

	if (c)
		c->v2 = v2;
	return c;
}

int sqlt__csv_write(sqlt_csv *c, const char *dir, core_err *err)
{
	int rc = 0;

	for (size_t i = 0; i < c->n && !rc; i++)
		if (json_array_size(c->g[i].rows))
			rc = write_group(dir, &c->g[i], c->v2, err);
	return rc;
}

void sqlt__csv_free(sqlt_csv *c)
{
	for (size_t i = 0; c && i < c->n; i++) {
		json_decref(c->g[i].rows);
		json_decref(c->g[i].keys);
	}
	free(c);
}

int sqlt_audit_csv(rec_env *env, uint64_t run, const char *signing_key,
		   const char *path, core_err *err)
{
	sqlt_csv *c = sqlt__csv_new(false);
	char dir[4096];
	int rc;

	if (!c)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	strip_suffix(path, dir, sizeof(dir));
	if (!(rc = mkdirs(dir, err)))
		rc = sqlt_audit_records(env, run, signing_key, sqlt__csv_collect, c, err);
	if (!rc)
		rc = sqlt__csv_write(c, dir, err);
	sqlt__csv_free(c);
	return rc;
}

/* rm -r of a directory this export made (files and empty dirs only). */
void sqlt__rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[4400];

	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (unlink(p) && errno == EISDIR)
			sqlt__rm_tree(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}
