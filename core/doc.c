/*
 * doc.c — the settings document: YAML parsed with libyaml's event API into
 * a tree of core_node that remembers file, line, column and key path, with
 * ${VAR} / ${VAR:-default} expanded in every scalar value.
 *
 * Every allocation of a document is recorded in doc->allocs and freed by
 * core_doc_free(), so nodes can point into each other freely.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "core/core.h"
#include "core/core_internal.h"

#define DOC_MAX_DEPTH 64

struct core_doc {
	char *file;
	core_node *root;
	void **allocs;
	size_t nallocs, capallocs;
};

typedef struct parse_ctx {
	core_doc *doc;
	const char *file;   /* the text's file (owned by doc) */
	const char *root_path;
	bool expand;        /* ${VAR} in scalars (settings, not data files) */
	struct anchor {     /* &name: the node it names, once complete */
		const char *name;
		const core_node *node;
	} *anchors;
	size_t nanchors, capanchors;
	size_t copied;      /* nodes made by aliases so far (bounded) */
	core_node *root;
	yaml_parser_t parser;
	core_err *err;
} parse_ctx;

static void *doc_track(core_doc *doc, void *p)
{
	void **v;

	if (!p)
		return NULL;
	if (doc->nallocs == doc->capallocs) {
		size_t cap = doc->capallocs ? doc->capallocs * 2 : 64;

		v = realloc(doc->allocs, cap * sizeof(*v));
		if (!v) {
			free(p);
			return NULL;
		}
		doc->allocs = v;
		doc->capallocs = cap;
	}
	doc->allocs[doc->nallocs++] = p;
	return p;
}

static void *doc_alloc(core_doc *doc, size_t n)
{
	return doc_track(doc, calloc(1, n ? n : 1));
}

static char *doc_strndup(core_doc *doc, const char *s, size_t n)
{
	char *p = doc_alloc(doc, n + 1);

	if (p)
		memcpy(p, s, n);
	return p;
}

static char *doc_path(core_doc *doc, const char *parent, const char *key,
		      long index)
{
	core_buf b;

	core_buf_init(&b);
	if (index >= 0)
		core_buf_printf(&b, "%s[%ld]", parent, index);
	else if (parent[0])
		core_buf_printf(&b, "%s.%s", parent, key ? key : "");
	else
		core_buf_puts(&b, key ? key : "");
	return doc_track(doc, core_buf_steal(&b));
}

/* Expands ${VAR} and ${VAR:-default} in text. */
static int expand_env(parse_ctx *c, const char *text, size_t len, int line,
		      int col, const char *path, char **out)
{
	core_buf b;
	size_t i = 0;

	core_buf_init(&b);
	while (i < len) {
		const char *close, *name, *dflt = NULL, *val;
		size_t nlen, dlen = 0;
		char var[256];

		if (text[i] != '$' || i + 1 >= len || text[i + 1] != '{') {
			core_buf_putc(&b, text[i++]);
			continue;
		}
		close = memchr(text + i, '}', len - i);
		if (!close) {
			core_buf_release(&b);
			return core_err_set(c->err, CORE_ECONFIG,
				"%s:%d:%d: %s: unterminated '${' in value (expected ${VAR} or ${VAR:-default})",
				c->file, line, col, path);
		}
		name = text + i + 2;
		nlen = (size_t)(close - name);
		for (size_t k = 0; k + 1 < nlen; k++) {
			if (name[k] == ':' && name[k + 1] == '-') {
				dflt = name + k + 2;
				dlen = nlen - k - 2;
				nlen = k;
				break;
			}
		}
		if (nlen == 0 || nlen >= sizeof(var)) {
			core_buf_release(&b);
			return core_err_set(c->err, CORE_ECONFIG,
				"%s:%d:%d: %s: empty or too long variable name in '${...}'",
				c->file, line, col, path);
		}
		memcpy(var, name, nlen);
		var[nlen] = '\0';
		val = getenv(var);
		if (val && (!dflt || val[0]))
			core_buf_puts(&b, val);
		else if (dflt)
			core_buf_append(&b, dflt, dlen);
		else {
			core_buf_release(&b);
			return core_err_set(c->err, CORE_ECONFIG,
				"%s:%d:%d: %s: environment variable '%s' is not set (set it, or write ${%s:-default})",
				c->file, line, col, path, var, var);
		}
		i = (size_t)(close - text) + 1;
	}
	*out = doc_track(c->doc, core_buf_steal(&b));
	return *out ? 0 : CORE_ENOMEM;
}

