/*
 * web_scrape_md.c — HTML to markdown as html2text does it
 * (web_scrape_internal.h, "extraction").
 *
 * ELSPETH renders a page with html2text (2025.4.15; body_width 0, links
 * and images inline, everything else at its defaults) fed BeautifulSoup's
 * serialisation of the parsed page. html2text is a state machine over the
 * events of Python's HTMLParser; this is the same machine, fed the same
 * events by a walk of libxml2's tree (web_scrape_html.c), so that a page
 * both parse alike renders byte for byte alike. The names of the state
 * are html2text's, and so is the order of the checks in tag(): its quirks
 * (a space after an emphasis, "1\." at a line start, the "[" taken back
 * for a heading inside a link) are its users' expected output. Parts that
 * its settings in ELSPETH never reach (Google Docs styles, reference
 * links, wrapping, padded tables) are left out.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/transform/web_scrape_internal.h"

#define MD_STR_(x) #x
#define MD_STR(x) MD_STR_(x) /* a macro's value as a string literal */

typedef struct md_list {
	bool ol;
	long long num;
} md_list;

/* An open <a>: its href and title (NULL: no such attribute), or a link
 * html2text does not render (no href, or an internal one): `none`. */
typedef struct md_anchor {
	bool none;
	char *href, *title;
} md_anchor;

typedef struct md_abbr {
	char *abbr, *def;
} md_abbr;

enum { FORCE_NO = 0, FORCE_YES, FORCE_END };

struct ws_md {
	core_buf out;
	bool last_nl;             /* the last chunk written ended a line */
	bool last_bracket;        /* the last chunk written was "[" */
	int quiet, p_p;
	bool start, space;
	md_anchor *astack;
	size_t nastack, capastack;
	char *maybe_auto;         /* maybe_automatic_link; NULL: None */
	bool empty_link;
	md_list *list;
	size_t nlist, caplist;
	int blockquote;
	bool pre, startpre;
	core_buf pre_indent, list_code_indent;
	bool code, quote;
	const char *br_toggle;
	bool last_was_list;
	int style;
	bool inheader;
	char *abbr_title;         /* NULL: None */
	core_buf abbr_data;
	bool abbr_open;           /* abbr_data is not None */
	md_abbr *abbrs;
	size_t nabbrs;
	bool stressed, preceding_stressed;
	bool pd_set;              /* preceding_data is not empty */
	uint32_t pd_last;         /* its last character */
	char current_tag[64];
	bool split_next_td, table_start;
	long td_count;
	int err;                  /* the first error: CORE_ENOMEM, or
				   * CORE_EDATA past a limit (why) */
	const char *why;
	size_t max_out;           /* ws__md_limit; 0: none */
};

/* -------------------------------------------------------------- strings */

/* Whether cp is one of the ASCII characters of set. */
static bool in_set(uint32_t cp, const char *set)
{
	return cp && cp < 128 && strchr(set, (int)cp);
}

static bool has(const char *const *set, const char *s)
{
	for (; *set; set++)
		if (!strcmp(*set, s))
			return true;
	return false;
}

static int hn(const char *tag)
{
	if (tag[0] == 'h' && tag[1] > '0' && tag[1] <= '9' && !tag[2])
		return tag[1] - '0';
	return 0;
}

/* The last code point of s (valid UTF-8, n > 0). */
static uint32_t last_cp(const char *s, size_t n)
{
	size_t i = n - 1;
	uint32_t cp = 0;

	while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80)
		i--;
	if (!core_utf8_decode(s + i, n - i, &cp))
		cp = (unsigned char)s[n - 1];
	return cp;
}

