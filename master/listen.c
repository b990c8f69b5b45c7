/*
 * listen.c - the listening sockets of a generation, bound before fork.
 * At reload a socket whose address did not change is shared (dup) with the
 * new generation, so the port stays open and nothing queued on it is lost.
 * At start an address in use is tried again for two seconds: the workers
 * of a foliod killed a moment ago may still hold it.  Three kinds: the
 * msgpack-RPC listeners (listen), the HTTP face's (http_listen), the
 * admin socket; a socket is reused only for the same kind.
 */
#include "config.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "master/master_int.h"
#include "src/addr.h"
#include "src/err.h"
#include "src/log.h"

#define BIND_RETRIES 40   /* at start only ... */
#define BIND_RETRY_MS 50  /* ... two seconds in all */

static const struct folio_listener *
find_reusable(const struct folio_gen *g, const char *spec, int admin, int http)
{
    int i;

    if (g == NULL)
        return NULL;
    for (i = 0; i < g->nlisteners; i++)
        if (g->listeners[i].admin == admin && g->listeners[i].http == http &&
            strcmp(g->listeners[i].spec, spec) == 0)
            return &g->listeners[i];
    return NULL;
}

/* The directory of a Unix socket's path, into dir ("" for none). */
static void
dir_of(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');

    snprintf(dir, len, "%.*s",
             slash == NULL ? 0 : slash == path ? 1 : (int)(slash - path),
             path);
}

/*
 * The run directory, the admin socket's (`path`): the one directory of a
 * socket foliod makes, with its parents, as systemd's RuntimeDirectory,
 * for the --user; private to a user who is not root.  A --listen path's
 * directory is never made: it must exist.
 */
static void
make_run_dir(const struct folio_priv *priv, const char *path)
{
    char dir[FOLIO_ADDR_TEXT];

    dir_of(path, dir, sizeof(dir));
    if (dir[0] == '\0' || access(dir, F_OK) == 0)
        return;
    if (folio_priv_mkdirs(priv, dir, geteuid() == 0 ? 0755 : 0700) == 0)
        folio_log_info("created %s", dir);
}

/* The option an address comes from: listen, http-listen, admin-socket. */
static const char *
option_of(int admin, int http)
{
    return admin ? "admin-socket" : http ? "http-listen" : "listen";
}

void
folio_listen_error(char *err, size_t errlen, const struct folio_config *cfg,
                   const char *option, const char *spec, const char *why,
                   int e)
{
    char name[300], hint[64], dir[FOLIO_ADDR_TEXT];

    folio_config_name(cfg, option, name, sizeof(name));
    folio_config_hint(option, hint, sizeof(hint));
    if (e == EADDRINUSE && strncmp(spec, "unix:", 5) == 0)
        snprintf(err, errlen,
                 "cannot listen on %s (%s): a server is listening there: is "
                 "another foliod running? Give this one another with %s",
                 spec, name, hint);
    else if (e == EADDRINUSE)
        snprintf(err, errlen,
                 "cannot listen on %s (%s): address in use: is another "
                 "foliod running? Give this one another with %s",
                 spec, name, hint);
    else if (e == ENOENT && strncmp(spec, "unix:", 5) == 0) {
        dir_of(spec + 5, dir, sizeof(dir));
        snprintf(err, errlen,
                 "cannot listen on %s (%s): the directory %s does not exist: "
                 "create it, or set %s",
                 spec, name, dir, hint);
    } else
        snprintf(err, errlen, "cannot listen on %s (%s): %s: %s: set %s", spec,
                 name, why, strerror(e), hint);
}

