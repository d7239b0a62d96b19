/*
 * audit_v2_out.c — where 0.7.1's audit export goes (ADR 0053): the spool
 * (an unlinked file under spool_root), the content store (objects/<h[:2]>/
 * <h>, one per chunk and one for the manifest, write-once) and the
 * target: the sink's file (format json) or a new directory of
 * RECORD_TYPE.csv files and audit_manifest.v2.json (csv). The driver
 * reads the run's records from its SQL trail through audit_records.c.
 */
#define _GNU_SOURCE /* O_TMPFILE, renameat2 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "sqltrail/audit_v2_internal.h"


static int read_at(int fd, void *p, size_t n, uint64_t off, core_err *err)
{
	char *c = p;

	while (n) {
		ssize_t r = pread(fd, c, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return core_err_set(err, CORE_EIO, "reading the audit export's spool: %s",
					    r ? strerror(errno) : "short file");
		c += r;
		off += (uint64_t)r;
		n -= (size_t)r;
	}
	return 0;
}

/* Copies the spool's bytes [off, off + len) to fd. */
static int copy_out(int spool, uint64_t off, uint64_t len, int fd, core_err *err)
{
	char buf[65536];
	int rc = 0;

	while (len && !rc) {
		size_t n = len < sizeof(buf) ? (size_t)len : sizeof(buf);

		if (!(rc = read_at(spool, buf, n, off, err)))
			rc = sqlt__v2_write_all(fd, buf, n, err);
		off += n;
		len -= n;
	}
	return rc;
}

/* snprintf into a path buffer; a path that does not fit is an error,
 * never a shorter path. */
static int path_of(char *out, size_t cap, core_err *err, const char *fmt, ...)
	CORE_PRINTF(4, 5);
static int path_of(char *out, size_t cap, core_err *err, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap)
		return core_err_set(err, CORE_ECONFIG, "an audit export path is longer than "
				    "%zu bytes: %.60s...", cap - 1, out);
	return 0;
}

/* p as Python's str(Path(p)) gives it: no "." segments, no repeated or
 * trailing slashes ("." when nothing is left). */
static void norm_path(const char *p, char *out, size_t cap)
{
	size_t n = 0;

	if (*p == '/' && cap > 1)
		out[n++] = '/';
	for (const char *c = p; *c && n + 1 < cap;) {
		size_t len = strcspn(c, "/");

		if (len && !(len == 1 && *c == '.')) {
			int w = snprintf(out + n, cap - n, "%s%.*s",
					 n && out[n - 1] != '/' ? "/" : "", (int)len, c);

			n = w < 0 || (size_t)w >= cap - n ? cap - 1 : n + (size_t)w;
		}
		c += len + (c[len] == '/');
	}
	if (!n && cap > 1)
		out[n++] = '.';
	out[n < cap ? n : cap - 1] = '\0';
}

/* A directory of this export's, private: made 0700, and never a link. */
static int mkdir_private(const char *dir, core_err *err)
{
	struct stat st;

	if (!mkdir(dir, 0700))
		core_fsync_dir_of(dir); /* its entry in the parent */
	else if (errno != EEXIST)
		return core_err_set(err, CORE_EIO, "creating %s: %s", dir, strerror(errno));
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode))
		return core_err_set(err, CORE_EIO, "%s is not a directory", dir);
	return 0;
}

/* root, then each component of the relative path rel under it, private
 * (0.7.1 makes every component of the content store 0700). */
static int mkdirs_private(const char *root, const char *rel, char *out, size_t cap,
			  core_err *err)
{
	char top[4096];
	int rc;

	norm_path(root, top, sizeof(top)); /* "a/b/" is b's, not its parents' */
	if ((rc = core_mkdir_parents(top, err)) || (rc = mkdir_private(top, err)) ||
	    (rc = path_of(out, cap, err, "%s", top)))
		return rc;
	for (const char *p = rel; p && *p;) {
		size_t len = strcspn(p, "/"), at = strlen(out);

		if (len && (rc = path_of(out + at, cap - at, err, "/%.*s", (int)len, p)))
			return rc;
		if (len && (rc = mkdir_private(out, err)))
			return rc;
		p += len + (p[len] == '/');
	}
	return 0;
}

