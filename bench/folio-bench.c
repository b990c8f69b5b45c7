/*
 * folio-bench - load generator for foliod.
 *
 * Closed loop, as hey or wrk: -c connections spread over -t threads, each
 * keeping -P requests in flight; every answer is checked and timed; a
 * log-linear histogram gives the percentiles.  Each thread runs its own
 * libevent loop over non-blocking sockets, and requests are encoded once
 * and patched with their msgid, so the generator costs the client little.
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

#include <event2/event.h>

#include "src/addr.h"
#include "src/alloc.h"
#include "src/buf.h"
#include "src/conf.h"
#include "src/hist.h"
#include "src/mp.h"
#include "src/rpc.h"

#define MAX_PIPELINE 4096

struct opts {
    const char *addr;
    int conns;
    int threads;
    int pipeline;
    double duration_s;
    double warmup_s;
    uint64_t total;   /* -n: stop after this many (0: use duration) */
    const char *workload;
    int json;
};

struct bthread;

struct bconn {
    int fd;
    struct event *ev;
    struct bthread *t;
    struct folio_buf in;
    struct folio_mp_scan scan;
    uint64_t sent_ns[MAX_PIPELINE]; /* FIFO: replies come in order */
    unsigned head, inflight;
    uint32_t next_id;
    char *out;
    size_t outlen;
};

struct bthread {
    pthread_t th;
    int id;
    const struct opts *o;
    struct event_base *base;
    struct bconn *conns;
    int nconns;
    uint64_t hist[FOLIO_LAT_BUCKETS];
    uint64_t done, errors, max_ns;
    uint64_t start_ns, measure_ns, stop_ns;
    int open;      /* connections still open */
    int stopping;
    char err[256];
};

static struct folio_addr target;
static const unsigned char *req_tmpl;
static size_t req_len;
static volatile uint64_t total_budget;
static pthread_mutex_t budget_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* [0, msgid as uint32, "server.ping", []]: msgid at a fixed offset. */
static unsigned char ping_req[] = {0x94, 0x00, 0xce, 0, 0, 0, 0, 0xab, 's',
                                   'e',  'r',  'v',  'e', 'r', '.', 'p',
                                   'i',  'n',  'g',  0x90};

/* May another request be sent?  With -n the budget is shared. */
static int
take_budget(struct bthread *t)
{
    int ok;

    if (t->stopping)
        return 0;
    if (t->o->total == 0)
        return 1;
    pthread_mutex_lock(&budget_lock);
    ok = total_budget > 0;
    if (ok)
        total_budget--;
    pthread_mutex_unlock(&budget_lock);
    return ok;
}

static void
append_request(struct bconn *c, uint64_t t)
{
    unsigned char *p = (unsigned char *)c->out + c->outlen;
    uint32_t id = c->next_id++;

    memcpy(p, req_tmpl, req_len);
    p[3] = (unsigned char)(id >> 24);
    p[4] = (unsigned char)(id >> 16);
    p[5] = (unsigned char)(id >> 8);
    p[6] = (unsigned char)id;
    c->outlen += req_len;
    c->sent_ns[(c->head + c->inflight) % MAX_PIPELINE] = t;
    c->inflight++;
}

static int
send_out(struct bconn *c)
{
    size_t off = 0;
    ssize_t n;

    while (off < c->outlen) {
        n = send(c->fd, c->out + off, c->outlen - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
        } else if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd p = {c->fd, POLLOUT, 0};

            poll(&p, 1, 1000);
        } else {
            return -1;
        }
    }
    c->outlen = 0;
    return 0;
}

static void
conn_done(struct bconn *c, const char *why)
{
    struct bthread *t = c->t;

    if (c->fd == -1)
        return;
    if (why != NULL && t->err[0] == '\0')
        snprintf(t->err, sizeof(t->err), "%s", why);
    event_del(c->ev);
    close(c->fd);
    c->fd = -1;
    if (--t->open == 0)
        event_base_loopbreak(t->base);
}

