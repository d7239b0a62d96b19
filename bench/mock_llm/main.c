/*
 * main.c — elspeth-mock-llm: an OpenAI- and Azure-compatible mock
 * chat-completions server for tests, benchmarks and the demo. See
 * docs/mock_llm.md; `elspeth-mock-llm --help` lists the options.
 *
 * Exit codes: 0 after SIGINT/SIGTERM, 1 when it cannot start, 2 on a bad
 * option.
 */
#include "server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Thousands of connections need thousands of descriptors. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Writes the port to path.tmp, then renames it over path. */
static int write_port_file(const char *path, long port, char *err, size_t n)
{
	size_t len = strlen(path) + 16;
	char *tmp = mock_xmalloc(len);
	FILE *f;
	int rc = -1;

	snprintf(tmp, len, "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		goto out_err;
	fprintf(f, "%ld\n", port);
	if (fclose(f))
		goto out_err;
	if (rename(tmp, path))
		goto out_err;
	rc = 0;
	goto out_free;
out_err:
	snprintf(err, n, "--port-file %s: %s", path, strerror(errno));
	unlink(tmp);
out_free:
	free(tmp);
	return rc;
}

int main(int argc, char **argv)
{
	mock_server srv;
	mock_cfg cfg;
	char err[1024];
	int rc;

	mock_cfg_init(&cfg);
	rc = mock_cfg_parse_argv(&cfg, argc, argv, err, sizeof(err));
	if (rc) {
		if (rc == 2)
			fprintf(stderr, "elspeth-mock-llm: %s\n", err);
		mock_cfg_release(&cfg);
		return rc == 1 ? 0 : 2;
	}
	raise_nofile();
	if (mock_server_init(&srv, &cfg, err, sizeof(err)) ||
	    (*srv.cfg.port_file &&
	     write_port_file(srv.cfg.port_file, srv.port, err, sizeof(err)))) {
		fprintf(stderr, "elspeth-mock-llm: %s\n", err);
		mock_server_release(&srv);
		return 1;
	}
	printf(strchr(srv.cfg.bind, ':') ? "mock-llm listening on [%s]:%ld\n"
					 : "mock-llm listening on %s:%ld\n",
	       srv.cfg.bind, srv.port);
	fflush(stdout);
	rc = mock_server_run(&srv);
	if (rc)
		fprintf(stderr, "elspeth-mock-llm: event loop: %s\n",
			strerror(-rc));
	mock_server_release(&srv);
	return rc ? 1 : 0;
}