/* html2text's escape_md: \ [ ] ( ) get a backslash. */
static int escape_md(core_buf *b, const char *s)
{
	for (; *s; s++)
		if ((strchr("\\[]()", *s) && core_buf_putc(b, '\\')) || core_buf_putc(b, *s))
			return CORE_ENOMEM;
	return 0;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Whether one of escape_md_section's line-start rules matches at i:
 * (\s*) then `what` (digits then '.', or '+', or '-') followed by
 * whitespace (or, for '-', another '-'). *mark: where its mark is. */
static bool rule_at(const char *s, size_t n, size_t i, char what, size_t *mark)
{
	size_t j = i, k;
	uint32_t cp;

	while (j < n && (k = core_utf8_decode(s + j, n - j, &cp)) && ws__isspace(cp))
		j += k;
	if (what == '.') {
		size_t d = j;

		while (j < n && is_digit(s[j]))
			j++;
		if (j == d || j >= n || s[j] != '.')
			return false;
	} else if (j >= n || s[j] != what)
		return false;
	*mark = j;
	k = j + 1 < n ? core_utf8_decode(s + j + 1, n - j - 1, &cp) : 0;
	return k && (ws__isspace(cp) || (what == '-' && cp == '-'));
}

/* One line-start rule over [s, s+n) into out: a backslash before each
 * mark it matches. ^ is MULTILINE's (the start, or after a '\n'), and
 * matches do not overlap, as re.sub's. */
static int line_rule(core_buf *out, const char *s, size_t n, char what)
{
	size_t i = 0, copied = 0, mark;
	const char *nl;

	for (;;) {
		if (rule_at(s, n, i, what, &mark)) {
			if (core_buf_append(out, s + copied, mark - copied) ||
			    core_buf_putc(out, '\\'))
				return CORE_ENOMEM;
			copied = mark;
			i = mark + 1;
		}
		if (i >= n || !(nl = memchr(s + i, '\n', n - i)))
			break;
		i = (size_t)(nl - s) + 1;
	}
	return core_buf_append(out, s + copied, n - copied);
}

/* html2text's escape_md_section (snob off) of s into out. */
static int escape_section(core_buf *out, const char *s, size_t n)
{
	static const char slash[] = "\\`*_{}[]()#+-.!";
	core_buf a = { 0 }, b = { 0 };
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++)
		if (s[i] == '\\' && i + 1 < n && strchr(slash, s[i + 1]))
			rc = core_buf_append(&a, "\\\\", 2);
		else
			rc = core_buf_putc(&a, s[i]);
	if (!rc && !(rc = line_rule(&b, a.data ? a.data : "", a.len, '.'))) {
		core_buf_reset(&a);
		if (!(rc = line_rule(&a, b.data ? b.data : "", b.len, '+')))
			rc = line_rule(out, a.data ? a.data : "", a.len, '-');
	}
	core_buf_release(&a);
	core_buf_release(&b);
	return rc;
}

/* ----------------------------------------------------------------- out */

static void fail(ws_md *m, int rc)
{
	if (rc && !m->err)
		m->err = rc;
}

static int checked(ws_md *m);

/* outtextf: one chunk of output. */
static void out(ws_md *m, const char *s, size_t n)
{
	fail(m, core_buf_append(&m->out, s, n));
	if (n)
		m->last_nl = s[n - 1] == '\n';
	m->last_bracket = n == 1 && s[0] == '[';
}

static void outs(ws_md *m, const char *s)
{
	out(m, s, strlen(s));
}

/* How many bytes at the start of s are among a's and b's characters
 * (s.lstrip(a + b)). */
static size_t lstrip_set(const char *s, size_t n, const char *a, size_t an,
			 const core_buf *b)
{
	size_t i = 0;

	while (i < n && (memchr(a, s[i], an) || (b->len && memchr(b->data, s[i], b->len))))
		i++;
	return i;
}

/* html2text's o(): indentation, pending line breaks and spaces, then
 * the data. */
