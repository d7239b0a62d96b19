/*
 * canon.c — RFC 8785 (JSON Canonicalization Scheme) for jansson values.
 *
 * The writer appends straight into the caller's core_buf. Object members
 * are sorted on a scratch stack of entries shared by the whole call (an
 * inline array first, the heap only for large documents), so the usual row
 * costs no allocation besides the output buffer. Field paths for error
 * messages are a linked list of frames on the C stack and are only turned
 * into text when something fails.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

/* As deep as jansson's parser accepts, so any parsed row canonicalizes;
 * it also stops a (jansson-permitted) reference cycle. */
#define CANON_MAX_DEPTH 2048
#define CANON_INLINE_ENTS 64
#define CANON_INT_LIMIT 9007199254740992LL /* 2^53 */

struct canon_ent {
	const char *key;
	size_t klen;
	json_t *val;
};

/* One step of the field path: a member key, or an array index when key is
 * NULL. The root has no frame. */
struct canon_seg {
	const struct canon_seg *up;
	const char *key;
	size_t klen;
	size_t idx;
};

struct canon {
	core_buf *b;
	core_err *err;
	struct canon_ent *ents; /* inline or malloc'd; [0, top) in use */
	size_t top, cap;
	struct canon_ent inline_ents[CANON_INLINE_ENTS];
};

static int canon_value(struct canon *c, const json_t *v,
		       const struct canon_seg *seg, int depth);

/* ------------------------------------------------- errors and field paths */

static int is_ident(const char *k, size_t n)
{
	size_t i;

	if (!n || (k[0] >= '0' && k[0] <= '9'))
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)k[i];

		if (!(ch == '_' || (ch >= 'a' && ch <= 'z') ||
		      (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')))
			return 0;
	}
	return 1;
}

/* Appends a key for a message: valid UTF-8 as is, other bytes as \xNN. */
static void path_key(core_buf *pb, const char *k, size_t n)
{
	const unsigned char *u = (const unsigned char *)k;
	size_t i = 0, len;

	while (i < n) {
		len = u[i] >= 0x80 ? core_utf8_decode(k + i, n - i, NULL) : 1;
		if (len > 1) {
			core_buf_append(pb, k + i, len);
			i += len;
			continue;
		}
		if (u[i] < 0x20 || u[i] == 0x7f || u[i] >= 0x80)
			core_buf_printf(pb, "\\x%02x", u[i]);
		else if (u[i] == '"' || u[i] == '\\')
			core_buf_printf(pb, "\\%c", u[i]);
		else
			core_buf_putc(pb, (char)u[i]);
		i++;
	}
}

static void path_fmt(core_buf *pb, const struct canon_seg *s)
{
	if (!s) {
		core_buf_putc(pb, '$');
		return;
	}
	path_fmt(pb, s->up);
	if (!s->key) {
		core_buf_printf(pb, "[%zu]", s->idx);
	} else if (is_ident(s->key, s->klen)) {
		core_buf_putc(pb, '.');
		core_buf_append(pb, s->key, s->klen);
	} else {
		core_buf_puts(pb, "[\"");
		path_key(pb, s->key, s->klen);
		core_buf_puts(pb, "\"]");
	}
}

/* Sets "<path>: <message>" in c->err and returns code. */
static int canon_fail(struct canon *c, const struct canon_seg *seg, int code,
		      const char *fmt, ...) CORE_PRINTF(4, 5);

static int canon_fail(struct canon *c, const struct canon_seg *seg, int code,
		      const char *fmt, ...)
{
	core_buf pb = { 0 };
	va_list ap;

	if (!c->err)
		return code;
	va_start(ap, fmt);
	core_err_vset(c->err, code, fmt, ap);
	va_end(ap);
	path_fmt(&pb, seg);
	core_err_prefix(c->err, "%s", pb.data ? pb.data : "$");
	core_buf_release(&pb);
	return code;
}

static int canon_nomem(struct canon *c, const struct canon_seg *seg)
{
	return canon_fail(c, seg, CORE_ENOMEM,
			  "out of memory while writing canonical JSON");
}

/* ----------------------------------------------------------- strings */

static int put_escape(core_buf *b, unsigned char ch)
{
	static const char hex[] = "0123456789abcdef";
	char e[6] = { '\\', 'u', '0', '0' };

	switch (ch) {
	case '"':  return core_buf_append(b, "\\\"", 2);
	case '\\': return core_buf_append(b, "\\\\", 2);
	case '\b': return core_buf_append(b, "\\b", 2);
	case '\f': return core_buf_append(b, "\\f", 2);
	case '\n': return core_buf_append(b, "\\n", 2);
	case '\r': return core_buf_append(b, "\\r", 2);
	case '\t': return core_buf_append(b, "\\t", 2);
	}
	e[4] = hex[ch >> 4];
	e[5] = hex[ch & 0xf];
	return core_buf_append(b, e, 6);
}

/* Writes s as a JSON string. Returns 0, CORE_ENOMEM, or CORE_EDATA with
 * *bad set to the offset of the first invalid UTF-8 byte. */
static int put_string(core_buf *b, const char *s, size_t n, size_t *bad)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0, k;

	if (core_buf_reserve(b, n + 2) || core_buf_putc(b, '"'))
		return CORE_ENOMEM;
	while (i < n) {
		if (u[i] >= 0x20 && u[i] < 0x80 && u[i] != '"' && u[i] != '\\') {
			i++;
			continue;
		}
		if (u[i] >= 0x80) {
			k = core_utf8_decode(s + i, n - i, NULL);
			if (!k) {
				*bad = i;
				return CORE_EDATA;
			}
			i += k;
			continue;
		}
		if (core_buf_append(b, s + run, i - run) || put_escape(b, u[i]))
			return CORE_ENOMEM;
		run = ++i;
	}
	if (core_buf_append(b, s + run, i - run) || core_buf_putc(b, '"'))
		return CORE_ENOMEM;
	return 0;
}

