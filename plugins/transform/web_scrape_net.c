/*
 * web_scrape_net.c — addresses, networks and ELSPETH's SSRF rules
 * (web_scrape_internal.h, "networks"). The ranges and their order are
 * ELSPETH 0.4.1's (core/security/web.py); the messages are its words, so
 * a row's error reads the same in both.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "plugins/transform/web_scrape_internal.h"

/* A range as Python prints it; parsed once, on first use. */
typedef struct range {
	const char *text;
	ws_net net;
} range;

/* No allowlist admits these: cloud metadata endpoints, link-local,
 * broadcast, multicast. (Python 3.11 prints the IPv4-mapped metadata
 * range in hex.) */
static range always_blocked[] = {
	{ "169.254.0.0/16" }, { "::ffff:a9fe:0/112" }, { "fe80::/10" },
	{ "255.255.255.255/32" }, { "224.0.0.0/4" }, { "ff00::/8" },
};

/* Refused unless an allowed network holds the address: ELSPETH's list,
 * then the IPv6 forms it misses that reach the host itself or an IPv4
 * address a kernel or a gateway translates (ADR 0031): the unspecified
 * address (a connect to [::] reaches ::1), IPv4-compatible addresses
 * (deprecated; Linux routes ::127.0.0.1 to the loopback) and NAT64's
 * local-use prefix. The well-known NAT64 prefix, 6to4 and Teredo are
 * judged by the IPv4 addresses they embed (embedded_v4). */
static range blocked[] = {
	{ "0.0.0.0/8" }, { "127.0.0.0/8" }, { "10.0.0.0/8" }, { "172.16.0.0/12" },
	{ "192.168.0.0/16" }, { "169.254.0.0/16" }, { "100.64.0.0/10" },
	{ "::1/128" }, { "fc00::/7" }, { "fe80::/10" }, { "::ffff:0:0/96" },
	{ "::/128" }, { "::/96" }, { "64:ff9b:1::/48" },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

bool ws__addr_parse(const char *s, ws_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, s, out->b) == 1) {
		out->family = AF_INET;
		return true;
	}
	if (strchr(s, ':') && inet_pton(AF_INET6, s, out->b) == 1) {
		out->family = AF_INET6;
		return true;
	}
	return false;
}

void ws__addr_format(const ws_addr *a, char *out, size_t n)
{
	char buf[INET6_ADDRSTRLEN];

	if (!inet_ntop(a->family, a->b, buf, sizeof(buf)))
		buf[0] = '\0';
	snprintf(out, n, "%s", buf);
}

static unsigned bits(const ws_addr *a)
{
	return a->family == AF_INET ? 32 : 128;
}

/* Clears the bits of a past prefix. */
static void mask(ws_addr *a, unsigned prefix)
{
	for (unsigned i = 0; i < bits(a) / 8; i++) {
		unsigned keep = prefix > i * 8 ? prefix - i * 8 : 0;

		if (keep < 8)
			a->b[i] &= (uint8_t)(0xff00u >> keep);
	}
}

/* An IPv4 netmask ("255.255.0.0") or hostmask ("0.0.255.255") as a prefix
 * length; false when it is neither (ones not contiguous). */
static bool mask_prefix(const char *s, unsigned *prefix)
{
	ws_addr m;
	uint32_t v, inv;

	if (inet_pton(AF_INET, s, m.b) != 1)
		return false;
	v = (uint32_t)m.b[0] << 24 | (uint32_t)m.b[1] << 16 | (uint32_t)m.b[2] << 8 | m.b[3];
	for (int pass = 0; pass < 2; pass++) {
		inv = pass ? ~v : v;
		/* a netmask: ones then zeros */
		if ((inv | (inv - 1)) == UINT32_MAX) {
			*prefix = (unsigned)__builtin_popcount(inv);
			return true;
		}
	}
	return false;
}

bool ws__net_parse(const char *s, ws_net *out)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	char *end;
	unsigned long p;

	memset(out, 0, sizeof(*out));
	if (!n || n >= sizeof(addr))
		return false;
	memcpy(addr, s, n);
	addr[n] = '\0';
	if (!ws__addr_parse(addr, &out->a))
		return false;
	out->prefix = bits(&out->a);
	if (slash) {
		const char *ps = slash + 1;

		if (*ps >= '0' && *ps <= '9' && strspn(ps, "0123456789") == strlen(ps)) {
			p = strtoul(ps, &end, 10);
			if (p > bits(&out->a))
				return false;
			out->prefix = (unsigned)p;
		} else if (out->a.family != AF_INET || !mask_prefix(ps, &out->prefix))
			return false;
	}
	mask(&out->a, out->prefix);
	return true;
}

