/*
 * transform_field_mapper.c — the "field_mapper" transform: renames fields
 * (`mapping: {old: new}`), optionally keeping only the mapped ones.
 *
 * A source name is first looked up as a top-level key; failing that, a
 * dotted name ("meta.author") walks nested objects. A missing source is a
 * row error when `strict`, else that mapping is skipped.
 *
 * Order (a decision; ELSPETH moves renamed fields to the end):
 *  - select_only: the mapped fields only, in mapping order.
 *  - otherwise the row's order is kept: a renamed field takes its source's
 *    place, unmapped fields stay where they were; a top-level field that a
 *    rename targets is replaced by the renamed value. A value from a
 *    nested source replaces its target in place, or is added at the end;
 *    the nested source itself is left as it was.
 *
 * The output is a new object sharing the input's values (rows are never
 * modified in place; jansson's reference counts are atomic).
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"

struct mapping {
	char *src;
	char *dst;
};

struct field_mapper {
	plg_schema *schema;
	bool select_only;
	bool strict;
	size_t n;
	struct mapping *m;
};

/* A mapped value found in the row; `top` when src is a top-level key. */
struct found {
	json_t *v;
	bool top;
};

/* ------------------------------------------------------------ options */

static int parse_mapping(struct field_mapper *f, const core_node *map,
			 core_err *err)
{
	if (!map || core_node_is_null(map))
		return 0;
	if (map->kind != CORE_NODE_MAP)
		return core_err_at(err, CORE_ECONFIG, map,
				   "expected a map of old_name: new_name");
	f->m = calloc(map->len ? map->len : 1, sizeof(*f->m));
	if (!f->m)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < map->len; i++) {
		const char *dst;
		int rc = core_node_str(map->items[i], &dst, err);

		if (rc)
			return rc;
		if (!dst[0])
			return core_err_at(err, CORE_ECONFIG, map->items[i],
					   "the new name of '%s' is empty",
					   map->keys[i]->value);
		f->m[i].src = strdup(map->keys[i]->value);
		f->m[i].dst = strdup(dst);
		f->n++;
		if (!f->m[i].src || !f->m[i].dst)
			return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	return 0;
}

static void fm_close(void *state);

