/*
 * e2e_metrics_flood.c - the metrics listener's limits: its connection
 * limit, header and idle timeouts one by one, then a flood of the port
 * (issue 26, item 3):
 * a master limited to 1,024 descriptors (its soft RLIMIT_NOFILE, set
 * before the exec), 1,100 connections to its metrics listener that send
 * one byte of a request header every half second and connect again when
 * closed.  During the flood the master must answer /healthz, replace a
 * killed worker and complete a SIGHUP reload, and its log must stay
 * small; after it, the listener's count of connections must come back
 * down (none leaks).  Prints the figures RELIABILITY.md quotes: log size,
 * the master's CPU time, how long /healthz took.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check_run.h"
#include "tests/e2e_util.h"

#define FLOOD_CONNS 1100
#define MASTER_FDS 1024
#define DRIP_MS 500 /* the attack's pace: a header byte per connection */

static struct e2e_server srv;

struct flood {
    pthread_t th;
    struct sockaddr_in sin;
    int fds[FLOOD_CONNS];
    atomic_int stop;
    atomic_int rounds;       /* drips sent to every connection */
    atomic_ulong reconnects; /* connections made again after a close */
};

/* Aim f at srv's metrics listener. */
static void
aim(struct flood *f)
{
    memset(&f->sin, 0, sizeof(f->sin));
    f->sin.sin_family = AF_INET;
    f->sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->sin.sin_port = htons((uint16_t)atoi(strrchr(srv.metrics, ':') + 1));
}

/* A non-blocking connect, not waited for: -1 if it failed at once. */
static int
flood_connect(const struct flood *f)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd == -1)
        return -1;
    if (connect(fd, (const struct sockaddr *)&f->sin, sizeof(f->sin)) != 0 &&
        errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Closed by the server (EOF, reset), or its connect failed. */
static int
flood_closed(int fd)
{
    char buf[512];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                      errno != EINTR && errno != ENOTCONN);
}

static void *
flood_run(void *arg)
{
    static const char header[] = "GET /metrics HTTP/1.1\r\nX-Slow: ";
    struct flood *f = arg;
    uint64_t next = e2e_now_ms();
    unsigned round = 0;
    int i;

    for (i = 0; i < FLOOD_CONNS; i++)
        f->fds[i] = flood_connect(f);
    while (!atomic_load(&f->stop)) {
        char c = round < sizeof(header) - 1 ? header[round] : 'a';

        for (i = 0; i < FLOOD_CONNS; i++) {
            if (f->fds[i] >= 0 &&
                (flood_closed(f->fds[i]) ||
                 (send(f->fds[i], &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1 &&
                  errno != EAGAIN && errno != ENOTCONN))) {
                close(f->fds[i]);
                f->fds[i] = -1;
            }
            if (f->fds[i] < 0 && (f->fds[i] = flood_connect(f)) >= 0)
                atomic_fetch_add(&f->reconnects, 1);
        }
        round++;
        atomic_store(&f->rounds, (int)round);
        /* The attack's own pace, not a synchronisation. */
        next += DRIP_MS;
        while (!atomic_load(&f->stop) && e2e_now_ms() < next)
            e2e_pace_ms(20);
    }
    for (i = 0; i < FLOOD_CONNS; i++)
        if (f->fds[i] >= 0)
            close(f->fds[i]);
    return NULL;
}

/* The master's CPU time (utime + stime) in clock ticks, -1 if unknown. */
static long
cpu_ticks(pid_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long ut, st;
    FILE *fp;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    if ((fp = fopen(path, "r")) == NULL)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    /* After the command's ")": state is field 3, utime 14, stime 15. */
    if ((p = strrchr(buf, ')')) == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
               &ut, &st) != 2)
        return -1;
    return (long)(ut + st);
}

static long
log_size(void)
{
    struct stat st;

    return stat(srv.log, &st) == 0 ? (long)st.st_size : -1;
}

/* /healthz answered 200 within the deadline: the time it took, or -1. */
static long
healthz_ms(int bound)
{
    uint64_t t0 = e2e_now_ms(), deadline = t0 + (uint64_t)bound;

    do {
        if (e2e_http_status(srv.metrics, "/healthz", NULL, 0) == 200)
            return (long)(e2e_now_ms() - t0);
    } while (e2e_now_ms() < deadline);
    return -1;
}

/*
 * A series of /metrics, asked again (each GET a new connection that the
 * flood may evict before it is read) until answered or the deadline.
 */
static double
metric_within(const char *series, int bound)
{
    uint64_t deadline = e2e_now_ms() + (uint64_t)bound;
    double v;

    do
        v = e2e_metric(&srv, series);
    while (isnan(v) && e2e_now_ms() < deadline);
    return v;
}

