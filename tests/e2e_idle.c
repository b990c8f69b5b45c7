/*
 * e2e_idle.c - idle connections hold no buffers (issue 29): a one-worker
 * foliod holds IDLE_CONNS connections that have each made one request,
 * and its heap grows by at most IDLE_BYTES a connection (two buffers of
 * 16 KiB each, 33 KB a connection, before their release); private memory
 * is printed beside it ("idle: ...", bench/idle.sh takes the same figures
 * at 19,000).  Then each connection asks again: the buffers come back
 * from the worker's pool, every reply right, no heap allocation for it.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/addr.h"
#include "src/client.h"
#include "tests/check_run.h"
#include "tests/e2e_util.h"

#define IDLE_CONNS 3000
/*
 * The bound per idle connection (issue 29: 1 KB): its structure (576
 * bytes, its framing and output references back in the pool with its
 * buffers) and libevent's entry for its descriptor.
 */
#define IDLE_BYTES 1024

static struct e2e_server srv;

/* server.ping, msgid 1, as folio-bench sends it, and foliod's reply. */
static const unsigned char ping[] = {0x94, 0x00, 0x01, 0xab, 's', 'e',
                                     'r',  'v',  'e',  'r',  '.', 'p',
                                     'i',  'n',  'g',  0x90};
static const unsigned char pong[] = {0x94, 0x01, 0x01, 0xc0, 0xa4,
                                     'p',  'o',  'n',  'g'};

/* Raise RLIMIT_NOFILE to `want` if it is lower; foliod inherits it. */
static void
raise_nofile(long want)
{
    struct rlimit rl;

    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur >= (rlim_t)want)
        return;
    rl.rlim_cur = rl.rlim_max < (rlim_t)want ? rl.rlim_max : (rlim_t)want;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    ck_assert_msg(rl.rlim_cur >= (rlim_t)want,
                  "RLIMIT_NOFILE's hard limit %ld is under %ld",
                  (long)rl.rlim_max, want);
}

/* A ping on fd, and its reply, whole and as expected. */
static void
ping_once(int fd)
{
    unsigned char buf[sizeof(pong)];
    struct pollfd p = {fd, POLLIN, 0};
    size_t got = 0;
    ssize_t n;

    ck_assert_int_eq(send(fd, ping, sizeof(ping), MSG_NOSIGNAL),
                     (ssize_t)sizeof(ping));
    while (got < sizeof(buf)) {
        ck_assert_int_eq(poll(&p, 1, E2E_READY_MS), 1);
        n = recv(fd, buf + got, sizeof(buf) - got, 0);
        ck_assert_int_gt(n, 0);
        got += (size_t)n;
    }
    ck_assert_int_eq(memcmp(buf, pong, sizeof(pong)), 0);
}

/* The worker's figure at `key` in server.stats, once its tick refreshed it. */
static double
worker_stat(struct folio_client *admin, const char *key)
{
    struct folio_reply r;

    ck_assert_int_eq(e2e_wait_tick(&srv, E2E_READY_MS), 0);
    ck_assert_int_eq(e2e_stats(admin, &r), 0);
    return e2e_stat_num(&r, "workers", "#0", key, NULL);
}

static double
alloc_calls(struct folio_client *admin)
{
    struct folio_reply r;

    ck_assert_int_eq(e2e_stats(admin, &r), 0);
    return e2e_stat_num(&r, "totals", "alloc_calls", NULL);
}

/* Private memory (kB) of pid, from smaps_rollup. */
static long
private_kb(pid_t pid)
{
    char path[64], line[256];
    long total = 0, v;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%ld/smaps_rollup", (long)pid);
    ck_assert_ptr_nonnull(f = fopen(path, "r"));
    while (fgets(line, sizeof(line), f) != NULL)
        if ((sscanf(line, "Private_Clean: %ld", &v) == 1 ||
             sscanf(line, "Private_Dirty: %ld", &v) == 1))
            total += v;
    fclose(f);
    return total;
}