/* 128 random bits as hex: a candidate's or a stage file's name. */
static int random_hex(char out[33], core_err *err)
{
	unsigned char r[16];

	if (RAND_bytes(r, sizeof(r)) != 1)
		return core_err_set(err, CORE_EINTERNAL, "no random bytes for a file name");
	core_hex(r, sizeof(r), out);
	return 0;
}

/* Writes a new file whole (0600) and syncs it; removed again if that
 * fails. */
static int write_file(const char *path, int spool, uint64_t off, uint64_t len,
		      const void *bytes, core_err *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	int rc;

	if (fd < 0)
		return core_err_set(err, CORE_EIO, "creating %s: %s", path, strerror(errno));
	rc = bytes ? sqlt__v2_write_all(fd, bytes, (size_t)len, err) :
		     copy_out(spool, off, len, fd, err);
	if (!rc && fsync(fd))
		rc = core_err_set(err, CORE_EIO, "syncing %s: %s", path, strerror(errno));
	if (close(fd) && !rc)
		rc = core_err_set(err, CORE_EIO, "closing %s: %s", path, strerror(errno));
	if (rc)
		unlink(path);
	return rc;
}

/* Whether the files at fds a and b hold the same bytes (b from off_b on,
 * len bytes; a whole). */
static int same_fd(int a, int b, uint64_t off_b, uint64_t len, bool *same, core_err *err)
{
	char x[65536], y[65536];
	struct stat st;
	int rc = 0;

	*same = false;
	if (fstat(a, &st) || (uint64_t)st.st_size != len)
		return 0;
	for (uint64_t at = 0; at < len; at += sizeof(x)) {
		size_t n = len - at < sizeof(x) ? (size_t)(len - at) : sizeof(x);

		if ((rc = read_at(a, x, n, at, err)) || (rc = read_at(b, y, n, off_b + at, err)))
			return rc;
		if (memcmp(x, y, n))
			return 0;
	}
	*same = true;
	return 0;
}

/* Whether the file at path holds exactly the spool's [off, off + len). */
static int same_bytes(const char *path, int spool, uint64_t off, uint64_t len,
		      bool *same, core_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int rc;

	if (fd < 0)
		return core_err_set(err, CORE_EIO, "reading %s: %s", path, strerror(errno));
	rc = same_fd(fd, spool, off, len, same, err);
	close(fd);
	return rc;
}

/* content store: <root>/<namespace>/objects/<h[:2]>/<h> per object,
 * written under a temporary name and linked in place, never replaced:
 * an object already there (or put there meanwhile) must hold the same
 * bytes. Marked owned by this candidate only when it put it there. */
static int store_object(const char *base, const char *cand, const char *hash, int spool,
			uint64_t off, uint64_t len, core_err *err)
{
	char dir[4096], path[4096], tmp[4096], own[4096];
	bool same = false, ours = false;
	int rc;

	if ((rc = path_of(dir, sizeof(dir), err, "%s/objects/%.2s", base, hash)) ||
	    (rc = path_of(path, sizeof(path), err, "%s/%s", dir, hash)) ||
	    (rc = path_of(tmp, sizeof(tmp), err, "%s/.%s.%s.tmp", dir, hash, cand)) ||
	    (rc = path_of(own, sizeof(own), err, "%s/candidates/%s/owned/%s", base, cand,
			  hash)) ||
	    (rc = mkdir_private(dir, err)))
		return rc;
	core_fsync_dir_of(dir); /* the shard directory in objects/ */
	if (access(path, F_OK)) {
		if ((rc = write_file(tmp, spool, off, len, NULL, err)))
			return rc;
		if (!link(tmp, path))
			ours = true;
		else if (errno != EEXIST)
			rc = core_err_set(err, CORE_EIO, "installing %s: %s", path,
					  strerror(errno));
		unlink(tmp);
		core_fsync_dir_of(path);
		if (rc)
			return rc;
	}
	if (ours)
		return write_file(own, -1, 0, 6, "owned\n", err);
	if ((rc = same_bytes(path, spool, off, len, &same, err)))
		return rc;
	return same ? 0 : core_err_set(err, CORE_EDATA, "immutable audit-export content "
				       "address collided with divergent bytes: %s", path);
}

