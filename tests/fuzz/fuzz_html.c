/*
 * fuzz_html.c — libFuzzer harness for web_scrape's HTML to markdown and
 * text (web_scrape_html.c, web_scrape_md.c).
 *
 * The first byte picks the format; the rest is the page. Checks the
 * converters' promises: they return 0 or CORE_EDATA (a page they refuse,
 * with a message), never anything else; what they write is valid UTF-8;
 * markdown stays within its limit (16 times the page, at least 1 MiB).
 */
#include <stdint.h>
#include <stdlib.h>

#include "plugins/transform/web_scrape_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const ws_format formats[] = { WS_FORMAT_MARKDOWN, WS_FORMAT_TEXT };
	core_buf page = { 0 }, out = { 0 };
	core_err err = { 0 };
	ws_format f;
	size_t limit;
	int rc;

	if (size < 1)
		return 0;
	f = formats[data[0] % 2];
	/* as web_scrape hands it over: decoded to UTF-8 text */
	if (ws__decode((const char *)data + 1, size - 1, "text/html", &page))
		abort();
	rc = ws__extract(page.data ? page.data : "", page.len, f, NULL, 0, &out, &err);
	if (rc && (rc != CORE_EDATA || !err.msg[0]))
		abort();
	if (!rc && !core_utf8_valid(out.data ? out.data : "", out.len))
		abort();
	limit = ws__md_max_out(page.len);
	if (f == WS_FORMAT_MARKDOWN && out.len > limit + 4096)
		abort();
	core_buf_release(&page);
	core_buf_release(&out);
	return 0;
}
