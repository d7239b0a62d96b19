/*
 * audit_v2_out.c — where 0.7.1's audit export goes (ADR 0053): the spool
 * (an unlinked file under spool_root), the content store (objects/<h[:2]>/
 * <h>, one per chunk and one for the manifest, write-once) and the
 * target: the sink's file (format json) or a new directory of
 * RECORD_TYPE.csv files and audit_manifest.v2.json (csv). The driver
 * reads the run's records from its SQL trail through audit_records.c.
 */
#define _GNU_SOURCE /* O_TMPFILE, renameat2 */
#include <errno.h>
#include <fcntl.h>
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

static int mkdir_private(const char *dir, core_err *err)
{
	struct stat st;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return core_err_set(err, CORE_EIO, "creating %s: %s", dir, strerror(errno));
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return core_err_set(err, CORE_EIO, "%s is not a directory", dir);
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

/* Writes a file whole (0600) and syncs it. */
static int write_file(const char *path, int flags, int spool, uint64_t off, uint64_t len,
		      const void *bytes, core_err *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | flags, 0600);
	int rc;

	if (fd < 0)
		return core_err_set(err, CORE_EIO, "creating %s: %s", path, strerror(errno));
	rc = bytes ? sqlt__v2_write_all(fd, bytes, (size_t)len, err) : copy_out(spool, off, len, fd, err);
	if (!rc && fsync(fd))
		rc = core_err_set(err, CORE_EIO, "syncing %s: %s", path, strerror(errno));
	if (close(fd) && !rc)
		rc = core_err_set(err, CORE_EIO, "closing %s: %s", path, strerror(errno));
	return rc;
}

/* Whether the file at path holds exactly the spool's [off, off + len). */
static int same_bytes(const char *path, int spool, uint64_t off, uint64_t len,
		      bool *same, core_err *err)
{
	char a[65536], b[65536];
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int rc = 0;

	*same = false;
	if (fd < 0)
		return core_err_set(err, CORE_EIO, "reading %s: %s", path, strerror(errno));
	if (fstat(fd, &st) || (uint64_t)st.st_size != len)
		goto out;
	for (uint64_t at = 0; at < len && !rc;) {
		size_t n = len - at < sizeof(a) ? (size_t)(len - at) : sizeof(a);

		if ((rc = read_at(fd, a, n, at, err)) || (rc = read_at(spool, b, n, off + at, err)))
			break;
		if (memcmp(a, b, n))
			goto out;
		at += n;
	}
	*same = !rc;
out:
	close(fd);
	return rc;
}

/* content store: <root>/<namespace>/objects/<h[:2]>/<h> per object,
 * written to a temporary name, linked in place (never replaced: an
 * object that exists must hold the same bytes), and marked owned by this
 * candidate when it put it there. */
static int store_object(const char *base, const char *cand, const char *hash, int spool,
			uint64_t off, uint64_t len, core_err *err)
{
	char dir[4200], path[4400], tmp[4400], own[4400];
	bool same;
	int rc;

	snprintf(dir, sizeof(dir), "%s/objects/%.2s", base, hash);
	snprintf(path, sizeof(path), "%s/%s", dir, hash);
	if ((rc = mkdir_private(dir, err)))
		return rc;
	if (!access(path, F_OK)) {
		if ((rc = same_bytes(path, spool, off, len, &same, err)))
			return rc;
		return same ? 0 : core_err_set(err, CORE_EDATA, "immutable audit-export content "
					       "address collided with divergent bytes: %s", path);
	}
	snprintf(tmp, sizeof(tmp), "%s/.%s.%s.tmp", dir, hash, cand);
	if ((rc = write_file(tmp, O_EXCL, spool, off, len, NULL, err)))
		return rc;
	if (link(tmp, path) && errno != EEXIST)
		rc = core_err_set(err, CORE_EIO, "installing %s: %s", path, strerror(errno));
	unlink(tmp);
	core_fsync_dir_of(path);
	if (rc)
		return rc;
	snprintf(own, sizeof(own), "%s/candidates/%s/owned/%s", base, cand, hash);
	return write_file(own, O_EXCL, -1, 0, 6, "owned\n", err);
}

