/*
 * settings_files.c — ELSPETH's file options of transforms and
 * aggregations (core/config.py, _expand_template_files): when the
 * settings load, each of
 *
 *   template_file       -> template (the text) and template_source
 *   system_prompt_file  -> system_prompt (the text) and system_prompt_source
 *   lookup_file         -> lookup (the YAML's mapping) and lookup_source
 *
 * is read and replaced by what it holds, the *_source key keeping the
 * path as written (messages about the text still name the *_file key). So the recorded settings, each node's config and their
 * hashes hold the contents: a changed prompt file is a changed config.
 *
 * Paths are relative to the settings file's directory and must resolve
 * (symbolic links followed) inside it, as ELSPETH's containment check
 * demands. Text is read as Python's read_text(encoding="utf-8") reads it:
 * valid UTF-8, CR LF and CR turned into LF. A lookup file is YAML whose
 * top level is a mapping (an empty file is an empty one); ${VAR} is not
 * expanded in it (it is data).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/core_internal.h"

#define MAX_FILE (16u << 20)

typedef struct file_opt {
	const char *key;       /* template_file */
	const char *content;   /* template */
	const char *source;    /* template_source */
	const char *label;     /* "template file" */
	bool yaml;
} file_opt;

static const file_opt file_opts[] = {
	{ "template_file", "template", "template_source", "template file", false },
	{ "system_prompt_file", "system_prompt", "system_prompt_source",
	  "system prompt file", false },
	{ "lookup_file", "lookup", "lookup_source", "lookup file", true },
};

