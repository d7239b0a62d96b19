/*
 * file.c — the counted output file the sinks share. It knows its
 * byte position, so each row's byte range is known without ftell; opening
 * creates missing parent directories.
 *
 * Each row is one write(2), not buffered: a write that fails (disk full,
 * permission lost, I/O error) fails for that row, at once, and the bytes
 * of a partial write are cut off again (ftruncate), so the file always
 * ends with whole rows and the row can be diverted (on_write_failure).
 * Durability is fsync at flush/close.
 *
 * Also here: what the file sinks share besides the file (target/verify
 * for checkpoints, and check).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugins/plugins_internal.h"

/* ----------------------------------------------------------- part files
 * Sharded runs (plugins.h: plg_env_set_part_dir): each target path maps
 * to one part file, computed once and kept, so the strings handed out
 * stay valid while the directory is set. One map per run environment. */

typedef struct part_map {
	char *from, *to;
} part_map;

struct plg_parts {
	pthread_mutex_t lock;
	char *dir;
	part_map *map;
	size_t n;
};

static void parts_free(plg_parts *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free(p->map[i].from);
		free(p->map[i].to);
	}
	free(p->map);
	free(p->dir);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

void plg_env_release(plg_env *env)
{
	if (!env)
		return;
	parts_free(env->parts);
	env->parts = NULL;
	json_decref(env->original_names);
	env->original_names = NULL;
}

void plg_env_set_original_names(plg_env *env, json_t *names)
{
	json_decref(env->original_names);
	env->original_names = names;
}

const json_t *plg_env_original_names(const plg_env *env, const core_node *options)
{
	if (!env || !env->original_names || !options || !options->path)
		return NULL;
	return json_object_get(env->original_names, options->path);
}

/* ------------------------------------------------ display headers */

static int by_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const plg_option plg__headers_opts[] = {
	{ "headers", "string|object", false, "\"normalized\"",
	  "the names written for the fields (CSV header, JSON keys): normalized (as "
	  "they are), original (the source's header names), or a map field -> name" },
	{ NULL }
};

int plg__headers_check(const core_node *opts, core_err *err)
{
	const core_node *h = core_map_get(opts, "headers");

	if (!h || core_node_is_null(h))
		return 0;
	if (h->kind == CORE_NODE_MAP) {
		const char **dup = calloc(h->len ? h->len : 1, sizeof(*dup));
		size_t nd = 0;
		core_buf b = { 0 };
		int rc = 0;

		if (!dup)
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		for (size_t i = 0; !rc && i < h->len; i++) {
			if (h->items[i]->kind != CORE_NODE_SCALAR) {
				rc = core_err_at(err, CORE_ECONFIG, h->items[i],
						 "a header name must be a string");
				break;
			}
			for (size_t j = 0; j < i; j++)
				if (!strcmp(h->items[j]->value, h->items[i]->value)) {
					size_t k;

					for (k = 0; k < nd && strcmp(dup[k], h->items[i]->value); k++)
						;
					if (k == nd)
						dup[nd++] = h->items[i]->value;
					break;
				}
		}
		if (!rc && nd) { /* Python's sorted(set(duplicates)) */
			qsort(dup, nd, sizeof(*dup), by_str);
			for (size_t k = 0; k < nd; k++)
				core_buf_printf(&b, "%s'%s'", k ? ", " : "", dup[k]);
			rc = core_err_at(err, CORE_ECONFIG, h, "Duplicate header mapping "
					 "targets: [%s]. Each output header must be unique.",
					 b.data ? b.data : "");
		}
		core_buf_release(&b);
		free(dup);
		return rc;
	}
	if (h->kind == CORE_NODE_SCALAR &&
	    (!strcmp(h->value, "normalized") || !strcmp(h->value, "original")))
		return 0;
	if (h->kind != CORE_NODE_SCALAR)
		return core_err_at(err, CORE_ECONFIG, h, "headers must be 'normalized', "
				   "'original', or a dict mapping, got list");
	return core_err_at(err, CORE_ECONFIG, h,
			   "Invalid header mode '%s'. Expected 'normalized', 'original', "
			   "or mapping dict.", h->value);
}