static int next_event(parse_ctx *c, yaml_event_t *ev)
{
	if (yaml_parser_parse(&c->parser, ev))
		return 0;
	return core_err_set(c->err, CORE_ECONFIG,
		"%s:%zu:%zu: malformed YAML: %s%s%s",
		c->file, c->parser.problem_mark.line + 1,
		c->parser.problem_mark.column + 1,
		c->parser.problem ? c->parser.problem : "syntax error",
		c->parser.context ? " " : "",
		c->parser.context ? c->parser.context : "");
}

static core_node *new_node(parse_ctx *c, core_node_kind kind,
			   const yaml_event_t *ev, const char *path)
{
	core_node *n = doc_alloc(c->doc, sizeof(*n));

	if (!n)
		return NULL;
	n->kind = kind;
	n->file = c->file;
	n->line = (int)ev->start_mark.line + 1;
	n->col = (int)ev->start_mark.column + 1;
	n->path = path;
	return n;
}

static int parse_node(parse_ctx *c, yaml_event_t *ev, const char *path,
		      int depth, core_node **out);
static int parse_value(parse_ctx *c, yaml_event_t *ev, const char *path,
		       int depth, core_node **out);

static int push_item(parse_ctx *c, core_node *parent, core_node *key,
		     core_node *item, size_t *cap)
{
	if (parent->len == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		core_node **items = doc_alloc(c->doc, ncap * sizeof(*items));
		core_node **keys = doc_alloc(c->doc, ncap * sizeof(*keys));

		if (!items || !keys)
			return CORE_ENOMEM;
		if (parent->len) {
			memcpy(items, parent->items, parent->len * sizeof(*items));
			if (parent->keys)
				memcpy(keys, parent->keys, parent->len * sizeof(*keys));
		}
		parent->items = items;
		parent->keys = parent->kind == CORE_NODE_MAP ? keys : NULL;
		*cap = ncap;
	}
	if (key)
		parent->keys[parent->len] = key;
	parent->items[parent->len++] = item;
	return 0;
}

static int parse_scalar(parse_ctx *c, yaml_event_t *ev, const char *path,
			bool expand, core_node **out)
{
	core_node *n = new_node(c, CORE_NODE_SCALAR, ev, path);
	const char *v = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	char *val;
	int rc;

	if (!n)
		return CORE_ENOMEM;
	n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	if (expand)
		rc = expand_env(c, v, len, n->line, n->col, path, &val);
	else
		rc = (val = doc_strndup(c->doc, v, len)) ? 0 : CORE_ENOMEM;
	if (rc)
		return rc;
	n->value = val;
	*out = n;
	return 0;
}

/* ---------------------------------------------------- anchors, aliases */

/* An alias is a copy of its anchor's node, at the alias's key path (so
 * messages name where the value is used), bounded so that nested aliases
 * cannot blow up ("billion laughs"). */
#define DOC_MAX_ALIAS_NODES 100000

static core_node *copy_node(parse_ctx *c, const core_node *src, const char *path)
{
	core_node *n;

	if (++c->copied > DOC_MAX_ALIAS_NODES || !path || !(n = doc_alloc(c->doc, sizeof(*n))))
		return NULL;
	*n = *src;
	n->path = path;
	n->keys = n->items = NULL;
	if (!src->len)
		return n;
	if (!(n->items = doc_alloc(c->doc, src->len * sizeof(*n->items))) ||
	    (src->kind == CORE_NODE_MAP &&
	     !(n->keys = doc_alloc(c->doc, src->len * sizeof(*n->keys)))))
		return NULL;
	for (size_t i = 0; i < src->len; i++) {
		const char *ip = src->kind == CORE_NODE_MAP ?
			doc_path(c->doc, path, src->keys[i]->value, -1) :
			doc_path(c->doc, path, NULL, (long)i);

		if (src->kind == CORE_NODE_MAP && !(n->keys[i] = copy_node(c, src->keys[i], ip)))
			return NULL;
		if (!(n->items[i] = copy_node(c, src->items[i], ip)))
			return NULL;
	}
	return n;
}

