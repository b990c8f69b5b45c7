/*
 * defaults.c - foliod's default paths for whoever runs it (defaults.h):
 * the system's for root, the user's (XDG base directories) for anyone
 * else, so that a first `foliod -f` by a user starts, and the folio of
 * the same user finds its admin socket.
 */
#include "config.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/defaults.h"

/*
 * $env/folio when $env is an absolute path, else ~/rel/folio (rel NULL:
 * none), else, for a user whose home is not there or not theirs to
 * write (nobody's /nonexistent), $TMPDIR/folio-UID (main.c checks that it
 * is the user's alone): 0, or -1.
 */
static int
user_dir(char *out, size_t len, const char *env, const char *rel)
{
    const char *v = getenv(env), *home, *tmp;
    struct passwd *pw;
    int n;

    if (v != NULL && v[0] == '/') {
        n = snprintf(out, len, "%s/folio", v);
        return n > 0 && (size_t)n < len ? 0 : -1;
    }
    if (rel == NULL)
        return -1;
    if ((home = getenv("HOME")) == NULL || home[0] != '/')
        home = (pw = getpwuid(getuid())) != NULL ? pw->pw_dir : NULL;
    if (home != NULL && home[0] == '/' && access(home, W_OK | X_OK) == 0)
        n = snprintf(out, len, "%s/%s/folio",
                     strcmp(home, "/") == 0 ? "" : home, rel);
    else if ((tmp = getenv("TMPDIR")) != NULL && tmp[0] == '/')
        n = snprintf(out, len, "%s/folio-%lu", tmp, (unsigned long)geteuid());
    else
        n = snprintf(out, len, "/tmp/folio-%lu", (unsigned long)geteuid());
    return n > 0 && (size_t)n < len ? 0 : -1;
}

const struct folio_paths *
folio_default_paths(void)
{
    static struct folio_paths p;
    static int done;

    if (done)
        return &p;
    done = 1;
    if (geteuid() != 0 &&
        user_dir(p.data_dir, sizeof(p.data_dir), "XDG_STATE_HOME",
                 ".local/state") == 0) {
        p.per_user = 1;
        if (user_dir(p.run_dir, sizeof(p.run_dir), "XDG_RUNTIME_DIR", NULL) !=
            0)
            snprintf(p.run_dir, sizeof(p.run_dir), "%s", p.data_dir);
    } else {
        snprintf(p.data_dir, sizeof(p.data_dir), "%s", FOLIO_STATEDIR);
        snprintf(p.run_dir, sizeof(p.run_dir), "%s", FOLIO_RUNDIR);
    }
    snprintf(p.admin_socket, sizeof(p.admin_socket), "%s/admin.sock",
             p.run_dir);
    return &p;
}
