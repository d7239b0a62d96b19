/*
 * web_scrape_internal.h — what the files of the `web_scrape` transform
 * share (docs/settings.md, "web_scrape"); tests/unit/test_plugins_web_scrape*.c
 * include it. Not a published API.
 *
 *   web_scrape.c          options, process(): one row's fetch, extraction,
 *                         fingerprint and output fields
 *   web_http.c            the `http` block (shared with blob_fetch) and the
 *                         executor client it opens
 *   web_scrape_fetch.c    one URL's fetch: checks, the pinned GETs through
 *                         the HTTP executor, redirects hop by hop, the calls
 *                         recorded
 *   web_scrape_net.c      addresses and networks: allowed_hosts and the
 *                         blocked ranges (ELSPETH's SSRF rules)
 *   web_scrape_text.c     the body decoded to text, whitespace as Python
 *                         sees it, the fingerprint, the text format
 *   web_scrape_md.c       HTML to markdown, as html2text does it
 *   web_scrape_html.c     libxml2: parsing, stripping elements, the walk
 *
 * Everything here is reentrant: the options are read-only after open,
 * and each call works on its own buffers.
 */
#ifndef ELSPETH_WEB_SCRAPE_INTERNAL_H
#define ELSPETH_WEB_SCRAPE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "plugins/http/http.h"
#include "plugins/plugins.h"

#define WS_MAX_REDIRECTS 10   /* httpx's default, which ELSPETH keeps */

/* ------------------------------------------------------------- networks */

/* An IPv4 (4 bytes) or IPv6 (16 bytes) address. */
typedef struct ws_addr {
	int family;                /* AF_INET or AF_INET6 */
	uint8_t b[16];
} ws_addr;

/* A network: the address with its host bits cleared, and the prefix. */
typedef struct ws_net {
	ws_addr a;
	unsigned prefix;
} ws_net;

/* Parses an address as Python's ipaddress.ip_address does (dotted quad
 * without leading zeros, or IPv6 text without a zone). false: invalid. */
bool ws__addr_parse(const char *s, ws_addr *out);
/* The address as Python prints it (IPv6 compressed, RFC 5952). */
void ws__addr_format(const ws_addr *a, char *out, size_t n);
/* Parses a network as ipaddress.ip_network(s, strict=False): ADDR,
 * ADDR/PREFIX, or IPv4 ADDR/NETMASK or ADDR/HOSTMASK; host bits are
 * cleared, a lone address is /32 or /128. false: invalid. */
bool ws__net_parse(const char *s, ws_net *out);
/* "10.0.0.0/8": as Python prints it. */
void ws__net_format(const ws_net *n, char *out, size_t sz);
/* Whether a is in n (an IPv4 address is in no IPv6 network, and the
 * other way round, as in Python). */
bool ws__net_contains(const ws_net *n, const ws_addr *a);
/* Whether a may be fetched, ELSPETH's three tiers: an always-blocked
 * range refuses it whatever is allowed (cloud metadata, link-local,
 * broadcast, multicast); else an allowed network admits it; else a
 * blocked range (private, loopback, CGNAT, IPv4-mapped, ...) refuses it.
 * When refused, msg says why in ELSPETH's words ("Blocked IP range:
 * 10.1.2.3 in 10.0.0.0/8"). */
bool ws__addr_allowed(const ws_addr *a, const ws_net *allowed, size_t n,
		      char *msg, size_t msgsz);

/* ----------------------------------------------------------------- text */

/* Python's str.isspace(): the characters \s matches in a str pattern. */
bool ws__isspace(uint32_t cp);
/* Decodes a body to UTF-8 as httpx's response.text does: the charset of
 * the Content-Type (content_type may be NULL), else UTF-8; bytes that are
 * not valid in it become U+FFFD (one per maximal invalid sequence, as
 * Python's "replace"). A charset iconv does not know is read as UTF-8.
 * Appends to out; 0 or CORE_ENOMEM. */
int ws__decode(const char *body, size_t len, const char *content_type,
	       core_buf *out);
/* The charset parameter of a Content-Type, lowercased, into out ("" when
 * none). */
void ws__charset(const char *content_type, char *out, size_t n);
/* Python's s.strip() and re.sub(r"\s+", " ", s) on UTF-8 text: appends
 * the result to out. */
int ws__strip_append(core_buf *out, const char *s, size_t n);
int ws__collapse_append(core_buf *out, const char *s, size_t n);
/* ELSPETH's fingerprint: SHA-256 (hex) of the UTF-8 text, in `content`
 * mode after collapsing whitespace runs to one space and stripping. */
int ws__fingerprint(const char *s, size_t n, bool content_mode,
		    char hex[CORE_SHA256_HEX_LEN + 1]);

/* ------------------------------------------------------------ extraction */

typedef enum ws_format {
	WS_FORMAT_MARKDOWN = 0,
	WS_FORMAT_TEXT,
	WS_FORMAT_RAW,
	WS_FORMAT_LAST
} ws_format;

/* One event of a document's walk, as Python's HTMLParser reports
 * BeautifulSoup's serialisation of it to html2text: an element's start
 * (with its attributes) and end, and text (`special`: one of the three
 * characters BeautifulSoup writes as an entity, &, < or >, each reported
 * alone). */
typedef struct ws_attr {
	const char *name, *value; /* value "" for an attribute without one */
} ws_attr;

