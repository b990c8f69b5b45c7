/*
 * addr.c - parsing, binding and connecting folio addresses (see addr.h).
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/addr.h"
#include "src/err.h"

/* The port after HOST: in s (`port`): 0 with *pn set, or FOLIO_EINVAL. */
static int
check_port(const char *s, const char *port, long *pn, char *why,
           size_t whylen)
{
    size_t digits = strspn(port, "0123456789");

    if (*port == '\0') {
        snprintf(why, whylen, "'%s': no port after ':' (a port is 0..65535)",
                 s);
        return FOLIO_EINVAL;
    }
    if (port[digits] != '\0') {
        snprintf(why, whylen,
                 "'%s': the port '%s' is not a number (a port is 0..65535)", s,
                 port);
        return FOLIO_EINVAL;
    }
    if (digits > 5 || (*pn = strtol(port, NULL, 10)) > 65535) {
        snprintf(why, whylen, "'%s': the port %s is over 65535", s, port);
        return FOLIO_EINVAL;
    }
    return 0;
}

int
folio_addr_expand(const char *s, int default_port, char *out, size_t outlen,
                  char *why, size_t whylen)
{
    const char *colon, *rb;
    size_t hl;
    long pn;
    int n;

    if (strncmp(s, "unix:", 5) == 0) {
        if (s[5] == '\0' ||
            strlen(s + 5) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
            snprintf(why, whylen,
                     "'%s': Unix socket path empty or over %zu bytes", s,
                     sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
            return FOLIO_EINVAL;
        }
        n = snprintf(out, outlen, "%s", s);
    } else if (*s != '\0' && s[strspn(s, "0123456789")] == '\0') {
        /* A port alone: the loopback's, as redis binds a bare `port`. */
        if (check_port(s, s, &pn, why, whylen) != 0)
            return FOLIO_EINVAL;
        n = snprintf(out, outlen, "127.0.0.1:%ld", pn);
    } else if (*s == '[') {
        if ((rb = strchr(s, ']')) == NULL || (rb[1] != ':' && rb[1] != '\0')) {
            snprintf(why, whylen, "'%s': expected [V6ADDR]:PORT", s);
            return FOLIO_EINVAL;
        }
        if (rb[1] == ':' && check_port(s, rb + 2, &pn, why, whylen) != 0)
            return FOLIO_EINVAL;
        if (rb[1] == '\0' && default_port < 0) {
            snprintf(why, whylen, "'%s': expected [V6ADDR]:PORT (no port)", s);
            return FOLIO_EINVAL;
        }
        n = rb[1] == ':' ? snprintf(out, outlen, "%s", s)
                         : snprintf(out, outlen, "%s:%d", s, default_port);
    } else {
        colon = strrchr(s, ':');
        hl = colon != NULL ? (size_t)(colon - s) : strlen(s);
        if (memchr(s, ':', hl) != NULL) {
            snprintf(why, whylen,
                     "'%s': write IPv6 addresses as [V6ADDR]:PORT", s);
            return FOLIO_EINVAL;
        }
        if (colon != NULL && check_port(s, colon + 1, &pn, why, whylen) != 0)
            return FOLIO_EINVAL;
        if (colon == NULL && (default_port < 0 || hl == 0)) {
            snprintf(why, whylen,
                     "'%s': expected HOST:PORT, [V6ADDR]:PORT, PORT or "
                     "unix:PATH",
                     s);
            return FOLIO_EINVAL;
        }
        n = colon != NULL ? snprintf(out, outlen, "%s", s)
                          : snprintf(out, outlen, "%s:%d", s, default_port);
    }
    if (n < 0 || (size_t)n >= outlen) {
        snprintf(why, whylen, "'%.40s...': too long for an address", s);
        return FOLIO_EINVAL;
    }
    return 0;
}

int
folio_addr_parse(const char *spec, struct folio_addr *out, char *why,
                 size_t whylen)
{
    struct addrinfo hints, *res = NULL;
    char full[FOLIO_ADDR_TEXT + 8], host[256];
    const char *port, *s = full;
    size_t hl;
    int rc;

    memset(out, 0, sizeof(*out));
    if (folio_addr_expand(spec, -1, full, sizeof(full), why, whylen) != 0)
        return FOLIO_EINVAL;
    if (strncmp(s, "unix:", 5) == 0) {
        struct sockaddr_un *un = (struct sockaddr_un *)&out->sa;

        un->sun_family = AF_UNIX;
        memcpy(un->sun_path, s + 5, strlen(s + 5) + 1);
        out->salen = (socklen_t)sizeof(*un);
        out->family = AF_UNIX;
        return 0;
    }
    /* The full form: HOST:PORT or [V6ADDR]:PORT, the port checked. */
    port = strrchr(s, ':') + 1;
    hl = (size_t)(port - 1 - s);
    if (*s == '[') {
        s++;
        hl -= 2;
    }
    if (hl >= sizeof(host)) {
        snprintf(why, whylen, "'%s': host too long", spec);
        return FOLIO_EINVAL;
    }
    memcpy(host, s, hl);
    host[hl] = '\0';
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    rc = getaddrinfo(strcmp(host, "*") == 0 || host[0] == '\0' ? NULL : host,
                     port, &hints, &res);
    if (rc != 0 || res == NULL) {
        snprintf(why, whylen, "'%s': %s", spec,
                 rc != 0 ? gai_strerror(rc) : "no address");
        return FOLIO_EINVAL;
    }
    if (strcmp(host, "*") == 0 || host[0] == '\0') {
        /* "*:PORT" means every IPv4 address, as in nginx. */
        struct addrinfo *ai;

        for (ai = res; ai != NULL; ai = ai->ai_next)
            if (ai->ai_family == AF_INET)
                break;
        if (ai != NULL) {
            memcpy(&out->sa, ai->ai_addr, ai->ai_addrlen);
            out->salen = ai->ai_addrlen;
            out->family = ai->ai_family;
            freeaddrinfo(res);
            return 0;
        }
    }
    memcpy(&out->sa, res->ai_addr, res->ai_addrlen);
    out->salen = res->ai_addrlen;
    out->family = res->ai_family;
    freeaddrinfo(res);
    return 0;
}

const char *
folio_addr_format(const struct sockaddr *sa, socklen_t len, char *buf,
                  size_t buflen)
{
    char host[INET6_ADDRSTRLEN];

    switch (sa->sa_family) {
    case AF_INET: {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        snprintf(buf, buflen, "%s:%u", host, ntohs(in->sin_port));
        break;
    }
    case AF_INET6: {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        snprintf(buf, buflen, "[%s]:%u", host, ntohs(in6->sin6_port));
        break;
    }
    case AF_UNIX: {
        const struct sockaddr_un *un = (const struct sockaddr_un *)sa;

        if (len <= offsetof(struct sockaddr_un, sun_path))
            snprintf(buf, buflen, "unix:");
        else
            snprintf(buf, buflen, "unix:%.*s",
                     (int)(len - offsetof(struct sockaddr_un, sun_path)),
                     un->sun_path);
        break;
    }
    default:
        snprintf(buf, buflen, "(family %d)", sa->sa_family);
    }
    return buf;
}

void
folio_addr_pack(const struct sockaddr *sa, socklen_t len, uint64_t w[3])
{
    w[0] = w[1] = w[2] = 0;
    if (sa == NULL || len < (socklen_t)sizeof(sa->sa_family))
        return;
    switch (sa->sa_family) {
    case AF_INET: {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

        w[0] = (uint64_t)AF_INET << 48 | (uint64_t)ntohs(in->sin_port) << 32 |
               ntohl(in->sin_addr.s_addr);
        break;
    }
    case AF_INET6: {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

        w[0] = (uint64_t)AF_INET6 << 48 |
               (uint64_t)ntohs(in6->sin6_port) << 32;
        memcpy(&w[1], in6->sin6_addr.s6_addr, 8);
        memcpy(&w[2], in6->sin6_addr.s6_addr + 8, 8);
        break;
    }
    case AF_UNIX:
        w[0] = (uint64_t)AF_UNIX << 48;
        break;
    }
}

const char *
folio_addr_packed_format(const uint64_t w[3], char *buf, size_t buflen)
{
    struct sockaddr_in in;
    struct sockaddr_in6 in6;

    switch ((int)(w[0] >> 48)) {
    case AF_INET:
        memset(&in, 0, sizeof(in));
        in.sin_family = AF_INET;
        in.sin_port = htons((uint16_t)(w[0] >> 32));
        in.sin_addr.s_addr = htonl((uint32_t)w[0]);
        return folio_addr_format((struct sockaddr *)&in, sizeof(in), buf,
                                 buflen);
    case AF_INET6:
        memset(&in6, 0, sizeof(in6));
        in6.sin6_family = AF_INET6;
        in6.sin6_port = htons((uint16_t)(w[0] >> 32));
        memcpy(in6.sin6_addr.s6_addr, &w[1], 8);
        memcpy(in6.sin6_addr.s6_addr + 8, &w[2], 8);
        return folio_addr_format((struct sockaddr *)&in6, sizeof(in6), buf,
                                 buflen);
    case AF_UNIX:
        snprintf(buf, buflen, "unix");
        return buf;
    }
    if (buflen > 0)
        buf[0] = '\0';
    return buf;
}

int
folio_addr_port(const struct folio_addr *a)
{
    if (a->family == AF_INET)
        return ntohs(((const struct sockaddr_in *)&a->sa)->sin_port);
    if (a->family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)&a->sa)->sin6_port);
    return 0;
}

