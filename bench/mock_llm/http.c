/*
 * http.c — HTTP/1.1 request heads (see http.h).
 *
 * Accepted: "METHOD SP target SP HTTP/1.x CRLF", header lines "name: value
 * CRLF", an empty line. Header folding, chunked bodies and HTTP/2 are not.
 * A request without Content-Length has an empty body.
 */
#include "http.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

int mock_span_eq(const char *buf, mock_span sp, const char *s)
{
	return strlen(s) == sp.len && memcmp(buf + sp.off, s, sp.len) == 0;
}

char *mock_span_dup(const char *buf, mock_span sp)
{
	return mock_xstrndup(buf + sp.off, sp.len);
}

static const char *find_crlf(const char *p, const char *end)
{
	for (; p + 1 < end; p++)
		if (p[0] == '\r' && p[1] == '\n')
			return p;
	return NULL;
}

static int parse_request_line(const char *buf, const char *eol,
			      mock_http_req *req)
{
	const char *sp1 = memchr(buf, ' ', (size_t)(eol - buf));
	const char *sp2, *q, *ver;

	if (!sp1 || sp1 == buf)
		return 400;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
	if (!sp2 || sp2 == sp1 + 1 || sp1[1] != '/')
		return 400;
	ver = sp2 + 1;
	if (eol - ver != 8 || memcmp(ver, "HTTP/1.", 7) != 0)
		return eol - ver >= 5 && memcmp(ver, "HTTP/", 5) == 0 ? 505 : 400;
	if (ver[7] != '0' && ver[7] != '1')
		return 505;
	req->keep_alive = ver[7] == '1';
	req->method = (mock_span){ 0, (size_t)(sp1 - buf) };
	q = memchr(sp1 + 1, '?', (size_t)(sp2 - sp1 - 1));
	req->path.off = (size_t)(sp1 + 1 - buf);
	req->path.len = (size_t)((q ? q : sp2) - (sp1 + 1));
	if (q)
		req->query = (mock_span){ (size_t)(q + 1 - buf),
					  (size_t)(sp2 - q - 1) };
	return 0;
}

/* Case-insensitive search for a comma-separated token in a header value. */
static int has_token(const char *v, size_t n, const char *tok)
{
	size_t tl = strlen(tok);

	for (size_t i = 0; i + tl <= n; i++)
		if (strncasecmp(v + i, tok, tl) == 0 &&
		    (i == 0 || v[i - 1] == ' ' || v[i - 1] == ',') &&
		    (i + tl == n || v[i + tl] == ' ' || v[i + tl] == ','))
			return 1;
	return 0;
}

static int parse_length(const char *v, size_t n, size_t *out)
{
	size_t x = 0;

	if (n == 0)
		return 400;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return 400;
		if (x > MOCK_HTTP_MAX_BODY)
			return 413;
		x = x * 10 + (size_t)(v[i] - '0');
	}
	if (x > MOCK_HTTP_MAX_BODY)
		return 413;
	*out = x;
	return 0;
}

static int parse_header(const char *buf, const char *line, const char *eol,
			mock_http_req *req)
{
	const char *colon = memchr(line, ':', (size_t)(eol - line));
	const char *v, *ve;
	size_t nl, vn;

	if (!colon || colon == line)
		return 400;
	nl = (size_t)(colon - line);
	v = colon + 1;
	ve = eol;
	while (v < ve && (*v == ' ' || *v == '\t'))
		v++;
	while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
		ve--;
	vn = (size_t)(ve - v);
#define IS(name) (nl == sizeof(name) - 1 && strncasecmp(line, name, nl) == 0)
	if (IS("content-length"))
		return parse_length(v, vn, &req->body_len);
	if (IS("transfer-encoding"))
		return 411;
	if (IS("connection")) {
		if (has_token(v, vn, "close"))
			req->keep_alive = 0;
		else if (has_token(v, vn, "keep-alive"))
			req->keep_alive = 1;
	} else if (IS("expect")) {
		req->expect_continue = has_token(v, vn, "100-continue");
	} else if (IS("authorization")) {
		req->authorization = (mock_span){ (size_t)(v - buf), vn };
	} else if (IS("api-key")) {
		req->api_key = (mock_span){ (size_t)(v - buf), vn };
	}
#undef IS
	return 0;
}

int mock_http_parse(const char *buf, size_t len, mock_http_req *req)
{
	const char *end = buf + len, *p, *eol;
	int rc;

	memset(req, 0, sizeof(*req));
	eol = find_crlf(buf, end);
	if (!eol)
		return len > MOCK_HTTP_MAX_HEAD ? 431 : MOCK_HTTP_INCOMPLETE;
	rc = parse_request_line(buf, eol, req);
	if (rc)
		return rc;
	for (p = eol + 2;; p = eol + 2) {
		eol = find_crlf(p, end);
		if (!eol)
			return len > MOCK_HTTP_MAX_HEAD ? 431 : MOCK_HTTP_INCOMPLETE;
		if (eol == p)
			break;
		rc = parse_header(buf, p, eol, req);
		if (rc)
			return rc;
	}
	req->head_len = (size_t)(eol + 2 - buf);
	return req->head_len > MOCK_HTTP_MAX_HEAD ? 431 : 0;
}

const char *mock_http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 402: return "Payment Required";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 411: return "Length Required";
	case 413: return "Payload Too Large";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	case 529: return "Site Is Overloaded";
	}
	return "Unknown";
}

void mock_http_head(mock_buf *out, int status, size_t content_length,
		    int close, const char *extra)
{
	mock_buf_addf(out, "HTTP/1.1 %d %s\r\n"
		      "Content-Type: application/json\r\n"
		      "Content-Length: %zu\r\n%s%s\r\n",
		      status, mock_http_reason(status), content_length,
		      close ? "Connection: close\r\n" : "",
		      extra ? extra : "");
}