/* One address of cfg, before anything is bound: 0 or FOLIO_ECONFIG. */
static int
check_one(const struct folio_config *cfg, const char *spec, int admin, int http,
          char *err, size_t errlen)
{
    char why[256], name[300], dir[FOLIO_ADDR_TEXT];
    struct folio_addr a;

    if (folio_addr_parse(spec, &a, why, sizeof(why)) != 0) {
        snprintf(
            err, errlen, "%s: %s",
            folio_config_name(cfg, option_of(admin, http), name, sizeof(name)),
            why);
        return FOLIO_ECONFIG;
    }
    if (a.family != AF_UNIX || folio_activate_has(&a) || admin)
        return 0;
    dir_of(spec + 5, dir, sizeof(dir));
    if (dir[0] != '\0' && access(dir, F_OK) != 0) {
        snprintf(why, sizeof(why), "access(%s)", dir);
        folio_listen_error(err, errlen, cfg, option_of(admin, http), spec, why,
                           errno);
        return FOLIO_ECONFIG;
    }
    return 0;
}

int
folio_listen_check(const struct folio_config *cfg, char *err, size_t errlen)
{
    char spec[FOLIO_ADDR_TEXT + 8];
    int i, j;

    if (cfg->nlisten == 0 && cfg->admin_socket == NULL) {
        snprintf(err, errlen,
                 "nothing to listen on: give --listen ADDR or --admin-socket "
                 "PATH");
        return FOLIO_ECONFIG;
    }
    for (i = 0; i < cfg->nlisten; i++) {
        for (j = 0; j < i; j++) {
            if (strcmp(cfg->listen[i], cfg->listen[j]) == 0) {
                snprintf(err, errlen, "address %s is configured twice",
                         cfg->listen[i]);
                return FOLIO_ECONFIG;
            }
        }
        if (check_one(cfg, cfg->listen[i], 0, 0, err, errlen) != 0)
            return FOLIO_ECONFIG;
    }
    for (i = 0; i < cfg->nhttp_listen; i++)
        if (check_one(cfg, cfg->http_listen[i], 0, 1, err, errlen) != 0)
            return FOLIO_ECONFIG;
    if (cfg->admin_socket == NULL)
        return 0;
    snprintf(spec, sizeof(spec), "%s%s",
             strncmp(cfg->admin_socket, "unix:", 5) == 0 ? "" : "unix:",
             cfg->admin_socket);
    return check_one(cfg, spec, 1, 0, err, errlen);
}

/* Whether a is a TCP address with port 0: any free port. */
static int
any_port(const struct folio_addr *a)
{
    if (a->family == AF_INET)
        return ((const struct sockaddr_in *)(const void *)&a->sa)->sin_port ==
               0;
    if (a->family == AF_INET6)
        return ((const struct sockaddr_in6 *)(const void *)&a->sa)->sin6_port ==
               0;
    return 0;
}