static int content_store(sqlt_v2 *d, core_err *err)
{
	const core_audit_export_v2 *x = d->x;
	char base[4096], rel[64], dir[4096], cand[33], mhash[65];
	uint8_t dg[CORE_SHA256_LEN];
	int rc;

	if ((rc = mkdirs_private(x->store_root, x->store_namespace, base, sizeof(base),
				 err)) ||
	    (rc = random_hex(cand, err)) ||
	    (rc = mkdirs_private(base, "objects", dir, sizeof(dir), err)) ||
	    (rc = path_of(rel, sizeof(rel), err, "candidates/%s/owned", cand)) ||
	    (rc = mkdirs_private(base, rel, dir, sizeof(dir), err)))
		return rc;
	for (size_t k = 0; k < d->nchunks && !rc; k++)
		rc = store_object(base, cand, d->chunks[k].hash, d->fd, d->chunks[k].off,
				  d->chunks[k].size, err);
	core_sha256(d->manifest.data, d->manifest.len, dg);
	core_hex(dg, sizeof(dg), mhash);
	if (!rc)
		rc = store_object(base, cand, mhash, d->fd, d->bytes, d->manifest.len, err);
	/* the owned markers' directory (dir + "/." fits: dir was made) */
	if (strlen(dir) + 2 < sizeof(dir)) {
		strcat(dir, "/.");
		core_fsync_dir_of(dir);
	}
	return rc;
}

/* The spool: an unlinked file under spool_root (0700). */
static int open_spool(const char *root, int *fd, core_err *err)
{
	char path[4096];
	int rc;

	if ((rc = mkdirs_private(root, NULL, path, sizeof(path), err)))
		return rc;
	if ((*fd = open(root, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)) >= 0)
		return 0;
	if ((rc = path_of(path, sizeof(path), err, "%s/.spool-XXXXXX", root)))
		return rc;
	if ((*fd = mkostemp(path, O_CLOEXEC)) < 0)
		return core_err_set(err, CORE_EIO, "creating a spool file in %s: %s", root,
				    strerror(errno));
	unlink(path);
	return 0;
}

/* rename without replacing; where the filesystem has no RENAME_NOREPLACE,
 * a hard link does the same for a file (it fails on an existing name). */
static int rename_new(const char *from, const char *to, bool file)
{
	if (!renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE))
		return 0;
	if (!file || (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP))
		return -1;
	if (link(from, to))
		return -1;
	unlink(from);
	return 0;
}

/* The stage or build name beside target: .NAME.elspeth-ID.WHAT */
static int beside(char *out, size_t cap, const char *target, const char *id,
		  const char *what, core_err *err)
{
	const char *slash = strrchr(target, '/');

	return path_of(out, cap, err, "%.*s.%s.elspeth-%s.%s",
		       slash ? (int)(slash - target + 1) : 0, target,
		       slash ? slash + 1 : target, id, what);
}

#define JSON_TARGET_MAX ((uint64_t)1 << 30) /* 0.7.1's json sink's cap */

/* format json: the file, through a stage file in its directory and a
 * rename; collision_policy fail_if_exists refuses a file already there. */
static int publish_json(sqlt_v2 *d, const char *target, bool no_replace, core_err *err)
{
	uint64_t size = d->bytes + d->manifest.len;
	char stage[4096], id[33];
	int rc;

	if (size > JSON_TARGET_MAX)
		return core_err_set(err, CORE_EDATA, "byte limit exceeded: %llu > %llu",
				    (unsigned long long)size,
				    (unsigned long long)JSON_TARGET_MAX);
	if ((rc = core_mkdir_parents(target, err)) || (rc = random_hex(id, err)) ||
	    (rc = beside(stage, sizeof(stage), target, id, "stage", err)) ||
	    (rc = write_file(stage, d->fd, 0, size, NULL, err)))
		return rc;
	if (no_replace ? rename_new(stage, target, true) : rename(stage, target))
		rc = core_err_set(err, CORE_EIO, errno == EEXIST ?
			"%s exists (collision_policy: fail_if_exists)" : "publishing %s: %s",
			target, strerror(errno));
	core_fsync_dir_of(target);
	unlink(stage);
	return rc;
}

