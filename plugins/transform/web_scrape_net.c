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

/* Refused unless an allowed network holds the address. */
static range blocked[] = {
	{ "0.0.0.0/8" }, { "127.0.0.0/8" }, { "10.0.0.0/8" }, { "172.16.0.0/12" },
	{ "192.168.0.0/16" }, { "169.254.0.0/16" }, { "100.64.0.0/10" },
	{ "::1/128" }, { "fc00::/7" }, { "fe80::/10" }, { "::ffff:0:0/96" },
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

/* The IPv4-mapped form of the metadata range is written in hex in the
 * table: ::ffff:a9fe:0 is ::ffff:169.254.0.0. */
bool ws__addr_allowed(const ws_addr *a, const ws_net *allowed, size_t n,
		      char *msg, size_t msgsz)
{
	char ip[INET6_ADDRSTRLEN];

	pthread_once(&tables_once, parse_tables);
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
