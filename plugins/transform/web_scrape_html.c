/*
 * web_scrape_html.c — a page parsed with libxml2's HTML parser, its
 * stripped elements skipped, walked for markdown or text
 * (web_scrape_internal.h, "extraction").
 *
 * ELSPETH parses with BeautifulSoup ("html.parser"), removes the
 * strip_elements, and hands html2text the tree serialised again; libxml2
 * parses the same way for well-formed pages (it repairs broken ones by
 * HTML's rules, where BeautifulSoup nests what it is given). The walk
 * reports what Python's HTMLParser would report reading that
 * serialisation: text runs up to the next markup (text either side of a
 * removed element is one run), each of &, < and > alone (BeautifulSoup
 * writes them as entities), whitespace-only strings shortened as
 * BeautifulSoup does, and no comments, doctypes or instructions.
 */
#include <string.h>
#include <strings.h>

#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "plugins/transform/web_scrape_internal.h"

/* libxml2: tolerant, silent, offline, reading the bytes as the UTF-8
 * they are (a <meta charset> must not make it decode them again), and
 * with no limit on nesting but memory (the page is at most 16 MiB): its
 * default of 256 levels would cut a deeper page short. */
#define PARSE_OPTS (HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | \
		    HTML_PARSE_NONET | HTML_PARSE_IGNORE_ENC | HTML_PARSE_COMPACT | \
		    XML_PARSE_HUGE)

void ws__html_init(void)
{
	xmlInitParser();
}

typedef struct walk {
	const char *const *strip;
	size_t nstrip;
	ws_format f;
	ws_md *md;
	core_buf run;       /* markdown: text waiting for the next markup */
	core_buf text;      /* text: the strings joined */
	unsigned hidden;    /* text: inside script, style, template, rt, rp */
	unsigned keep_ws;   /* inside pre or textarea */
	/* html, head, body written in the page: those libxml2 implied are
	 * none of BeautifulSoup's, and html2text is not told of them */
	bool written[3];
	int rc;
} walk;

static const char *const frame[] = { "html", "head", "body" };

/* Whether the page has a start tag <NAME (NAME then a space, '>' or
 * '/'), any case. */
static bool has_tag(const char *s, size_t n, const char *name)
{
	size_t k = strlen(name);

	for (const char *p = s; (p = memchr(p, '<', n - (size_t)(p - s))); p++)
		if ((size_t)(s + n - p) > k + 1 && !strncasecmp(p + 1, name, k) &&
		    strchr(" \t\r\n\f>/", p[k + 1]))
			return true;
	return false;
}

/* An html, head or body element libxml2 added. */
static bool implied(const walk *w, const xmlNode *n)
{
	for (int i = 0; i < 3; i++)
		if (!strcmp((const char *)n->name, frame[i]))
			return !w->written[i];
	return false;
}

static bool stripped(const walk *w, const xmlNode *n)
{
	for (size_t i = 0; i < w->nstrip; i++)
		if (!strcmp((const char *)n->name, w->strip[i]))
			return true;
	return false;
}

/* BeautifulSoup's get_text leaves out the strings of these (its Script,
 * Stylesheet, TemplateString and ruby string types). */
static bool hides_text(const xmlNode *n)
{
	static const char *const names[] = { "script", "style", "template", "rt", "rp", NULL };

	for (const char *const *p = names; *p; p++)
		if (!strcmp((const char *)n->name, *p))
			return true;
	return false;
}

/* Markdown: the pending text run, as HTMLParser reports it. */
static void flush(walk *w)
{
	const char *s = w->run.data;
	size_t n = w->run.len, i = 0, start = 0;

	for (; i < n && !w->rc; i++)
		if (s[i] == '&' || s[i] == '<' || s[i] == '>') {
			if (i > start)
				w->rc = ws__md_data(w->md, s + start, i - start, false);
			if (!w->rc)
				w->rc = ws__md_data(w->md, s + i, 1, true);
			start = i + 1;
		}
	if (!w->rc && n > start)
		w->rc = ws__md_data(w->md, s + start, n - start, false);
	core_buf_reset(&w->run);
}

/* BeautifulSoup keeps a string of ASCII whitespace alone only inside pre
 * and textarea: elsewhere it becomes "\n" if it holds one, else " ". */
static const char *bs4_blank(const walk *w, const char *s, size_t *len)
{
	if (w->keep_ws || strspn(s, " \t\n\f\r") != *len)
		return s;
	*len = 1;
	return memchr(s, '\n', strlen(s)) ? "\n" : " ";
}

static void on_text(walk *w, const xmlNode *n)
{
	const char *s = (const char *)n->content;
	size_t len = s ? strlen(s) : 0;

	if (!len)
		return;
	s = bs4_blank(w, s, &len);
	if (w->f == WS_FORMAT_MARKDOWN) {
		if (core_buf_append(&w->run, s, len))
			w->rc = CORE_ENOMEM;
		return;
	}
	if (w->hidden)
		return;
	{
		size_t before = w->text.len;

		if (before && core_buf_putc(&w->text, ' ')) {
			w->rc = CORE_ENOMEM;
			return;
		}
		if (ws__strip_append(&w->text, s, len)) {
			w->rc = CORE_ENOMEM;
			return;
		}
		/* an empty string is left out, separator and all */
		if (w->text.len == before + (before ? 1 : 0)) {
			w->text.len = before;
			w->text.data[before] = '\0';
		}
	}
}

/* An element's attributes, as HTMLParser hands them to html2text. */
#define MAX_ATTRS 256 /* an element's attributes reported, at most */