json_t *plg__display_names(const plg_env *env, const core_node *opts, bool *strict)
{
	const core_node *h = core_map_get(opts, "headers");
	const json_t *orig;
	json_t *m;

	*strict = false;
	if (!h || core_node_is_null(h))
		return NULL;
	/* ELSPETH 0.7.1: a map must name every field; `original` wrote the
	 * field names as they are in every run of the real 0.7.1 (ADR 0052) */
	*strict = env && env->v07 && h->kind == CORE_NODE_MAP;
	if (env && env->v07 && h->kind == CORE_NODE_SCALAR)
		return NULL;
	if (h->kind == CORE_NODE_MAP) {
		if (!(m = json_object()))
			return NULL;
		for (size_t i = 0; i < h->len; i++)
			json_object_set_new(m, h->keys[i]->value, json_string(h->items[i]->value));
		return m;
	}
	if (h->kind != CORE_NODE_SCALAR || strcmp(h->value, "original"))
		return NULL;
	orig = plg_env_original_names(env, opts);
	return orig && json_object_size(orig) ? json_deep_copy(orig) : NULL;
}

const char *plg__display_name(const json_t *names, const char *field)
{
	const char *d = json_string_value(json_object_get(names, field));

	return d ? d : field;
}

int plg__display_unmapped(const json_t *names, const char *field, core_err *err)
{
	core_buf b = { 0 };
	const char **keys;
	size_t n = json_object_size(names), i = 0;
	const char *k;
	json_t *v;

	if (json_object_get(names, field))
		return 0;
	/* Python's sorted() of the mapped fields, as 0.7.1 lists them */
	if (!(keys = calloc(n ? n : 1, sizeof(*keys))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	json_object_foreach((json_t *)names, k, v)
		keys[i++] = k;
	qsort(keys, n, sizeof(*keys), by_str);
	for (i = 0; i < n; i++)
		core_buf_printf(&b, "%s'%s'", i ? ", " : "", keys[i]);
	core_err_set(err, CORE_EDATA, "CUSTOM header mode has no mapping for field '%s'. "
		     "All fields must be explicitly mapped — silent fallback to normalized "
		     "names risks data corruption in external system handover. Mapped "
		     "fields: [%s]", field, b.data ? b.data : "");
	core_buf_release(&b);
	free(keys);
	return CORE_EDATA;
}

int plg_env_set_part_dir(plg_env *env, const char *dir, core_err *err)
{
	plg_parts *p = NULL;

	if (dir) {
		if (!(p = calloc(1, sizeof(*p))) || !(p->dir = strdup(dir))) {
			free(p);
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		}
		pthread_mutex_init(&p->lock, NULL);
	}
	parts_free(env->parts);
	env->parts = p;
	return 0;
}

int plg_env_map_path(plg_env *env, const char *from, const char *to,
		     core_err *err)
{
	plg_parts *p = env->parts;
	part_map *grown;
	int rc = 0;

	if (!p) {
		if (!(p = calloc(1, sizeof(*p))))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		pthread_mutex_init(&p->lock, NULL);
		env->parts = p;
	}
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->map[i].from, from)) {
			/* strings handed out stay valid: a map is never changed */
			rc = strcmp(p->map[i].to, to) ? core_err_set(err, CORE_EINTERNAL,
				"'%s' is mapped to '%s' already", from, p->map[i].to) : 0;
			goto out;
		}
	if (!(grown = realloc(p->map, (p->n + 1) * sizeof(*p->map)))) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	p->map = grown;
	p->map[p->n] = (part_map){ strdup(from), strdup(to) };
	if (p->map[p->n].from && p->map[p->n].to) {
		p->n++;
	} else {
		free(p->map[p->n].from);
		free(p->map[p->n].to);
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
out:
	pthread_mutex_unlock(&p->lock);
	return rc;
}

static char *part_of(const char *dir, const char *path)
{
	const char *base = strrchr(path, '/');
	uint8_t h[CORE_SHA256_LEN];
	char hex[CORE_SHA256_HEX_LEN + 1];
	size_t n;
	char *out;

	core_sha256(path, strlen(path), h);
	core_hex(h, sizeof(h), hex);
	base = base ? base + 1 : path;
	n = strlen(dir) + strlen(base) + 15;
	if ((out = malloc(n)))
		snprintf(out, n, "%s/%.12s-%s", dir, hex, base);
	return out;
}

const char *plg_part_path(const plg_env *env, const char *path)
{
	plg_parts *p = env ? env->parts : NULL;
	const char *to = NULL;
	part_map *grown;

	if (!path || !p)
		return path;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n && !to; i++)
		if (!strcmp(p->map[i].from, path))
			to = p->map[i].to;
	if (!to && !p->dir)
		to = path; /* only named files are mapped (plg_env_map_path) */
	if (!to && (grown = realloc(p->map, (p->n + 1) * sizeof(*p->map)))) {
		p->map = grown;
		p->map[p->n].from = strdup(path);
		p->map[p->n].to = part_of(p->dir, path);
		if (p->map[p->n].from && p->map[p->n].to) {
			to = p->map[p->n++].to;
		} else {
			free(p->map[p->n].from);
			free(p->map[p->n].to);
		}
	}
	pthread_mutex_unlock(&p->lock);
	return to;
}