/* Until a live worker that is not `dead`, two in all, or the deadline. */
static int
replaced(pid_t dead, int bound)
{
    uint64_t deadline = e2e_deadline(bound);
    pid_t pids[8];
    int n;

    do {
        n = e2e_workers(&srv, pids, 8);
        if (n == 2 && !e2e_pid_in(dead, pids, n) &&
            e2e_metric(&srv, "folio_workers{state=\"serving\"}") == 2)
            return 0;
    } while (e2e_wait_more(deadline));
    return -1;
}

START_TEST(test_metrics_flood)
{
    static struct flood f;
    struct rlimit keep, rl;
    pid_t pids[8];
    long cpu0, cpu1, log0, log1, hz, hz_worker, hz_reload;
    uint64_t t0, t1, deadline;
    int bound = e2e_bound_ms(15000, 30000), n;
    double open_after = NAN, limited;

    /* The master gets 1,024 descriptors; this process needs more. */
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &keep), 0);
    ck_assert_msg(keep.rlim_max >= FLOOD_CONNS + 256,
                  "RLIMIT_NOFILE's hard limit %llu is under %d",
                  (unsigned long long)keep.rlim_max, FLOOD_CONNS + 256);
    rl = keep;
    rl.rlim_cur = MASTER_FDS;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    n = e2e_start(&srv, "workers = 2\nmetrics_listen = 127.0.0.1:0\n", NULL);
    rl.rlim_cur =
        FLOOD_CONNS + 256 > keep.rlim_cur ? FLOOD_CONNS + 256 : keep.rlim_cur;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    ck_assert_int_eq(n, 0);
    ck_assert_str_ne(srv.metrics, "");
    ck_assert_double_eq(e2e_metric(&srv, "process_max_fds"), MASTER_FDS);

    aim(&f);
    log0 = log_size();
    cpu0 = cpu_ticks(srv.pid);
    t0 = e2e_now_ms();
    ck_assert_int_eq(pthread_create(&f.th, NULL, flood_run, &f), 0);
    /* The flood is on once every connection has had a few bytes. */
    deadline = e2e_deadline(bound);
    while (atomic_load(&f.rounds) < 4 && e2e_wait_more(deadline))
        ;
    ck_assert_int_ge(atomic_load(&f.rounds), 4);

    hz = healthz_ms(bound);
    ck_assert_msg(hz >= 0, "/healthz unanswered during the flood");
    limited = metric_within("folio_metrics_http_closed_total"
                            "{reason=\"limit\"}",
                            bound);
    ck_assert_msg(limited > 0, "no connection closed at the limit: %g",
                  limited);

    /* A worker killed during the flood is replaced. */
    ck_assert_int_eq(e2e_workers(&srv, pids, 8), 2);
    ck_assert_int_eq(kill(pids[0], SIGKILL), 0);
    if (replaced(pids[0], bound) != 0)
        e2e_print_log(&srv);
    ck_assert_msg(replaced(pids[0], bound) == 0,
                  "worker %ld not replaced during the flood", (long)pids[0]);
    hz_worker = healthz_ms(bound);
    ck_assert_int_ge(hz_worker, 0);

    /* And a reload completes. */
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    ck_assert_msg(e2e_wait_ready(&srv, srv.generation + 1, bound) == 0,
                  "the reload did not complete during the flood");
    hz_reload = healthz_ms(bound);
    ck_assert_int_ge(hz_reload, 0);

    /* A few more seconds of flood: past the header timeout (10 s). */
    deadline = t0 + 12000;
    while (e2e_now_ms() < deadline)
        ck_assert_int_ge(healthz_ms(bound), 0);
    t1 = e2e_now_ms();
    cpu1 = cpu_ticks(srv.pid);
    log1 = log_size();
    atomic_store(&f.stop, 1);
    pthread_join(f.th, NULL);

    printf("metrics flood: %d connections, a byte every %d ms, %.1f s, "
           "master limited to %d descriptors: master CPU %.2f s, log +%ld "
           "bytes, %lu reconnects, /healthz in %ld ms (during, %ld after "
           "the kill, %ld after the reload), %g closed at the limit, %g at "
           "the header timeout\n",
           FLOOD_CONNS, DRIP_MS, (t1 - t0) / 1e3, MASTER_FDS,
           (double)(cpu1 - cpu0) / (double)sysconf(_SC_CLK_TCK), log1 - log0,
           (unsigned long)atomic_load(&f.reconnects), hz, hz_worker, hz_reload,
           metric_within("folio_metrics_http_closed_total{reason=\"limit\"}",
                         bound),
           metric_within("folio_metrics_http_closed_total"
                         "{reason=\"header_timeout\"}",
                         bound));
    /* The log stays small: no line per accept, per connection or per try. */
    ck_assert_msg(log1 - log0 < 64 * 1024, "the log grew by %ld bytes",
                  log1 - log0);
    ck_assert_int_lt(e2e_log_count(&srv, "Too many open files"), 10);
    ck_assert_int_eq(e2e_log_count(&srv, "for worker"), 0);

    /* Every connection closed is forgotten: only this GET's is left. */
    deadline = e2e_deadline(bound);
    do {
        open_after = e2e_metric(&srv, "folio_metrics_http_connections");
        if (open_after <= 1)
            break;
    } while (e2e_wait_more(deadline));
    ck_assert_msg(open_after <= 1, "%g metrics connections left open",
                  open_after);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* Until fd is closed by the server, or the deadline: 1 if closed. */