static int add_anchor(parse_ctx *c, const yaml_char_t *name, const core_node *node)
{
	if (!name)
		return 0;
	for (size_t i = 0; i < c->nanchors; i++)
		if (!strcmp(c->anchors[i].name, (const char *)name))
			return core_err_set(c->err, CORE_ECONFIG, "%s:%d:%d: %s: duplicate anchor "
					    "&%s (first defined at line %d)", c->file, node->line,
					    node->col, node->path[0] ? node->path : "(top level)",
					    (const char *)name, c->anchors[i].node->line);
	if (c->nanchors == c->capanchors) {
		size_t cap = c->capanchors ? c->capanchors * 2 : 8;
		struct anchor *a = doc_alloc(c->doc, cap * sizeof(*a));

		if (!a)
			return CORE_ENOMEM;
		if (c->nanchors)
			memcpy(a, c->anchors, c->nanchors * sizeof(*a));
		c->anchors = a;
		c->capanchors = cap;
	}
	c->anchors[c->nanchors].name = doc_strndup(c->doc, (const char *)name,
						   strlen((const char *)name));
	c->anchors[c->nanchors++].node = node;
	return c->anchors[c->nanchors - 1].name ? 0 : CORE_ENOMEM;
}

/* Levels below n (0 for a scalar). */
static int height(const core_node *n)
{
	int h = 0;

	for (size_t i = 0; n->kind != CORE_NODE_SCALAR && i < n->len; i++) {
		int k = 1 + height(n->items[i]);

		h = k > h ? k : h;
	}
	return h;
}

static int parse_alias(parse_ctx *c, yaml_event_t *ev, const char *path, int depth,
		       core_node **out)
{
	const char *name = (const char *)ev->data.alias.anchor;

	for (size_t i = 0; i < c->nanchors; i++) {
		if (strcmp(c->anchors[i].name, name))
			continue;
		/* a copy nests no deeper than anything written out */
		if (depth + height(c->anchors[i].node) > DOC_MAX_DEPTH)
			return core_err_set(c->err, CORE_ECONFIG, "%s:%zu:%zu: %s: nesting "
					    "deeper than %d levels", c->file,
					    ev->start_mark.line + 1, ev->start_mark.column + 1,
					    path, DOC_MAX_DEPTH);
		if (!(*out = copy_node(c, c->anchors[i].node, path)))
			return c->copied > DOC_MAX_ALIAS_NODES ?
				core_err_set(c->err, CORE_ECONFIG, "%s:%zu:%zu: %s: YAML aliases "
					     "expand to more than %d values", c->file,
					     ev->start_mark.line + 1, ev->start_mark.column + 1,
					     path, DOC_MAX_ALIAS_NODES) : CORE_ENOMEM;
		(*out)->line = (int)ev->start_mark.line + 1;
		(*out)->col = (int)ev->start_mark.column + 1;
		return 0;
	}
	return core_err_set(c->err, CORE_ECONFIG, "%s:%zu:%zu: %s: alias *%s names no anchor "
			    "defined before it (&%s)", c->file, ev->start_mark.line + 1,
			    ev->start_mark.column + 1, path, name, name);
}

static int map_has_key(const core_node *map, const char *key)
{
	for (size_t i = 0; i < map->len; i++)
		if (strcmp(map->keys[i]->value, key) == 0)
			return (int)i;
	return -1;
}

/* YAML's merge key (<<: *base, or <<: [*a, *b]), as PyYAML reads it: the
 * merged maps' keys that the map does not give itself, the earlier maps
 * first; at the map's key paths. */
