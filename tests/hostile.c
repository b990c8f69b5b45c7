/*
 * hostile.c - what the hostile-client suites share (see hostile.h): the
 * server under attack, the well-behaved client that keeps pinging, the
 * worker's memory, raw connections.
 */
#include "config.h"

#include <sys/socket.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/client.h"
#include "src/clock.h"
#include "src/err.h"
#include "tests/e2e_util.h"
#include "tests/hostile.h"

struct e2e_server srv;

/* Generous: the machine is shared and noisy; figures are the bench's. */
int
watch_bound_ms(void)
{
    return e2e_bound_ms(5000, 10000);
}

/* Memory bounds are checked in plain builds (ASan keeps freed memory). */
int
check_memory(void)
{
#ifdef FOLIO_SANITIZED
    return 0;
#else
    return getenv("E2E_VALGRIND") == NULL;
#endif
}

void
start(const char *conf)
{
    ck_assert_msg(e2e_start(&srv, conf, NULL) == 0, "foliod did not start");
}

/* ---- the well-behaved client ---- */

static void *
watch_main(void *arg)
{
    struct watch *w = arg;
    uint64_t t0, dt;

    while (!atomic_load(&w->stop)) {
        if (atomic_load(&w->pause)) {
            atomic_store(&w->paused, 1);
            e2e_pace_ms(1); /* held by the test, not a wait on the server */
            continue;
        }
        atomic_store(&w->paused, 0);
        t0 = folio_mono_ns() / 1000;
        if (e2e_ping(w->c) != 0)
            w->failures++;
        dt = folio_mono_ns() / 1000 - t0;
        if (dt > w->max_us)
            w->max_us = dt;
        if (w->pings < MAX_SAMPLES)
            w->lat_us[w->pings] = (uint32_t)(dt > UINT32_MAX ? UINT32_MAX : dt);
        w->pings++;
        e2e_pace_ms(5); /* a client's pace, not a wait */
    }
    return NULL;
}

void
watch_start(struct watch *w)
{
    memset(w, 0, sizeof(*w));
    w->c = e2e_connect(&srv);
    ck_assert_ptr_nonnull(w->c);
    ck_assert_int_eq(e2e_ping(w->c), 0);
    ck_assert_int_eq(pthread_create(&w->th, NULL, watch_main, w), 0);
}

void
watch_pause(struct watch *w)
{
    uint64_t deadline = e2e_deadline(e2e_bound_ms(10000, 20000));

    atomic_store(&w->pause, 1);
    while (!atomic_load(&w->paused))
        ck_assert_msg(e2e_wait_more(deadline), "the good client's ping "
                                               "did not end");
}

void
watch_resume(struct watch *w)
{
    atomic_store(&w->pause, 0);
}

int
cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

void
watch_stop(struct watch *w, const char *what)
{
    uint64_t deadline = e2e_deadline(e2e_bound_ms(10000, 20000));
    size_t n;

    /* A few pings at least, even when the attack was quick. */
    while (w->pings < 20 && w->failures == 0 && e2e_wait_more(deadline))
        ;
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
    ck_assert_msg(w->max_us <= (uint64_t)watch_bound_ms() * 1000,
                  "%s: a ping of the good client took %.1f ms (bound %d)", what,
                  w->max_us / 1000.0, watch_bound_ms());
}

/* ---- memory of the one worker ---- */

pid_t
the_worker(void)
{
    pid_t p[4];

    ck_assert_int_eq(e2e_workers(&srv, p, 4), 1);
    return p[0];
}

long
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

    /* heap_inuse is refreshed on the worker's tick: a fresh figure */
    ck_assert_int_eq(e2e_wait_tick(&srv, e2e_bound_ms(5000, 15000)), 0);
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
void
mem_before(struct mem *m, int sample_heap)
{
    m->rss_kb = m->peak_kb = rss_kb(the_worker());
    m->heap = m->heap_peak = heap_inuse();
    m->admin = sample_heap ? e2e_connect_admin(&srv) : NULL;
}

void
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
void
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

int
raw_connect_nowait(void)
{
    struct sockaddr_in sin;
    int fd;

    e2e_sockaddr(srv.addr, &sin);
    if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                     0)) < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 &&
        errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A TCP connection to the server, its receive buffer set if rcvbuf > 0. */
int
raw_connect_rcvbuf(int rcvbuf)
{
    return raw_connect_to(srv.addr, rcvbuf);
}

int
raw_connect_to(const char *addr, int rcvbuf)
{
    int fd = e2e_tcp_connect(addr, rcvbuf);

    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

int
raw_connect(void)
{
    return raw_connect_rcvbuf(0);
}

/*
 * Whether the server has closed fd: reads (and discards) what is there;
 * 1 on EOF or reset, 0 if still open after timeout_ms.
 */
int
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
void
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
int
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
