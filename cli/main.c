/* main.c — the elspeth binary: everything is in cli_main (dispatch.c). */
#include "cli/cli.h"

int main(int argc, char **argv)
{
	return cli_main(argc, argv);
}
