/*
 * mkconf.c - print the default foliod.conf (every setting commented out
 * at its default) from foliod's option table, so that the installed file
 * never drifts from the code.  Run by make; not installed.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "src/conf.h"

int
main(void)
{
    folio_config_write_defaults(stdout, PACKAGE_VERSION);
    return fflush(stdout) == 0 && !ferror(stdout) ? EXIT_SUCCESS : EXIT_FAILURE;
}