/* The file to open for path: its part file in a sharded run. */
static const char *file_for(const plg_env *env, const char *path,
			    core_err *err)
{
	const char *p = plg_part_path(env, path);

	if (!p)
		core_err_set(err, CORE_ENOMEM, "out of memory");
	return p;
}

/* --------------------------------------------------------------- files */

/* Opens path into *fd and gets its size; O_RDWR in append mode, to look
 * at the last byte. */
static int open_fd(const char *path, bool append, int *fd, uint64_t *size,
		   core_err *err)
{
	int flags = O_CREAT | O_CLOEXEC |
		    (append ? O_RDWR | O_APPEND : O_WRONLY | O_TRUNC);
	struct stat st;

	*fd = open(path, flags, 0666);
	if (*fd < 0)
		return core_err_set(err, CORE_EIO, "cannot open '%s' for writing: %s",
				    path, strerror(errno));
	if (fstat(*fd, &st)) {
		core_err_set(err, CORE_EIO, "cannot stat '%s': %s", path,
			     strerror(errno));
		close(*fd);
		return CORE_EIO;
	}
	*size = (uint64_t)st.st_size;
	return 0;
}

/* Whether a non-empty file's last byte is not a line end. */
static bool lacks_lf(int fd, uint64_t size)
{
	char c = '\n';

	return size && pread(fd, &c, 1, (off_t)size - 1) == 1 && c != '\n';
}