/* A Unix socket file nobody accepts on is left over from a dead server. */
static int
unix_stale(const struct folio_addr *a)
{
    int fd, rc;

    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
        return 0;
    rc = connect(fd, (const struct sockaddr *)&a->sa, a->salen);
    close(fd);
    return rc == -1 && errno == ECONNREFUSED;
}

int
folio_addr_listen(const struct folio_addr *a, int backlog, int mode, char *why,
                  size_t whylen)
{
    const struct sockaddr_un *un = (const struct sockaddr_un *)&a->sa;
    int fd, one = 1, saved;

    fd = socket(a->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        snprintf(why, whylen, "socket");
        return -1;
    }
    if (a->family != AF_UNIX) {
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1) {
            snprintf(why, whylen, "setsockopt(SO_REUSEADDR)");
            goto fail;
        }
        if (a->family == AF_INET6 &&
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) == -1) {
            snprintf(why, whylen, "setsockopt(IPV6_V6ONLY)");
            goto fail;
        }
    } else if (access(un->sun_path, F_OK) == 0) {
        if (!unix_stale(a)) {
            errno = EADDRINUSE;
            snprintf(why, whylen, "bind(%s): a server is listening there",
                     un->sun_path);
            goto fail;
        }
        unlink(un->sun_path);
    }
    if (bind(fd, (const struct sockaddr *)&a->sa, a->salen) == -1) {
        snprintf(why, whylen, "bind");
        goto fail;
    }
    if (a->family == AF_UNIX && mode != 0 && chmod(un->sun_path, (mode_t)mode) == -1) {
        snprintf(why, whylen, "chmod(%s, %o)", un->sun_path, mode);
        goto fail;
    }
    if (listen(fd, backlog) == -1) {
        snprintf(why, whylen, "listen");
        goto fail;
    }
    return fd;
fail:
    saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

int
folio_addr_connect(const struct folio_addr *a, int timeout_ms)
{
    struct pollfd pfd;
    socklen_t len;
    int fd, err, one = 1, flags;

    if ((fd = socket(a->family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
        return -1;
    flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    if (connect(fd, (const struct sockaddr *)&a->sa, a->salen) == -1) {
        if (errno != EINPROGRESS && errno != EAGAIN)
            goto fail;
        pfd.fd = fd;
        pfd.events = POLLOUT;
        err = poll(&pfd, 1, timeout_ms);
        if (err == 0) {
            errno = ETIMEDOUT;
            goto fail;
        }
        if (err < 0)
            goto fail;
        len = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
            goto fail;
        if (err != 0) {
            errno = err;
            goto fail;
        }
    }
    fcntl(fd, F_SETFL, flags);
    if (a->family != AF_UNIX)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
fail:
    err = errno;
    close(fd);
    errno = err;
    return -1;
}
