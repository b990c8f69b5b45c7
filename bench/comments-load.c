/*
 * comments-load - a small closed-loop load generator for the comments
 * service, used by bench/comments.sh beside folio-bench: -c connections
 * over -t threads, one request in flight each; the first --writers
 * connections post, the others list one page, so the latency of lists can
 * be read beside a stream of durable posts (folio-bench mixes the two on
 * every connection).  Requests are encoded once and patched with their
 * msgid.
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "src/addr.h"
#include "src/buf.h"
#include "src/clock.h"
#include "src/hist.h"
#include "src/mp.h"
#include "src/rpc.h"

struct opts {
    const char *addr;
    int conns, threads, writers;
    double duration_s, warmup_s;
    unsigned long long total; /* -n: stop after this many (0: duration) */
    const char *path;
    int pages;   /* posts go to path/0 .. path/pages-1 (0: path itself) */
    size_t body; /* bytes of each posted body */
    int json;
};

struct lconn {
    int fd;
    int writer;
    int page;
    struct folio_buf in;
    struct folio_mp_scan scan;
    unsigned char *req; /* this connection's copy, msgid patched */
    size_t req_len;
    uint64_t sent_ns;
    uint32_t next_id;
};

struct lthread {
    pthread_t th;
    const struct opts *o;
    struct lconn *conns;
    int nconns, first;
    uint64_t hist[2][FOLIO_LAT_BUCKETS]; /* [0] list, [1] post */
    uint64_t done[2], errors;
    uint64_t list_bytes; /* size of the last list result */
    uint64_t measure_ns, stop_ns, end_ns;
    char err[256];
};

static struct folio_addr target;
static msgpack_sbuffer list_req;
static msgpack_sbuffer *post_req; /* one per page */
static unsigned long long budget;
static pthread_mutex_t budget_lock = PTHREAD_MUTEX_INITIALIZER;

/* A msgid that takes the 5-byte form (0xce at offset 2): send_request()
 * patches it in place. */
#define MSGID_5 0x80000000u

static void
build_requests(const struct opts *o)
{
    msgpack_packer pk;
    char page[1100];
    char *body = malloc(o->body);
    int i, n = o->pages > 0 ? o->pages : 1;

    memset(body, 'b', o->body);
    msgpack_sbuffer_init(&list_req);
    msgpack_packer_init(&pk, &list_req, msgpack_sbuffer_write);
    folio_rpc_pack_request_head(&pk, 0, MSGID_5, "comments.list", 1);
    folio_pack_cstr(&pk, o->path);
    post_req = calloc((size_t)n, sizeof(*post_req));
    for (i = 0; i < n; i++) {
        if (o->pages > 0)
            snprintf(page, sizeof(page), "%s/%d", o->path, i);
        else
            snprintf(page, sizeof(page), "%s", o->path);
        msgpack_sbuffer_init(&post_req[i]);
        msgpack_packer_init(&pk, &post_req[i], msgpack_sbuffer_write);
        folio_rpc_pack_request_head(&pk, 0, MSGID_5, "comments.post", 1);
        msgpack_pack_map(&pk, 3);
        folio_pack_cstr(&pk, "path");
        folio_pack_cstr(&pk, page);
        folio_pack_cstr(&pk, "author");
        folio_pack_cstr(&pk, "comments-load");
        folio_pack_cstr(&pk, "body");
        folio_pack_str(&pk, body, o->body);
    }
    free(body);
}

static int
take_budget(void)
{
    int ok;

    pthread_mutex_lock(&budget_lock);
    ok = budget > 0;
    if (ok)
        budget--;
    pthread_mutex_unlock(&budget_lock);
    return ok;
}

static int
send_request(struct lconn *c)
{
    uint32_t id = c->next_id++;
    size_t off = 0;
    ssize_t n;

    c->req[3] = (unsigned char)(id >> 24);
    c->req[4] = (unsigned char)(id >> 16);
    c->req[5] = (unsigned char)(id >> 8);
    c->req[6] = (unsigned char)id;
    c->sent_ns = folio_mono_ns();
    while (off < c->req_len) {
        n = send(c->fd, c->req + off, c->req_len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
        } else if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd pf = {c->fd, POLLOUT, 0};

            poll(&pf, 1, 1000);
        } else {
            return -1;
        }
    }
    return 0;
}

/* "comments.post: error 8 no space" from an error object [code, message]. */
static void
describe_error(struct folio_mp_cur e, int writer, char *out, size_t len)
{
    const char *msg = "";
    uint32_t n, mlen = 0;
    int64_t code = -1;

    if (folio_mp_read_array(&e, &n) == 0 && n >= 2 &&
        folio_mp_read_int(&e, &code) == 0)
        folio_mp_read_str(&e, &msg, &mlen);
    snprintf(out, len, "%s: error %lld %.*s",
             writer ? "comments.post" : "comments.list", (long long)code,
             (int)mlen, msg);
}

