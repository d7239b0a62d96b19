/* cmd_serve.c — `elspeth serve` (serve/serve.h, docs/serve.md). */
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli.h"
#include "serve/auth.h"
#include "serve/serve.h"

static const char usage[] =
	"usage: elspeth serve --root DIR (--users FILE | --oidc-issuer URL\n"
	"                     --oidc-audience AUD [--oidc-client-id ID] | --no-auth)\n"
	"                     [--listen ADDR] [--token-hours H]\n"
	"       elspeth serve adduser NAME --users FILE   (the password on stdin)\n"
	"\n"
	"Serves runs over HTTP (ELSPETH's web API routes, docs/serve.md): post a\n"
	"pipeline under DIR, watch it, cancel it, resume it, read its rows' stories.\n"
	"Runs go one at a time, in order.\n"
	"\n"
	"  --listen ADDR     HOST:PORT, [IPv6]:PORT, or PORT on 127.0.0.1 (0: any free\n"
	"                    port; the one taken is printed) [127.0.0.1:8000]\n"
	"  --root DIR        the directory runs are confined to: relative paths are its,\n"
	"                    paths that lead out of it are refused [.]\n"
	"  --users FILE      local users (Argon2id hashes; outside DIR, mode 600): every\n"
	"                    route but health and login needs a bearer token\n"
	"  --token-hours H   how long a login's token lives [12]\n"
	"  --oidc-issuer URL an OpenID Connect issuer instead of local users: bearer\n"
	"                    tokens are its RS256 JWTs, checked against its JWKS\n"
	"  --oidc-audience AUD  the audience (aud) those tokens must name\n"
	"  --oidc-client-id ID  told to the page (/api/auth/config), as ELSPETH's\n"
	"  --no-auth         serve without logins (loopback addresses only)\n"
	"  -h, --help        this help\n"
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

/* `serve adduser NAME --users FILE`: the password is the first line of
 * stdin (prompted for, unechoed, on a terminal). */
static int adduser(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "users", required_argument, NULL, 'u' }, { NULL, 0, NULL, 0 }
	};
	const char *users = NULL, *name = NULL;
	char pw[1024];
	struct termios old, quiet;
	bool tty = isatty(STDIN_FILENO);
	core_err err = { 0 };
	size_t n;
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c != 'u')
			return cli_usage_error("serve adduser", "unknown option '%s'", argv[optind - 1]);
		users = optarg;
	}
	if (optind + 1 != argc || !users)
		return cli_usage_error("serve adduser", "expected NAME and --users FILE");
	name = argv[optind];
	if (tty) {
		fprintf(stderr, "password for %s: ", name);
		tcgetattr(STDIN_FILENO, &old);
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
	}
	if (!fgets(pw, sizeof(pw), stdin))
		pw[0] = '\0';
	if (tty) {
		tcsetattr(STDIN_FILENO, TCSANOW, &old);
		fputc('\n', stderr);
	}
	n = strcspn(pw, "\r\n");
	pw[n] = '\0';
	rc = auth_adduser(users, name, pw, &err);
	explicit_bzero(pw, sizeof(pw));
	if (rc) {
		cli_error(&err);
		return CLI_ERROR;
	}
	printf("user %s added to %s\n", name, users);
	return CLI_OK;
}

int cli_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "root", required_argument, NULL, 'r' },
		{ "users", required_argument, NULL, 'u' },
		{ "token-hours", required_argument, NULL, 't' },
		{ "no-auth", no_argument, NULL, 'n' },
		{ "oidc-issuer", required_argument, NULL, 'I' },
		{ "oidc-audience", required_argument, NULL, 'A' },
		{ "oidc-client-id", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	srv_cfg cfg = { .listen = "127.0.0.1:8000", .root = ".", .stop = &stop, .log = stderr,
			.ready = ready };
	struct sigaction sa;
	core_err err = { 0 };
	int c;

	if (argc > 1 && !strcmp(argv[1], "adduser"))
		return adduser(argc - 1, argv + 1);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			cfg.listen = optarg;
			break;
		case 'u':
			cfg.users = optarg;
			break;
		case 't': {
			char *end;
			unsigned long h = strtoul(optarg, &end, 10);

			if (!*optarg || *end || !h || h > 24 * 366)
				return cli_usage_error("serve", "--token-hours: 1 to 8784, got '%s'",
						       optarg);
			cfg.token_hours = (unsigned)h;
			break;
		}
		case 'r':
			cfg.root = optarg;
			break;
		case 'n':
			cfg.no_auth = true;
			break;
		case 'I':
			cfg.oidc_issuer = optarg;
			break;
		case 'A':
			cfg.oidc_audience = optarg;
			break;
		case 'C':
			cfg.oidc_client_id = optarg;
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
