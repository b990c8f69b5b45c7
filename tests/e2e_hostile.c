/*
 * e2e_hostile.c - hostile clients against the real foliod, each while a
 * well-behaved client keeps pinging on its own connection (a thread) and
 * must be answered every time, within a bound.  Each case measures the
 * worker's memory before, during and after the attack (VmRSS from /proc
 * and server.stats' heap_inuse) and prints one line of figures:
 *
 *   slowloris          hundreds of connections trickling a byte a second
 *   huge claims        headers announcing 4 GiB strings, 2^32 elements
 *   large claims       announced sizes within the limit, never sent
 *   deep nesting       10,000 levels of arrays and maps
 *   truncated          every prefix of a request, then EOF
 *   garbage after      valid requests followed by bytes that are not
 *   max_connections    more connections than allowed (and than the reserve)
 *   never reads        megabytes of pipelined requests, replies unread
 *
 * e2e_server.c has the basic case of several of these; these go further.
 * Time-outs are short in the configuration, so the suite takes seconds.
 * Set E2E_VALGRIND=1 (the Valgrind run, RELIABILITY.md) to relax the
 * latency and memory bounds, which are meaningless under Valgrind.
 */
#include "config.h"

#include <sys/socket.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "src/client.h"
#include "src/err.h"
#include "src/rpc.h"
#include "tests/e2e_util.h"
#include "tests/check_run.h"

static struct e2e_server srv;

/* Bounds: generous, the machine is shared and noisy. */
static int
latency_bound_ms(void)
{
    const char *e = getenv("E2E_LATENCY_MS");

    if (e != NULL && atoi(e) > 0)
        return atoi(e);
    if (getenv("E2E_VALGRIND") != NULL)
        return 20000;
#ifdef FOLIO_SANITIZED
    return 3000;
#else
    return 1500;
#endif
}

/* Memory bounds are checked in plain builds (ASan keeps freed memory). */
static int
check_memory(void)
{
#ifdef FOLIO_SANITIZED
    return 0;
#else
    return getenv("E2E_VALGRIND") == NULL;
#endif
}

static void
start(const char *conf)
{
    ck_assert_msg(e2e_start(&srv, conf, NULL) == 0, "foliod did not start");
}

/* ---- the well-behaved client ---- */

#define MAX_SAMPLES 20000

struct watch {
    pthread_t th;
    struct folio_client *c;
    atomic_int stop;
    unsigned long pings, failures;
    uint64_t max_us;
    uint32_t lat_us[MAX_SAMPLES];
};

static void *
watch_main(void *arg)
{
    struct watch *w = arg;
    uint64_t t0, dt;

    while (!atomic_load(&w->stop)) {
        {
            struct timespec ts;

            clock_gettime(CLOCK_MONOTONIC, &ts);
            t0 = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
            if (e2e_ping(w->c) != 0)
                w->failures++;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            dt = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000 -
                 t0;
        }
        if (dt > w->max_us)
            w->max_us = dt;
        if (w->pings < MAX_SAMPLES)
            w->lat_us[w->pings] = (uint32_t)(dt > UINT32_MAX ? UINT32_MAX : dt);
        w->pings++;
        poll(NULL, 0, 5);
    }
    return NULL;
}

static void
watch_start(struct watch *w)
{
    memset(w, 0, sizeof(*w));
    w->c = e2e_connect(&srv);
    ck_assert_ptr_nonnull(w->c);
    ck_assert_int_eq(e2e_ping(w->c), 0);
    ck_assert_int_eq(pthread_create(&w->th, NULL, watch_main, w), 0);
}

static int
cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