static bool keeps_ws(const xmlNode *n)
{
	return !strcmp((const char *)n->name, "pre") || !strcmp((const char *)n->name, "textarea");
}

static void on_start(walk *w, xmlNode *n)
{
	ws_attr a[MAX_ATTRS];
	xmlChar *v[MAX_ATTRS];
	size_t k = 0;

	w->keep_ws += keeps_ws(n);
	if (w->f != WS_FORMAT_MARKDOWN) {
		w->hidden += hides_text(n);
		return;
	}
	if (implied(w, n))
		return;
	flush(w);
	for (xmlAttr *p = n->properties; p && k < MAX_ATTRS && !w->rc; p = p->next) {
		v[k] = xmlNodeListGetString(n->doc, p->children, 1);
		a[k] = (ws_attr){ .name = (const char *)p->name,
				  .value = v[k] ? (const char *)v[k] : "" };
		k++;
	}
	if (!w->rc)
		w->rc = ws__md_start(w->md, (const char *)n->name, a, k);
	while (k)
		xmlFree(v[--k]);
}

static void on_end(walk *w, const xmlNode *n)
{
	w->keep_ws -= keeps_ws(n);
	if (w->f != WS_FORMAT_MARKDOWN) {
		w->hidden -= hides_text(n);
		return;
	}
	if (implied(w, n))
		return;
	flush(w);
	if (!w->rc)
		w->rc = ws__md_end(w->md, (const char *)n->name);
}

/* Depth first, without recursion (a page may nest deeply). A stripped
 * element is skipped with what it holds. */
static void walk_doc(walk *w, xmlDoc *doc)
{
	xmlNode *top = (xmlNode *)doc, *n = doc->children;

	while (n && !w->rc) {
		bool down = false;

		if (n->type == XML_ELEMENT_NODE && !stripped(w, n)) {
			on_start(w, n);
			if (n->children) {
				n = n->children;
				down = true;
			} else
				on_end(w, n);
		} else if (n->type == XML_TEXT_NODE || n->type == XML_CDATA_SECTION_NODE)
			on_text(w, n);
		else if (n->type == XML_COMMENT_NODE || n->type == XML_PI_NODE)
			if (w->f == WS_FORMAT_MARKDOWN)
				flush(w); /* markup: ends a text run */
		if (down)
			continue;
		while (n && !n->next && !w->rc) {
			n = n->parent;
			if (!n || n == top)
				return;
			on_end(w, n);
		}
		if (n)
			n = n->next;
	}
}

/* Parses the page; *doc NULL for a blank one (libxml2 makes no
 * document of it). CORE_EDATA when libxml2 gives up or stops early. */
static int parse(const char *html, size_t len, xmlDoc **doc, core_err *err);

/* Whether s holds only ASCII whitespace (what libxml2 makes no document
 * of). */
static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr(" \t\r\n\f", s[i]) || !s[i])
			return false;
	return true;
}

static int parse(const char *html, size_t len, xmlDoc **doc, core_err *err)
{
	htmlParserCtxtPtr ctxt = htmlNewParserCtxt();
	bool halted;

	if (!ctxt)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	*doc = htmlCtxtReadMemory(ctxt, html, (int)len, NULL, "UTF-8", PARSE_OPTS);
	halted = ctxt->instate == XML_PARSER_EOF && ctxt->disableSAX;
	htmlFreeParserCtxt(ctxt);
	if (*doc && !halted)
		return 0;
	if (*doc) {
		xmlFreeDoc(*doc);
		*doc = NULL;
		return core_err_set(err, CORE_EDATA, "libxml2 stopped parsing the page before its end");
	}
	if (blank(html, len))
		return 0;
	return core_err_set(err, CORE_EDATA, "libxml2 could not parse the page as HTML");
}

int ws__extract(const char *html, size_t len, ws_format f,
		const char *const *strip, size_t nstrip, core_buf *out,
		core_err *err)
{
	walk w = { .strip = strip, .nstrip = nstrip, .f = f };
	xmlDoc *doc = NULL;
	int rc;

	if (f == WS_FORMAT_RAW)
		return core_buf_append(out, html, len) ? core_err_set(err, CORE_ENOMEM, "out of memory") : 0;
	if (len > (size_t)INT32_MAX)
		return core_err_set(err, CORE_EDATA, "the page is too large to parse");
	if (len && (rc = parse(html, len, &doc, err)))
		return rc;
	for (int i = 0; i < 3; i++)
		w.written[i] = has_tag(html, len, frame[i]);
	if (f == WS_FORMAT_MARKDOWN && !(w.md = ws__md_new()))
		w.rc = CORE_ENOMEM;
	else if (w.md)
		ws__md_limit(w.md, ws__md_max_out(len));
	if (doc && !w.rc)
		walk_doc(&w, doc);
	if (f == WS_FORMAT_MARKDOWN && !w.rc) {
		flush(&w);
		if (!w.rc)
			w.rc = ws__md_finish(w.md, out);
	} else if (!w.rc && core_buf_append(out, w.text.data ? w.text.data : "", w.text.len))
		w.rc = CORE_ENOMEM;
	if (w.rc == CORE_EDATA && w.md && ws__md_why(w.md))
		core_err_set(err, w.rc, "%s", ws__md_why(w.md));
	else if (w.rc)
		core_err_set(err, w.rc, "out of memory");
	ws__md_free(w.md);
	core_buf_release(&w.run);
	core_buf_release(&w.text);
	if (doc)
		xmlFreeDoc(doc);
	return w.rc;
}