static void o_n(ws_md *m, const char *data, size_t n, bool puredata, int force)
{
	core_buf d = { 0 }, bq = { 0 }, t = { 0 };
	const char *p;
	size_t len;

	if (m->abbr_open)
		fail(m, core_buf_append(&m->abbr_data, data, n));
	if (m->quiet)
		return;
	if (puredata && !m->pre) {
		fail(m, ws__collapse_append(&d, data, n));
		p = d.data ? d.data : "";
		len = d.len;
		if (len && p[0] == ' ') {
			m->space = true;
			p++;
			len--;
		}
	} else {
		p = data;
		len = n;
	}
	if (!len && !force)
		goto out;
	if (m->startpre && !(len && p[0] == '\n') && !(len > 1 && p[0] == '\r' && p[1] == '\n')) {
		fail(m, core_buf_putc(&t, '\n'));
		fail(m, core_buf_append(&t, p, len));
		p = t.data ? t.data : "";
		len = t.len;
	}
	for (int i = 0; i < m->blockquote; i++)
		fail(m, core_buf_putc(&bq, '>'));
	if (!(force && len && p[0] == '>') && m->blockquote)
		fail(m, core_buf_putc(&bq, ' '));
	if (m->pre) {
		core_buf r = { 0 };

		if (m->nlist)
			fail(m, core_buf_append(&bq, m->list_code_indent.data, m->list_code_indent.len));
		fail(m, core_buf_puts(&bq, "    "));
		for (size_t i = 0; i < len; i++) {
			fail(m, core_buf_putc(&r, p[i]));
			if (p[i] == '\n')
				fail(m, core_buf_append(&r, bq.data, bq.len));
		}
		core_buf_release(&t);
		t = r;
		p = t.data ? t.data : "";
		len = t.len;
		core_buf_reset(&m->pre_indent);
		fail(m, core_buf_append(&m->pre_indent, bq.data, bq.len));
	}
	if (m->startpre) {
		m->startpre = false;
		if (m->nlist) {
			size_t k = lstrip_set(p, len, "\n", 1, &m->pre_indent);

			p += k;
			len -= k;
		}
	}
	if (m->start) {
		m->space = false;
		m->p_p = 0;
		m->start = false;
	}
	if (force == FORCE_END) {
		m->p_p = 0;
		outs(m, "\n");
		m->space = false;
	}
	if (m->p_p) {
		core_buf br = { 0 };

		for (int i = 0; i < m->p_p; i++) {
			fail(m, core_buf_puts(&br, m->br_toggle));
			fail(m, core_buf_putc(&br, '\n'));
			fail(m, core_buf_append(&br, bq.data ? bq.data : "", bq.len));
		}
		out(m, br.data ? br.data : "", br.len);
		core_buf_release(&br);
		m->space = false;
		m->br_toggle = "";
	}
	if (m->space) {
		if (!m->last_nl)
			outs(m, " ");
		m->space = false;
	}
	if (m->nabbrs && force == FORCE_END)
		for (size_t i = 0; i < m->nabbrs; i++) {
			core_buf a = { 0 };

			fail(m, core_buf_printf(&a, "  *[%s]: %s\n", m->abbrs[i].abbr,
						m->abbrs[i].def));
			out(m, a.data ? a.data : "", a.len);
			core_buf_release(&a);
		}
	m->p_p = 0;
	out(m, p, len);
out:
	core_buf_release(&d);
	core_buf_release(&bq);
	core_buf_release(&t);
}

static void o(ws_md *m, const char *s)
{
	o_n(m, s, strlen(s), false, FORCE_NO);
}

static void p(ws_md *m)
{
	m->p_p = 2;
}

static void pbr(ws_md *m)
{
	if (!m->p_p)
		m->p_p = 1;
}

static void soft_br(ws_md *m)
{
	pbr(m);
	m->br_toggle = "  ";
}

/* ---------------------------------------------------------------- data */

static void set_preceding(ws_md *m, const char *s, size_t n)
{
	m->pd_set = n > 0;
	if (n)
		m->pd_last = last_cp(s, n);
}

static void start_link(ws_md *m)
{
	o(m, "[");
	free(m->maybe_auto);
	m->maybe_auto = NULL;
	m->empty_link = false;
}