static int canon_string(struct canon *c, const json_t *v,
			const struct canon_seg *seg)
{
	const char *s = json_string_value(v);
	size_t bad = 0;
	int rc;

	rc = put_string(c->b, s, json_string_length(v), &bad);
	if (rc == CORE_EDATA)
		return canon_fail(c, seg, rc,
				  "string is not valid UTF-8 (byte 0x%02x at offset %zu); "
				  "canonical JSON needs UTF-8 text, fix the source encoding",
				  (unsigned char)s[bad], bad);
	if (rc)
		return canon_nomem(c, seg);
	return 0;
}


static int canon_real(struct canon *c, const json_t *v,
		      const struct canon_seg *seg)
{
	char num[32];
	int n = core_format_double(json_real_value(v), num, sizeof(num));

	if (n < 0)
		return canon_fail(c, seg, CORE_EDATA,
				  "NaN/Infinity are not allowed in canonical JSON; "
				  "replace the value with null or a string");
	if (core_buf_append(c->b, num, (size_t)n))
		return canon_nomem(c, seg);
	return 0;
}

static int canon_integer(struct canon *c, const json_t *v,
			 const struct canon_seg *seg)
{
	json_int_t i = json_integer_value(v);
	unsigned long long u;
	char num[24], *p = num + sizeof(num);

	if (i < -CANON_INT_LIMIT || i > CANON_INT_LIMIT)
		return canon_fail(c, seg, CORE_EDATA,
				  "integer %" JSON_INTEGER_FORMAT " is outside +-2^53 "
				  "and has no exact canonical JSON number; send it as a string",
				  i);
	u = i < 0 ? 0ULL - (unsigned long long)i : (unsigned long long)i;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (i < 0)
		*--p = '-';
	if (core_buf_append(c->b, p, (size_t)(num + sizeof(num) - p)))
		return canon_nomem(c, seg);
	return 0;
}