static void
on_read(evutil_socket_t fd, short what, void *arg)
{
    struct bconn *c = arg;
    struct bthread *t = c->t;
    struct folio_rpc_msg m;
    const char *why;
    uint64_t now, dt;
    ssize_t n;
    size_t avail;
    int r;

    if (folio_buf_reserve(&c->in, 65536) != 0) {
        conn_done(c, "out of memory");
        return;
    }
    n = recv(fd, c->in.b_data + c->in.b_len, folio_buf_space(&c->in), 0);
    if (n <= 0) {
        if (n == -1 && (errno == EAGAIN || errno == EINTR))
            return;
        conn_done(c, n == 0 ? "server closed the connection"
                            : "read error");
        return;
    }
    c->in.b_len += (size_t)n;
    now = now_ns();
    while ((avail = folio_buf_pending(&c->in)) > 0) {
        r = folio_mp_scan(&c->scan, c->in.b_data + c->in.b_off, avail);
        if (r == FOLIO_MP_MORE)
            break;
        if (r != FOLIO_MP_DONE ||
            folio_rpc_parse(c->in.b_data + c->in.b_off, (size_t)c->scan.pos,
                            &m, &why) != 0 ||
            m.type != FOLIO_RPC_RESPONSE || c->inflight == 0) {
            conn_done(c, "malformed reply");
            return;
        }
        folio_buf_consume(&c->in, (size_t)c->scan.pos);
        folio_mp_scan_reset(&c->scan);
        dt = now - c->sent_ns[c->head];
        c->head = (c->head + 1) % MAX_PIPELINE;
        c->inflight--;
        if (now >= t->measure_ns) {
            t->done++;
            if (folio_mp_read_nil(&m.error) != 0)
                t->errors++;
            t->hist[folio_lat_bucket(dt)]++;
            if (dt > t->max_ns)
                t->max_ns = dt;
        }
        if (t->stop_ns != 0 && now >= t->stop_ns)
            t->stopping = 1;
        if (take_budget(t))
            append_request(c, now);
    }
    if (c->outlen > 0 && send_out(c) != 0) {
        conn_done(c, "write error");
        return;
    }
    if (c->inflight == 0)
        conn_done(c, NULL);
}

static void *
thread_main(void *arg)
{
    struct bthread *t = arg;
    const struct opts *o = t->o;
    uint64_t t0;
    int i, j, fd;

    for (i = 0; i < t->nconns; i++) {
        struct bconn *c = &t->conns[i];

        c->t = t;
        c->fd = -1;
        if ((fd = folio_addr_connect(&target, 5000)) == -1) {
            snprintf(t->err, sizeof(t->err), "connect: %s", strerror(errno));
            return NULL;
        }
        evutil_make_socket_nonblocking(fd);
        c->fd = fd;
        c->next_id = 1;
        folio_buf_init(&c->in, 65536, 0);
        folio_mp_scan_init(&c->scan, 64u << 20, 64);
        c->out = malloc((size_t)o->pipeline * req_len);
        c->ev = event_new(t->base, fd, EV_READ | EV_PERSIST, on_read, c);
        event_add(c->ev, NULL);
        t->open++;
    }
    t0 = now_ns();
    t->start_ns = t0;
    t->measure_ns = t0 + (uint64_t)(o->warmup_s * 1e9);
    t->stop_ns = o->total > 0 ? 0 : t->measure_ns + (uint64_t)(o->duration_s * 1e9);
    for (i = 0; i < t->nconns; i++) {
        struct bconn *c = &t->conns[i];

        for (j = 0; j < o->pipeline && take_budget(t); j++)
            append_request(c, now_ns());
        if (c->inflight == 0 || send_out(c) != 0)
            conn_done(c, c->inflight == 0 ? NULL : "write error");
    }
    if (t->open > 0)
        event_base_dispatch(t->base);
    t->stop_ns = now_ns();
    return NULL;
}

static void
usage(FILE *f)
{
    fprintf(f,
            "usage: folio-bench [-H HOST:PORT | -U SOCKET] [-c CONNS] "
            "[-t THREADS] [-P DEPTH]\n"
            "                   [-d SECONDS | -n REQUESTS] [--warmup SECONDS] "
            "[-w ping] [--json]\n");
}