static int cmp_dst(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The targets that meet is_hit, sorted (Python's sorted()), each with
 * its sources in mapping order, as 0.7.1's messages list them:
 * 'x' <- ['a', 'b'] (fmt 0) or 'x' is both target for ['a'] and source. */
static int list_hits(const struct field_mapper *f, bool (*is_hit)(const struct field_mapper *,
		     size_t), bool both, core_buf *b)
{
	const char **t = calloc(f->n ? f->n : 1, sizeof(*t));
	size_t nt = 0;

	if (!t)
		return CORE_ENOMEM;
	for (size_t i = 0; i < f->n; i++)
		if (is_hit(f, i) && !bsearch(&f->m[i].dst, t, nt, sizeof(*t), cmp_dst)) {
			t[nt++] = f->m[i].dst;
			qsort(t, nt, sizeof(*t), cmp_dst);
		}
	for (size_t k = 0; k < nt; k++) {
		json_t *srcs = json_array();

		for (size_t i = 0; i < f->n; i++)
			if (is_hit(f, i) && !strcmp(f->m[i].dst, t[k]))
				json_array_append_new(srcs, json_string(f->m[i].src));
		core_buf_puts(b, k ? ", " : "");
		plg__py_repr(b, t[k]);
		core_buf_puts(b, both ? " is both target for " : " <- ");
		core_py_str(b, srcs);
		core_buf_puts(b, both ? " and source" : "");
		json_decref(srcs);
	}
	free(t);
	return 0;
}

static bool dup_target(const struct field_mapper *f, size_t i)
{
	for (size_t j = 0; j < f->n; j++)
		if (j != i && !strcmp(f->m[j].dst, f->m[i].dst))
			return true;
	return false;
}

static bool target_is_source(const struct field_mapper *f, size_t i)
{
	if (!strcmp(f->m[i].src, f->m[i].dst))
		return false;
	for (size_t j = 0; j < f->n; j++)
		if (!strcmp(f->m[j].src, f->m[i].dst))
			return true;
	return false;
}

/* ELSPETH 0.7.1's FieldMapperConfig refuses what loses data in its
 * one-by-one renames: two sources for one target, and a target that is
 * also a source (a swap, a chain). 0.4.1 runs them; so do we, renaming
 * at once (ADR 0054). */
static int v07_rules(const struct field_mapper *f, const core_node *map, core_err *err)
{
	core_buf b = { 0 };
	int rc = 0;

	for (size_t i = 0; i < f->n && !rc && !b.len; i++) {
		if (dup_target(f, i) && !(rc = list_hits(f, dup_target, false, &b)))
			rc = core_err_at(err, CORE_ECONFIG, map, "Mapping has duplicate target "
					 "field names: %s. Multiple sources mapping to the same "
					 "target causes silent data loss.", b.data);
	}
	for (size_t i = 0; i < f->n && !rc && !b.len; i++) {
		if (target_is_source(f, i) && !(rc = list_hits(f, target_is_source, true, &b)))
			rc = core_err_at(err, CORE_ECONFIG, map, "Mapping contains an "
					 "overlapping rename graph: %s. Targets that are also "
					 "sources are order-dependent and can cause silent data loss.",
					 b.data);
	}
	core_buf_release(&b);
	return rc == CORE_ENOMEM ? core_err_set(err, rc, "out of memory") : rc;
}

static const plg_option fm_own[] = {
	{ "mapping", "object", true, NULL,
	  "old name -> new name; a dotted old name reads a nested object" },
	{ "select_only", "boolean", false, "false",
	  "keep only the mapped fields" },
	{ "strict", "boolean", false, "false",
	  "a row lacking a mapped field is a row error" },
	{ NULL }
};
static const plg_option *const fm_opts[] = { fm_own, plg__schema_opts, plg__input_opts, NULL };

static int fm_open(const plg_env *env, const core_node *options,
		   void **state, core_err *err)
{
	struct field_mapper *f = calloc(1, sizeof(*f));
	int rc;

	if (!f)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = plg__check_options(options, fm_opts, err);
	if (!rc)
		rc = parse_mapping(f, core_map_get(options, "mapping"), err);
	if (!rc && env && env->v07)
		rc = v07_rules(f, core_map_get(options, "mapping"), err);
	if (!rc)
		rc = core_opt_bool(options, "select_only", &f->select_only, err);
	if (!rc)
		rc = core_opt_bool(options, "strict", &f->strict, err);
	if (!rc)
		rc = plg__schema_parse(core_map_get(options, "schema"), &f->schema,
				       err);
	if (rc) {
		fm_close(f);
		return rc;
	}
	*state = f;
	return 0;
}

/* -------------------------------------------------------------- lookup */

/* The value at a dotted path through nested objects, or NULL. */
static json_t *get_nested(const json_t *row, const char *path)
{
	const json_t *v = row;

	for (const char *p = path, *dot; v; p = dot + 1) {
		dot = strchr(p, '.');
		if (!dot)
			return json_object_get(v, p);
		v = json_object_getn(v, p, (size_t)(dot - p));
	}
	return NULL;
}

static int find_all(const struct field_mapper *f, const json_t *row,
		    struct found *fd, core_err *err)
{
	for (size_t i = 0; i < f->n; i++) {
		fd[i].v = json_object_get(row, f->m[i].src);
		fd[i].top = fd[i].v != NULL;
		if (!fd[i].v && strchr(f->m[i].src, '.'))
			fd[i].v = get_nested(row, f->m[i].src);
		if (!fd[i].v && f->strict)
			return core_err_set(err, CORE_EDATA,
					    "field '%s' is not in the row (field_mapper "
					    "has strict: true; set strict: false to skip it)",
					    f->m[i].src);
	}
	return 0;
}

/* The mapping whose top-level source (`by_src`) or target is key, among
 * those found in the row; -1 if none. */
static long which(const struct field_mapper *f, const struct found *fd,
		  const char *key, bool by_src)
{
	for (size_t i = 0; i < f->n; i++)
		if (fd[i].top && !strcmp(by_src ? f->m[i].src : f->m[i].dst, key))
			return (long)i;
	return -1;
}

/* -------------------------------------------------------------- output */

static int build(const struct field_mapper *f, const json_t *row,
		 const struct found *fd, json_t *out)
{
	const char *key;
	json_t *v;
	int rc = 0;

	if (!f->select_only) {
		json_object_foreach((json_t *)row, key, v) {
			long i = which(f, fd, key, true);

			if (i >= 0)
				rc |= json_object_set(out, f->m[i].dst, v);
			else if (which(f, fd, key, false) < 0)
				rc |= json_object_set(out, key, v);
		}
	}
	for (size_t i = 0; i < f->n; i++)
		if (fd[i].v && (f->select_only || !fd[i].top))
			rc |= json_object_set(out, f->m[i].dst, fd[i].v);
	return rc;
}

static int fm_process(void *state, const json_t *row, json_t **out,
		      plg_ctx *ctx, core_err *err)
{
	const struct field_mapper *f = state;
	struct found *fd = calloc(f->n ? f->n : 1, sizeof(*fd));
	json_t *o = NULL;
	int rc;

	(void)ctx;

	if (!fd)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = find_all(f, row, fd, err);
	if (rc)
		goto out_free;
	o = json_object();
	if (!o || build(f, row, fd, o)) {
		json_decref(o);
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out_free;
	}
	*out = o;
out_free:
	free(fd);
	return rc;
}

static void fm_close(void *state)
{
	struct field_mapper *f = state;

	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++) {
		free(f->m[i].src);
		free(f->m[i].dst);
	}
	free(f->m);
	plg__schema_free(f->schema);
	free(f);
}

/* Its rows may have any shape; they gain each new name that is not also
 * an old one (ELSPETH's declared output fields). */
static int fm_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	const core_node *map = core_map_get(options, "mapping");
	int rc = 0;

	out->shape = PLG_SHAPE_OBSERVED;
	if (!map || map->kind != CORE_NODE_MAP)
		return 0;
	for (size_t i = 0; !rc && i < map->len; i++) {
		const char *dst = map->items[i]->kind == CORE_NODE_SCALAR ?
				  map->items[i]->value : NULL;

		if (dst && dst[0] && !core_map_get(map, dst))
			rc = plg_outputs_add(out, err, "%s", dst);
	}
	return rc;
}

const plg_transform_ops plg__field_mapper = {
	.name = "field_mapper",
	.description = "Rename fields (dotted names read nested objects), optionally keeping only the mapped ones",
	.options = fm_opts,
	.open = fm_open,
	.process = fm_process,
	.close = fm_close,
	.outputs = fm_outputs,
};
