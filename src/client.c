/*
 * client.c - blocking msgpack-RPC client (see client.h).
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "src/addr.h"
#include "src/alloc.h"
#include "src/client.h"
#include "src/err.h"
#include "src/rpc.h"

#define CLIENT_MAX_MESSAGE (256u * 1024 * 1024)

int
folio_client_open(const char *addr, int timeout_ms, struct folio_client **out,
                  char *err, size_t errlen)
{
    struct folio_client *c;
    struct folio_addr a;
    char spec[FOLIO_ADDR_TEXT + 8];
    int fd;

    if (addr[0] == '/')
        snprintf(spec, sizeof(spec), "unix:%s", addr);
    else
        snprintf(spec, sizeof(spec), "%s", addr);
    if (folio_addr_parse(spec, &a, err, errlen) != 0)
        return FOLIO_EINVAL;
    if ((fd = folio_addr_connect(&a, timeout_ms)) == -1) {
        int e = errno;

        snprintf(err, errlen, "cannot connect to %s: %s", addr, strerror(e));
        errno = e; /* for the caller's message */
        return e == ETIMEDOUT ? FOLIO_ETIMEDOUT : FOLIO_ESYS;
    }
    if ((c = folio_calloc(1, sizeof(*c))) == NULL ||
        folio_buf_init(&c->in, 65536, 0) != 0) {
        folio_free(c);
        close(fd);
        snprintf(err, errlen, "out of memory");
        return FOLIO_ENOMEM;
    }
    c->fd = fd;
    c->timeout_ms = timeout_ms;
    c->next_msgid = 1;
    folio_mp_scan_init(&c->scan, CLIENT_MAX_MESSAGE, FOLIO_MP_MAX_DEPTH);
    msgpack_sbuffer_init(&c->out);
    msgpack_packer_init(&c->pk, &c->out, msgpack_sbuffer_write);
    *out = c;
    return 0;
}

void
folio_client_close(struct folio_client *c)
{
    if (c == NULL)
        return;
    close(c->fd);
    folio_buf_free(&c->in);
    msgpack_sbuffer_destroy(&c->out);
    folio_free(c);
}

msgpack_packer *
folio_client_request(struct folio_client *c, int notify, const char *method,
                     uint32_t nparams, uint32_t *msgid)
{
    uint32_t id = c->next_msgid++;

    if (msgid != NULL)
        *msgid = id;
    folio_rpc_pack_request_head(&c->pk, notify, id, method, nparams);
    return &c->pk;
}

static int
wait_fd(struct folio_client *c, short events)
{
    struct pollfd p = {c->fd, events, 0};
    int r;

    do
        r = poll(&p, 1, c->timeout_ms);
    while (r == -1 && errno == EINTR);
    if (r == 0)
        return FOLIO_ETIMEDOUT;
    return r < 0 ? FOLIO_ESYS : 0;
}

int
folio_client_send_raw(struct folio_client *c, const void *p, size_t len)
{
    const char *b = p;
    ssize_t n;
    int rc;

    while (len > 0) {
        if ((rc = wait_fd(c, POLLOUT)) != 0)
            return rc;
        n = send(c->fd, b, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return FOLIO_ESYS;
        }
        b += n;
        len -= (size_t)n;
    }
    return 0;
}

int
folio_client_flush(struct folio_client *c)
{
    int rc = folio_client_send_raw(c, c->out.data, c->out.size);

    msgpack_sbuffer_clear(&c->out);
    return rc;
}

int
folio_client_recv(struct folio_client *c, const char **msg, size_t *len)
{
    ssize_t n;
    size_t avail;
    int r, rc;

    folio_buf_consume(&c->in, c->in_msg);
    c->in_msg = 0;
    for (;;) {
        avail = folio_buf_pending(&c->in);
        if (avail > 0) {
            r = folio_mp_scan(&c->scan, c->in.b_data + c->in.b_off, avail);
            if (r == FOLIO_MP_DONE) {
                *msg = c->in.b_data + c->in.b_off;
                *len = c->in_msg = (size_t)c->scan.pos;
                folio_mp_scan_reset(&c->scan);
                return 1;
            }
            if (r != FOLIO_MP_MORE)
                return FOLIO_EPROTO;
        }
        if (folio_buf_reserve(&c->in, 65536) != 0)
            return FOLIO_ENOMEM;
        if ((rc = wait_fd(c, POLLIN)) != 0)
            return rc;
        n = recv(c->fd, c->in.b_data + c->in.b_len, folio_buf_space(&c->in),
                 MSG_DONTWAIT);
        if (n == 0)
            return 0;
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return FOLIO_ESYS;
        }
        c->in.b_len += (size_t)n;
    }
}

int
folio_client_reply(struct folio_client *c, struct folio_reply *r)
{
    struct folio_rpc_msg m;
    struct folio_mp_cur e;
    const char *msg, *why;
    size_t len;
    uint32_t n;
    int64_t code;
    int rc;

    memset(r, 0, sizeof(*r));
    if ((rc = folio_client_recv(c, &msg, &len)) != 1)
        return rc;
    if (folio_rpc_parse(msg, len, &m, &why) != 0 ||
        m.type != FOLIO_RPC_RESPONSE)
        return FOLIO_EPROTO;
    r->msgid = m.msgid;
    r->result = m.result;
    r->error = m.error;
    e = m.error;
    if (folio_mp_read_nil(&e) == 0)
        return 1;
    r->code = FOLIO_ST_INTERNAL;
    if (folio_mp_read_array(&e, &n) == 0 && n >= 2 &&
        folio_mp_read_int(&e, &code) == 0) {
        r->code = (int)code;
        folio_mp_read_str(&e, &r->message, &r->message_len);
    }
    return 1;
}

int
folio_client_call0(struct folio_client *c, const char *method,
                   struct folio_reply *r)
{
    uint32_t id;
    int rc;

    folio_client_request(c, 0, method, 0, &id);
    if ((rc = folio_client_flush(c)) != 0)
        return rc;
    if ((rc = folio_client_reply(c, r)) != 1)
        return rc;
    return r->msgid == id ? 1 : FOLIO_EPROTO;
}

int
folio_client_call_str(struct folio_client *c, const char *method,
                      const char *arg, struct folio_reply *r)
{
    uint32_t id;
    int rc;

    folio_pack_cstr(folio_client_request(c, 0, method, 1, &id), arg);
    if ((rc = folio_client_flush(c)) != 0)
        return rc;
    if ((rc = folio_client_reply(c, r)) != 1)
        return rc;
    return r->msgid == id ? 1 : FOLIO_EPROTO;
}