/* Read what arrived; returns 1 when the reply is complete, 0, or -1. */
static int
read_reply(struct lthread *t, struct lconn *c)
{
    struct folio_rpc_msg m;
    const char *why;
    uint64_t now, dt;
    ssize_t n;
    int r;

    if (folio_buf_reserve(&c->in, 65536) != 0)
        return -1;
    n = recv(c->fd, c->in.b_data + c->in.b_len, folio_buf_space(&c->in), 0);
    if (n <= 0)
        return n == -1 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
    c->in.b_len += (size_t)n;
    r = folio_mp_scan(&c->scan, c->in.b_data + c->in.b_off,
                      folio_buf_pending(&c->in));
    if (r == FOLIO_MP_MORE)
        return 0;
    if (r != FOLIO_MP_DONE ||
        folio_rpc_parse(c->in.b_data + c->in.b_off, (size_t)c->scan.pos, &m,
                        &why) != 0 ||
        m.type != FOLIO_RPC_RESPONSE)
        return -1;
    now = folio_mono_ns();
    dt = now - c->sent_ns;
    if (!c->writer)
        t->list_bytes = (uint64_t)(m.result.end - m.result.p);
    if (now >= t->measure_ns) {
        t->done[c->writer]++;
        t->hist[c->writer][folio_lat_bucket(dt)]++;
        if (folio_mp_read_nil(&m.error) != 0 && t->errors++ == 0 &&
            t->err[0] == '\0')
            describe_error(m.error, c->writer, t->err, sizeof(t->err));
    }
    folio_buf_consume(&c->in, (size_t)c->scan.pos);
    folio_mp_scan_reset(&c->scan);
    return 1;
}

static void *
thread_main(void *arg)
{
    struct lthread *t = arg;
    const struct opts *o = t->o;
    struct pollfd *pf = calloc((size_t)t->nconns, sizeof(*pf));
    int i, open = 0, r;
    uint64_t now;

    for (i = 0; i < t->nconns; i++) {
        struct lconn *c = &t->conns[i];
        int gi = t->first + i;

        const msgpack_sbuffer *rq;

        c->writer = gi < o->writers;
        c->page = o->pages > 0 ? gi % o->pages : 0;
        c->next_id = 1;
        rq = c->writer ? &post_req[c->page] : &list_req;
        c->req = malloc(rq->size);
        memcpy(c->req, rq->data, rq->size);
        c->req_len = rq->size;
        if ((c->fd = folio_addr_connect(&target, 5000)) == -1) {
            snprintf(t->err, sizeof(t->err), "connect: %s", strerror(errno));
            return NULL;
        }
        folio_buf_init(&c->in, 65536, 0);
        folio_mp_scan_init(&c->scan, 256u << 20, 64);
    }
    now = folio_mono_ns();
    t->measure_ns = now + (uint64_t)(o->warmup_s * 1e9);
    t->stop_ns = o->total > 0 ? UINT64_MAX
                              : t->measure_ns + (uint64_t)(o->duration_s * 1e9);
    for (i = 0; i < t->nconns; i++) {
        pf[i].fd = t->conns[i].fd;
        pf[i].events = POLLIN;
        if ((o->total == 0 || take_budget()) && send_request(&t->conns[i]) == 0)
            open++;
        else
            pf[i].fd = -1;
    }
    while (open > 0) {
        if (poll(pf, (nfds_t)t->nconns, 1000) < 0 && errno != EINTR)
            break;
        for (i = 0; i < t->nconns; i++) {
            struct lconn *c = &t->conns[i];

            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            r = read_reply(t, c);
            if (r == 0)
                continue;
            if (r < 0 && t->err[0] == '\0')
                snprintf(t->err, sizeof(t->err), "connection lost");
            if (r < 0 || folio_mono_ns() >= t->stop_ns ||
                (o->total > 0 && !take_budget()) || send_request(c) != 0) {
                pf[i].fd = -1;
                open--;
            }
        }
    }
    t->end_ns = folio_mono_ns();
    for (i = 0; i < t->nconns; i++) {
        close(t->conns[i].fd);
        folio_buf_free(&t->conns[i].in);
        free(t->conns[i].req);
    }
    free(pf);
    return NULL;
}

static void
usage(FILE *f)
{
    fprintf(f, "usage: comments-load [-H ADDR] [-c CONNS] [-t THREADS] "
               "[-d SECONDS | -n REQUESTS]\n"
               "         [--warmup SECONDS] [--writers N] [--path PATH] "
               "[--pages N] [--body BYTES] [--json]\n");
}

