/*
 * main.c - folio's entry point: one command line (cli.c), or, when it
 * asks for one, the interactive mode (repl.c), whose lines cli.c runs in
 * turn; then standard output flushed, since a result that could not be
 * written is a failure.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "src/cli/cli_int.h"

int
main(int argc, char **argv)
{
    struct cli cli;
    int st;

    folio_cli_init(&cli);
    st = folio_cli_run_args(&cli, argc, argv);
    if (st == FOLIO_CLI_INTERACTIVE)
        st = folio_cli_interactive(&cli);
    folio_cli_conn_close(&cli);
    if (fflush(stdout) != 0 && st == 0) {
        fprintf(stderr, "folio: writing the output: %s\n", strerror(errno));
        st = FOLIO_CLI_ECONN;
    }
    return st;
}
