/*
 * http.c - a blocking HTTP/1.0 GET (see http.h): the server closes the
 * connection after its answer, so the body is what comes before EOF
 * (checked against Content-Length when there is one).  The answer is read
 * whole, then split into its head and its body.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "src/addr.h"
#include "src/buf.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/http.h"

#define MAX_ANSWER (512u << 20)

/* Milliseconds left before `deadline` (-1: none). */
static int
left_ms(uint64_t deadline)
{
    uint64_t now;

    if (deadline == 0)
        return -1;
    now = folio_mono_ms();
    return now >= deadline ? 0 : (int)(deadline - now);
}

/* Append n bytes at p to b, and a NUL that b_len does not count. */
static int
append_text(struct folio_buf *b, const char *p, size_t n)
{
    if (folio_buf_reserve(b, n + 1) != 0)
        return FOLIO_ENOMEM;
    memcpy(b->b_data + b->b_len, p, n);
    b->b_len += n;
    b->b_data[b->b_len] = '\0';
    return 0;
}

void
folio_http_answer_free(struct folio_http_answer *ans)
{
    folio_buf_free(&ans->head);
    folio_buf_free(&ans->body);
}

int
folio_http_get(const char *addr, const char *path, int timeout_ms,
               struct folio_http_answer *ans, char *err, size_t errlen)
{
    struct folio_buf in;
    struct folio_addr a;
    struct pollfd pfd;
    uint64_t deadline = timeout_ms >= 0 ? folio_mono_ms() + (uint64_t)timeout_ms
                                        : 0;
    char req[2048], why[256], *hdr_end, *cl;
    size_t sent = 0, len, hlen;
    ssize_t n;
    int fd, rc = 0, t;

    memset(ans, 0, sizeof(*ans));
    if (folio_addr_parse(addr, &a, why, sizeof(why)) != 0 ||
        a.family == AF_UNIX) {
        snprintf(err, errlen, "bad address %s: %s", addr,
                 a.family == AF_UNIX ? "HTTP needs HOST:PORT" : why);
        return FOLIO_EINVAL;
    }
    if ((fd = folio_addr_connect(&a, timeout_ms)) == -1) {
        snprintf(err, errlen, "cannot connect to %s: %s", addr,
                 strerror(errno));
        return errno == ETIMEDOUT ? FOLIO_ETIMEDOUT : FOLIO_ESYS;
    }
    len = (size_t)snprintf(req, sizeof(req),
                           "GET %s HTTP/1.0\r\nHost: %s\r\nUser-Agent: folio/"
                           PACKAGE_VERSION "\r\nConnection: close\r\n\r\n",
                           path, addr);
    if (len >= sizeof(req)) {
        close(fd);
        snprintf(err, errlen, "path too long");
        return FOLIO_EINVAL;
    }
    memset(&in, 0, sizeof(in));
    while (sent < len) {
        n = write(fd, req + sent, len - sent);
        if (n == -1 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(err, errlen, "sending to %s: %s", addr, strerror(errno));
            rc = FOLIO_ESYS;
            goto done;
        }
        sent += (size_t)n;
    }
    for (;;) {
        pfd.fd = fd;
        pfd.events = POLLIN;
        if ((t = poll(&pfd, 1, left_ms(deadline))) == -1 && errno == EINTR)
            continue;
        if (t == 0) {
            snprintf(err, errlen, "no answer from %s within %d s", addr,
                     timeout_ms / 1000);
            rc = FOLIO_ETIMEDOUT;
            goto done;
        }
        if (folio_buf_reserve(&in, 65536) != 0 ||
            folio_buf_pending(&in) > MAX_ANSWER) {
            snprintf(err, errlen, "answer from %s too large", addr);
            rc = FOLIO_ENOMEM;
            goto done;
        }
        n = read(fd, in.b_data + in.b_len, folio_buf_space(&in));
        if (n == -1 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, errlen, "reading from %s: %s", addr,
                     strerror(errno));
            rc = FOLIO_ESYS;
            goto done;
        }
        if (n == 0)
            break;
        in.b_len += (size_t)n;
    }
    /* "HTTP/1.x NNN reason\r\n" headers "\r\n\r\n" body */
    if (folio_buf_reserve(&in, 1) != 0) {
        snprintf(err, errlen, "out of memory");
        rc = FOLIO_ENOMEM;
        goto done;
    }
    in.b_data[in.b_len] = '\0';
    if (sscanf(in.b_data, "HTTP/1.%*d %d", &ans->status) != 1 ||
        (hdr_end = strstr(in.b_data, "\r\n\r\n")) == NULL) {
        snprintf(err, errlen, "%s did not answer HTTP", addr);
        rc = FOLIO_EPROTO;
        goto done;
    }
    hlen = (size_t)(hdr_end + 4 - in.b_data);
    *hdr_end = '\0';
    for (cl = in.b_data; (cl = strchr(cl, '\n')) != NULL; cl++)
        if (strncasecmp(cl + 1, "Content-Length:", 15) == 0 &&
            strtoull(cl + 16, NULL, 10) != in.b_len - hlen) {
            snprintf(err, errlen, "the answer from %s was cut short", addr);
            rc = FOLIO_EPROTO;
            goto done;
        }
    *hdr_end = '\r';
    if (append_text(&ans->head, in.b_data, hlen - 2) != 0 ||
        append_text(&ans->body, in.b_data + hlen, in.b_len - hlen) != 0) {
        snprintf(err, errlen, "out of memory");
        rc = FOLIO_ENOMEM;
    }
done:
    close(fd);
    folio_buf_free(&in);
    return rc;
}