static int
open_one(struct folio_gen *g, const struct folio_gen *reuse,
         const struct folio_priv *priv, const char *spec, int admin, int http,
         char *err, size_t errlen)
{
    struct folio_listener *l = &g->listeners[g->nlisteners];
    const struct folio_listener *old;
    struct folio_addr a;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char why[256];
    int i, fd, tries;

    if (folio_addr_parse(spec, &a, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "--%s: %s", option_of(admin, http), why);
        return FOLIO_ECONFIG;
    }
    for (i = 0; i < g->nlisteners; i++) {
        /* Port 0 twice is two ports, one of each kind (tests do it). */
        if (strcmp(g->listeners[i].spec, spec) == 0 &&
            (!any_port(&a) || g->listeners[i].http == http)) {
            snprintf(err, errlen, "address %s is configured twice", spec);
            return FOLIO_ECONFIG;
        }
    }
    if ((old = find_reusable(reuse, spec, admin, http)) != NULL) {
        if ((fd = fcntl(old->fd, F_DUPFD_CLOEXEC, 3)) == -1) {
            snprintf(err, errlen, "dup(%s): %s", old->name, strerror(errno));
            return FOLIO_ESYS;
        }
        *l = *old;
        l->fd = fd;
        g->nlisteners++;
        return 0;
    }
    l->passed = 0;
    if ((fd = folio_activate_take(&a)) != -1) {
        /* systemd bound it (foliod.socket): its mode and owner are set. */
        folio_log_info("%s: the socket systemd passed", spec);
        l->passed = 1;
    } else {
        if (a.family == AF_UNIX && admin)
            make_run_dir(priv, spec + 5);
        fd = folio_addr_listen(&a, (int)g->cfg.backlog, admin ? 0660 : 0666,
                               why, sizeof(why));
        /*
         * At start, a port still held by the workers of a foliod that just
         * died (they let go within milliseconds: see worker.c): try again
         * for a moment, as nginx does, rather than fail the restart.
         */
        for (tries = 0; fd == -1 && errno == EADDRINUSE && reuse == NULL &&
                        tries < BIND_RETRIES;
             tries++) {
            if (tries == 0)
                folio_log_notice("%s: address in use; trying again for %d ms",
                                 spec, BIND_RETRIES * BIND_RETRY_MS);
            poll(NULL, 0, BIND_RETRY_MS);
            fd = folio_addr_listen(&a, (int)g->cfg.backlog,
                                   admin ? 0660 : 0666, why, sizeof(why));
        }
        if (fd == -1) {
            folio_listen_error(err, errlen, &g->cfg, option_of(admin, http),
                               spec, why, errno);
            return FOLIO_ESYS;
        }
        /* The admin socket's group is the user's: 0660 lets that group in. */
        if (admin && a.family == AF_UNIX)
            folio_priv_own(priv, spec + 5, 1);
    }
    l->fd = fd;
    l->admin = admin;
    l->http = http;
    snprintf(l->spec, sizeof(l->spec), "%s", spec);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
        a.family != AF_UNIX)
        folio_addr_format((struct sockaddr *)&ss, sl, l->name,
                          sizeof(l->name));
    else
        snprintf(l->name, sizeof(l->name), "%s", spec);
    g->nlisteners++;
    return 0;
}

int
folio_listen_open(struct folio_gen *g, const struct folio_gen *reuse,
                  const struct folio_priv *priv, char *err, size_t errlen)
{
    int i, rc;

    g->nlisteners = 0;
    for (i = 0; i < g->cfg.nlisten; i++)
        if ((rc = open_one(g, reuse, priv, g->cfg.listen[i], 0, 0, err,
                           errlen)) != 0)
            goto fail;
    for (i = 0; i < g->cfg.nhttp_listen; i++)
        if ((rc = open_one(g, reuse, priv, g->cfg.http_listen[i], 0, 1, err,
                           errlen)) != 0)
            goto fail;
    if (g->cfg.admin_socket != NULL) {
        char spec[FOLIO_ADDR_TEXT];

        if (strncmp(g->cfg.admin_socket, "unix:", 5) == 0)
            snprintf(spec, sizeof(spec), "%s", g->cfg.admin_socket);
        else
            snprintf(spec, sizeof(spec), "unix:%s", g->cfg.admin_socket);
        if ((rc = open_one(g, reuse, priv, spec, 1, 0, err, errlen)) != 0)
            goto fail;
    }
    return 0;
fail:
    folio_listen_close(g, reuse);
    return rc;
}

void
folio_listen_close(struct folio_gen *g, const struct folio_gen *keep)
{
    struct folio_listener *l;
    int i;

    for (i = 0; i < g->nlisteners; i++) {
        l = &g->listeners[i];
        if (l->fd != -1)
            close(l->fd);
        l->fd = -1;
        if (strncmp(l->spec, "unix:", 5) == 0 &&
            find_reusable(keep, l->spec, l->admin, l->http) == NULL) {
            struct folio_addr a;
            char why[128];

            /* A socket systemd passed is systemd's to remove. */
            if (folio_addr_parse(l->spec, &a, why, sizeof(why)) != 0 ||
                !folio_activate_has(&a))
                unlink(l->spec + 5);
        }
    }
    g->nlisteners = 0;
}