/* html2text's handle_data. */
static void data(ws_md *m, const char *s, size_t n, bool entity)
{
	core_buf t = { 0 }, e = { 0 };
	uint32_t cp = 0;

	if (!n)
		return;
	if (m->stressed) {
		fail(m, ws__strip_append(&t, s, n));
		s = t.data ? t.data : "";
		n = t.len;
		m->stressed = false;
		m->preceding_stressed = true;
	} else if (m->preceding_stressed) {
		core_utf8_decode(s, n, &cp);
		if (!in_set(cp, "][(){}.!?") && !ws__isspace(cp) &&
		    !hn(m->current_tag) && strcmp(m->current_tag, "a") &&
		    strcmp(m->current_tag, "code") && strcmp(m->current_tag, "pre")) {
			fail(m, core_buf_putc(&t, ' '));
			fail(m, core_buf_append(&t, s, n));
			s = t.data ? t.data : "";
			n = t.len;
		}
		m->preceding_stressed = false;
	}
	if (m->maybe_auto) {
		const char *h = m->maybe_auto;
		size_t scheme = strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+");

		if (strlen(h) == n && !memcmp(h, s, n) && scheme && !strncmp(h + scheme, "://", 3)) {
			core_buf b = { 0 };

			fail(m, core_buf_putc(&b, '<'));
			fail(m, core_buf_append(&b, s, n));
			fail(m, core_buf_putc(&b, '>'));
			o_n(m, b.data ? b.data : "", b.len, false, FORCE_NO);
			core_buf_release(&b);
			m->empty_link = false;
			goto out;
		}
		start_link(m);
	}
	if (!m->code && !m->pre && !entity) {
		fail(m, escape_section(&e, s, n));
		s = e.data ? e.data : "";
		n = e.len;
	}
	set_preceding(m, s, n);
	o_n(m, s, n, true, FORCE_NO);
out:
	core_buf_release(&t);
	core_buf_release(&e);
}

int ws__md_data(ws_md *m, const char *s, size_t len, bool special)
{
	data(m, s, len, special);
	return checked(m);
}

/* ---------------------------------------------------------------- tags */

static const char *attr(const ws_attr *a, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(a[i].name, name))
			return a[i].value;
	return NULL;
}

/* list_numbering_start: int(start) - 1 when start reads as an integer. */
static long long numbering_start(const ws_attr *a, size_t n)
{
	const char *s = attr(a, n, "start");
	char *end;
	long long v;

	if (!s)
		return 0;
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	if (!(is_digit(*s) || ((*s == '+' || *s == '-') && is_digit(s[1]))))
		return 0;
	v = strtoll(s, &end, 10);
	while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
		end++;
	return *end ? 0 : v - 1;
}

static void heading(ws_md *m, int level, bool start, bool *stop)
{
	char marks[12];

	memset(marks, '#', (size_t)level);
	marks[level] = ' ';
	marks[level + 1] = '\0';
	if (m->nastack) {
		if (start) {
			m->inheader = true;
			/* inside a link's text: the '#'s go before its '[' */
			if (m->last_bracket) {
				m->out.data[--m->out.len] = '\0';
				m->last_bracket = false;
				m->space = false;
				o(m, marks);
				o(m, "[");
			}
		} else {
			m->p_p = 0;
			m->inheader = false;
			*stop = true;
		}
		return;
	}
	p(m);
	if (start) {
		m->inheader = true;
		o(m, marks);
	} else {
		m->inheader = false;
		*stop = true;
	}
}

static void emphasis(ws_md *m, const char *mark, bool start, bool spaced)
{
	if (start && spaced) {
		core_buf b = { 0 };

		fail(m, core_buf_putc(&b, ' '));
		fail(m, core_buf_puts(&b, mark));
		o(m, b.data ? b.data : "");
		core_buf_release(&b);
		m->pd_set = true;
		m->pd_last = ' ';
	} else
		o(m, mark);
	if (start)
		m->stressed = true;
}

/* string.whitespace or string.punctuation */
static bool ascii_ws_or_punct(uint32_t c)
{
	return in_set(c, " \t\n\r\x0b\x0c") || in_set(c, "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~");
}

