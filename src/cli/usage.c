/*
 * usage.c - the folio client's usage messages: a command's usage line,
 * and the usage error any part of the client may end on (exit status 2),
 * so that the runner (cli.c) and the connection (conn.c) say it alike.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "src/cli/cli_int.h"

void
folio_cli_usage_line(FILE *f, const struct cmd *c)
{
    fprintf(f, "usage: folio [options] %s\n", c->usage);
}

int
folio_cli_usage_error(const struct cmd *c, const char *fmt, ...)
{
    va_list ap;

    fputs("folio: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (c != NULL)
        folio_cli_usage_line(stderr, c);
    else
        fputs("usage: folio [-H HOST:PORT | -U SOCKET] [--json] "
              "[--timeout SEC] [-r N] [-i SEC] COMMAND [ARG ...]\n"
              "Try 'folio help'.\n",
              stderr);
    return FOLIO_CLI_EUSAGE;
}
