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

/*
 * Make the directory holding a Unix socket, and its missing parents, like
 * systemd's RuntimeDirectory: they belong to the --user.
 */
static void
make_parent_dir(const struct folio_priv *priv, const char *path)
{
    char dir[FOLIO_ADDR_TEXT];
    char *slash;

    snprintf(dir, sizeof(dir), "%s", path);
    if ((slash = strrchr(dir, '/')) == NULL || slash == dir)
        return;
    *slash = '\0';
    if (access(dir, F_OK) == 0)
        return;
    if (folio_priv_mkdirs(priv, dir, 0755) == 0)
        folio_log_info("created %s", dir);
}

/* Whether a is a TCP address with port 0: any free port. */
static int
any_port(const struct folio_addr *a)
{
    if (a->family == AF_INET)
        return ((const struct sockaddr_in *)(const void *)&a->sa)->sin_port ==
               0;
    if (a->family == AF_INET6)
        return ((const struct sockaddr_in6 *)(const void *)&a->sa)
                   ->sin6_port == 0;
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
        snprintf(err, errlen, "%s address %s", http ? "http_listen" : "listen",
                 why);
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
        if (a.family == AF_UNIX)
            make_parent_dir(priv, spec + 5);
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
            snprintf(err, errlen, "cannot listen on %s: %s: %s", spec, why,
                     strerror(errno));
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
