/*
 * e2e_balance.c - new connections spread across the workers: a burst of
 * connects to a two-worker foliod lands about half on each (it landed
 * 17/34 and 42/9 when the first worker awake took 16 at a time), but for
 * the connections a worker ahead took because the other took none for a
 * millisecond (accepts_forced: a loaded machine does that); and a stalled
 * worker (SIGSTOP) delays the other's accepts by a moment but never stops
 * them, each counted.
 */
#include "config.h"

#include <check.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/addr.h"
#include "src/client.h"
#include "tests/check_run.h"
#include "tests/e2e_util.h"

#define BURST 64

static struct e2e_server srv;

/* A plain TCP connection to the server, or -1. */
static int
dial(void)
{
    struct folio_addr a;
    char why[256];

    if (folio_addr_parse(srv.addr, &a, why, sizeof(why)) != 0)
        return -1;
    return folio_addr_connect(&a, 5000);
}

/* The open connections of worker slot k, by server.stats. */
static double
conns_of(struct folio_client *admin, int k)
{
    struct folio_reply r;
    char key[8];

    snprintf(key, sizeof(key), "#%d", k);
    ck_assert_int_eq(e2e_stats(admin, &r), 0);
    return e2e_stat_num(&r, "workers", key, "conns_open", NULL);
}

/*
 * Wait until the workers hold `want` connections in all (at least, or at
 * most with `fewer`); the two counts.
 */
static void
wait_open(struct folio_client *admin, double want, int fewer, double *a,
          double *b)
{
    uint64_t deadline = e2e_deadline(e2e_bound_ms(5000, 20000));

    for (;;) {
        *a = conns_of(admin, 0);
        *b = conns_of(admin, 1);
        if (fewer ? *a + *b <= want : *a + *b >= want)
            return;
        ck_assert_msg(e2e_wait_more(deadline),
                      "%.0f + %.0f connections open, expected %s %.0f", *a,
                      *b, fewer ? "at most" : "at least", want);
    }
}

/* Connections taken although ahead: a peer left them for 1 ms. */
static double
forced(struct folio_client *admin)
{
    struct folio_reply r;

    ck_assert_int_eq(e2e_stats(admin, &r), 0);
    return e2e_stat_num(&r, "totals", "accepts_forced", NULL);
}

/*
 * Balanced: a worker ahead leaves new connections to the other, unless
 * the other takes none for a millisecond (a loaded machine can keep it
 * off a CPU that long): each such accept counted, and allowed for.
 */
START_TEST(test_burst_balanced)
{
    struct folio_client *admin;
    int fds[BURST], i, round;
    double a, b, f0, f;

    ck_assert(e2e_start(&srv, "workers = 2\n", NULL) == 0);
    ck_assert((admin = e2e_connect_admin(&srv)) != NULL);
    /* Three bursts: one balanced split could be luck. */
    for (round = 0; round < 3; round++) {
        f0 = forced(admin);
        for (i = 0; i < BURST; i++)
            ck_assert((fds[i] = dial()) != -1);
        /* The admin connection is one of them, on one worker. */
        wait_open(admin, BURST + 1, 0, &a, &b);
        f = forced(admin) - f0;
        printf("balance: round %d: %.0f and %.0f connections, %.0f taken "
               "by a worker ahead\n",
               round, a, b, f);
        ck_assert_msg(fabs(a - b) <= 10 + f,
                      "round %d: %.0f and %.0f connections (one is the "
                      "admin's), %.0f taken ahead: not balanced",
                      round, a, b, f);
        for (i = 0; i < BURST; i++)
            close(fds[i]);
        /* All closed but the admin's, before the next burst. */
        wait_open(admin, 1, 1, &a, &b);
    }
    folio_client_close(admin);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_stalled_peer_accepts_go_on)
{
    struct folio_client *admin, *c[24];
    pid_t pids[4];
    double f0;
    int i, n;

    ck_assert(e2e_start(&srv, "workers = 2\nworker_timeout = 0\n", NULL) == 0);
    ck_assert((admin = e2e_connect_admin(&srv)) != NULL);
    ck_assert_int_eq(e2e_workers(&srv, pids, 4), 2);
    /* Whichever serves the admin connection stays; stop the other. */
    {
        struct folio_reply r;
        double served_by;

        ck_assert_int_eq(e2e_stats(admin, &r), 0);
        served_by = e2e_stat_num(&r, "workers", "#0", "conns_open", NULL) > 0
                        ? e2e_stat_num(&r, "workers", "#1", "pid", NULL)
                        : e2e_stat_num(&r, "workers", "#0", "pid", NULL);
        ck_assert(!isnan(served_by));
        ck_assert_int_eq(kill((pid_t)served_by, SIGSTOP), 0);
        /*
         * The stopped one has no connection: the other is ahead of it at
         * once, and must take every new connection all the same.
         */
        n = (int)(sizeof(c) / sizeof(c[0]));
        f0 = forced(admin);
        for (i = 0; i < n; i++) {
            ck_assert((c[i] = e2e_connect(&srv)) != NULL);
            ck_assert_msg(e2e_ping(c[i]) == 0, "connection %d unanswered", i);
        }
        /* Each after the millisecond it left to the stopped one: counted. */
        ck_assert_msg(forced(admin) - f0 >= n / 2, "%.0f of %d counted",
                      forced(admin) - f0, n);
        for (i = 0; i < n; i++)
            folio_client_close(c[i]);
        ck_assert_int_eq(kill((pid_t)served_by, SIGCONT), 0);
    }
    folio_client_close(admin);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

static Suite *
balance_suite(void)
{
    Suite *s = suite_create("e2e_balance");
    TCase *tc = tcase_create("accept");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_burst_balanced);
    tcase_add_test(tc, test_stalled_peer_accepts_go_on);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* the figures, from the forked cases */
    return folio_check_run(balance_suite());
}
