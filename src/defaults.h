/*
 * defaults.h - where foliod is found when nobody says: its default
 * addresses and paths, and the environment variables the clients read
 * before them.
 * For the programs that talk to foliod (the folio client, folio-bench,
 * the tests), which do not include the server's configuration
 * (src/conf.h); conf.c's option table applies and documents the same.
 */
#ifndef FOLIO_DEFAULTS_H
#define FOLIO_DEFAULTS_H

#include <stdlib.h>

#define FOLIO_DEFAULT_PORT 7788
#define FOLIO_DEFAULT_LISTEN "127.0.0.1:7788"
#define FOLIO_DEFAULT_METRICS_PORT 9788
#define FOLIO_DEFAULT_METRICS "127.0.0.1:9788"
#define FOLIO_DEFAULT_HTTP "127.0.0.1:7780" /* the HTTP face */
/* The system's paths, root's defaults (configure's; see folio_default_paths). */
#define FOLIO_DEFAULT_ADMIN FOLIO_RUNDIR "/admin.sock"

/*
 * Where foliod keeps its state and its admin socket when not told, for
 * the user who runs it: root gets the system's paths (FOLIO_STATEDIR,
 * FOLIO_RUNDIR); anyone else the per-user ones, as XDG's base directories
 * put them: the data directory $XDG_STATE_HOME/folio (else
 * ~/.local/state/folio; with no home to write, $TMPDIR/folio-UID or
 * /tmp/folio-UID), the run directory $XDG_RUNTIME_DIR/folio (else the
 * data directory), the admin socket in the run directory.  folio finds
 * the admin socket of the same user's foliod by the same rule.
 */
struct folio_paths {
    char data_dir[4096];
    char run_dir[4096];
    char admin_socket[4112]; /* run_dir/admin.sock */
    int per_user;            /* 0: the system's (root, or no home) */
};

/* folio_default_paths - computed once, from the environment; static. */
const struct folio_paths *folio_default_paths(void);

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
