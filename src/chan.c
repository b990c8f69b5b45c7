/*
 * chan.c - master <-> worker messages with descriptor passing (see chan.h).
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "src/chan.h"
#include "src/err.h"

int
folio_chan_pair(int fds[2])
{
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) == -1)
        return FOLIO_ESYS;
    return 0;
}

int
folio_chan_send(int fd, uint32_t type, uint32_t flags, uint32_t arg,
                const void *data, size_t len, int passfd)
{
    struct folio_chan_hdr h;
    struct msghdr msg;
    struct iovec iov[2];
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } cm;
    ssize_t n;

    if (len > FOLIO_CHAN_MAX_DATA) {
        errno = EMSGSIZE;
        return FOLIO_ESYS;
    }
    h.ch_type = type;
    h.ch_flags = flags;
    h.ch_len = (uint32_t)len;
    h.ch_arg = arg;
    iov[0].iov_base = &h;
    iov[0].iov_len = sizeof(h);
    iov[1].iov_base = (void *)(uintptr_t)data;
    iov[1].iov_len = len;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = iov;
    msg.msg_iovlen = len > 0 ? 2 : 1;
    if (passfd >= 0) {
        struct cmsghdr *c;

        memset(&cm, 0, sizeof(cm));
        msg.msg_control = cm.buf;
        msg.msg_controllen = sizeof(cm.buf);
        c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &passfd, sizeof(int));
    }
    do
        n = sendmsg(fd, &msg, MSG_NOSIGNAL);
    while (n == -1 && errno == EINTR);
    return n == -1 ? FOLIO_ESYS : 0;
}

int
folio_chan_recv(int fd, struct folio_chan_hdr *h, void *data, size_t cap,
                int *passfd)
{
    struct msghdr msg;
    struct iovec iov[2];
    struct cmsghdr *c;
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } cm;
    ssize_t n;

    *passfd = -1;
    iov[0].iov_base = h;
    iov[0].iov_len = sizeof(*h);
    iov[1].iov_base = data;
    iov[1].iov_len = cap;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    msg.msg_control = cm.buf;
    msg.msg_controllen = sizeof(cm.buf);
    do
        n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    while (n == -1 && errno == EINTR);
    if (n == 0)
        return 0;
    if (n == -1)
        return errno == EAGAIN || errno == EWOULDBLOCK ? FOLIO_EAGAIN
                                                       : FOLIO_ESYS;
    for (c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len >= CMSG_LEN(sizeof(int)))
            memcpy(passfd, CMSG_DATA(c), sizeof(int));
    if ((size_t)n < sizeof(*h) || (size_t)n - sizeof(*h) != h->ch_len ||
        (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        if (*passfd >= 0) {
            close(*passfd);
            *passfd = -1;
        }
        return FOLIO_EPROTO;
    }
    return 1;
}