int plg__outfile_open(plg__outfile *f, const plg_env *env, const char *path,
		      bool append, core_err *err)
{
	bool add_lf;
	int fd, rc;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	if (!(path = file_for(env, path, err)))
		return err->code;
	rc = core_mkdir_parents(path, err);
	if (rc)
		return core_err_prefix(err, "'%s'", path);
	rc = open_fd(path, append, &fd, &f->pos, err);
	if (rc)
		return rc;
	add_lf = append && lacks_lf(fd, f->pos);
	f->path = strdup(path);
	if (!f->path) {
		close(fd);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	f->fd = fd;
	f->open = true;
	f->base = f->pos;
	if (!(f->sha = core_sha256_stream_new())) {
		plg__outfile_close(f, NULL);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	rc = add_lf ? plg__outfile_write(f, "\n", 1, err) : 0;
	if (rc)
		plg__outfile_close(f, NULL);
	return rc;
}

int plg__outfile_write(plg__outfile *f, const void *p, size_t n, core_err *err)
{
	const char *b = p;
	size_t done = 0;

	while (done < n) {
		ssize_t w = write(f->fd, b + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;

			/* Leave whole rows only. */
			if (done && ftruncate(f->fd, (off_t)f->pos) == 0)
				lseek(f->fd, (off_t)f->pos, SEEK_SET);
			return core_err_set(err, CORE_EIO, "cannot write to '%s': %s",
					    f->path, strerror(e));
		}
		done += (size_t)w;
	}
	f->pos += n;
	core_sha256_stream_add(f->sha, p, n);
	return 0;
}

/* Feeds bytes [from, to) of fd into f's hash. */
static int rehash(plg__outfile *f, uint64_t from, uint64_t to, core_err *err)
{
	char buf[65536];

	while (from < to) {
		size_t want = to - from < sizeof(buf) ? (size_t)(to - from) : sizeof(buf);
		ssize_t n = pread(f->fd, buf, want, (off_t)from);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return core_err_set(err, CORE_EIO, "cannot read back '%s': %s",
					    f->path, n ? strerror(errno) : "file too short");
		core_sha256_stream_add(f->sha, buf, (size_t)n);
		from += (uint64_t)n;
	}
	return 0;
}

int plg__outfile_resume(plg__outfile *f, const plg_env *env,
			const char *path, const plg_sink_pos *at,
			core_err *err)
{
	struct stat st;
	int rc;

	memset(f, 0, sizeof(*f));
	if (!(path = file_for(env, path, err)))
		return err->code;
	if (!at->pos && (rc = core_mkdir_parents(path, err)))
		return core_err_prefix(err, "'%s'", path);
	/* A file the run never got to create starts empty. */
	f->fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC | (at->pos ? 0 : O_CREAT), 0666);
	if (f->fd < 0)
		return core_err_set(err, CORE_EIO, "cannot open '%s' to resume: %s",
				    path, strerror(errno));
	f->open = true;
	f->path = strdup(path);
	f->sha = core_sha256_stream_new();
	if (!f->path || !f->sha) {
		plg__outfile_close(f, NULL);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if (fstat(f->fd, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* A device or a pipe (/dev/stdout): nothing to cut or read. */
		f->base = at->base;
		f->pos = at->pos;
		return 0;
	}
	if (ftruncate(f->fd, (off_t)at->pos)) {
		rc = core_err_set(err, CORE_EIO, "cannot cut '%s' back to %llu bytes: %s",
				  path, (unsigned long long)at->pos, strerror(errno));
		plg__outfile_close(f, NULL);
		return rc;
	}
	f->base = at->base;
	f->pos = at->pos;
	if ((rc = rehash(f, at->base, at->pos, err)))
		plg__outfile_close(f, NULL);
	return rc;
}

void plg__outfile_position(const plg__outfile *f, plg_sink_pos *out)
{
	out->base = f->base;
	out->pos = f->pos;
	out->fd = f->open ? f->fd : -1;
	if (f->sha)
		core_sha256_stream_hex(f->sha, out->hash);
	else
		out->hash[0] = '\0';
}

int plg__outfile_flush(plg__outfile *f, core_err *err)
{
	if (fsync(f->fd) && errno != EINVAL && errno != EROFS)
		return core_err_set(err, CORE_EIO, "cannot flush '%s': %s",
				    f->path, strerror(errno));
	return 0;
}

int plg__outfile_close(plg__outfile *f, core_err *err)
{
	int rc = 0;

	if (!f->open)
		return 0;
	rc = plg__outfile_flush(f, err);
	if (close(f->fd) && !rc)
		rc = core_err_set(err, CORE_EIO, "cannot close '%s': %s", f->path,
				  strerror(errno));
	free(f->path);
	core_sha256_stream_free(f->sha);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	return rc;
}

const char *plg__outfile_target(const plg_env *env, const core_node *options)
{
	return plg_part_path(env, plg__opt_path(options));
}

int plg__outfile_verify(const plg_env *env, const core_node *options,
			const plg_sink_pos *at, core_err *err)
{
	const char *path = plg__outfile_target(env, options);
	char hex[CORE_SHA256_HEX_LEN + 1];
	struct stat st;
	uint64_t got;
	int rc;

	if (!path)
		return core_err_set(err, CORE_ECONFIG, "the sink has no path");
	if (stat(path, &st) && !at->pos)
		return 0; /* never opened: nothing to check, it starts empty */
	if (stat(path, &st))
		return core_err_set(err, CORE_EDATA,
			"%s is gone; the checkpoint has %llu bytes in it "
			"(restore the file, or start a new run)", path,
			(unsigned long long)at->pos);
	if (!S_ISREG(st.st_mode))
		return 0; /* a device or pipe: nothing to check or cut */
	if ((uint64_t)st.st_size < at->pos)
		return core_err_set(err, CORE_EDATA,
			"%s has %llu bytes, fewer than the %llu the checkpoint "
			"counted: it was truncated or replaced since the run stopped; "
			"nothing was changed", path,
			(unsigned long long)st.st_size, (unsigned long long)at->pos);
	rc = core_sha256_file_range(path, at->base, at->pos - at->base, &got,
				    hex, err);
	if (rc)
		return rc;
	if (got != at->pos - at->base || strcmp(hex, at->hash))
		return core_err_set(err, CORE_EDATA,
			"the first %llu bytes of %s differ from what the run "
			"wrote (edited since it stopped?); nothing was changed",
			(unsigned long long)at->pos, path);
	return 0;
}

int plg__sink_check(const core_node *options, size_t size,
		    plg__sink_parse *parse, int (*close_state)(void *, core_err *),
		    core_err *err)
{
	void *state = calloc(1, size);
	const char *path = NULL;
	bool append = false;
	int rc;

	if (!state)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = parse(state, options, &path, &append, err);
	close_state(state, NULL); /* no file was opened: nothing is written */
	return rc;
}

/* ---------------------------------------------------- collision policy */

const plg_option plg__collision_opts[] = {
	{ "collision_policy", "string", false, NULL,
	  "ELSPETH 0.7.1: fail_if_exists, auto_increment (a free sibling "
	  "path-N.ext) or append_or_create (mode: append); none: replace" },
	{ NULL }
};

int plg__opt_collision(const core_node *opts, bool append, int *policy,
		       core_err *err)
{
	static const char *const names[] = {
		"fail_if_exists", "auto_increment", "append_or_create", NULL
	};
	const core_node *n = core_map_get(opts, "collision_policy");
	int i, rc;

	*policy = PLG__COLLIDE_NONE;
	if (!n || core_node_is_null(n))
		return 0;
	if ((rc = core_node_enum(n, names, &i, err)))
		return rc;
	*policy = i + 1;
	if (append && *policy != PLG__COLLIDE_APPEND)
		return core_err_at(err, CORE_ECONFIG, n,
			"mode='append' requires collision_policy='append_or_create', "
			"got '%s'", names[i]);
	if (!append && *policy == PLG__COLLIDE_APPEND)
		return core_err_at(err, CORE_ECONFIG, n,
			"collision_policy='append_or_create' requires mode='append'. Use "
			"'fail_if_exists' or 'auto_increment' for mode='write'.");
	return 0;
}

int plg__collision_check(const plg_env *env, const char *path, int policy,
			 core_err *err)
{
	const char *file = plg_part_path(env, path);
	struct stat st;

	if (policy != PLG__COLLIDE_FAIL)
		return 0;
	if (!file)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!stat(file, &st))
		return core_err_set(err, CORE_ECONFIG,
			"Output path already exists: %s. Choose a different path or use "
			"collision_policy='auto_increment'.", file);
	return 0;
}