static int
wait_closed(int fd, int bound)
{
    uint64_t deadline = e2e_now_ms() + (uint64_t)bound;
    struct pollfd p = {fd, POLLIN, 0};

    while (!flood_closed(fd)) {
        if (e2e_now_ms() >= deadline)
            return 0;
        poll(&p, 1, 50);
    }
    return 1;
}

/*
 * The limit and the header timeout as configured: a 4th connection (a
 * GET of /healthz) evicts the oldest one still in its header and is
 * answered; the others are cut at metrics_header_timeout.
 */
START_TEST(test_metrics_limit)
{
    struct flood f;
    int fds[3], i, bound = e2e_bound_ms(10000, 20000);
    uint64_t t0;

    ck_assert_int_eq(e2e_start(&srv,
                               "workers = 1\nmetrics_listen = 127.0.0.1:0\n"
                               "metrics_max_connections = 3\n"
                               "metrics_header_timeout = 4s\n"
                               "metrics_idle_timeout = 60s\n",
                               NULL),
                     0);
    aim(&f);
    t0 = e2e_now_ms();
    for (i = 0; i < 3; i++) {
        ck_assert_int_ge(fds[i] = flood_connect(&f), 0);
        ck_assert(!wait_closed(fds[i], 0));
        ck_assert_int_eq(send(fds[i], "G", 1, MSG_NOSIGNAL), 1);
    }
    ck_assert_int_eq(e2e_http_status(srv.metrics, "/healthz", NULL, 0), 200);
    ck_assert_msg(wait_closed(fds[0], bound), "the oldest was not evicted");
    if (e2e_now_ms() - t0 < 3000) /* before their header timeout */
        ck_assert(!wait_closed(fds[1], 0) && !wait_closed(fds[2], 0));
    ck_assert_msg(wait_closed(fds[1], bound) && wait_closed(fds[2], bound),
                  "a header dribbled past metrics_header_timeout");
    ck_assert_double_ge(e2e_metric(&srv, "folio_metrics_http_closed_total"
                                         "{reason=\"limit\"}"),
                        1);
    ck_assert_double_ge(e2e_metric(&srv, "folio_metrics_http_closed_total"
                                         "{reason=\"header_timeout\"}"),
                        2);
    ck_assert_double_eq(e2e_metric(&srv, "folio_metrics_http_connections_max"),
                        3);
    for (i = 0; i < 3; i++)
        close(fds[i]);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * No header deadline (0), a 1 s idle timeout: evhttp's timer cuts it,
 * well before the 10 s it had before the option.
 */
START_TEST(test_metrics_idle)
{
    struct flood f;
    int fd, bound = e2e_bound_ms(5000, 8000);
    uint64_t t0;

    ck_assert_int_eq(e2e_start(&srv,
                               "workers = 1\nmetrics_listen = 127.0.0.1:0\n"
                               "metrics_header_timeout = 0\n"
                               "metrics_idle_timeout = 1s\n",
                               NULL),
                     0);
    aim(&f);
    t0 = e2e_now_ms();
    ck_assert_int_ge(fd = flood_connect(&f), 0);
    ck_assert(!wait_closed(fd, 0));
    ck_assert_int_eq(send(fd, "GET", 3, MSG_NOSIGNAL), 3);
    ck_assert_msg(wait_closed(fd, bound), "an idle connection stayed open");
    ck_assert_uint_ge(e2e_now_ms() - t0, 900);
    close(fd);
    ck_assert_double_eq(e2e_metric(&srv, "folio_metrics_http_closed_total"
                                         "{reason=\"header_timeout\"}"),
                        0);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("e2e_metrics_flood");
    TCase *tc = tcase_create("flood");

    setvbuf(stdout, NULL, _IOLBF, 0);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_metrics_limit);
    tcase_add_test(tc, test_metrics_idle);
    tcase_add_test(tc, test_metrics_flood);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
