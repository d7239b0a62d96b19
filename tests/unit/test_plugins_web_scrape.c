/*
 * web_scrape's parts (plugins/transform/web_scrape_internal.h): networks
 * and ELSPETH's SSRF tiers, decoding, whitespace and fingerprints, and
 * the extraction against what ELSPETH's own extract_content made of the
 * same snippets (tests/fixtures/web_scrape/snippets.json, written by
 * tests/reference/web_scrape_snippets.py).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "plugins/transform/web_scrape_internal.h"

/* ------------------------------------------------------------- networks */

static ws_net net(const char *s)
{
	ws_net n;

	cr_assert(ws__net_parse(s, &n), "'%s' should parse", s);
	return n;
}

static ws_addr addr(const char *s)
{
	ws_addr a;

	cr_assert(ws__addr_parse(s, &a), "'%s' should parse", s);
	return a;
}

static void net_is(const char *in, const char *want)
{
	char got[80];
	ws_net n = net(in);

	ws__net_format(&n, got, sizeof(got));
	cr_assert_str_eq(got, want, "%s", in);
}

Test(web_scrape_net, networks_parse_as_python_strict_false)
{
	net_is("10.0.0.0/8", "10.0.0.0/8");
	net_is("10.1.2.3/8", "10.0.0.0/8");        /* host bits cleared */
	net_is("127.0.0.1", "127.0.0.1/32");       /* a lone address */
	net_is("::1", "::1/128");
	net_is("fe80::1234/10", "fe80::/10");
	net_is("192.168.7.9/255.255.0.0", "192.168.0.0/16"); /* netmask */
	net_is("192.168.7.9/0.0.0.255", "192.168.7.0/24");   /* hostmask */
	net_is("0.0.0.0/0", "0.0.0.0/0");
	net_is("::/0", "::/0");
	net_is("10.0.0.0/08", "10.0.0.0/8");
}

Test(web_scrape_net, bad_networks_are_refused)
{
	static const char *const bad[] = { "", "10.0.0.0/33", "::/129", "10.0.0.256",
		"010.0.0.1", "1.2.3", "example.com", "10.0.0.0/", "10.0.0.0/-1",
		"10.0.0.0/255.0.255.0", "::1/ffff::", "fe80::1%eth0", "10.0.0.0/8/8", NULL };
	ws_net n;

	for (const char *const *b = bad; *b; b++)
		cr_assert_not(ws__net_parse(*b, &n), "'%s' should be refused", *b);
}

Test(web_scrape_net, families_never_mix)
{
	ws_net v4all = net("0.0.0.0/0"), v6all = net("::/0");
	ws_addr a4 = addr("8.8.8.8"), mapped = addr("::ffff:8.8.8.8");

	cr_assert(ws__net_contains(&v4all, &a4));
	cr_assert_not(ws__net_contains(&v6all, &a4));
	cr_assert_not(ws__net_contains(&v4all, &mapped));
	cr_assert(ws__net_contains(&v6all, &mapped));
}

static void refused(const char *ip, const ws_net *allowed, size_t n, const char *want)
{
	char msg[256] = "";
	ws_addr a = addr(ip);

	cr_assert_not(ws__addr_allowed(&a, allowed, n, msg, sizeof(msg)), "%s allowed", ip);
	cr_assert_str_eq(msg, want);
}

static void allowed(const char *ip, const ws_net *nets, size_t n)
{
	char msg[256] = "";
	ws_addr a = addr(ip);

	cr_assert(ws__addr_allowed(&a, nets, n, msg, sizeof(msg)), "%s refused: %s", ip, msg);
}