static void abbr(ws_md *m, const ws_attr *a, size_t n, bool start)
{
	const char *t;

	if (start) {
		free(m->abbr_title);
		m->abbr_title = (t = attr(a, n, "title")) ? strdup(t) : NULL;
		core_buf_reset(&m->abbr_data);
		m->abbr_open = true;
		return;
	}
	if (m->abbr_title && m->abbr_open) {
		const char *key = m->abbr_data.data ? m->abbr_data.data : "";
		size_t i;
		md_abbr *g;

		for (i = 0; i < m->nabbrs; i++)
			if (!strcmp(m->abbrs[i].abbr, key))
				break;
		if (i == m->nabbrs) {
			if (!(g = realloc(m->abbrs, (m->nabbrs + 1) * sizeof(*g))) ||
			    !(g[i].abbr = strdup(key))) {
				if (g)
					m->abbrs = g;
				fail(m, CORE_ENOMEM);
				return;
			}
			m->abbrs = g;
			g[i].def = NULL;
			m->nabbrs++;
		}
		free(m->abbrs[i].def);
		m->abbrs[i].def = m->abbr_title; /* dict: the last definition */
		m->abbr_title = NULL;
	}
	m->abbr_open = false;
}

static void link_start(ws_md *m, const ws_attr *a, size_t n)
{
	const char *href = attr(a, n, "href"), *title = attr(a, n, "title");
	md_anchor x = { .none = true };

	if (href && href[0] != '#') {
		x = (md_anchor){ .href = strdup(href), .title = title ? strdup(title) : NULL };
		free(m->maybe_auto);
		m->maybe_auto = strdup(href);
		m->empty_link = true;
		if (!x.href || (title && !x.title) || !m->maybe_auto)
			fail(m, CORE_ENOMEM);
	}
	if (m->nastack == m->capastack) {
		size_t cap = m->capastack ? m->capastack * 2 : 8;
		md_anchor *g = realloc(m->astack, cap * sizeof(*g));

		if (!g) {
			free(x.href);
			free(x.title);
			fail(m, CORE_ENOMEM);
			return;
		}
		m->astack = g;
		m->capastack = cap;
	}
	m->astack[m->nastack++] = x;
}

static void link_end(ws_md *m)
{
	md_anchor a;
	core_buf b = { 0 }, t = { 0 }, st = { 0 };

	if (!m->nastack)
		return;
	a = m->astack[--m->nastack];
	if (m->maybe_auto && m->maybe_auto[0] && !m->empty_link) {
		free(m->maybe_auto);
		m->maybe_auto = NULL;
	} else if (!a.none) {
		if (m->empty_link)
			start_link(m);
		m->p_p = 0;
		fail(m, escape_md(&t, a.title ? a.title : ""));
		fail(m, core_buf_puts(&b, "]("));
		fail(m, escape_md(&b, a.href));
		fail(m, ws__strip_append(&st, t.data ? t.data : "", t.len));
		if (st.len) {
			fail(m, core_buf_puts(&b, " \""));
			fail(m, core_buf_append(&b, t.data, t.len));
			fail(m, core_buf_putc(&b, '"'));
		}
		fail(m, core_buf_putc(&b, ')'));
		o(m, b.data ? b.data : "");
	}
	free(a.href);
	free(a.title);
	core_buf_release(&b);
	core_buf_release(&t);
	core_buf_release(&st);
}

static void image(ws_md *m, const ws_attr *a, size_t n)
{
	const char *src = attr(a, n, "src"), *alt = attr(a, n, "alt");
	core_buf b = { 0 };

	if (!src)
		return;
	if (m->maybe_auto)
		start_link(m);
	fail(m, core_buf_puts(&b, "!["));
	fail(m, escape_md(&b, alt ? alt : ""));
	fail(m, core_buf_puts(&b, "]"));
	o(m, b.data);
	core_buf_reset(&b);
	fail(m, core_buf_putc(&b, '('));
	fail(m, escape_md(&b, src));
	fail(m, core_buf_putc(&b, ')'));
	o(m, b.data);
	core_buf_release(&b);
}