static int content_store(sqlt_v2 *d, core_err *err)
{
	const core_audit_export_v2 *x = d->x;
	char base[4096], sub[4200], cand[33];
	uint8_t dg[CORE_SHA256_LEN];
	char mhash[65];
	int rc;

	if ((rc = core_mkdir_p(x->store_root, err)) ||
	    (chmod(x->store_root, 0700) && (rc = core_err_set(err, CORE_EIO, "%s: %s",
				x->store_root, strerror(errno)))))
		return rc;
	snprintf(base, sizeof(base), "%s/%s", x->store_root, x->store_namespace);
	if ((rc = core_mkdir_p(base, err)) || chmod(base, 0700))
		return rc ? rc : core_err_set(err, CORE_EIO, "%s: %s", base, strerror(errno));
	snprintf(sub, sizeof(sub), "%s/objects", base);
	if ((rc = random_hex(cand, err)) || (rc = mkdir_private(sub, err)))
		return rc;
	snprintf(sub, sizeof(sub), "%s/candidates", base);
	if ((rc = mkdir_private(sub, err)))
		return rc;
	snprintf(sub, sizeof(sub), "%s/candidates/%s", base, cand);
	if ((rc = mkdir_private(sub, err)))
		return rc;
	snprintf(sub, sizeof(sub), "%s/candidates/%s/owned", base, cand);
	if ((rc = mkdir_private(sub, err)))
		return rc;
	for (size_t k = 0; k < d->nchunks && !rc; k++)
		rc = store_object(base, cand, d->chunks[k].hash, d->fd, d->chunks[k].off,
				  d->chunks[k].size, err);
	core_sha256(d->manifest.data, d->manifest.len, dg);
	core_hex(dg, sizeof(dg), mhash);
	if (!rc)
		rc = store_object(base, cand, mhash, d->fd, d->bytes, d->manifest.len, err);
	core_fsync_dir_of(sub);
	return rc;
}

/* The spool: an unlinked file under spool_root (0700). */
static int open_spool(const char *root, int *fd, core_err *err)
{
	char path[4200];
	int rc;

	if ((rc = core_mkdir_p(root, err)))
		return rc;
	if (chmod(root, 0700))
		return core_err_set(err, CORE_EIO, "%s: %s", root, strerror(errno));
	if ((*fd = open(root, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)) >= 0)
		return 0;
	snprintf(path, sizeof(path), "%s/.spool-XXXXXX", root);
	if ((*fd = mkstemp(path)) < 0)
		return core_err_set(err, CORE_EIO, "creating a spool file in %s: %s", root,
				    strerror(errno));
	unlink(path);
	return 0;
}

/* format json: the file, through a stage file in its directory and a
 * rename; collision_policy fail_if_exists refuses a file already there. */
static int publish_json(sqlt_v2 *d, const char *target, bool no_replace, core_err *err)
{
	char stage[4400], id[33];
	const char *slash = strrchr(target, '/');
	int rc;

	if ((rc = core_mkdir_parents(target, err)) || (rc = random_hex(id, err)))
		return rc;
	snprintf(stage, sizeof(stage), "%.*s.%s.elspeth-%s.stage",
		 slash ? (int)(slash - target + 1) : 0, target, slash ? slash + 1 : target, id);
	if ((rc = write_file(stage, O_EXCL, d->fd, 0, d->bytes + d->manifest.len, NULL, err)))
		goto out;
	if (no_replace ? renameat2(AT_FDCWD, stage, AT_FDCWD, target, RENAME_NOREPLACE) :
			 rename(stage, target))
		rc = core_err_set(err, CORE_EIO, errno == EEXIST ?
			"%s exists (collision_policy: fail_if_exists)" : "publishing %s: %s",
			target, strerror(errno));
	core_fsync_dir_of(target);
out:
	unlink(stage);
	return rc;
}

/* format csv: a new directory of RECORD_TYPE.csv and the manifest,
 * built beside it and renamed into place; a directory already there is
 * accepted only when it holds the same manifest (the same export). */