/* The directory of the settings file, symbolic links resolved. */
static int settings_dir(const char *settings, char *dir, core_err *err)
{
	char tmp[PATH_MAX];
	char *slash;

	if (snprintf(tmp, sizeof(tmp), "%s", settings) >= (int)sizeof(tmp))
		return core_err_set(err, CORE_ECONFIG, "%s: path too long", settings);
	slash = strrchr(tmp, '/');
	if (slash == tmp)
		tmp[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		strcpy(tmp, ".");
	if (!realpath(tmp, dir))
		return core_err_set(err, CORE_EIO, "%s: cannot resolve the settings "
				    "file's directory: %s", settings, strerror(errno));
	return 0;
}

/* path without "." and ".." steps (for a path that does not exist, which
 * realpath cannot resolve). */
static void normalize(char *path)
{
	char *out = path, *p = path;

	while (*p) {
		char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == 0 || (n == 1 && p[0] == '.')) {
			/* skip */
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			while (out > path && *--out != '/')
				;
		} else {
			*out++ = '/';
			memmove(out, p, n);
			out += n;
		}
		p += n + (end != NULL);
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
}

static bool inside(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (!strcmp(dir, "/"))
		return true;
	return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

/* ref resolved against dir into out; an error when it leaves dir or does
 * not exist. */
static int resolve(const file_opt *f, const core_node *at, const char *dir,
		   const char *ref, char *out, core_err *err)
{
	char joined[PATH_MAX * 2];

	if (ref[0] == '/')
		snprintf(joined, sizeof(joined), "%s", ref);
	else
		snprintf(joined, sizeof(joined), "%s/%s", dir, ref);
	if (realpath(joined, out)) {
		if (!inside(out, dir))
			return core_err_at(err, CORE_ECONFIG, at, "%s '%s' resolves "
					   "to %s, outside the settings file's "
					   "directory %s", f->label, ref, out, dir);
		return 0;
	}
	normalize(joined);
	if (!inside(joined, dir))
		return core_err_at(err, CORE_ECONFIG, at, "%s '%s' resolves to %s, "
				   "outside the settings file's directory %s",
				   f->label, ref, joined, dir);
	return core_err_at(err, CORE_ECONFIG, at, "%s not found: %s (%s)",
			   f->label, joined, strerror(errno));
}

/* The file's text, as Python's read_text(encoding="utf-8") gives it. */
static int read_text(const file_opt *f, const core_node *at, const char *path,
		     core_buf *out, core_err *err)
{
	char chunk[65536];
	size_t n, k = 0;
	FILE *fp = fopen(path, "rb");
	int rc = 0;

	if (!fp)
		return core_err_at(err, CORE_EIO, at, "cannot open %s %s: %s",
				   f->label, path, strerror(errno));
	while (!rc && (n = fread(chunk, 1, sizeof(chunk), fp)) > 0) {
		if (out->len + n > MAX_FILE)
			rc = core_err_at(err, CORE_ECONFIG, at, "%s %s is larger "
					 "than %u MiB", f->label, path, MAX_FILE >> 20);
		else if (core_buf_append(out, chunk, n))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if (!rc && ferror(fp))
		rc = core_err_at(err, CORE_EIO, at, "cannot read %s %s: %s",
				 f->label, path, strerror(errno));
	fclose(fp);
	if (rc)
		return rc;
	if (memchr(out->data ? out->data : "", '\0', out->len))
		return core_err_at(err, CORE_ECONFIG, at, "%s %s holds a NUL byte",
				   f->label, path);
	if ((n = core_utf8_check(out->data ? out->data : "", out->len)) < out->len)
		return core_err_at(err, CORE_ECONFIG, at, "%s %s is not valid UTF-8 "
				   "(at byte %zu)", f->label, path, n);
	for (size_t i = 0; i < out->len; i++) {	/* universal newlines */
		if (out->data[i] == '\r' && i + 1 < out->len && out->data[i + 1] == '\n')
			continue;
		out->data[k++] = out->data[i] == '\r' ? '\n' : out->data[i];
	}
	out->len = k;
	return 0;
}

/* The lookup's mapping; an empty file, or one holding only null, is an
 * empty mapping (ELSPETH keeps it apart from "no lookup"). */
static int lookup_node(core_settings *s, const file_opt *f, const core_node *at,
		       const char *path, const core_buf *text,
		       const core_node *opts, core_node **out, core_err *err)
{
	char root[512];
	core_node *n;
	int rc;

	snprintf(root, sizeof(root), "%s.%s", opts->path, f->content);
	if ((rc = core__doc_parse_data(s->doc, path, text->data ? text->data : "",
				       text->len, root, &n, err)))
		return rc;
	if (!n || (n->kind == CORE_NODE_SCALAR && core_node_is_null(n))) {
		n = (core_node *)core__doc_empty_map(s->doc, opts, f->content);
		if (!n)
			return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if (n->kind != CORE_NODE_MAP)
		return core_err_at(err, CORE_ECONFIG, at, "%s %s must hold a "
				   "mapping (key: value lines) at its top level, "
				   "not a %s", f->label, path,
				   n->kind == CORE_NODE_SEQ ? "list" : "single value");
	*out = n;
	return 0;
}

static int expand_one(core_settings *s, core_node *opts, const file_opt *f,
		      const char *dir, core_err *err)
{
	const core_node *at = core_map_get(opts, f->key);
	char path[PATH_MAX];
	core_buf text = { 0 };
	core_node *content = NULL, *source;
	const char *ref;
	int rc;

	if (!at)
		return 0;
	if ((rc = core_node_str(at, &ref, err)))
		return rc;
	if (core_map_get(opts, f->content))
		return core_err_at(err, CORE_ECONFIG, at, "cannot specify both "
				   "'%s' and '%s'", f->content, f->key);
	if ((rc = resolve(f, at, dir, ref, path, err)) ||
	    (rc = read_text(f, at, path, &text, err)))
		goto out_text;
	if (f->yaml)
		rc = lookup_node(s, f, at, path, &text, opts, &content, err);
	else if (!(content = core__doc_scalar(s->doc, at, opts->path, f->key,
					      text.data ? text.data : "", text.len)))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	if (rc)
		goto out_text;
	source = core__doc_scalar(s->doc, at, opts->path, f->source, ref, strlen(ref));
	core__doc_map_del(opts, f->key);
	if (!source || core__doc_map_set(s->doc, opts, at, f->content, content) ||
	    core__doc_map_set(s->doc, opts, at, f->source, source))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
out_text:
	core_buf_release(&text);
	return rc;
}

/* Every options map of a list of transforms or aggregations. */
static int expand_list(core_settings *s, const core_node *list, char *dir,
		       core_err *err)
{
	int rc = 0;

	if (!list || list->kind != CORE_NODE_SEQ)
		return 0;	/* the section's own checks say what is wrong */
	for (size_t i = 0; !rc && i < list->len; i++) {
		core_node *opts = (core_node *)core_map_get(list->items[i], "options");
		bool any = false;

		if (!opts || opts->kind != CORE_NODE_MAP)
			continue;
		for (size_t k = 0; k < sizeof(file_opts) / sizeof(file_opts[0]); k++)
			any = any || core_map_get(opts, file_opts[k].key);
		if (!any)
			continue;
		if (!dir[0] && (rc = settings_dir(s->path, dir, err)))
			break;
		for (size_t k = 0; !rc && k < sizeof(file_opts) / sizeof(file_opts[0]); k++)
			rc = expand_one(s, opts, &file_opts[k], dir, err);
	}
	return rc;
}

int core__expand_files(core_settings *s, core_err *err)
{
	const core_node *root = core_doc_root(s->doc);
	char dir[PATH_MAX] = "";
	int rc;

	if ((rc = expand_list(s, core_map_get(root, "transforms"), dir, err)))
		return rc;
	return expand_list(s, core_map_get(root, "aggregations"), dir, err);
}