static int add_merges(parse_ctx *c, core_node *n, const core_node *src, size_t *cap)
{
	if (src->kind == CORE_NODE_SEQ) {
		for (size_t i = 0; i < src->len; i++) {
			int rc = src->items[i]->kind == CORE_NODE_MAP ?
				 add_merges(c, n, src->items[i], cap) : -1;

			if (rc)
				return rc > 0 ? rc : core_err_set(c->err, CORE_ECONFIG,
					"%s:%d:%d: %s: a merge key (<<) takes a map or a list "
					"of maps", c->file, src->items[i]->line,
					src->items[i]->col, n->path[0] ? n->path : "(top level)");
		}
		return 0;
	}
	for (size_t i = 0; i < src->len; i++) {
		const char *kp;
		core_node *k, *v;
		int rc;

		if (map_has_key(n, src->keys[i]->value) >= 0)
			continue;
		kp = doc_path(c->doc, n->path, src->keys[i]->value, -1);
		if (!(k = copy_node(c, src->keys[i], kp)) || !(v = copy_node(c, src->items[i], kp)))
			return c->copied > DOC_MAX_ALIAS_NODES ? core_err_set(c->err, CORE_ECONFIG,
				"%s: %s: YAML aliases expand to more than %d values", c->file,
				n->path, DOC_MAX_ALIAS_NODES) : CORE_ENOMEM;
		if ((rc = push_item(c, n, k, v, cap)))
			return rc;
	}
	return 0;
}