static int publish_csv(sqlt_v2 *d, sqlt_csv *csv, const char *target, core_err *err)
{
	char build[4400], man[4500], id[33];
	const char *slash = strrchr(target, '/');
	bool same;
	int rc;

	if ((rc = core_mkdir_parents(target, err)) || (rc = random_hex(id, err)))
		return rc;
	snprintf(build, sizeof(build), "%.*s.%s.elspeth-%s.building",
		 slash ? (int)(slash - target + 1) : 0, target, slash ? slash + 1 : target, id);
	if (mkdir(build, 0700))
		return core_err_set(err, CORE_EIO, "creating %s: %s", build, strerror(errno));
	snprintf(man, sizeof(man), "%s/audit_manifest.v2.json", build);
	if (!(rc = sqlt__csv_write(csv, build, err)) &&
	    !(rc = write_file(man, O_EXCL, d->fd, d->bytes, d->manifest.len, NULL, err))) {
		core_fsync_dir_of(man);
		if (!renameat2(AT_FDCWD, build, AT_FDCWD, target, RENAME_NOREPLACE)) {
			core_fsync_dir_of(target);
			return 0;
		}
		if (errno != EEXIST && errno != ENOTEMPTY) {
			rc = core_err_set(err, CORE_EIO, "publishing %s: %s", target,
					  strerror(errno));
		} else {
			snprintf(man, sizeof(man), "%s/audit_manifest.v2.json", target);
			rc = access(man, F_OK) ? 0 : same_bytes(man, d->fd, d->bytes,
								d->manifest.len, &same, err);
			if (!rc && (access(man, F_OK) || !same))
				rc = core_err_set(err, CORE_EDATA, "create-only bundle target "
						  "exists with divergent content: %s", target);
		}
	}
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
	cs = json_pack("{s:s,s:s,s:s,s:s,s:I,s:s}", "content_store_id", v->store_id,
		       "namespace", v->store_namespace, "root", v->store_root,
		       "policy_version", v->store_policy,
		       "retention_days", (json_int_t)v->store_retention_days,
		       "durability", v->store_replicated ? "replicated" : "fsync");
	e = json_pack("{s:b,s:s?,s:s,s:s,s:s,s:s?,s:s,s:s,s:s,s:s,s:b,s:I,s:I,s:I,s:I,s:I,"
		      "s:s,s:o}", "enabled", x->enabled, "sink", x->sink,
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
		      "spool_root", v->spool_root, "content_store", cs);
	return e && !json_object_set_new(l, "export", e) ? 0 : CORE_ENOMEM;
}

static int add_record(void *ctx, json_t *rec, core_err *err)
{
	v2_job *j = ctx;
	const char *type = json_string_value(json_object_get(rec, "record_type"));

	if (type && !strcmp(type, "run") && resolved_export(rec, j->x))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return sqlt_v2_add(j->d, rec, err);
}

static int derive(void *ctx, sqlite3 *db, const char *rid, core_err *err)
{
	v2_job *j = ctx;
	sqlt_shape shape = { .v2 = true, .raw_error_rows = j->x->v2.include_raw_error_rows };
	sqlt_csv *csv = NULL;
	sqlt_v2 *d = sqlt_v2_new(&j->x->v2, j->x->json, j->key, j->spool, err);
	int rc;

	if (!(j->d = d))
		return err->code;
	if (!j->x->json) {
		if (!(csv = sqlt__csv_new(true))) {
			sqlt_v2_free(d);
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		}
		sqlt_v2_on_record(d, sqlt__csv_collect, csv);
	}
	if (!(rc = sqlt__audit_records(db, rid, &shape, add_record, j, err)) &&
	    !(rc = sqlt_v2_finish(d, err)) && !(rc = content_store(d, err)))
		rc = j->x->json ? publish_json(d, j->target, j->no_replace, err) :
				  publish_csv(d, csv, j->target, err);
	sqlt__csv_free(csv);
	sqlt_v2_free(d);
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
