/*
 * pg_params.c — the query tool's named parameters on PostgreSQL (pg.c,
 * ADR 0043): `:name` in the SQL, as on SQLite, becomes $1, $2, ... for
 * libpq. Only where PostgreSQL itself would see a parameter-like token:
 * not inside '…' strings (E'…' with its backslash escapes too), "…"
 * identifiers, $tag$…$tag$ strings, -- and (nested) block comments; not
 * a `::` cast; not after an identifier character or `]` (an array slice
 * `a[1:n]`, a name like `x:y` PostgreSQL would refuse anyway).
 */
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp_internal.h"

void mcp__pg_params_free(mcp__pg_params *p)
{
	core_buf_release(&p->sql);
	for (int i = 0; i < p->n; i++)
		free(p->names[i]);
	p->n = 0;
}

static bool name_char(char c, bool first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (unsigned char)c >= 0x80 || (!first && (c >= '0' && c <= '9'));
}

/* The end of a quoted part at p (its opening quote q; escapes: backslash
 * escapes too, an E'' string). */
static const char *skip_quoted(const char *p, char q, bool escapes)
{
	for (p++; *p; p++) {
		if (escapes && *p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p == q) {
			if (p[1] != q)
				return p + 1;
			p++; /* '' or "" inside */
		}
	}
	return p;
}

/* A dollar-quoted string at p ($$…$$ or $tag$…$tag$), or NULL. */
static const char *skip_dollar(const char *p)
{
	const char *t = p + 1, *end;
	size_t n;

	while (name_char(*t, t == p + 1))
		t++;
	if (*t != '$')
		return NULL;
	n = (size_t)(t - p + 1);
	for (end = t + 1; *end; end++)
		if (!strncmp(end, p, n))
			return end + n;
	return end;
}

/* A block comment at p, nested as PostgreSQL nests them. */
static const char *skip_comment(const char *p)
{
	int depth = 0;

	while (*p) {
		if (p[0] == '/' && p[1] == '*') {
			depth++;
			p += 2;
		} else if (p[0] == '*' && p[1] == '/') {
			p += 2;
			if (!--depth)
				return p;
		} else {
			p++;
		}
	}
	return p;
}

static int param_index(mcp__pg_params *p, const char *name, size_t len, core_err *err)
{
	for (int i = 0; i < p->n; i++)
		if (strlen(p->names[i]) == len && !strncmp(p->names[i], name, len))
			return i + 1;
	if (p->n == MCP__PG_PARAMS_MAX)
		return core_err_set(err, CORE_EDATA, "more than %d named parameters",
				    MCP__PG_PARAMS_MAX), -1;
	if (!(p->names[p->n] = strndup(name, len)))
		return mcp__oom(err), -1;
	return ++p->n;
}

int mcp__pg_rewrite(const char *sql, mcp__pg_params *p, core_err *err)
{
	const char *s = sql, *e;
	bool bad = false;

	while (*s) {
		char prev = s > sql ? s[-1] : ' ';

		if ((*s == 'E' || *s == 'e') && s[1] == '\'' && !name_char(prev, false)) {
			e = skip_quoted(s + 1, '\'', true);
		} else if (*s == '\'' || *s == '"') {
			e = skip_quoted(s, *s, false);
		} else if (s[0] == '-' && s[1] == '-') {
			e = s + strcspn(s, "\n");
		} else if (s[0] == '/' && s[1] == '*') {
			e = skip_comment(s);
		} else if (*s == '$' && !name_char(prev, false) && (e = skip_dollar(s))) {
			;
		} else if (s[0] == ':' && s[1] == ':') {
			e = s + 2; /* a cast */
		} else if (s[0] == ':' && name_char(s[1], true) && !name_char(prev, false) &&
			   prev != ']' && prev != ':') {
			int i;

			for (e = s + 1; name_char(*e, false); e++)
				;
			if ((i = param_index(p, s + 1, (size_t)(e - s - 1), err)) < 0)
				return err->code;
			bad |= core_buf_printf(&p->sql, "$%d", i) != 0;
			s = e;
			continue;
		} else {
			e = s + 1;
		}
		bad |= core_buf_append(&p->sql, s, (size_t)(e - s)) != 0;
		s = e;
	}
	return bad ? mcp__oom(err) : 0;
}
