/*
 * rebind.c — a test shim (LD_PRELOAD) for DNS rebinding, which no real
 * resolver here can be made to do on demand: a name that resolves to one
 * address the first time and to another every time after.
 *
 * With ELSPETH_TEST_REBIND=NAME,FIRST,THEN set, getaddrinfo(3) of NAME
 * answers FIRST on its first call and THEN on every later one, and each
 * such call appends a line (the address given) to the file
 * ELSPETH_TEST_REBIND_LOG when that is set. Other names, and everything
 * when the variable is unset, pass straight through.
 * tests/integration/test_web_scrape.sh checks with it that web_scrape
 * resolves a host once and connects to the address it checked.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		struct addrinfo **res)
{
	static int (*real)(const char *, const char *, const struct addrinfo *,
			   struct addrinfo **);
	static atomic_long calls;
	const char *spec = getenv("ELSPETH_TEST_REBIND"), *log = getenv("ELSPETH_TEST_REBIND_LOG");
	char name[256], first[64], then[64];
	struct addrinfo h = { 0 };
	const char *ip;
	FILE *f;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "getaddrinfo");
	if (!node || !spec || sscanf(spec, "%255[^,],%63[^,],%63s", name, first, then) != 3 ||
	    strcmp(node, name))
		return real(node, service, hints, res);
	ip = atomic_fetch_add(&calls, 1) == 0 ? first : then;
	if (log && (f = fopen(log, "a"))) {
		fprintf(f, "%s\n", ip);
		fclose(f);
	}
	if (hints)
		h = *hints;
	h.ai_flags = (h.ai_flags & ~(AI_CANONNAME | AI_IDN)) | AI_NUMERICHOST;
	return real(ip, service, &h, res);
}
