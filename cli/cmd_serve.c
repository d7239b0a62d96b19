/* cmd_serve.c — `elspeth serve` (serve/serve.h, docs/serve.md). */
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "serve/serve.h"

static const char usage[] =
	"usage: elspeth serve --listen ADDR --root DIR --no-auth\n"
	"\n"
	"Serves runs over HTTP (ELSPETH's web API routes, docs/serve.md): post a\n"
	"pipeline under DIR, watch it, cancel it. Runs go one at a time, in order.\n"
	"\n"
	"  --listen ADDR  HOST:PORT, [IPv6]:PORT, or PORT on 127.0.0.1 (0: any free port;\n"
	"                 the one taken is printed) [127.0.0.1:8000]\n"
	"  --root DIR     the directory runs are confined to: relative paths are its,\n"
	"                 paths that lead out of it are refused [.]\n"
	"  --no-auth      serve without logins (loopback addresses only). Required:\n"
	"                 logins are not built yet\n"
	"  -h, --help     this help\n"
	"\n"
	"Stops on SIGINT/SIGTERM; a run still going is stopped as SIGINT stops it\n"
	"(resumable with `elspeth resume`).\n";

static atomic_int stop;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop, 1);
}

static void ready(void *ctx, unsigned port)
{
	const char *listen = ctx;

	printf("elspeth serve: listening on port %u (%s); Ctrl-C stops\n", port, listen);
	fflush(stdout);
}

int cli_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "root", required_argument, NULL, 'r' },
		{ "no-auth", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	srv_cfg cfg = { .listen = "127.0.0.1:8000", .root = ".", .stop = &stop, .log = stderr,
			.ready = ready };
	struct sigaction sa;
	core_err err = { 0 };
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			cfg.listen = optarg;
			break;
		case 'r':
			cfg.root = optarg;
			break;
		case 'n':
			cfg.no_auth = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return CLI_OK;
		default:
			return cli_usage_error("serve", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("serve", "unexpected argument '%s'", argv[optind]);
	cfg.ready_ctx = (void *)cfg.listen;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (srv_main(&cfg, &err)) {
		cli_error(&err);
		return CLI_ERROR;
	}
	return CLI_OK;
}