typedef struct ws_md ws_md;

/* html2text (2025.4.15, ELSPETH's settings: body_width 0, links and
 * images inline) as a state machine fed one event at a time
 * (web_scrape_md.c). */
ws_md *ws__md_new(void);
void ws__md_free(ws_md *m);
/* Lists nest at most WS_MD_MAX_LISTS deep, and the markdown is at most
 * max_out bytes (0: no limit): past either, the calls below return
 * CORE_EDATA and ws__md_why says which. */
#define WS_MD_MAX_LISTS 64
void ws__md_limit(ws_md *m, size_t max_out);
/* The markdown a page of page_len bytes may become: 16 times the page,
 * at least 1 MiB (linear in the page; ADR 0021, amendment). */
static inline size_t ws__md_max_out(size_t page_len)
{
	return page_len > (1u << 20) / 16 ? 16 * page_len : 1u << 20;
}
const char *ws__md_why(const ws_md *m);
int ws__md_start(ws_md *m, const char *tag, const ws_attr *attrs, size_t n);
int ws__md_end(ws_md *m, const char *tag);
int ws__md_data(ws_md *m, const char *s, size_t len, bool special);
/* Ends the document and appends the markdown to out. */
int ws__md_finish(ws_md *m, core_buf *out);

/* Extracts a page's content (UTF-8 HTML) as ELSPETH does: raw is the text
 * as it is; otherwise it is parsed with libxml2's HTML parser, the
 * elements named in strip[0..nstrip) are removed with what they hold,
 * and markdown is html2text's rendering, text BeautifulSoup's
 * get_text(" ", strip=True). Appends to out; 0, CORE_ENOMEM, or CORE_EDATA
 * when the parser gives up (err says so). Call ws__html_init once first. */
void ws__html_init(void);
int ws__extract(const char *html, size_t len, ws_format f,
		const char *const *strip, size_t nstrip, core_buf *out,
		core_err *err);

/* ----------------------------------------------------------------- fetch */

/* What a fetch needs from the transform's options. */
typedef struct ws_fetch_cfg {
	http_client *http;
	struct curl_slist *headers;  /* the request headers sent */
	json_t *headers_json;        /* the same, as recorded */
	const ws_net *allowed;
	size_t nallowed;
	/* The largest answer kept, in bytes (0: the executor's own cap):
	 * past it the fetch fails, reason body_too_large (blob_fetch). */
	size_t max_body;
} ws_fetch_cfg;

/* A fetch's outcome. The strings are malloc'd; ws__fetch_release. */
typedef struct ws_fetch {
	long status;                 /* the final answer's (0: none) */
	core_buf body;               /* its body, as received */
	char *content_type;          /* its Content-Type, or NULL */
	char *final_url;             /* the URL of the final answer */
	char ip[64];                 /* the address it came from */
	/* on failure: ELSPETH's reason ("validation_failed", "api_error")
	 * and error type ("SSRFBlockedError", "NotFoundError", ...) */
	const char *reason, *error_type;
} ws_fetch;

void ws__fetch_release(ws_fetch *f);

/* The `http` block of web_scrape (ELSPETH's WebScrapeHTTPConfig) and of
 * blob_fetch (0.7.1's BlobFetchHTTPConfig), parsed, and the executor
 * client it opens (web_http.c). */
typedef struct ws_http {
	ws_net *allowed;
	http_cfg cfg;
	ws_fetch_cfg fetch;
} ws_http;

typedef struct ws_http_spec {
	const char *reason_key;     /* scraping_reason | fetch_reason */
	const char *reason_header;  /* X-Scraping-Reason | X-Fetch-Reason */
	const char *upstream;       /* the executor's and rate_limit's name */
	bool max_body;              /* takes max_body_bytes (10 MiB), ASCII headers */
} ws_http_spec;

/* Parses o's `http` (unknown keys refused, errors at file:line:col) and
 * opens the client: at most pool fetches at once (times the run's
 * capacity share). ws__http_close frees it, also after a failure. */
int ws__http_open(ws_http *h, const ws_http_spec *spec, const plg_env *env,
		  const core_node *o, long long pool, core_err *err);
void ws__http_close(ws_http *h);
/* A fetch's row error in ELSPETH's words, "REASON: TYPE: " before err's
 * message; not retried. Returns CORE_EDATA. */
int ws__row_error(core_err *err, const char *reason, const char *type);
/* The row's URL: the field there (else validation_failed: KeyError) and
 * a string (else validation_failed: TypeError). */
int ws__row_url(const json_t *row, const char *field, const char **url, core_err *err);
/* Fetches url for a row: the host resolved once and every address
 * checked against the allowed networks, the GET pinned to the address
 * checked, each redirect (up to WS_MAX_REDIRECTS) checked the same way
 * before it is followed, every request recorded as a call. 0 with the
 * final answer in *f (a 2xx, or another status ELSPETH keeps); a row
 * error (CORE_EDATA, err->msg ELSPETH's message, f->reason and
 * f->error_type set); CORE_ESTOPPED when the run is stopping; CORE_ENOMEM.
 * Blocks the calling thread (plg_blocking). */
int ws__fetch(const ws_fetch_cfg *cfg, const char *url, plg_ctx *ctx,
	      ws_fetch *f, core_err *err);

#endif /* ELSPETH_WEB_SCRAPE_INTERNAL_H */
