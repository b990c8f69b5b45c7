/*
 * defaults.h - where foliod is found when nobody says: its default
 * addresses, and the environment variables the clients read before them.
 * For the programs that talk to foliod (the folio client, folio-bench,
 * the tests), which do not include the server's configuration
 * (src/conf.h); conf.c's option table applies and documents the same.
 */
#ifndef FOLIO_DEFAULTS_H
#define FOLIO_DEFAULTS_H

#include <stdlib.h>

#define FOLIO_DEFAULT_LISTEN "127.0.0.1:7788"
#define FOLIO_DEFAULT_METRICS "127.0.0.1:9788"
#define FOLIO_DEFAULT_HTTP "127.0.0.1:7780" /* the HTTP face */
#define FOLIO_DEFAULT_ADMIN FOLIO_RUNDIR "/admin.sock"

/* The clients' addresses before the defaults (folio(1), ENVIRONMENT). */
#define FOLIO_ADDR_ENV "FOLIO_ADDR"       /* the server */
#define FOLIO_ADMIN_ENV "FOLIO_ADMIN"     /* its admin socket */
#define FOLIO_METRICS_ENV "FOLIO_METRICS" /* its metrics listener */

/*
 * folio_default_metrics - the metrics listener a client talks to when
 * not told: $FOLIO_METRICS unless unset or empty, else the default.
 */
static inline const char *
folio_default_metrics(void)
{
    const char *env = getenv(FOLIO_METRICS_ENV);

    return env != NULL && *env != '\0' ? env : FOLIO_DEFAULT_METRICS;
}

#endif