Test(web_scrape_net, public_only_refuses_private_ranges_in_elspeths_words)
{
	refused("10.1.2.3", NULL, 0, "Blocked IP range: 10.1.2.3 in 10.0.0.0/8");
	refused("127.0.0.1", NULL, 0, "Blocked IP range: 127.0.0.1 in 127.0.0.0/8");
	refused("0.1.2.3", NULL, 0, "Blocked IP range: 0.1.2.3 in 0.0.0.0/8");
	refused("172.31.255.255", NULL, 0, "Blocked IP range: 172.31.255.255 in 172.16.0.0/12");
	refused("192.168.1.1", NULL, 0, "Blocked IP range: 192.168.1.1 in 192.168.0.0/16");
	refused("100.64.0.1", NULL, 0, "Blocked IP range: 100.64.0.1 in 100.64.0.0/10");
	refused("::1", NULL, 0, "Blocked IP range: ::1 in ::1/128");
	refused("fd00::5", NULL, 0, "Blocked IP range: fd00::5 in fc00::/7");
	refused("::ffff:127.0.0.1", NULL, 0, "Blocked IP range: ::ffff:127.0.0.1 in ::ffff:0:0/96");
	refused("169.254.169.254", NULL, 0, "Always-blocked IP range: 169.254.169.254 in 169.254.0.0/16");
	refused("224.0.0.1", NULL, 0, "Always-blocked IP range: 224.0.0.1 in 224.0.0.0/4");
	refused("255.255.255.255", NULL, 0,
		"Always-blocked IP range: 255.255.255.255 in 255.255.255.255/32");
	allowed("8.8.8.8", NULL, 0);
	allowed("172.32.0.1", NULL, 0);
	allowed("2606:4700::1", NULL, 0);
}

Test(web_scrape_net, an_allowlist_admits_its_networks_and_nothing_always_blocked)
{
	ws_net lo[] = { net("127.0.0.1/32") };
	ws_net all[] = { net("0.0.0.0/0"), net("::/0") };

	allowed("127.0.0.1", lo, 1);
	refused("127.0.0.2", lo, 1, "Blocked IP range: 127.0.0.2 in 127.0.0.0/8");
	allowed("10.9.9.9", all, 2);
	allowed("::1", all, 2);
	allowed("::ffff:10.0.0.1", all, 2);
	refused("169.254.169.254", all, 2,
		"Always-blocked IP range: 169.254.169.254 in 169.254.0.0/16");
	refused("::ffff:169.254.169.254", all, 2,
		"Always-blocked IP range: ::ffff:169.254.169.254 in ::ffff:a9fe:0/112");
	refused("fe80::1", all, 2, "Always-blocked IP range: fe80::1 in fe80::/10");
	refused("ff02::1", all, 2, "Always-blocked IP range: ff02::1 in ff00::/8");
}

/* Every IPv6 form that reaches the host itself or an IPv4 address a
 * kernel or translator forwards to (ADR 0031): refused with what it
 * reaches; the same forms of a public IPv4 pass; an allowlist must admit
 * the IPv4 address a form embeds. */