static void lists(ws_md *m, const char *tag, const ws_attr *a, size_t n, bool start)
{
	if (!m->nlist && !m->last_was_list)
		p(m);
	if (start && m->nlist >= WS_MD_MAX_LISTS) {
		/* each item is indented by its depth: 8,000 nested lists in
		 * 64 KB of HTML would be 64 MB of markdown */
		m->why = "the page nests lists more than " MD_STR(WS_MD_MAX_LISTS) " deep, "
			 "and its markdown would grow with the square of the depth "
			 "(format: text has no such limit)";
		fail(m, CORE_EDATA);
		return;
	}
	if (start) {
		if (m->nlist == m->caplist) {
			size_t cap = m->caplist ? m->caplist * 2 : 8;
			md_list *g = realloc(m->list, cap * sizeof(*g));

			if (!g) {
				fail(m, CORE_ENOMEM);
				return;
			}
			m->list = g;
			m->caplist = cap;
		}
		m->list[m->nlist++] = (md_list){ .ol = !strcmp(tag, "ol"),
						 .num = numbering_start(a, n) };
	} else if (m->nlist && !--m->nlist)
		o(m, "\n");
}

static void item(ws_md *m, bool start)
{
	md_list dflt = { .ol = false }, *li;
	bool parent_ol = false, parent = false;
	char num[32];

	core_buf_reset(&m->list_code_indent);
	pbr(m);
	if (!start)
		return;
	li = m->nlist ? &m->list[m->nlist - 1] : &dflt;
	for (size_t i = 0; i < m->nlist; i++) {
		fail(m, core_buf_puts(&m->list_code_indent, parent && parent_ol ? "   " : "  "));
		parent = true;
		parent_ol = m->list[i].ol;
	}
	o(m, m->list_code_indent.data ? m->list_code_indent.data : "");
	if (!li->ol) {
		fail(m, core_buf_puts(&m->list_code_indent, "  "));
		o(m, "* ");
	} else {
		li->num++;
		fail(m, core_buf_puts(&m->list_code_indent, "   "));
		snprintf(num, sizeof(num), "%lld. ", li->num);
		o(m, num);
	}
	m->start = true;
}

static void table(ws_md *m, const char *tag, bool start)
{
	bool cell = !strcmp(tag, "td") || !strcmp(tag, "th");

	if (!strcmp(tag, "table") && start)
		m->table_start = true;
	if (cell && start) {
		if (m->split_next_td)
			o(m, "| ");
		m->split_next_td = true;
	}
	if (!strcmp(tag, "tr") && start)
		m->td_count = 0;
	if (!strcmp(tag, "tr") && !start) {
		m->split_next_td = false;
		soft_br(m);
	}
	if (!strcmp(tag, "tr") && !start && m->table_start) {
		core_buf b = { 0 };

		for (long i = 0; i < m->td_count; i++)
			fail(m, core_buf_puts(&b, i ? "|---" : "---"));
		o(m, b.data ? b.data : "");
		core_buf_release(&b);
		soft_br(m);
		m->table_start = false;
	}
	if (cell && start)
		m->td_count++;
}