int
main(int argc, char *argv[])
{
    static const struct option lo[] = {
        {"host", required_argument, NULL, 'H'},
        {"unix", required_argument, NULL, 'U'},
        {"connections", required_argument, NULL, 'c'},
        {"threads", required_argument, NULL, 't'},
        {"pipeline", required_argument, NULL, 'P'},
        {"duration", required_argument, NULL, 'd'},
        {"requests", required_argument, NULL, 'n'},
        {"warmup", required_argument, NULL, 'W'},
        {"workload", required_argument, NULL, 'w'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct opts o = {FOLIO_DEFAULT_LISTEN, 50, 0, 1, 5.0, 0.0, 0, "ping", 0};
    struct bthread *th;
    uint64_t hist[FOLIO_LAT_BUCKETS] = {0}, done = 0, errors = 0, max = 0;
    char why[256], unixaddr[FOLIO_ADDR_TEXT];
    double secs = 0;
    int ch, i, k, failed = 0;

    while ((ch = getopt_long(argc, argv, "H:U:c:t:P:d:n:w:h", lo, NULL)) !=
           -1) {
        switch (ch) {
        case 'H':
            o.addr = optarg;
            break;
        case 'U':
            snprintf(unixaddr, sizeof(unixaddr), "unix:%s", optarg);
            o.addr = unixaddr;
            break;
        case 'c':
            o.conns = atoi(optarg);
            break;
        case 't':
            o.threads = atoi(optarg);
            break;
        case 'P':
            o.pipeline = atoi(optarg);
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
            o.workload = optarg;
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
    if (o.conns < 1 || o.pipeline < 1 || o.pipeline > MAX_PIPELINE ||
        o.duration_s <= 0 || strcmp(o.workload, "ping") != 0) {
        usage(stderr);
        return 2;
    }
    if (folio_addr_parse(o.addr, &target, why, sizeof(why)) != 0) {
        fprintf(stderr, "folio-bench: %s\n", why);
        return 2;
    }
    if (o.threads <= 0)
        o.threads = folio_cpu_count();
    if (o.threads > o.conns)
        o.threads = o.conns;
    signal(SIGPIPE, SIG_IGN);
    req_tmpl = ping_req;
    req_len = sizeof(ping_req);
    total_budget = o.total;

    th = calloc((size_t)o.threads, sizeof(*th));
    for (i = 0; i < o.threads; i++) {
        th[i].id = i;
        th[i].o = &o;
        th[i].base = event_base_new();
        th[i].nconns = o.conns / o.threads + (i < o.conns % o.threads);
        th[i].conns = calloc((size_t)th[i].nconns, sizeof(struct bconn));
        pthread_create(&th[i].th, NULL, thread_main, &th[i]);
    }
    for (i = 0; i < o.threads; i++) {
        pthread_join(th[i].th, NULL);
        for (k = 0; k < FOLIO_LAT_BUCKETS; k++)
            hist[k] += th[i].hist[k];
        done += th[i].done;
        errors += th[i].errors;
        if (th[i].max_ns > max)
            max = th[i].max_ns;
        if ((double)(th[i].stop_ns - th[i].measure_ns) / 1e9 > secs)
            secs = (double)(th[i].stop_ns - th[i].measure_ns) / 1e9;
        if (th[i].err[0] != '\0') {
            fprintf(stderr, "folio-bench: %s\n", th[i].err);
            failed = 1;
        }
    }
    if (o.json) {
        printf("{\"workload\":\"%s\",\"connections\":%d,\"threads\":%d,"
               "\"pipeline\":%d,\"seconds\":%.3f,\"requests\":%llu,"
               "\"errors\":%llu,\"rps\":%.1f,\"p50_us\":%.1f,\"p90_us\":%.1f,"
               "\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f}\n",
               o.workload, o.conns, o.threads, o.pipeline, secs,
               (unsigned long long)done, (unsigned long long)errors,
               secs > 0 ? (double)done / secs : 0,
               folio_lat_percentile(hist, 0.5) / 1e3,
               folio_lat_percentile(hist, 0.9) / 1e3,
               folio_lat_percentile(hist, 0.99) / 1e3,
               folio_lat_percentile(hist, 0.999) / 1e3, max / 1e3);
    } else {
        printf("%s: %d connections, %d threads, pipeline %d, %.2f s\n",
               o.workload, o.conns, o.threads, o.pipeline, secs);
        printf("  requests %llu, errors %llu, %.0f req/s\n",
               (unsigned long long)done, (unsigned long long)errors,
               secs > 0 ? (double)done / secs : 0);
        printf("  latency p50 %.1f us, p90 %.1f us, p99 %.1f us, p99.9 %.1f "
               "us, max %.1f us\n",
               folio_lat_percentile(hist, 0.5) / 1e3,
               folio_lat_percentile(hist, 0.9) / 1e3,
               folio_lat_percentile(hist, 0.99) / 1e3,
               folio_lat_percentile(hist, 0.999) / 1e3, max / 1e3);
    }
    return failed || errors > 0 ? 1 : 0;
}
