/*
 * net.c — listen addresses as the servers take them (the Prometheus
 * endpoint, `elspeth serve`): "HOST:PORT", "[IPv6]:PORT", or "PORT" on
 * 127.0.0.1. HOST is a numeric address or localhost: a name is not
 * resolved (say which address to listen on).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

int core_listen_addr(const char *what, const char *spec, struct sockaddr_storage *ss,
		     bool *v6, core_err *err)
{
	char host[256] = "127.0.0.1";
	const char *colon = strrchr(spec, ':'), *port = colon ? colon + 1 : spec;
	char *end;
	unsigned long p;
	size_t hl = colon ? (size_t)(colon - spec) : 0;

	errno = 0;
	p = strtoul(port, &end, 10);
	if (!*port || *end || errno || p > 65535)
		return core_err_set(err, CORE_ECONFIG,
			"%s '%s': expected HOST:PORT, [IPv6]:PORT or PORT (0..65535; "
			"loopback when no host)", what, spec);
	if (colon) {
		if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']') {
			spec++;
			hl -= 2;
		}
		if (!hl || hl >= sizeof(host))
			return core_err_set(err, CORE_ECONFIG, "%s '%s': no host before the port",
					    what, spec);
		memcpy(host, spec, hl);
		host[hl] = '\0';
	}
	memset(ss, 0, sizeof(*ss));
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		((struct sockaddr_in *)ss)->sin_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)p);
		*v6 = false;
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)p);
		*v6 = true;
		return 0;
	}
	return core_err_set(err, CORE_ECONFIG,
		"%s '%s': '%s' is not an IP address (a name other than localhost is not "
		"resolved: say which address to listen on)", what, spec, host);
}

bool core_addr_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return false;
}