static int parse_map(parse_ctx *c, yaml_event_t *start, const char *path,
		     int depth, core_node **out)
{
	core_node *n = new_node(c, CORE_NODE_MAP, start, path);
	core_node *merges[16];
	size_t cap = 0, nmerges = 0;
	int rc;

	if (!n)
		return CORE_ENOMEM;
	for (;;) {
		yaml_event_t ev;
		core_node *key = NULL, *val = NULL;
		const char *kpath;
		int dup;

		if ((rc = next_event(c, &ev)))
			return rc;
		if (ev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		if (ev.type != YAML_SCALAR_EVENT) {
			rc = core_err_set(c->err, CORE_ECONFIG,
				"%s:%zu:%zu: %s: map keys must be plain strings",
				c->file, ev.start_mark.line + 1,
				ev.start_mark.column + 1, path[0] ? path : "(top level)");
			yaml_event_delete(&ev);
			return rc;
		}
		rc = parse_scalar(c, &ev, path, false, &key);
		yaml_event_delete(&ev);
		if (rc)
			return rc;
		kpath = doc_path(c->doc, path, key->value, -1);
		if (!kpath)
			return CORE_ENOMEM;
		key->path = kpath;
		dup = map_has_key(n, key->value);
		if (dup >= 0)
			return core_err_set(c->err, CORE_ECONFIG,
				"%s:%d:%d: %s: duplicate key (first defined at line %d)",
				c->file, key->line, key->col, kpath,
				n->keys[dup]->line);
		if ((rc = next_event(c, &ev)))
			return rc;
		rc = parse_node(c, &ev, kpath, depth + 1, &val);
		yaml_event_delete(&ev);
		if (rc)
			return rc;
		if (key->plain && !strcmp(key->value, "<<")) {
			if ((val->kind != CORE_NODE_MAP && val->kind != CORE_NODE_SEQ) ||
			    nmerges == sizeof(merges) / sizeof(merges[0]))
				return core_err_set(c->err, CORE_ECONFIG,
					"%s:%d:%d: %s: a merge key (<<) takes a map or a list "
					"of at most 16 maps", c->file, key->line, key->col, kpath);
			merges[nmerges++] = val;
			continue;
		}
		if ((rc = push_item(c, n, key, val, &cap)))
			return rc;
	}
	for (size_t i = 0; i < nmerges; i++)
		if ((rc = add_merges(c, n, merges[i], &cap)))
			return rc;
	*out = n;
	return 0;
}

static int parse_seq(parse_ctx *c, yaml_event_t *start, const char *path,
		     int depth, core_node **out)
{
	core_node *n = new_node(c, CORE_NODE_SEQ, start, path);
	size_t cap = 0;
	int rc;

	if (!n)
		return CORE_ENOMEM;
	for (;;) {
		yaml_event_t ev;
		core_node *item = NULL;
		const char *ipath;

		if ((rc = next_event(c, &ev)))
			return rc;
		if (ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		ipath = doc_path(c->doc, path, NULL, (long)n->len);
		rc = ipath ? parse_node(c, &ev, ipath, depth + 1, &item) : CORE_ENOMEM;
		yaml_event_delete(&ev);
		if (rc || (rc = push_item(c, n, NULL, item, &cap)))
			return rc;
	}
	*out = n;
	return 0;
}

static int parse_node(parse_ctx *c, yaml_event_t *ev, const char *path,
		      int depth, core_node **out)
{
	const yaml_char_t *anchor = ev->type == YAML_SCALAR_EVENT ? ev->data.scalar.anchor :
		ev->type == YAML_MAPPING_START_EVENT ? ev->data.mapping_start.anchor :
		ev->type == YAML_SEQUENCE_START_EVENT ? ev->data.sequence_start.anchor : NULL;
	int rc = parse_value(c, ev, path, depth, out);

	return rc ? rc : add_anchor(c, anchor, *out);
}

static int parse_value(parse_ctx *c, yaml_event_t *ev, const char *path,
		       int depth, core_node **out)
{
	if (depth > DOC_MAX_DEPTH)
		return core_err_set(c->err, CORE_ECONFIG,
			"%s:%zu:%zu: %s: nesting deeper than %d levels",
			c->file, ev->start_mark.line + 1,
			ev->start_mark.column + 1, path, DOC_MAX_DEPTH);
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return parse_scalar(c, ev, path, c->expand, out);
	case YAML_MAPPING_START_EVENT:
		return parse_map(c, ev, path, depth, out);
	case YAML_SEQUENCE_START_EVENT:
		return parse_seq(c, ev, path, depth, out);
	case YAML_ALIAS_EVENT:
		return parse_alias(c, ev, path, depth, out);
	default:
		return core_err_set(c->err, CORE_ECONFIG,
			"%s:%zu:%zu: %s: unexpected YAML structure",
			c->file, ev->start_mark.line + 1,
			ev->start_mark.column + 1, path);
	}
}

/* STREAM_START, then DOCUMENT_START root DOCUMENT_END, or an empty stream. */
static int parse_stream(parse_ctx *c)
{
	yaml_event_t ev;
	int rc;

	if ((rc = next_event(c, &ev)))
		return rc;
	yaml_event_delete(&ev); /* STREAM_START */
	if ((rc = next_event(c, &ev)))
		return rc;
	if (ev.type == YAML_STREAM_END_EVENT) {
		yaml_event_delete(&ev);
		return 0;
	}
	yaml_event_delete(&ev); /* DOCUMENT_START */
	if ((rc = next_event(c, &ev)))
		return rc;
	rc = parse_node(c, &ev, c->root_path, 0, &c->root);
	yaml_event_delete(&ev);
	if (rc)
		return rc;
	if ((rc = next_event(c, &ev)))
		return rc;
	yaml_event_delete(&ev); /* DOCUMENT_END */
	if ((rc = next_event(c, &ev)))
		return rc;
	if (ev.type != YAML_STREAM_END_EVENT)
		rc = core_err_set(c->err, CORE_ECONFIG,
			"%s:%zu:%zu: more than one YAML document; a settings file holds one",
			c->file, ev.start_mark.line + 1, ev.start_mark.column + 1);
	yaml_event_delete(&ev);
	return rc;
}

/* Parses text into nodes doc owns; c holds the file, root path and
 * whether ${VAR} is expanded. */
static int parse_text(parse_ctx *c, const char *text, size_t len)
{
	int rc;

	if (!yaml_parser_initialize(&c->parser))
		return core_err_set(c->err, CORE_ENOMEM, "out of memory");
	yaml_parser_set_input_string(&c->parser, (const unsigned char *)text, len);
	rc = parse_stream(c);
	yaml_parser_delete(&c->parser);
	if (rc == CORE_ENOMEM)
		core_err_set(c->err, rc, "out of memory reading %s", c->file);
	return rc;
}

static int doc_parse(const char *name, const char *text, size_t len, bool expand,
		     core_doc **out, core_err *err)
{
	parse_ctx c = { .err = err, .root_path = "", .expand = expand };
	int rc;

	*out = NULL;
	c.doc = calloc(1, sizeof(*c.doc));
	if (!c.doc || !(c.doc->file = strdup(name))) {
		free(c.doc);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	c.file = c.doc->file;
	if ((rc = parse_text(&c, text, len))) {
		core_doc_free(c.doc);
		return rc;
	}
	c.doc->root = c.root;
	*out = c.doc;
	return 0;
}

int core_doc_parse(const char *name, const char *text, size_t len,
		   core_doc **out, core_err *err)
{
	return doc_parse(name, text, len, true, out, err);
}

int core_doc_parse_literal(const char *name, const char *text, size_t len,
			   core_doc **out, core_err *err)
{
	return doc_parse(name, text, len, false, out, err);
}

int core__doc_parse_data(core_doc *doc, const char *file, const char *text,
			 size_t len, const char *root_path, core_node **root,
			 core_err *err)
{
	parse_ctx c = { .doc = doc, .err = err, .expand = false };
	int rc;

	*root = NULL;
	c.file = doc_strndup(doc, file, strlen(file));
	c.root_path = doc_strndup(doc, root_path, strlen(root_path));
	if (!c.file || !c.root_path)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!(rc = parse_text(&c, text, len)))
		*root = c.root;
	return rc;
}

core_node *core__doc_scalar(core_doc *doc, const core_node *at,
			    const char *parent, const char *key,
			    const char *value, size_t len)
{
	core_node *n = doc_alloc(doc, sizeof(*n));

	if (!n)
		return NULL;
	n->kind = CORE_NODE_SCALAR;
	n->file = at->file;
	n->line = at->line;
	n->col = at->col;
	n->path = doc_path(doc, parent, key, -1);
	n->value = doc_strndup(doc, value, len);
	n->plain = false;
	return n->path && n->value ? n : NULL;
}

int core__doc_map_set(core_doc *doc, core_node *map, const core_node *at,
		      const char *key, core_node *value)
{
	parse_ctx c = { .doc = doc };
	size_t cap = map->len;	/* full: push_item grows the arrays */
	core_node *k;

	for (size_t i = 0; i < map->len; i++)
		if (!strcmp(map->keys[i]->value, key)) {
			map->items[i] = value;
			return 0;
		}
	k = core__doc_scalar(doc, at, map->path, key, key, strlen(key));
	if (!k)
		return CORE_ENOMEM;
	return push_item(&c, map, k, value, &cap);
}

void core__doc_map_del(core_node *map, const char *key)
{
	for (size_t i = 0; i < map->len; i++)
		if (!strcmp(map->keys[i]->value, key)) {
			memmove(&map->keys[i], &map->keys[i + 1],
				(map->len - i - 1) * sizeof(*map->keys));
			memmove(&map->items[i], &map->items[i + 1],
				(map->len - i - 1) * sizeof(*map->items));
			map->len--;
			return;
		}
}

int core_doc_load(const char *path, core_doc **out, core_err *err)
{
	core_buf b;
	char chunk[65536];
	size_t n;
	FILE *f;
	int rc;

	*out = NULL;
	f = fopen(path, "rb");
	if (!f)
		return core_err_set(err, CORE_EIO, "cannot open settings file %s: %s",
				    path, strerror(errno));
	core_buf_init(&b);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		core_buf_append(&b, chunk, n);
	if (ferror(f)) {
		rc = core_err_set(err, CORE_EIO, "cannot read settings file %s: %s",
				  path, strerror(errno));
		fclose(f);
		core_buf_release(&b);
		return rc;
	}
	fclose(f);
	rc = core_doc_parse(path, b.data ? b.data : "", b.len, out, err);
	core_buf_release(&b);
	return rc;
}

const core_node *core_doc_root(const core_doc *doc)
{
	return doc ? doc->root : NULL;
}

void core_doc_free(core_doc *doc)
{
	if (!doc)
		return;
	for (size_t i = 0; i < doc->nallocs; i++)
		free(doc->allocs[i]);
	free(doc->allocs);
	free(doc->file);
	free(doc);
}

const core_node *core__doc_empty_map(core_doc *doc, const core_node *parent,
				     const char *key)
{
	core_node *n = doc_alloc(doc, sizeof(*n));

	if (!n)
		return NULL;
	*n = *parent;
	n->kind = CORE_NODE_MAP;
	n->len = 0;
	n->keys = n->items = NULL;
	n->value = NULL;
	n->path = doc_path(doc, parent->path, key, -1);
	return n->path ? n : NULL;
}