/* Stop the good client; it must have been answered every time, in time. */
static void
watch_stop(struct watch *w, const char *what)
{
    uint64_t deadline = e2e_now_ms() + 5000;
    size_t n;

    /* A few pings at least, even when the attack was quick. */
    while (w->pings < 20 && w->failures == 0 && e2e_now_ms() < deadline)
        poll(NULL, 0, 10);
    atomic_store(&w->stop, 1);
    pthread_join(w->th, NULL);
    n = w->pings < MAX_SAMPLES ? w->pings : MAX_SAMPLES;
    qsort(w->lat_us, n, sizeof(w->lat_us[0]), cmp_u32);
    printf("hostile: %s: good client: %lu pings, %lu failed, latency p50 "
           "%.2f ms, p99 %.2f ms, max %.2f ms\n",
           what, w->pings, w->failures, n ? w->lat_us[n / 2] / 1000.0 : 0.0,
           n ? w->lat_us[n * 99 / 100] / 1000.0 : 0.0, w->max_us / 1000.0);
    folio_client_close(w->c);
    ck_assert_msg(w->failures == 0, "%s: the good client had %lu failures",
                  what, w->failures);
    ck_assert_msg(w->pings >= 20, "%s: the good client got only %lu pings",
                  what, w->pings);
    ck_assert_msg(w->max_us <= (uint64_t)latency_bound_ms() * 1000,
                  "%s: a ping of the good client took %.1f ms (bound %d)", what,
                  w->max_us / 1000.0, latency_bound_ms());
}

/* ---- memory of the one worker ---- */

struct mem {
    long rss_kb, peak_kb;
    double heap, heap_peak;
    struct folio_client *admin; /* NULL: no heap samples during the attack */
};

static pid_t
the_worker(void)
{
    pid_t p[4];

    ck_assert_int_eq(e2e_workers(&srv, p, 4), 1);
    return p[0];
}

static long
rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* The worker's heap_inuse (refreshed every 100 ms), through `admin`. */
static double
heap_of(struct folio_client *admin)
{
    struct folio_reply r;

    if (admin != NULL && e2e_stats(admin, &r) == 0)
        return e2e_stat_num(&r, "workers", "#0", "heap_inuse", NULL);
    return -1;
}

static double
heap_inuse(void)
{
    struct folio_client *a;
    double v;

    poll(NULL, 0, 150); /* a tick, so the figure is fresh */
    a = e2e_connect_admin(&srv);
    v = heap_of(a);
    folio_client_close(a);
    return v;
}

/*
 * Before the attack.  sample_heap: keep an admin connection to sample
 * heap_inuse during the attack too (it takes one of the worker's
 * connections).
 */
static void
mem_before(struct mem *m, int sample_heap)
{
    m->rss_kb = m->peak_kb = rss_kb(the_worker());
    m->heap = m->heap_peak = heap_inuse();
    m->admin = sample_heap ? e2e_connect_admin(&srv) : NULL;
}

static void
mem_sample(struct mem *m)
{
    long kb = rss_kb(the_worker());
    double h = heap_of(m->admin);

    if (kb > m->peak_kb)
        m->peak_kb = kb;
    if (h > m->heap_peak)
        m->heap_peak = h;
}

/*
 * After the attack: print the figures; the peak may grow by at most
 * peak_mb, what stays by at most keep_mb.
 */
static void
mem_after(struct mem *b, const char *what, long peak_mb, long keep_mb)
{
    long after = rss_kb(the_worker());
    double heap;

    folio_client_close(b->admin);
    b->admin = NULL;
    heap = heap_inuse();
    printf("hostile: %s: worker RSS before %ld kB, peak %ld kB, after %ld "
           "kB; heap_inuse before %.0f kB, peak %.0f kB, after %.0f kB\n",
           what, b->rss_kb, b->peak_kb > after ? b->peak_kb : after, after,
           b->heap / 1024, (b->heap_peak > heap ? b->heap_peak : heap) / 1024,
           heap / 1024);
    if (!check_memory())
        return;
    ck_assert_msg(b->peak_kb - b->rss_kb <= peak_mb * 1024,
                  "%s: RSS grew by %ld kB during the attack (bound %ld MiB)",
                  what, b->peak_kb - b->rss_kb, peak_mb);
    /* Heap too: address space committed, touched or not. */
    ck_assert_msg(b->heap_peak - b->heap <= peak_mb * 1048576.0,
                  "%s: heap_inuse grew by %.0f kB during the attack (bound "
                  "%ld MiB)",
                  what, (b->heap_peak - b->heap) / 1024, peak_mb);
    ck_assert_msg(after - b->rss_kb <= keep_mb * 1024,
                  "%s: RSS grew by %ld kB after the attack (bound %ld MiB)",
                  what, after - b->rss_kb, keep_mb);
}