Test(web_scrape_net, ipv6_forms_of_internal_addresses_are_refused)
{
	static const struct { const char *ip, *want; } forms[] = {
		{ "::", "Blocked IP range: :: in ::/128" },
		{ "::127.0.0.1", "Blocked IP range: ::127.0.0.1 in ::/96" },
		{ "::10.0.0.1", "Blocked IP range: ::10.0.0.1 in ::/96" },
		{ "::8.8.8.8", "Blocked IP range: ::8.8.8.8 in ::/96" },
		{ "64:ff9b::7f00:1", "Blocked IP range: 127.0.0.1 in 127.0.0.0/8"
				     " (embedded in 64:ff9b::7f00:1)" },
		{ "64:ff9b::192.168.0.1", "Blocked IP range: 192.168.0.1 in 192.168.0.0/16"
					  " (embedded in 64:ff9b::c0a8:1)" },
		{ "64:ff9b:1::7f00:1", "Blocked IP range: 64:ff9b:1::7f00:1 in 64:ff9b:1::/48" },
		{ "2002:7f00:1::", "Blocked IP range: 127.0.0.1 in 127.0.0.0/8"
				   " (embedded in 2002:7f00:1::)" },
		{ "2002:a00:1:5::1", "Blocked IP range: 10.0.0.1 in 10.0.0.0/8"
				     " (embedded in 2002:a00:1:5::1)" },
		{ "2002:a9fe:a9fe::", "Always-blocked IP range: 169.254.169.254 in 169.254.0.0/16"
				      " (embedded in 2002:a9fe:a9fe::)" },
		/* Teredo: server 127.0.0.1, client 8.8.8.8 (inverted) */
		{ "2001:0:7f00:1::f7f7:f7f7", "Blocked IP range: 127.0.0.1 in 127.0.0.0/8"
					      " (embedded in 2001:0:7f00:1::f7f7:f7f7)" },
		/* Teredo: server 8.8.8.8, client 127.0.0.1 */
		{ "2001:0:808:808::80ff:fffe", "Blocked IP range: 127.0.0.1 in 127.0.0.0/8"
					       " (embedded in 2001:0:808:808::80ff:fffe)" },
	};
	ws_net lo[] = { net("127.0.0.1/32") }, v6lo[] = { net("::1/128") };

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		refused(forms[i].ip, NULL, 0, forms[i].want);
	allowed("64:ff9b::808:808", NULL, 0);
	allowed("2002:808:808::1", NULL, 0);
	allowed("2001:0:808:808::f7f7:f7f7", NULL, 0);
	allowed("2001:db8::1", NULL, 0);
	/* the allowlist names what the connection reaches */
	allowed("2002:7f00:1::", lo, 1);
	allowed("::1", v6lo, 1); /* ::1 is itself, not 0.0.0.1 */
	allowed("64:ff9b::7f00:1", lo, 1);
	refused("2002:7f00:2::", lo, 1, "Blocked IP range: 127.0.0.2 in 127.0.0.0/8"
					" (embedded in 2002:7f00:2::)");
}

/* ----------------------------------------------------------------- text */

static char *decoded(const char *body, size_t len, const char *ct)
{
	core_buf b = { 0 };

	cr_assert_eq(ws__decode(body, len, ct, &b), 0);
	cr_assert(core_utf8_valid(b.data ? b.data : "", b.len));
	return b.data ? b.data : strdup("");
}

Test(web_scrape_text, bodies_decode_as_httpx_text)
{
	char *s;

	s = decoded("caf\xc3\xa9", 5, "text/html");
	cr_assert_str_eq(s, "caf\xc3\xa9");
	free(s);
	s = decoded("caf\xe9", 4, "text/html; charset=ISO-8859-1");
	cr_assert_str_eq(s, "caf\xc3\xa9");
	free(s);
	s = decoded("\x80", 1, "text/html; charset=\"windows-1252\"");
	cr_assert_str_eq(s, "\xe2\x82\xac", "the euro sign");
	free(s);
	s = decoded("a\xe9" "b", 3, "text/html; charset=no-such-charset");
	cr_assert_str_eq(s, "a\xef\xbf\xbd" "b", "an unknown charset reads as UTF-8");
	free(s);
}