/* ----------------------------------------------------- arrays, objects */

static int canon_array(struct canon *c, const json_t *v,
		       const struct canon_seg *seg, int depth)
{
	struct canon_seg s = { seg, NULL, 0, 0 };
	size_t n = json_array_size(v);
	int rc;

	if (core_buf_putc(c->b, '['))
		return canon_nomem(c, seg);
	for (s.idx = 0; s.idx < n; s.idx++) {
		if (s.idx && core_buf_putc(c->b, ','))
			return canon_nomem(c, seg);
		rc = canon_value(c, json_array_get(v, s.idx), &s, depth + 1);
		if (rc)
			return rc;
	}
	if (core_buf_putc(c->b, ']'))
		return canon_nomem(c, seg);
	return 0;
}

/*
 * UTF-16 code unit order on UTF-8 keys. UTF-8 byte order is code point
 * order, which agrees with UTF-16 order except that supplementary
 * characters (surrogate pairs, 0xD800..) sort before U+E000..U+FFFF. The
 * first differing byte is either inside characters with the same lead byte
 * (byte order is right) or a lead byte, where only that one case flips.
 */
static int key_cmp(const struct canon_ent *a, const struct canon_ent *b)
{
	size_t n = a->klen < b->klen ? a->klen : b->klen, i;
	unsigned char x, y;

	for (i = 0; i < n && a->key[i] == b->key[i]; i++)
		;
	if (i == n)
		return a->klen < b->klen ? -1 : a->klen > b->klen;
	x = (unsigned char)a->key[i];
	y = (unsigned char)b->key[i];
	if (x >= 0xf0 && (y == 0xee || y == 0xef))
		return -1;
	if (y >= 0xf0 && (x == 0xee || x == 0xef))
		return 1;
	return x < y ? -1 : 1;
}

static int key_qcmp(const void *a, const void *b)
{
	return key_cmp(a, b);
}

static void sort_ents(struct canon_ent *e, size_t n)
{
	struct canon_ent t;
	size_t i, j;

	if (n > 16) {
		qsort(e, n, sizeof(*e), key_qcmp);
		return;
	}
	for (i = 1; i < n; i++) {
		t = e[i];
		for (j = i; j > 0 && key_cmp(&t, &e[j - 1]) < 0; j--)
			e[j] = e[j - 1];
		e[j] = t;
	}
}

static int ents_grow(struct canon *c, size_t n)
{
	struct canon_ent *p;
	size_t cap = c->cap;

	while (cap - c->top < n)
		cap *= 2;
	if (c->ents == c->inline_ents) {
		p = malloc(cap * sizeof(*p));
		if (p)
			memcpy(p, c->ents, c->top * sizeof(*p));
	} else {
		p = realloc(c->ents, cap * sizeof(*p));
	}
	if (!p)
		return CORE_ENOMEM;
	c->ents = p;
	c->cap = cap;
	return 0;
}

/* Pushes the members of v on the scratch stack; keys are checked here so
 * the sort only ever sees valid UTF-8. */
static int push_members(struct canon *c, const json_t *v, size_t n,
			const struct canon_seg *seg)
{
	/* jansson's iterator API takes a non-const object; it does not
	 * modify it. */
	void *it = json_object_iter((json_t *)v);
	struct canon_ent *e;
	size_t bad;

	if (c->cap - c->top < n && ents_grow(c, n))
		return canon_nomem(c, seg);
	for (e = c->ents + c->top; it; it = json_object_iter_next((json_t *)v, it), e++) {
		e->key = json_object_iter_key(it);
		e->klen = json_object_iter_key_len(it);
		e->val = json_object_iter_value(it);
		bad = core_utf8_check(e->key, e->klen);
		if (bad < e->klen)
			return canon_fail(c, seg, CORE_EDATA,
					  "object key is not valid UTF-8 (byte 0x%02x at "
					  "offset %zu); fix the source encoding",
					  (unsigned char)e->key[bad], bad);
	}
	return 0;
}