/* ---- raw connections ---- */

static int
raw_connect(void)
{
    struct sockaddr_in sin;
    char host[64];
    int port, fd;

    ck_assert_int_eq(sscanf(srv.addr, "%63[^:]:%d", host, &port), 2);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    ck_assert_int_eq(inet_pton(AF_INET, host, &sin.sin_addr), 1);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_msg(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0,
                  "connect: %s", strerror(errno));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/*
 * Whether the server has closed fd: reads (and discards) what is there;
 * 1 on EOF or reset, 0 if still open after timeout_ms.
 */
static int
raw_closed(int fd, int timeout_ms)
{
    uint64_t deadline = e2e_now_ms() + (uint64_t)timeout_ms;
    struct pollfd p = {fd, POLLIN, 0};
    char buf[4096];
    ssize_t n;
    int left;

    for (;;) {
        n = recv(fd, buf, sizeof(buf), 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                       errno != EINTR))
            return 1;
        if (n > 0)
            continue;
        left = (int)(deadline - e2e_now_ms());
        if ((int64_t)(deadline - e2e_now_ms()) <= 0)
            return 0;
        poll(&p, 1, left);
    }
}

/* Expect the next reply on c to be error `code` for msgid `id`. */
static void
expect_error(struct folio_client *c, uint32_t id, int code, const char *text)
{
    struct folio_reply r;

    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    ck_assert_uint_eq(r.msgid, id);
    ck_assert_int_eq(r.code, code);
    if (text != NULL)
        ck_assert_msg(r.message != NULL && memmem(r.message, r.message_len,
                                                  text, strlen(text)) != NULL,
                      "'%.*s' lacks '%s'", (int)r.message_len,
                      r.message != NULL ? r.message : "", text);
}

/* Expect the server to close c (after any replies, which are counted). */
static int
expect_close(struct folio_client *c)
{
    const char *m;
    size_t len;
    int r, n = 0;

    while ((r = folio_client_recv(c, &m, &len)) == 1)
        n++;
    ck_assert_msg(r == 0 || r == FOLIO_ESYS, "expected a close, got %d", r);
    return n;
}

/* ---- the cases ---- */

#define SLOW_CONNS 300