void ws__net_format(const ws_net *n, char *out, size_t sz)
{
	char a[INET6_ADDRSTRLEN];

	ws__addr_format(&n->a, a, sizeof(a));
	snprintf(out, sz, "%s/%u", a, n->prefix);
}

bool ws__net_contains(const ws_net *n, const ws_addr *a)
{
	ws_addr m;

	if (n->a.family != a->family)
		return false;
	m = *a;
	mask(&m, n->prefix);
	return !memcmp(m.b, n->a.b, bits(a) / 8);
}

static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

/* The tables' networks, parsed from their text (their text is right by
 * construction: a failure is a bug the unit tests catch). */
static void parse_tables(void)
{
	for (size_t i = 0; i < COUNT(always_blocked); i++)
		(void)ws__net_parse(always_blocked[i].text, &always_blocked[i].net);
	for (size_t i = 0; i < COUNT(blocked); i++)
		(void)ws__net_parse(blocked[i].text, &blocked[i].net);
}

/* The IPv4 addresses an IPv6 address carries to a translator: the last
 * 32 bits of IPv4-mapped, IPv4-compatible and NAT64 (64:ff9b::/96)
 * addresses; bits 16-47 of 6to4 (2002::/16); Teredo's (2001::/32)
 * server (bits 32-63) and client (the last 32 bits, inverted). Returns
 * how many (0-2) it wrote to v4. */
static size_t embedded_v4(const ws_addr *a, ws_addr v4[2])
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t compat[12] = { 0 };
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	const uint8_t *b = a->b;
	size_t n = 0;

	if (a->family != AF_INET6)
		return 0;
	memset(v4, 0, 2 * sizeof(*v4));
	v4[0].family = v4[1].family = AF_INET;
	if (!memcmp(b, compat, 12) && !b[12] && !b[13] && !b[14] && b[15] <= 1)
		return 0; /* :: and ::1 are themselves, not IPv4-compatible */
	if (!memcmp(b, mapped, 12) || !memcmp(b, compat, 12) || !memcmp(b, nat64, 12)) {
		memcpy(v4[n++].b, b + 12, 4);
	} else if (b[0] == 0x20 && b[1] == 0x02) {
		memcpy(v4[n++].b, b + 2, 4);
	} else if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {
		memcpy(v4[n++].b, b + 4, 4);
		for (int i = 0; i < 4; i++)
			v4[n].b[i] = (uint8_t)~b[12 + i];
		n++;
	}
	return n;
}

static bool allowed_one(const ws_addr *a, const ws_net *allowed, size_t n,
			char *msg, size_t msgsz);

/* The IPv4-mapped form of the metadata range is written in hex in the
 * table: ::ffff:a9fe:0 is ::ffff:169.254.0.0. An IPv6 address that
 * embeds IPv4 addresses (embedded_v4) must pass for itself and for each
 * of them: a 6to4 or NAT64 form of 127.0.0.1 is refused as 127.0.0.1
 * would be, unless the allowlist admits 127.0.0.1. */
bool ws__addr_allowed(const ws_addr *a, const ws_net *allowed, size_t n,
		      char *msg, size_t msgsz)
{
	ws_addr v4[2];
	size_t nv4;
	char ip[INET6_ADDRSTRLEN], sub[256];

	pthread_once(&tables_once, parse_tables);
	if (!allowed_one(a, allowed, n, msg, msgsz))
		return false;
	nv4 = embedded_v4(a, v4);
	for (size_t i = 0; i < nv4; i++) {
		if (allowed_one(&v4[i], allowed, n, sub, sizeof(sub)))
			continue;
		ws__addr_format(a, ip, sizeof(ip));
		snprintf(msg, msgsz, "%s (embedded in %s)", sub, ip);
		return false;
	}
	return true;
}

static bool allowed_one(const ws_addr *a, const ws_net *allowed, size_t n,
			char *msg, size_t msgsz)
{
	char ip[INET6_ADDRSTRLEN];

	ws__addr_format(a, ip, sizeof(ip));
	for (size_t i = 0; i < COUNT(always_blocked); i++)
		if (ws__net_contains(&always_blocked[i].net, a)) {
			snprintf(msg, msgsz, "Always-blocked IP range: %s in %s", ip,
				 always_blocked[i].text);
			return false;
		}
	for (size_t i = 0; i < n; i++)
		if (ws__net_contains(&allowed[i], a))
			return true;
	for (size_t i = 0; i < COUNT(blocked); i++)
		if (ws__net_contains(&blocked[i].net, a)) {
			snprintf(msg, msgsz, "Blocked IP range: %s in %s", ip, blocked[i].text);
			return false;
		}
	return true;
}