START_TEST(test_idle_connections_hold_no_buffers)
{
    static int fd[IDLE_CONNS];
    struct folio_client *admin;
    struct folio_addr a;
    char why[256];
    double heap0, heap1, calls;
    long priv0, priv1;
    pid_t worker;
    int i;

    raise_nofile(IDLE_CONNS + 256);
    ck_assert_int_eq(e2e_start(&srv, "workers = 1\n", NULL), 0);
    ck_assert_int_eq(e2e_workers(&srv, &worker, 1), 1);
    ck_assert_int_eq(folio_addr_parse(srv.addr, &a, why, sizeof(why)), 0);
    ck_assert_ptr_nonnull(admin = e2e_connect_admin(&srv));
    heap0 = worker_stat(admin, "heap_inuse");
    priv0 = private_kb(worker);

    for (i = 0; i < IDLE_CONNS; i++) {
        fd[i] = folio_addr_connect(&a, E2E_READY_MS);
        ck_assert_int_ge(fd[i], 0);
        ping_once(fd[i]);
    }
    heap1 = worker_stat(admin, "heap_inuse");
    priv1 = private_kb(worker);
    printf("idle: %d connections after a ping each: heap %.0f bytes a "
           "connection, private memory %.0f bytes a connection\n",
           IDLE_CONNS, (heap1 - heap0) / IDLE_CONNS,
           (double)(priv1 - priv0) * 1024 / IDLE_CONNS);
#ifndef FOLIO_SANITIZED /* the sanitizers' allocator: no mallinfo2 */
    ck_assert_msg(heap1 - heap0 <= (double)IDLE_CONNS * IDLE_BYTES,
                  "%d idle connections hold %.0f bytes of heap (bound %d "
                  "each)",
                  IDLE_CONNS, heap1 - heap0, IDLE_BYTES);
#endif

    /* Each one again: its buffers from the pool, no allocation. */
    calls = alloc_calls(admin);
    for (i = 0; i < IDLE_CONNS; i++)
        ping_once(fd[i]);
    ck_assert_msg(alloc_calls(admin) == calls,
                  "%d requests of idle connections made %.0f allocations",
                  IDLE_CONNS, alloc_calls(admin) - calls);

    for (i = 0; i < IDLE_CONNS; i++)
        close(fd[i]);
    folio_client_close(admin);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* A connection to `addr`, or the test fails. */
static int
connect_to(const char *addr)
{
    struct folio_addr a;
    char why[256];
    int fd;

    ck_assert_int_eq(folio_addr_parse(addr, &a, why, sizeof(why)), 0);
    ck_assert_int_ge(fd = folio_addr_connect(&a, E2E_READY_MS), 0);
    return fd;
}

/*
 * Send part of a message on a new connection to `addr`, end it, and wait
 * until the server has closed it: its framing, left in the middle of a
 * message, is back in the worker's pool.
 */
static void
leave_half(const char *addr, const void *part, size_t len)
{
    struct pollfd p;
    char buf[512];
    int fd = connect_to(addr);

    ck_assert_int_eq(send(fd, part, len, MSG_NOSIGNAL), (ssize_t)len);
    ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
    p.fd = fd;
    p.events = POLLIN;
    for (;;) {
        ck_assert_int_eq(poll(&p, 1, E2E_READY_MS), 1);
        if (recv(fd, buf, sizeof(buf), 0) <= 0)
            break; /* its answer (400), if any, then the server's end */
    }
    close(fd);
}

/* GET /status on a new connection to the HTTP face: its status line. */
static void
status_once(void)
{
    static const char get[] = "GET /status HTTP/1.1\r\nHost: t\r\n\r\n";
    struct pollfd p;
    char buf[512];
    size_t got = 0;
    ssize_t n;
    int fd = connect_to(srv.http);

    ck_assert_int_eq(send(fd, get, strlen(get), MSG_NOSIGNAL),
                     (ssize_t)strlen(get));
    p.fd = fd;
    p.events = POLLIN;
    while (got < 15) {
        ck_assert_int_eq(poll(&p, 1, E2E_READY_MS), 1);
        ck_assert_int_gt(n = recv(fd, buf + got, sizeof(buf) - got, 0), 0);
        got += (size_t)n;
    }
    ck_assert_msg(memcmp(buf, "HTTP/1.1 200 ", 13) == 0, "%.*s", (int)got,
                  buf);
    close(fd);
}

/* Half a message to addr, then a ping; the same half, then GET /status. */
static void
each_face_after(const char *addr, const void *part, size_t len)
{
    int fd;

    leave_half(addr, part, len);
    fd = connect_to(srv.addr);
    ping_once(fd);
    close(fd);
    leave_half(addr, part, len);
    status_once();
}

/*
 * The work area (the framing of a connection's input) goes to the pool
 * with the buffers: the next connection, of either face, takes the one a
 * connection left in the middle of a message, and frames from its start.
 * One worker, and no other request between: the pool gives the last
 * pair back first.
 */
START_TEST(test_work_area_starts_afresh)
{
    /* server.ping with its params nested four deep, the last unfinished */
    static const unsigned char deep[] = {0x94, 0x00, 0x07, 0xab, 's',  'e',
                                         'r',  'v',  'e',  'r',  '.',  'p',
                                         'i',  'n',  'g',  0x91, 0x91, 0x91,
                                         0x92, 0x01};
    static const char head[] = "GET /status HTTP/1.1\r\nHost: t\r\nX-A";
    int round;

    ck_assert_int_eq(e2e_start(&srv, "workers = 1\n", NULL), 0);
    ck_assert_msg(srv.http[0] != '\0', "no HTTP face");
    for (round = 0; round < 2; round++) {
        each_face_after(srv.addr, deep, sizeof(deep)); /* msgpack-RPC */
        each_face_after(srv.http, head, strlen(head)); /* HTTP */
    }
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

static Suite *
idle_suite(void)
{
    Suite *s = suite_create("e2e_idle");
    TCase *tc = tcase_create("idle");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_idle_connections_hold_no_buffers);
    tcase_add_test(tc, test_work_area_starts_afresh);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* the figures, from the forked case */
    return folio_check_run(idle_suite());
}
