/*
 * notify.c - tell the service manager how foliod is doing: systemd's
 * sd_notify protocol, spoken directly (no libsystemd).  When the
 * environment names NOTIFY_SOCKET, each state change is one datagram of
 * "KEY=VALUE" lines to that AF_UNIX socket ("@name" is an abstract
 * socket).  The master calls it where it logs "ready", "reloading",
 * "reloaded" and "stopping"; without NOTIFY_SOCKET it does nothing.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "master/master_int.h"
#include "src/clock.h"
#include "src/log.h"

/* Fill `sa` from NOTIFY_SOCKET; its length, or 0 if unset or unusable. */
static socklen_t
notify_addr(struct sockaddr_un *sa)
{
    const char *path = getenv("NOTIFY_SOCKET");
    size_t len;

    if (path == NULL || (path[0] != '/' && path[0] != '@'))
        return 0;
    len = strlen(path);
    if (len < 2 || len > sizeof(sa->sun_path))
        return 0;
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path, path, len);
    if (path[0] == '@') {
        /* Abstract: a leading NUL, and the length counts exactly. */
        sa->sun_path[0] = '\0';
        return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    }
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
}

int
folio_notify(const char *fmt, ...)
{
    static int warned;
    struct sockaddr_un sa;
    socklen_t salen;
    char msg[1024];
    va_list ap;
    int fd, n, rc = 0;

    if ((salen = notify_addr(&sa)) == 0)
        return 0;
    va_start(ap, fmt);
    n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    if ((size_t)n >= sizeof(msg))
        n = (int)sizeof(msg) - 1;
    if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1 ||
        sendto(fd, msg, (size_t)n, MSG_NOSIGNAL, (struct sockaddr *)&sa,
               salen) != n) {
        if (!warned)
            folio_log_warn("notifying the service manager at %s",
                           getenv("NOTIFY_SOCKET"));
        warned = 1;
        rc = -1;
    }
    if (fd != -1)
        close(fd);
    return rc;
}

int
folio_notify_reloading(void)
{
    /* MONOTONIC_USEC: what Type=notify-reload (systemd 253) asks for. */
    return folio_notify("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
                        (unsigned long long)(folio_mono_ns() / 1000));
}