static int canon_members(struct canon *c, size_t base, size_t n,
			 const struct canon_seg *seg, int depth)
{
	struct canon_seg s = { seg, NULL, 0, 0 };
	struct canon_ent *e;
	size_t i, bad;
	int rc;

	for (i = 0; i < n; i++) {
		e = c->ents + base + i; /* the stack may move while recursing */
		s.key = e->key;
		s.klen = e->klen;
		/* keys were checked in push_members: only ENOMEM here */
		if ((i && core_buf_putc(c->b, ',')) ||
		    put_string(c->b, e->key, e->klen, &bad) ||
		    core_buf_putc(c->b, ':'))
			return canon_nomem(c, seg);
		rc = canon_value(c, e->val, &s, depth + 1);
		if (rc)
			return rc;
	}
	return 0;
}

static int canon_object(struct canon *c, const json_t *v,
			const struct canon_seg *seg, int depth)
{
	size_t n = json_object_size(v), base = c->top;
	int rc;

	rc = push_members(c, v, n, seg);
	if (rc)
		return rc;
	c->top += n;
	sort_ents(c->ents + base, n);
	if (core_buf_putc(c->b, '{')) {
		rc = canon_nomem(c, seg);
		goto out_pop;
	}
	rc = canon_members(c, base, n, seg, depth);
	if (!rc && core_buf_putc(c->b, '}'))
		rc = canon_nomem(c, seg);
out_pop:
	c->top = base;
	return rc;
}

static int canon_value(struct canon *c, const json_t *v,
		       const struct canon_seg *seg, int depth)
{
	if (depth > CANON_MAX_DEPTH)
		return canon_fail(c, seg, CORE_EDATA,
				  "nested deeper than %d levels (or a reference cycle); "
				  "canonical JSON refuses it", CANON_MAX_DEPTH);
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return canon_object(c, v, seg, depth);
	case JSON_ARRAY:
		return canon_array(c, v, seg, depth);
	case JSON_STRING:
		return canon_string(c, v, seg);
	case JSON_INTEGER:
		return canon_integer(c, v, seg);
	case JSON_REAL:
		return canon_real(c, v, seg);
	case JSON_TRUE:
		return core_buf_append(c->b, "true", 4) ? canon_nomem(c, seg) : 0;
	case JSON_FALSE:
		return core_buf_append(c->b, "false", 5) ? canon_nomem(c, seg) : 0;
	case JSON_NULL:
		return core_buf_append(c->b, "null", 4) ? canon_nomem(c, seg) : 0;
	}
	return canon_fail(c, seg, CORE_EINTERNAL, "unknown jansson type %d",
			  (int)json_typeof(v));
}

/* ------------------------------------------------------------- public */

int core_canon_append(core_buf *b, const json_t *v, core_err *err)
{
	struct canon c;
	size_t old = b->len;
	int rc;

	c.b = b;
	c.err = err;
	c.ents = c.inline_ents;
	c.top = 0;
	c.cap = CANON_INLINE_ENTS;
	if (!v)
		return core_err_set(err, CORE_EINTERNAL,
				    "core_canon_append: no value (NULL json_t)");
	rc = canon_value(&c, v, NULL, 0);
	if (c.ents != c.inline_ents)
		free(c.ents);
	if (rc) {
		b->len = old;
		if (b->data)
			b->data[old] = '\0';
	}
	return rc;
}

int core_canon(const json_t *v, char **out, size_t *len, core_err *err)
{
	core_buf b = { 0 };
	int rc;

	rc = core_canon_append(&b, v, err);
	if (rc)
		goto out_release;
	if (len)
		*len = b.len;
	*out = core_buf_steal(&b);
	if (!*out)
		rc = core_err_set(err, CORE_ENOMEM,
				  "out of memory while writing canonical JSON");
out_release:
	core_buf_release(&b);
	return rc;
}