int
main(int argc, char *argv[])
{
    static const struct option lo[] = {
        {"host", required_argument, NULL, 'H'},
        {"connections", required_argument, NULL, 'c'},
        {"threads", required_argument, NULL, 't'},
        {"duration", required_argument, NULL, 'd'},
        {"requests", required_argument, NULL, 'n'},
        {"warmup", required_argument, NULL, 'W'},
        {"writers", required_argument, NULL, 'w'},
        {"path", required_argument, NULL, 'p'},
        {"pages", required_argument, NULL, 'g'},
        {"body", required_argument, NULL, 'b'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct opts o = {"127.0.0.1:7788", 50, 2,   0, 5.0, 0.0, 0,
                     "/bench",         0,  200, 0};
    uint64_t hist[2][FOLIO_LAT_BUCKETS] = {{0}}, done[2] = {0}, errors = 0;
    uint64_t list_bytes = 0;
    struct lthread *th;
    char why[256];
    double secs = 0;
    int ch, i, k, w, failed = 0;

    while ((ch = getopt_long(argc, argv, "H:c:t:d:n:h", lo, NULL)) != -1) {
        switch (ch) {
        case 'H':
            o.addr = optarg;
            break;
        case 'c':
            o.conns = atoi(optarg);
            break;
        case 't':
            o.threads = atoi(optarg);
            break;
        case 'd':
            o.duration_s = atof(optarg);
            break;
        case 'n':
            o.total = strtoull(optarg, NULL, 10);
            break;
        case 'W':
            o.warmup_s = atof(optarg);
            break;
        case 'w':
            o.writers = atoi(optarg);
            break;
        case 'p':
            o.path = optarg;
            break;
        case 'g':
            o.pages = atoi(optarg);
            break;
        case 'b':
            o.body = (size_t)strtoul(optarg, NULL, 10);
            break;
        case 'j':
            o.json = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (o.conns < 1 || o.threads < 1 || o.duration_s <= 0 || o.body < 1 ||
        o.body > 65536 || o.writers < 0 || o.writers > o.conns) {
        usage(stderr);
        return 2;
    }
    if (folio_addr_parse(o.addr, &target, why, sizeof(why)) != 0) {
        fprintf(stderr, "comments-load: %s\n", why);
        return 2;
    }
    if (o.threads > o.conns)
        o.threads = o.conns;
    signal(SIGPIPE, SIG_IGN);
    budget = o.total;
    build_requests(&o);
    th = calloc((size_t)o.threads, sizeof(*th));
    for (i = 0, k = 0; i < o.threads; i++) {
        th[i].o = &o;
        th[i].first = k;
        th[i].nconns = o.conns / o.threads + (i < o.conns % o.threads);
        k += th[i].nconns;
        th[i].conns = calloc((size_t)th[i].nconns, sizeof(struct lconn));
        pthread_create(&th[i].th, NULL, thread_main, &th[i]);
    }
    for (i = 0; i < o.threads; i++) {
        pthread_join(th[i].th, NULL);
        for (w = 0; w < 2; w++) {
            for (k = 0; k < FOLIO_LAT_BUCKETS; k++)
                hist[w][k] += th[i].hist[w][k];
            done[w] += th[i].done[w];
        }
        errors += th[i].errors;
        if (th[i].list_bytes > list_bytes)
            list_bytes = th[i].list_bytes;
        if (th[i].end_ns > th[i].measure_ns &&
            (double)(th[i].end_ns - th[i].measure_ns) / 1e9 > secs)
            secs = (double)(th[i].end_ns - th[i].measure_ns) / 1e9;
        if (th[i].err[0] != '\0') {
            fprintf(stderr, "comments-load: %s\n", th[i].err);
            failed = 1;
        }
    }
#define P(w, q) (folio_lat_percentile(hist[w], q) / 1e3)
    if (o.json) {
        printf("{\"seconds\":%.3f,\"requests\":%llu,\"errors\":%llu,"
               "\"rps\":%.1f,\"list_rps\":%.1f,\"list_p50_us\":%.1f,"
               "\"list_p99_us\":%.1f,\"post_rps\":%.1f,\"post_p50_us\":%.1f,"
               "\"post_p99_us\":%.1f,\"list_bytes\":%llu}\n",
               secs, (unsigned long long)(done[0] + done[1]),
               (unsigned long long)errors,
               secs > 0 ? (double)(done[0] + done[1]) / secs : 0,
               secs > 0 ? (double)done[0] / secs : 0, P(0, 0.5), P(0, 0.99),
               secs > 0 ? (double)done[1] / secs : 0, P(1, 0.5), P(1, 0.99),
               (unsigned long long)list_bytes);
    } else {
        printf("%d connections (%d posting), %.2f s, %llu errors\n", o.conns,
               o.writers, secs, (unsigned long long)errors);
        printf("  list: %llu, %.0f/s, p50 %.1f us, p99 %.1f us\n",
               (unsigned long long)done[0],
               secs > 0 ? (double)done[0] / secs : 0, P(0, 0.5), P(0, 0.99));
        printf("  post: %llu, %.0f/s, p50 %.1f us, p99 %.1f us\n",
               (unsigned long long)done[1],
               secs > 0 ? (double)done[1] / secs : 0, P(1, 0.5), P(1, 0.99));
    }
    return failed || errors > 0 ? 1 : 0;
}