/* html2text's handle_tag, its checks in its order. */
static void tag(ws_md *m, const char *t, const ws_attr *a, size_t n, bool start)
{
	static const char *const no_link_start[] = { "p", "div", "style", "dl", "dt", "img", NULL };
	static const char *const quiet_tags[] = { "head", "style", "script", NULL };
	static const char *const em[] = { "em", "i", "u", NULL };
	static const char *const strong[] = { "strong", "b", NULL };
	static const char *const strike[] = { "del", "strike", "s", NULL };
	static const char *const code[] = { "kbd", "code", "tt", NULL };
	static const char *const cells[] = { "table", "tr", "td", "th", NULL };
	bool stop = false;

	snprintf(m->current_tag, sizeof(m->current_tag), "%s", t);
	if (start && m->maybe_auto && !has(no_link_start, t))
		start_link(m);
	if (hn(t)) {
		heading(m, hn(t), start, &stop);
		if (stop)
			return;
	}
	if ((!strcmp(t, "p") || !strcmp(t, "div")) && !m->nastack && !m->split_next_td)
		p(m);
	if (!strcmp(t, "br") && start)
		o(m, m->blockquote > 0 ? "  \n> " : "  \n");
	if (!strcmp(t, "hr") && start) {
		p(m);
		o(m, "* * *");
		p(m);
	}
	if (has(quiet_tags, t))
		m->quiet += start ? 1 : -1;
	if (!strcmp(t, "style"))
		m->style += start ? 1 : -1;
	if (!strcmp(t, "body"))
		m->quiet = 0;
	if (!strcmp(t, "blockquote")) {
		if (start) {
			p(m);
			o_n(m, "> ", 2, false, FORCE_YES);
			m->start = true;
			m->blockquote++;
		} else {
			m->blockquote--;
			p(m);
		}
	}
	if (has(em, t))
		emphasis(m, "_", start, m->pd_set && !ascii_ws_or_punct(m->pd_last));
	if (has(strong, t))
		emphasis(m, "**", start, m->pd_set && m->pd_last == '*');
	if (has(strike, t))
		emphasis(m, "~~", start, m->pd_set && m->pd_last == '~');
	if (has(code, t) && !m->pre) {
		o(m, "`");
		m->code = !m->code;
	}
	if (!strcmp(t, "abbr"))
		abbr(m, a, n, start);
	if (!strcmp(t, "q")) {
		o(m, "\"");
		m->quote = !m->quote;
	}
	if (!strcmp(t, "a")) {
		if (start)
			link_start(m, a, n);
		else
			link_end(m);
	}
	if (!strcmp(t, "img") && start)
		image(m, a, n);
	if (!strcmp(t, "dl") && start)
		p(m);
	if ((!strcmp(t, "dt") || !strcmp(t, "dd")) && !start)
		pbr(m);
	if (!strcmp(t, "dd") && start)
		o(m, "    ");
	if (!strcmp(t, "ol") || !strcmp(t, "ul")) {
		lists(m, t, a, n, start);
		m->last_was_list = true;
	} else
		m->last_was_list = false;
	if (!strcmp(t, "li"))
		item(m, start);
	if (has(cells, t))
		table(m, t, start);
	if (!strcmp(t, "pre")) {
		if (start) {
			m->startpre = true;
			m->pre = true;
			core_buf_reset(&m->pre_indent);
		} else
			m->pre = false;
		p(m);
	}
}

/* -------------------------------------------------------------- public */

ws_md *ws__md_new(void)
{
	ws_md *m = calloc(1, sizeof(*m));

	if (m) {
		m->start = true;
		m->br_toggle = "";
	}
	return m;
}

void ws__md_free(ws_md *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nastack; i++) {
		free(m->astack[i].href);
		free(m->astack[i].title);
	}
	for (size_t i = 0; i < m->nabbrs; i++) {
		free(m->abbrs[i].abbr);
		free(m->abbrs[i].def);
	}
	free(m->abbrs);
	free(m->astack);
	free(m->list);
	free(m->maybe_auto);
	free(m->abbr_title);
	core_buf_release(&m->out);
	core_buf_release(&m->pre_indent);
	core_buf_release(&m->list_code_indent);
	core_buf_release(&m->abbr_data);
	free(m);
}

void ws__md_limit(ws_md *m, size_t max_out)
{
	m->max_out = max_out;
}

const char *ws__md_why(const ws_md *m)
{
	return m->why;
}

/* The error so far, or the output's limit passed (checked after each
 * event: one event adds at most a line's indentation and its data). */
static int checked(ws_md *m)
{
	if (!m->err && m->max_out && m->out.len > m->max_out) {
		m->why = "the page's markdown is larger than its limit (16 times "
			 "the page, at least 1 MiB)";
		fail(m, CORE_EDATA);
	}
	return m->err;
}

int ws__md_start(ws_md *m, const char *t, const ws_attr *attrs, size_t n)
{
	tag(m, t, attrs, n, true);
	return checked(m);
}

int ws__md_end(ws_md *m, const char *t)
{
	tag(m, t, NULL, 0, false);
	return checked(m);
}

int ws__md_finish(ws_md *m, core_buf *dst)
{
	pbr(m);
	o_n(m, "", 0, false, FORCE_END);
	if (checked(m))
		return m->err;
	return core_buf_append(dst, m->out.data ? m->out.data : "", m->out.len);
}