Test(web_scrape_text, invalid_utf8_is_replaced_per_maximal_subpart)
{
	char *s;

	/* a cut three-byte sequence is one U+FFFD, as Python's "replace" */
	s = decoded("a\xe2\x82" "b", 4, NULL);
	cr_assert_str_eq(s, "a\xef\xbf\xbd" "b");
	free(s);
	s = decoded("\xff\xfe", 2, NULL);
	cr_assert_str_eq(s, "\xef\xbf\xbd\xef\xbf\xbd");
	free(s);
	s = decoded("\xf0\x9f\x98" "x", 4, NULL);
	cr_assert_str_eq(s, "\xef\xbf\xbdx");
	free(s);
	s = decoded("\xed\xa0\x80", 3, NULL); /* a surrogate: three */
	cr_assert_str_eq(s, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	free(s);
}

Test(web_scrape_text, charset_parameter)
{
	char cs[32];

	ws__charset("text/html; charset=UTF-8", cs, sizeof(cs));
	cr_assert_str_eq(cs, "utf-8");
	ws__charset("text/html;charset='latin1' ; q=1", cs, sizeof(cs));
	cr_assert_str_eq(cs, "latin1");
	ws__charset("text/html", cs, sizeof(cs));
	cr_assert_str_eq(cs, "");
	ws__charset(NULL, cs, sizeof(cs));
	cr_assert_str_eq(cs, "");
}

Test(web_scrape_text, whitespace_is_pythons)
{
	static const uint32_t ws[] = { 9, 10, 11, 12, 13, 0x1c, 0x1f, 0x20, 0x85, 0xa0, 0x1680,
				       0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000 };
	static const uint32_t not_ws[] = { 0, 8, 'a', 0x200b, 0xfeff, 0x180e };

	for (size_t i = 0; i < sizeof(ws) / sizeof(ws[0]); i++)
		cr_assert(ws__isspace(ws[i]), "U+%04X", ws[i]);
	for (size_t i = 0; i < sizeof(not_ws) / sizeof(not_ws[0]); i++)
		cr_assert_not(ws__isspace(not_ws[i]), "U+%04X", not_ws[i]);
}

static void fingerprint(const char *s, bool content, char hex[65])
{
	cr_assert_eq(ws__fingerprint(s, strlen(s), content, hex), 0);
}

Test(web_scrape_text, fingerprints_as_elspeth)
{
	char a[65], b[65], c[65], d[65];

	/* sha256("Hello world") */
	fingerprint("Hello world", true, a);
	cr_assert_str_eq(a, "64ec88ca00b268e5ba1a35678a1b5316d212f4f366b2477232534a8aeca37f3c");
	fingerprint("  Hello \xc2\xa0\n\n world\t", true, b);
	cr_assert_str_eq(a, b, "content mode: whitespace runs are one space, ends stripped");
	fingerprint("Hello   world", false, c);
	cr_assert_str_neq(a, c, "full mode: whitespace counts");
	fingerprint("The policy is inactive", true, d);
	cr_assert_str_neq(a, d);
}

/* ------------------------------------------------------------ extraction */

static char *extract(const char *html, ws_format f, const char *const *strip, size_t n)
{
	core_buf b = { 0 };
	core_err err = { 0 };

	cr_assert_eq(ws__extract(html, strlen(html), f, strip, n, &b, &err), 0, "%s", err.msg);
	return b.data ? b.data : strdup("");
}

Test(web_scrape_extract, raw_is_the_page)
{
	static const char *const strip[] = { "script" };
	char *s = extract("<html><body><h1>Test</h1><script>x</script></body></html>",
			  WS_FORMAT_RAW, strip, 1);

	cr_assert_str_eq(s, "<html><body><h1>Test</h1><script>x</script></body></html>");
	free(s);
}

/* Every snippet of snippets.json, in both formats, as ELSPETH made it. */
Test(web_scrape_extract, snippets_as_elspeth_renders_them)
{
	json_error_t jerr;
	json_t *all = json_load_file(ELSPETH_SOURCE_DIR "/tests/fixtures/web_scrape/snippets.json",
				     0, &jerr), *c;
	size_t i, bad = 0;

	cr_assert(all, "snippets.json: %s", jerr.text);
	json_array_foreach(all, i, c) {
		const char *strip[8] = { "script", "style" }, *html;
		json_t *sl = json_object_get(c, "strip"), *v;
		size_t n = 2, k;

		if (sl) {
			n = 0;
			json_array_foreach(sl, k, v)
				if (n < 8)
					strip[n++] = json_string_value(v);
		}
		html = json_string_value(json_object_get(c, "html"));
		for (int f = 0; f < 2; f++) {
			const char *want = json_string_value(json_object_get(c, f ? "text" : "markdown"));
			char *got = extract(html, f ? WS_FORMAT_TEXT : WS_FORMAT_MARKDOWN, strip, n);

			if (strcmp(got, want)) {
				bad++;
				fprintf(stderr, "snippet %zu (%s) %s:\n  want %s\n  got  %s\n", i, html,
					f ? "text" : "markdown", want, got);
			}
			free(got);
		}
	}
	cr_assert_eq(bad, 0, "%zu of %zu renderings differ", bad, 2 * json_array_size(all));
	json_decref(all);
}

Test(web_scrape_extract, deep_nesting_does_not_overflow_the_stack)
{
	core_buf h = { 0 };
	char *s;

	for (int i = 0; i < 20000; i++)
		core_buf_puts(&h, "<div><b>");
	core_buf_puts(&h, "deep");
	s = extract(h.data, WS_FORMAT_TEXT, NULL, 0);
	cr_assert_str_eq(s, "deep");
	free(s);
	s = extract(h.data, WS_FORMAT_MARKDOWN, NULL, 0);
	cr_assert(strstr(s, "deep"));
	free(s);
	core_buf_release(&h);
}

/* n lists nested in one another, an item in each. */
static void nested(core_buf *html, int n)
{
	core_buf_reset(html);
	core_buf_puts(html, "<html><body>");
	for (int i = 0; i < n; i++)
		core_buf_puts(html, "<ul><li>x");
	core_buf_puts(html, "</body></html>");
}

/* Markdown indents each item by its depth, so n nested lists cost n^2:
 * 8,000 in 72 KB were 64 MB in 3 s, 50,000 ran past a minute. Past 64
 * levels the row fails at once with why; 64 still convert; text has no
 * such limit. */
Test(web_scrape_extract, deep_lists_are_a_clear_error_not_quadratic_markdown, .timeout = 10)
{
	core_buf html = { 0 }, b = { 0 };
	core_err err = { 0 };
	uint64_t t0 = core_now_mono_ns();

	nested(&html, 8000);
	cr_assert_eq(ws__extract(html.data, html.len, WS_FORMAT_MARKDOWN, NULL, 0, &b, &err),
		     CORE_EDATA);
	cr_expect(strstr(err.msg, "nests lists more than 64 deep"), "%s", err.msg);
	nested(&html, 50000);
	cr_assert_eq(ws__extract(html.data, html.len, WS_FORMAT_MARKDOWN, NULL, 0, &b, &err),
		     CORE_EDATA);
	cr_expect_lt((double)(core_now_mono_ns() - t0) / 1e9, 3.0);
	core_buf_reset(&b);
	cr_assert_eq(ws__extract(html.data, html.len, WS_FORMAT_TEXT, NULL, 0, &b, &err), 0,
		     "%s", err.msg);
	nested(&html, 64);
	core_buf_reset(&b);
	cr_assert_eq(ws__extract(html.data, html.len, WS_FORMAT_MARKDOWN, NULL, 0, &b, &err), 0,
		     "%s", err.msg);
	cr_expect_gt(b.len, 64 * 64, "indented: %zu bytes", b.len);
	core_buf_release(&html);
	core_buf_release(&b);
}

Test(web_scrape_extract, binary_and_nul_bytes_do_not_crash)
{
	char page[256];
	core_buf b = { 0 }, t = { 0 };
	core_err err;

	for (int i = 0; i < 256; i++)
		page[i] = (char)i;
	cr_assert_eq(ws__decode(page, sizeof(page), "application/octet-stream", &t), 0);
	for (int f = 0; f < WS_FORMAT_LAST; f++) {
		core_buf_reset(&b);
		cr_assert_eq(ws__extract(t.data, t.len, (ws_format)f, NULL, 0, &b, &err), 0, "%s", err.msg);
		cr_assert(core_utf8_valid(b.data ? b.data : "", b.len));
	}
	core_buf_release(&b);
	core_buf_release(&t);
}