START_TEST(test_slowloris)
{
    static int fds[SLOW_CONNS];
    const unsigned char req[] = {0x94, 0x00, 0x01, 0xab, 's', 'e', 'r', 'v',
                                 'e',  'r',  '.',  'p',  'i', 'n', 'g', 0x90};
    struct watch w;
    struct mem m;
    struct folio_client *a;
    struct folio_reply r;
    uint64_t t0, deadline;
    double timeouts0, timeouts1;
    int i, open, round = 0;

    /* Every message must be complete 1.5 s after its first byte. */
    start("workers = 1\nrequest_timeout = 1500ms\nidle_timeout = 60s\n");
    a = e2e_connect_admin(&srv);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    timeouts0 = e2e_stat_num(&r, "totals", "timeouts", NULL);
    mem_before(&m, 1);
    watch_start(&w);
    for (i = 0; i < SLOW_CONNS; i++)
        fds[i] = raw_connect();
    /* One byte a second each, never a whole request (16 bytes). */
    t0 = e2e_now_ms();
    deadline = t0 + 6000;
    open = SLOW_CONNS;
    while (open > 0 && e2e_now_ms() < deadline) {
        for (i = 0; i < SLOW_CONNS; i++) {
            if (fds[i] < 0)
                continue;
            if (send(fds[i], &req[round % sizeof(req)], 1, MSG_NOSIGNAL) != 1 ||
                raw_closed(fds[i], 0)) {
                close(fds[i]);
                fds[i] = -1;
                open--;
            }
        }
        round++;
        mem_sample(&m);
        /* The rest of the second, watching for closes. */
        while (e2e_now_ms() < t0 + (uint64_t)round * 1000 && open > 0) {
            for (i = 0; i < SLOW_CONNS; i++) {
                if (fds[i] >= 0 && raw_closed(fds[i], 0)) {
                    close(fds[i]);
                    fds[i] = -1;
                    open--;
                }
            }
            poll(NULL, 0, 20);
        }
    }
    printf("hostile: slowloris: %d connections, %d bytes each, all closed "
           "%.1f s after their first byte (request_timeout 1.5 s)\n",
           SLOW_CONNS, round, (e2e_now_ms() - t0) / 1000.0);
    ck_assert_msg(open == 0, "%d slow connections still open after 6 s", open);
    watch_stop(&w, "slowloris");
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    timeouts1 = e2e_stat_num(&r, "totals", "timeouts", NULL);
    ck_assert_msg(timeouts1 - timeouts0 >= SLOW_CONNS, "timeouts counted: %.0f",
                  timeouts1 - timeouts0);
    folio_client_close(a);
    mem_after(&m, "slowloris", 32, 16);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* A header announcing more than any limit: error 8, close, no allocation. */
START_TEST(test_huge_claims)
{
    static const struct {
        const char *what;
        unsigned char b[12];
        size_t n;
        int code; /* 0: no reply expected */
    } claims[] = {
        {"str 32 of 4 GiB - 1",
         {0x94, 0, 5, 0xdb, 0xff, 0xff, 0xff, 0xff},
         8,
         FOLIO_ST_RESOURCE_EXHAUSTED},
        {"bin 32 of 4 GiB - 1",
         {0x94, 0, 5, 0xc6, 0xff, 0xff, 0xff, 0xff},
         8,
         FOLIO_ST_RESOURCE_EXHAUSTED},
        {"ext 32 of 4 GiB - 1",
         {0x94, 0, 5, 0xc9, 0xff, 0xff, 0xff, 0xff, 0x01},
         9,
         FOLIO_ST_RESOURCE_EXHAUSTED},
        {"array 32 of 2^32 - 1 params",
         {0x94, 0, 5, 0xa1, 'x', 0xdd, 0xff, 0xff, 0xff, 0xff},
         10,
         FOLIO_ST_RESOURCE_EXHAUSTED},
        {"map 32 of 2^32 - 1 pairs in params",
         {0x94, 0, 5, 0xa1, 'x', 0x91, 0xdf, 0xff, 0xff, 0xff, 0xff},
         11,
         FOLIO_ST_RESOURCE_EXHAUSTED},
        {"message: array 32 of 2^32 - 1", {0xdd, 0xff, 0xff, 0xff, 0xff}, 5, 0},
        {"message: str 32 of 4 GiB - 1", {0xdb, 0xff, 0xff, 0xff, 0xff}, 5, 0},
    };
    struct folio_client *c;
    struct watch w;
    struct mem m;
    size_t i;
    int rep;

    start("workers = 1\n"); /* max_message_bytes: the default, 4 MiB */
    mem_before(&m, 1);
    watch_start(&w);
    for (i = 0; i < sizeof(claims) / sizeof(claims[0]); i++) {
        c = e2e_connect(&srv);
        ck_assert_int_eq(folio_client_send_raw(c, claims[i].b, claims[i].n), 0);
        if (claims[i].code != 0) {
            expect_error(c, 5, claims[i].code, "max_message_bytes");
            rep = expect_close(c);
            ck_assert_int_eq(rep, 0);
        } else {
            ck_assert_msg(expect_close(c) == 0, "%s: answered", claims[i].what);
        }
        folio_client_close(c);
        mem_sample(&m);
    }
    watch_stop(&w, "huge claims");
    mem_after(&m, "huge claims", 4, 4);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * Claims within the limit (a str of 4 MiB - 64 bytes) that never come:
 * the server makes room for the message, but only the bytes that arrive
 * cost memory, and request_timeout ends them.
 */
#define CLAIM_CONNS 100

START_TEST(test_large_claims_unsent)
{
    static struct folio_client *c[CLAIM_CONNS];
    unsigned char fill[1000];
    struct watch w;
    struct mem m;
    uint32_t len = 4 * 1024 * 1024 - 64;
    int i;

    start("workers = 1\nrequest_timeout = 2s\n");
    memset(fill, 'a', sizeof(fill));
    mem_before(&m, 1);
    watch_start(&w);
    for (i = 0; i < CLAIM_CONNS; i++) {
        unsigned char s[5] = {0xdb, (unsigned char)(len >> 24),
                              (unsigned char)(len >> 16),
                              (unsigned char)(len >> 8), (unsigned char)len};

        c[i] = e2e_connect(&srv);
        /* A valid start, a 4 MiB str announced, 1000 bytes of it sent. */
        ck_assert_int_eq(folio_client_send_raw(c[i],
                                               "\x94\x00\x07\xb2"
                                               "corpus.match_count\x91",
                                               23),
                         0);
        ck_assert_int_eq(folio_client_send_raw(c[i], s, sizeof(s)), 0);
        ck_assert_int_eq(folio_client_send_raw(c[i], fill, sizeof(fill)), 0);
    }
    for (i = 0; i < 20; i++) {
        poll(NULL, 0, 50);
        mem_sample(&m);
    }
    /* All of them closed by request_timeout, without a reply. */
    for (i = 0; i < CLAIM_CONNS; i++) {
        ck_assert_int_eq(expect_close(c[i]), 0);
        folio_client_close(c[i]);
    }
    watch_stop(&w, "large claims");
    printf("hostile: large claims: %d connections each announcing a %u-byte "
           "str and sending 1000 bytes of it\n",
           CLAIM_CONNS, len);
    /*
     * 100 x 4 MiB announced: the worker grows each buffer as the bytes
     * come (it used to reserve the whole claim: 400 MB of heap).
     */
    mem_after(&m, "large claims", 24, 16);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_deep_nesting)
{
    static unsigned char deep[3 * 10000 + 64];
    struct folio_client *c;
    struct watch w;
    struct mem m;
    size_t n;
    int i, kind;

    start("workers = 1\n"); /* max_depth: the default, 32 */
    mem_before(&m, 1);
    watch_start(&w);
    for (kind = 0; kind < 3; kind++) {
        /* [0, 9, "x", [[[[... 10,000 deep: arrays, maps, or bare. */
        n = 0;
        if (kind < 2) {
            memcpy(deep, "\x94\x00\x09\xa1x", 5);
            n = 5;
        }
        for (i = 0; i < 10000; i++) {
            if (kind == 1) {
                deep[n++] = 0x81;
                deep[n++] = 0xa1;
                deep[n++] = 'k';
            } else {
                deep[n++] = 0x91;
            }
        }
        c = e2e_connect(&srv);
        ck_assert_int_eq(folio_client_send_raw(c, deep, n), 0);
        if (kind < 2)
            expect_error(c, 9, FOLIO_ST_INVALID_ARGUMENT, "max_depth");
        ck_assert_int_eq(expect_close(c), 0);
        folio_client_close(c);
        mem_sample(&m);
    }
    /* 31 levels of params are fine: answered (wrong arity), not closed. */
    c = e2e_connect(&srv);
    n = 0;
    memcpy(deep, "\x94\x00\x0a\xabserver.ping", 15);
    n = 15;
    for (i = 0; i < 31; i++)
        deep[n++] = 0x91;
    deep[n++] = 0xc0;
    ck_assert_int_eq(folio_client_send_raw(c, deep, n), 0);
    expect_error(c, 10, FOLIO_ST_INVALID_ARGUMENT, "takes 0 params");
    ck_assert_int_eq(e2e_ping(c), 0);
    folio_client_close(c);
    watch_stop(&w, "deep nesting");
    mem_after(&m, "deep nesting", 4, 4);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* Every prefix of a request, then EOF: closed, never answered. */
START_TEST(test_truncated)
{
    struct folio_client *c, *b;
    struct watch w;
    struct mem m;
    msgpack_packer *pk;
    char *req;
    size_t len, i;
    uint32_t id;
    int answered = 0;

    start("workers = 1\nfreight_dir = off\ncatalog = off\n");
    mem_before(&m, 1);
    watch_start(&w);
    /* A request with params of several types, as bytes. */
    b = e2e_connect(&srv);
    pk = folio_client_request(b, 0, "freight.quote", 2, &id);
    folio_pack_cstr(pk, "01310-100");
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 2);
    folio_pack_cstr(pk, "weight_g");
    msgpack_pack_uint32(pk, 70000);
    folio_pack_cstr(pk, "qty");
    msgpack_pack_int(pk, 3);
    len = b->out.size;
    req = malloc(len);
    memcpy(req, b->out.data, len);
    msgpack_sbuffer_clear(&b->out);
    folio_client_close(b);
    for (i = 0; i <= len; i++) {
        c = e2e_connect(&srv);
        ck_assert_int_eq(folio_client_send_raw(c, req, i), 0);
        shutdown(c->fd, SHUT_WR);
        answered = expect_close(c);
        /* Only the whole request is answered (freight is off: error 14). */
        ck_assert_msg(answered == (i == len), "prefix %zu/%zu: %d replies", i,
                      len, answered);
        folio_client_close(c);
    }
    /* A truncated message left hanging is ended by request_timeout. */
    free(req);
    watch_stop(&w, "truncated");
    printf("hostile: truncated: %zu prefixes of a %zu-byte request, each "
           "closed unanswered at EOF\n",
           len, len);
    mem_after(&m, "truncated", 4, 4);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_garbage_after_valid)
{
    static const struct {
        const char *what;
        const char *b;
        size_t n;
    } junk[] = {
        {"0xc1", "\xc1\xc1\xc1\xc1", 4},
        {"HTTP", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27},
        {"TLS ClientHello", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11},
        {"a bare int", "\x07", 1},
        {"a str", "\xa5hello", 6},
        {"a 5-element array", "\x95\x00\x01\xa1x\x90\xc0", 7},
        {"type 9", "\x94\x09\x01\xa1x\x90", 6},
        {"a 2-element array", "\x92\x00\x01", 3},
    };
    struct folio_client *c;
    struct folio_reply r;
    struct watch w;
    struct mem m;
    uint32_t first = 0, id;
    size_t j;
    int i, extra;

    start("workers = 1\n");
    mem_before(&m, 1);
    watch_start(&w);
    for (j = 0; j < sizeof(junk) / sizeof(junk[0]); j++) {
        c = e2e_connect(&srv);
        /* 100 good requests, then the junk, in one write. */
        for (i = 0; i < 100; i++) {
            folio_client_request(c, 0, "server.ping", 0, &id);
            if (i == 0)
                first = id;
        }
        msgpack_sbuffer_write(&c->out, junk[j].b, junk[j].n);
        ck_assert_int_eq(folio_client_flush(c), 0);
        for (i = 0; i < 100; i++) {
            ck_assert_int_eq(folio_client_reply(c, &r), 1);
            ck_assert_uint_eq(r.msgid, first + (uint32_t)i);
            ck_assert_int_eq(r.code, 0);
        }
        /* Then at most one error reply (when a msgid can be read), closed. */
        extra = expect_close(c);
        ck_assert_msg(extra <= 1, "%s: %d replies after the junk", junk[j].what,
                      extra);
        folio_client_close(c);
        mem_sample(&m);
    }
    watch_stop(&w, "garbage after valid");
    mem_after(&m, "garbage after valid", 4, 4);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

#define MAXC 50
#define RESERVE 64 /* FOLIO_CONN_RESERVE: refused with a reply */

START_TEST(test_max_connections)
{
    static struct folio_client *c[MAXC + RESERVE + 20];
    struct folio_client *a;
    struct folio_reply r;
    struct watch w;
    struct mem m;
    uint32_t id;
    int i, refused = 0, dropped = 0, n = MAXC + RESERVE + 20;
    double rejected;

    start("workers = 1\nmax_connections = 50\n");
    mem_before(&m, 0);
    watch_start(&w); /* the good client holds one of the 50 */
    for (i = 0; i < n; i++) {
        c[i] = e2e_connect(&srv);
        ck_assert_ptr_nonnull(c[i]);
        /* Accepted in order: keep the accept queue short. */
        if (i < MAXC - 1)
            ck_assert_int_eq(e2e_ping(c[i]), 0);
    }
    for (i = MAXC - 1; i < n; i++) {
        folio_client_request(c[i], 0, "server.ping", 0, &id);
        if (folio_client_flush(c[i]) != 0) {
            dropped++;
            continue;
        }
        switch (folio_client_reply(c[i], &r)) {
        case 1:
            ck_assert_uint_eq(r.msgid, id);
            ck_assert_int_eq(r.code, FOLIO_ST_RESOURCE_EXHAUSTED);
            ck_assert(memmem(r.message, r.message_len, "too many connections",
                             20) != NULL);
            refused++;
            ck_assert_int_eq(expect_close(c[i]), 0);
            break;
        default:
            dropped++; /* over the reserve too: closed at once */
            break;
        }
        mem_sample(&m);
    }
    printf("hostile: max_connections: %d connections over a limit of %d: %d "
           "refused with error 8, %d closed at once\n",
           n - (MAXC - 1), MAXC, refused, dropped);
    ck_assert_int_ge(refused, RESERVE - 1);
    ck_assert_int_eq(refused + dropped, n - (MAXC - 1));
    /* The first 49 are served; once some leave, newcomers are too. */
    for (i = 0; i < MAXC - 1; i++)
        ck_assert_int_eq(e2e_ping(c[i]), 0);
    for (i = 0; i < n; i++)
        folio_client_close(c[i]);
    {
        uint64_t deadline = e2e_now_ms() + 3000;
        int ok = 0;

        while (!ok && e2e_now_ms() < deadline) {
            struct folio_client *d = e2e_connect(&srv);

            ok = d != NULL && e2e_ping(d) == 0;
            folio_client_close(d);
        }
        ck_assert(ok);
    }
    a = e2e_connect_admin(&srv);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    rejected = e2e_stat_num(&r, "totals", "conns_rejected", NULL);
    ck_assert_msg(rejected >= refused + dropped, "conns_rejected %.0f",
                  rejected);
    folio_client_close(a);
    watch_stop(&w, "max_connections");
    mem_after(&m, "max_connections", 16, 8);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * A client that pipelines megabytes of requests and never reads: the
 * server stops reading from it once max_output_bytes of replies wait, so
 * its memory stays bounded; when the client finally reads, every reply
 * is there, in order.
 */
START_TEST(test_never_reads)
{
    struct folio_client *c;
    struct folio_reply r;
    struct watch w;
    struct mem m;
    char *batch;
    size_t blen, off = 0;
    uint64_t sent = 0, quiet_since;
    uint32_t id, first = 0, i, nreq = 0, per_batch = 1000;
    ssize_t k;

    start("workers = 1\nmax_output_bytes = 64k\n");
    mem_before(&m, 1);
    watch_start(&w);
    c = e2e_connect(&srv);
    /* 1000 server.methods requests (each reply about 700 bytes). */
    for (i = 0; i < per_batch; i++)
        folio_client_request(c, 0, "server.methods", 0, i == 0 ? &first : &id);
    blen = c->out.size;
    batch = malloc(blen);
    memcpy(batch, c->out.data, blen);
    msgpack_sbuffer_clear(&c->out);
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
    /* Send until the server has not taken a byte for half a second. */
    quiet_since = e2e_now_ms();
    while (e2e_now_ms() - quiet_since < 500 && sent < 64u << 20) {
        k = send(c->fd, batch + off, blen - off, MSG_NOSIGNAL);
        if (k > 0) {
            sent += (uint64_t)k;
            off += (size_t)k;
            if (off == blen) {
                off = 0;
                nreq += per_batch;
            }
            quiet_since = e2e_now_ms();
            continue;
        }
        ck_assert_msg(errno == EAGAIN || errno == EWOULDBLOCK, "send: %s",
                      strerror(errno));
        mem_sample(&m);
        poll(NULL, 0, 10);
    }
    mem_sample(&m);
    printf("hostile: never reads: %.1f MB of requests (%u whole batches of "
           "%u) sent before the server stopped reading\n",
           sent / 1e6, nreq / per_batch, per_batch);
    ck_assert_msg(sent < 32u << 20, "the server took %llu bytes unread",
                  (unsigned long long)sent);
    /* The worker is bounded while the replies wait. */
    {
        long held = rss_kb(the_worker());

        printf("hostile: never reads: worker RSS %ld kB with the replies "
               "unread (before: %ld kB)\n",
               held, m.rss_kb);
        if (check_memory())
            ck_assert_msg(held - m.rss_kb <= 16 * 1024, "RSS grew by %ld kB",
                          held - m.rss_kb);
    }
    /* Then read every reply, in order; and finish the partial batch. */
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) & ~O_NONBLOCK);
    for (i = 0; i < nreq; i++) {
        ck_assert_int_eq(folio_client_reply(c, &r), 1);
        ck_assert_uint_eq(r.msgid, first + i % per_batch);
        ck_assert_int_eq(r.code, 0);
    }
    if (off > 0) {
        ck_assert_int_eq(folio_client_send_raw(c, batch + off, blen - off), 0);
        for (i = 0; i < per_batch; i++) {
            ck_assert_int_eq(folio_client_reply(c, &r), 1);
            ck_assert_uint_eq(r.msgid, first + i);
            ck_assert_int_eq(r.code, 0);
        }
        nreq += per_batch;
    }
    ck_assert_int_eq(e2e_ping(c), 0);
    printf("hostile: never reads: then all %u replies read, in order\n", nreq);
    free(batch);
    folio_client_close(c);
    watch_stop(&w, "never reads");
    mem_after(&m, "never reads", 16, 16);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * A flood of expensive notifications (no replies, so no output
 * backpressure) after a large message grew the connection's input buffer:
 * each connection is served a share of messages per turn of the loop, so
 * the good client waits milliseconds, not until the flood is done (6.5 s
 * for 3 MiB of corpus.search notifications before the share existed).
 */
START_TEST(test_notification_flood)
{
    const char *corpus = e2e_corpus();
    struct folio_client *c;
    struct folio_reply r;
    struct watch w;
    struct mem m;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    char conf[512], *big;
    size_t flood = getenv("E2E_VALGRIND") != NULL ? 64u << 10 : 2u << 20;
    uint64_t t0;
    uint32_t id, n = 0;

    if (corpus == NULL) {
        printf("hostile: notification flood: no corpus; skipped\n");
        return;
    }
    snprintf(conf, sizeof(conf), "workers = 1\ncorpus = %s\n", corpus);
    start(conf);
    mem_before(&m, 1);
    watch_start(&w);
    c = e2e_connect(&srv);
    /* A 3 MiB query (refused: over 1024 bytes) grows the input buffer. */
    big = malloc(3u << 20);
    memset(big, 'x', 3u << 20);
    folio_pack_str(folio_client_request(c, 0, "corpus.match_count", 1, &id),
                   big, 3u << 20);
    ck_assert_int_eq(folio_client_flush(c), 0);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    ck_assert_int_eq(r.code, FOLIO_ST_INVALID_ARGUMENT);
    free(big);
    /* Then the flood, and a ping at its end. */
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    while (sb.size < flood) {
        folio_rpc_pack_request_head(&pk, 1, 0, "corpus.search", 2);
        folio_pack_cstr(&pk, "e");
        msgpack_pack_map(&pk, 1);
        folio_pack_cstr(&pk, "limit");
        msgpack_pack_uint16(&pk, 1000);
        n++;
    }
    t0 = e2e_now_ms();
    ck_assert_int_eq(folio_client_send_raw(c, sb.data, sb.size), 0);
    msgpack_sbuffer_destroy(&sb);
    c->timeout_ms = 120000;
    ck_assert_int_eq(e2e_ping(c), 0);
    printf("hostile: notification flood: %u corpus.search notifications "
           "(%zu bytes) after a 3 MiB message, served in %.1f s\n",
           n, flood, (e2e_now_ms() - t0) / 1000.0);
    mem_sample(&m);
    folio_client_close(c);
    watch_stop(&w, "notification flood");
    mem_after(&m, "notification flood", 24, 16);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("e2e_hostile");
    TCase *tc = tcase_create("hostile");

    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, test_slowloris);
    tcase_add_test(tc, test_huge_claims);
    tcase_add_test(tc, test_large_claims_unsent);
    tcase_add_test(tc, test_deep_nesting);
    tcase_add_test(tc, test_truncated);
    tcase_add_test(tc, test_garbage_after_valid);
    tcase_add_test(tc, test_max_connections);
    tcase_add_test(tc, test_never_reads);
    tcase_add_test(tc, test_notification_flood);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