/* Whether directories a and b hold the same files with the same bytes. */
static int same_tree(const char *a, const char *b, bool *same, core_err *err)
{
	char pa[4096], pb[4096];
	size_t na = 0, nb = 0;
	struct dirent *e;
	DIR *da = opendir(a), *db = opendir(b);
	int rc = 0;

	*same = da && db;
	while (*same && !rc && (e = readdir(da))) {
		int fa, fb;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		na++;
		if ((rc = path_of(pa, sizeof(pa), err, "%s/%s", a, e->d_name)) ||
		    (rc = path_of(pb, sizeof(pb), err, "%s/%s", b, e->d_name)))
			break;
		fa = open(pa, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		fb = open(pb, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fa < 0 || fb < 0) {
			*same = false;
		} else {
			struct stat st;

			rc = fstat(fb, &st) ? core_err_set(err, CORE_EIO, "%s: %s", pb,
							   strerror(errno)) :
			     same_fd(fa, fb, 0, (uint64_t)st.st_size, same, err);
		}
		if (fa >= 0)
			close(fa);
		if (fb >= 0)
			close(fb);
	}
	while (*same && !rc && (e = readdir(db)))
		nb += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	*same = *same && na == nb;
	if (da)
		closedir(da);
	if (db)
		closedir(db);
	return rc;
}

/* format csv: a new directory of RECORD_TYPE.csv and the manifest,
 * built beside it and renamed into place; a directory already there is
 * accepted only when it holds the same files with the same bytes (the
 * same export, published before), as 0.7.1's create-only bundle. */
static int publish_csv(sqlt_v2 *d, sqlt_csv *csv, const char *target, core_err *err)
{
	char build[4096], man[4096], id[33];
	bool same = false;
	int rc;

	if ((rc = core_mkdir_parents(target, err)) || (rc = random_hex(id, err)) ||
	    (rc = beside(build, sizeof(build), target, id, "building", err)) ||
	    (rc = path_of(man, sizeof(man), err, "%s/audit_manifest.v2.json", build)))
		return rc;
	if (mkdir(build, 0700))
		return core_err_set(err, CORE_EIO, "creating %s: %s", build, strerror(errno));
	if ((rc = sqlt__csv_write(csv, build, err)) ||
	    (rc = write_file(man, d->fd, d->bytes, d->manifest.len, NULL, err)))
		goto out;
	core_fsync_dir_of(man);
	if (!rename_new(build, target, false)) {
		core_fsync_dir_of(target);
		return 0;
	}
	if (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP)
		rc = core_err_set(err, CORE_EIO, "publishing %s: its filesystem cannot rename "
				  "without replacing (RENAME_NOREPLACE), which a create-only "
				  "bundle needs", target);
	else if (errno != EEXIST && errno != ENOTEMPTY)
		rc = core_err_set(err, CORE_EIO, "publishing %s: %s", target, strerror(errno));
	else if (!(rc = same_tree(build, target, &same, err)) && !same)
		rc = core_err_set(err, CORE_EDATA, "create-only bundle target exists with "
				  "divergent content: %s", target);
out:
	sqlt__rm_tree(build);
	return rc;
}

/* ------------------------------------------------------------ driver */

typedef struct v2_job {
	const core_audit_export_cfg *x;
	const char *key;
	const char *target;
	bool no_replace;
	int spool;
	sqlt_v2 *d;
} v2_job;

/* A path as 0.7.1's settings dump writes a Path. */
static json_t *py_path(const char *p)
{
	char out[4096];

	norm_path(p, out, sizeof(out));
	return json_string(out);
}

/* The run record's settings are the file as written; its export block
 * becomes the configuration this export used, every key with its value
 * (0.7.1's defaults for what the file leaves out, as its resolved
 * settings have them), so that every value the manifest hashes can be
 * read back from the file itself, also when an export is written again
 * with other settings (ADR 0053). */
static int resolved_export(json_t *run, const core_audit_export_cfg *x)
{
	const core_audit_export_v2 *v = &x->v2;
	json_t *st = json_object_get(run, "settings"), *l, *e, *cs;

	if (!json_is_object(st))
		return 0;
	if (!json_is_object(l = json_object_get(st, "landscape")) &&
	    json_object_set_new(st, "landscape", l = json_object()))
		return CORE_ENOMEM;
	cs = json_pack("{s:s,s:s,s:o,s:s,s:I,s:s}", "content_store_id", v->store_id,
		       "namespace", v->store_namespace, "root", py_path(v->store_root),
		       "policy_version", v->store_policy,
		       "retention_days", (json_int_t)v->store_retention_days,
		       "durability", v->store_replicated ? "replicated" : "fsync");
	e = json_pack("{s:b,s:s?,s:s,s:s,s:s,s:s?,s:s,s:s,s:s,s:s,s:b,s:I,s:I,s:I,s:I,s:I,"
		      "s:o,s:o}", "enabled", x->enabled, "sink", x->sink,
		      "format", x->json ? "json" : "csv",
		      "signing_mode", v->hmac ? "hmac_sha256" : "unsigned",
		      "signer_key_id", v->signer_key_id,
		      "signing_secret_ref", v->signing_secret_ref,
		      "signer_rotation_policy", v->single_export ? "single_export" :
								  "multi_version",
		      "exporter_version", v->exporter_version,
		      "serialization_version", v->serialization_version,
		      "chunking_algorithm_version", v->chunking_version,
		      "include_raw_error_rows", v->include_raw_error_rows,
		      "total_record_limit", (json_int_t)v->total_records,
		      "total_byte_limit", (json_int_t)v->total_bytes,
		      "chunk_limit", (json_int_t)v->chunk_limit,
		      "per_chunk_record_limit", (json_int_t)v->chunk_records,
		      "per_chunk_byte_limit", (json_int_t)v->chunk_bytes,
		      "spool_root", py_path(v->spool_root), "content_store", cs);
	return e && !json_object_set_new(l, "export", e) ? 0 : CORE_ENOMEM;
}

static int add_record(void *ctx, json_t *rec, core_err *err)
{
	v2_job *j = ctx;
	const char *type = json_string_value(json_object_get(rec, "record_type"));

	if (type && !strcmp(type, "run") && resolved_export(rec, j->x))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return sqlt__v2_add(j->d, rec, err);
}

static int derive(void *ctx, sqlite3 *db, const char *rid, core_err *err)
{
	v2_job *j = ctx;
	sqlt_shape shape = { .v2 = true, .raw_error_rows = j->x->v2.include_raw_error_rows };
	sqlt_csv *csv = NULL;
	sqlt_v2 *d = sqlt__v2_new(&j->x->v2, j->x->json, j->key, j->spool, err);
	int rc;

	if (!(j->d = d))
		return err->code;
	if (!j->x->json) {
		if (!(csv = sqlt__csv_new(true))) {
			sqlt__v2_free(d);
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		}
		sqlt__v2_on_record(d, sqlt__csv_collect, csv);
	}
	if (!(rc = sqlt__audit_records(db, rid, &shape, add_record, j, err)) &&
	    !(rc = sqlt__v2_finish(d, err)) && !(rc = content_store(d, err)))
		rc = j->x->json ? publish_json(d, j->target, j->no_replace, err) :
				  publish_csv(d, csv, j->target, err);
	sqlt__csv_free(csv);
	sqlt__v2_free(d);
	return rc;
}

/* The records read from an SQL trail file that holds the run already. */
static int in_trail(const char *sql, uint64_t run, v2_job *j, core_err *err)
{
	sqlite3 *db = NULL;
	char rid[32];
	int rc;

	snprintf(rid, sizeof(rid), "%llu", (unsigned long long)run);
	if (sqlite3_open_v2(sql, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		rc = sqlt__db_error(db, err, "opening the SQL trail");
	else
		rc = derive(j, db, rid, err);
	sqlite3_close(db);
	return rc;
}

int sqlt_audit_export_v2(rec_env *env, uint64_t run, const core_audit_export_cfg *x,
			 const char *target, bool no_replace, const char *sql, core_err *err)
{
	v2_job j = { .x = x, .target = target, .no_replace = no_replace, .spool = -1 };
	int rc;

	if (x->v2.hmac) {
		const char *k = getenv(x->v2.signing_secret_ref);
		bool blank = true;

		for (const char *p = k; p && *p && blank; p++)
			blank = strchr(" \t\r\n\f\v", *p) != NULL;
		if (!k || blank)
			return core_err_set(err, CORE_ECONFIG, "%s environment variable required "
					    "for signed export", x->v2.signing_secret_ref);
		j.key = k;
	}
	if ((rc = open_spool(x->v2.spool_root, &j.spool, err)))
		return rc;
	if (sql)
		rc = in_trail(sql, run, &j, err);
	else
		rc = sqlt__with_run_db(env, run, false, derive, &j, err);
	close(j.spool);
	return rc;
}
