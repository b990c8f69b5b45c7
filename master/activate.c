/*
 * activate.c - socket activation: listening sockets passed by systemd
 * (foliod.socket) instead of bound by foliod.  sd_listen_fds(3)'s
 * protocol: LISTEN_PID names this process, LISTEN_FDS counts descriptors
 * from 3.  The master keeps them for its whole life; a generation whose
 * listen address (or admin socket) is one of them takes a copy instead of
 * binding.  Since systemd holds them too, connections that arrive while
 * foliod restarts wait in the queue for the next one.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "master/master_int.h"
#include "src/log.h"

#define FIRST_FD 3

static struct {
    int fd;
    struct sockaddr_storage ss;
    socklen_t sl;
    int used;
} inh[FOLIO_MAX_SOCKETS];
static int ninh;

int
folio_activate_init(char *err, size_t errlen)
{
    const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
    char *end;
    long n, i;
    int type, fl;
    socklen_t len;

    if (pid == NULL || fds == NULL)
        return 0;
    /* For us, not for a process we were forked from; and never again. */
    if (strtol(pid, &end, 10) != (long)getpid() || *end != '\0') {
        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_FDNAMES");
        return 0;
    }
    n = strtol(fds, &end, 10);
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    if (*end != '\0' || n < 0 || n > FOLIO_MAX_SOCKETS) {
        snprintf(err, errlen, "LISTEN_FDS=%s: expected 0..%d sockets", fds,
                 FOLIO_MAX_SOCKETS);
        return -1;
    }
    for (i = 0; i < n; i++) {
        int fd = FIRST_FD + (int)i;

        len = sizeof(type);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == -1 ||
            type != SOCK_STREAM) {
            snprintf(err, errlen,
                     "socket activation: descriptor %d is not a stream "
                     "socket",
                     fd);
            return -1;
        }
        inh[ninh].sl = sizeof(inh[ninh].ss);
        if (getsockname(fd, (struct sockaddr *)&inh[ninh].ss, &inh[ninh].sl) ==
            -1) {
            snprintf(err, errlen, "socket activation: getsockname(%d): %s", fd,
                     strerror(errno));
            return -1;
        }
        /* Workers race to accept: never block in accept(2). */
        if ((fl = fcntl(fd, F_GETFL)) == -1 ||
            fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1 ||
            fcntl(fd, F_SETFD, FD_CLOEXEC) == -1) {
            snprintf(err, errlen, "socket activation: fcntl(%d): %s", fd,
                     strerror(errno));
            return -1;
        }
        inh[ninh].fd = fd;
        inh[ninh].used = 0;
        ninh++;
    }
    return 0;
}

static int
same_addr(const struct sockaddr_storage *s, socklen_t sl,
          const struct folio_addr *a)
{
    if (s->ss_family != a->family)
        return 0;
    switch (a->family) {
    case AF_INET: {
        const struct sockaddr_in *x = (const void *)s,
                                 *y = (const void *)&a->sa;

        return y->sin_port != 0 && x->sin_port == y->sin_port &&
               x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    case AF_INET6: {
        const struct sockaddr_in6 *x = (const void *)s,
                                  *y = (const void *)&a->sa;

        return y->sin6_port != 0 && x->sin6_port == y->sin6_port &&
               memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
    }
    case AF_UNIX: {
        const struct sockaddr_un *x = (const void *)s,
                                 *y = (const void *)&a->sa;

        return sl > offsetof(struct sockaddr_un, sun_path) &&
               strncmp(x->sun_path, y->sun_path, sizeof(x->sun_path)) == 0;
    }
    }
    return 0;
}

int
folio_activate_take(const struct folio_addr *a)
{
    int i, fd;

    for (i = 0; i < ninh; i++) {
        if (!same_addr(&inh[i].ss, inh[i].sl, a))
            continue;
        if ((fd = fcntl(inh[i].fd, F_DUPFD_CLOEXEC, FIRST_FD)) == -1)
            return -1;
        inh[i].used = 1;
        return fd;
    }
    return -1;
}

int
folio_activate_has(const struct folio_addr *a)
{
    int i;

    for (i = 0; i < ninh; i++)
        if (same_addr(&inh[i].ss, inh[i].sl, a))
            return 1;
    return 0;
}

void
folio_activate_report(void)
{
    char name[FOLIO_ADDR_TEXT];
    int i, n = 0;

    /*
     * Closed, not held: a socket nobody serves would take connections
     * that then hang (unless systemd holds it too: that is its own).
     */
    for (i = 0; i < ninh; i++) {
        if (inh[i].used) {
            inh[n++] = inh[i];
            continue;
        }
        folio_log_warnx("socket activation: %s matches no listen address "
                        "or admin socket: closed",
                        folio_addr_format((struct sockaddr *)&inh[i].ss,
                                          inh[i].sl, name, sizeof(name)));
        close(inh[i].fd);
    }
    ninh = n;
}

int
folio_activate_fds(int *fds, int max)
{
    int i;

    for (i = 0; i < ninh && i < max; i++)
        fds[i] = inh[i].fd;
    return i;
}

int
folio_activate_adopt(int fd)
{
    int fl;

    if (ninh >= FOLIO_MAX_SOCKETS)
        return -1;
    inh[ninh].sl = sizeof(inh[ninh].ss);
    if (getsockname(fd, (struct sockaddr *)&inh[ninh].ss, &inh[ninh].sl) ==
            -1 ||
        (fl = fcntl(fd, F_GETFD)) == -1 ||
        fcntl(fd, F_SETFD, fl | FD_CLOEXEC) == -1)
        return -1;
    inh[ninh].fd = fd;
    inh[ninh].used = 1;
    ninh++;
    return 0;
}

void
folio_activate_close(void)
{
    int i;

    for (i = 0; i < ninh; i++)
        close(inh[i].fd);
    ninh = 0;
}
