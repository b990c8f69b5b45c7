/*
 * main.c - folio-bench: the load generator for foliod (folio-bench(1)).
 *
 * Reads the command line (opts.c), builds the request pool, starts the
 * engine's threads, prints progress each second while they run (or the
 * rounds, one line each), reads the server's counters before and after,
 * and turns the outcome into the summary and the exit status.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "src/clock.h"

static volatile sig_atomic_t got_signal;

static void
on_signal(int sig)
{
    (void)sig;
    got_signal = 1;
}

/* Sum every thread's counters. */
static void
totals(const struct bench_run *r, struct bench_totals *t)
{
    int i;

    memset(t, 0, sizeof(*t));
    for (i = 0; i < r->nthreads; i++)
        folio_bench_counts_sum(t, folio_bench_run_counts(r, i));
}

/* Whether to read the server's counters at all. */
static int
want_server(const struct bench_opts *o)
{
    return o->admin != NULL || o->server_pid > 0;
}

/*
 * Read the server's counters.  When only server.stats gives the CPU time,
 * an idle server is given time to sample it first (`settle`).
 */
static void
snap(const struct bench_opts *o, struct bench_server_snap *s, int settle)
{
    if (settle && o->admin != NULL && o->server_pid <= 0)
        poll(NULL, 0, BENCH_STATS_SETTLE_MS);
    folio_bench_server_snap(o, s);
}

/* The series wanted: --html, --csv. */
static int
want_series(const struct bench_opts *o)
{
    return o->html != NULL || o->csv != NULL;
}

/*
 * A point of the series from the last one's sample to now (t, monotonic
 * ns), with the server's spend when its counters are read; a point each
 * second, not during the warm-up.  Out of memory: the series stops.
 */
struct sampler {
    struct bench_totals last;
    uint64_t last_ns; /* 0: nothing sampled yet */
    struct bench_server_snap srv_last;
    int failed;
};

static void
sample(struct bench_run *r, struct bench_result *res, struct sampler *sp,
       const struct bench_totals *now, uint64_t t)
{
    const struct bench_opts *o = r->o;
    struct bench_server_snap srv;
    int server = want_server(o);

    if (!want_series(o) || sp->failed || t < r->measure_ns)
        return;
    memset(&srv, 0, sizeof(srv));
    if (server)
        folio_bench_server_snap(o, &srv);
    if (sp->last_ns != 0 &&
        folio_bench_series_add(
            &res->series, now, &sp->last, (double)(t - r->measure_ns) / 1e9,
            (double)(t - sp->last_ns) / 1e9, server ? &srv : NULL,
            server ? &sp->srv_last : NULL) != 0) {
        fprintf(stderr, "folio-bench: out of memory for the series: it "
                        "stops here\n");
        sp->failed = 1;
    }
    sp->last = *now;
    sp->last_ns = t;
    sp->srv_last = srv;
}

/* Closed, open, ramp: progress each second until every thread is done. */
static void
watch(struct bench_run *r, struct bench_result *res)
{
    const struct bench_opts *o = r->o;
    static struct bench_totals now, prev;
    static struct sampler sp;
    struct timespec ts;
    uint64_t next = r->t0 + 1000000000u, last = r->t0, t, wait;
    int before_taken = o->warmup_ns == 0, all_done;

    memset(&prev, 0, sizeof(prev));
    memset(&sp, 0, sizeof(sp));
    if (r->measure_ns == r->t0) {
        memset(&now, 0, sizeof(now));
        sample(r, res, &sp, &now, r->t0); /* the series' start */
    }
    for (;;) {
        pthread_mutex_lock(&r->lock);
        if (r->done < r->nthreads) {
            /* Wake for a signal, the end of the warm-up, the progress. */
            wait = 100000000u;
            t = folio_mono_ns();
            if (!before_taken && r->measure_ns > t && r->measure_ns - t < wait)
                wait = r->measure_ns - t;
            folio_ns_timespec(folio_mono_ns() + wait, &ts);
            pthread_cond_timedwait(&r->done_cv, &r->lock, &ts);
        }
        all_done = r->done == r->nthreads;
        pthread_mutex_unlock(&r->lock);
        if (all_done)
            break;
        if (got_signal)
            atomic_store(&r->stop, 1);
        t = folio_mono_ns();
        if (!before_taken && t >= r->measure_ns) {
            if (want_server(o))
                snap(o, &res->before, 0);
            folio_bench_profile_start(o);
            before_taken = 1;
            totals(r, &now);
            res->bytes_out0 = now.bytes_out;
            res->bytes_in0 = now.bytes_in;
            sample(r, res, &sp, &now, t); /* the series' start */
        }
        if (t >= next) {
            totals(r, &now);
            if (!o->quiet)
                folio_bench_progress(r, &now, &prev, (double)(t - r->t0) / 1e9,
                                     (double)(t - last) / 1e9);
            if (sp.last_ns != 0 && t - sp.last_ns >= 500000000u)
                sample(r, res, &sp, &now, t);
            prev = now;
            last = t;
            while (next <= t)
                next += 1000000000u;
        }
    }
    /* The last part second, if it had answers. */
    totals(r, &now);
    t = folio_mono_ns();
    if (sp.last_ns != 0 &&
        folio_bench_answered(&now) > folio_bench_answered(&sp.last))
        sample(r, res, &sp, &now, t);
}

/* Go's time.Duration, one decimal: "850.2us", "1.2ms", "2.5s". */
static const char *
round_time(double ns, char *buf, size_t len)
{
    if (ns < 1e6)
        snprintf(buf, len, "%.1fus", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, len, "%.1fms", ns / 1e6);
    else
        snprintf(buf, len, "%.1fs", ns / 1e9);
    return buf;
}

/* Rounds: run each round across the threads, one line per round. */
static void
rounds(struct bench_run *r, struct bench_result *res)
{
    const struct bench_opts *o = r->o;
    FILE *out = o->json ? stderr : stdout;
    static struct bench_totals t;
    static struct sampler sp;
    uint64_t start, end, was = 0, n;
    char took[32];
    int stop;

    r->round_n = o->total;
    memset(&sp, 0, sizeof(sp));
    memset(&t, 0, sizeof(t));
    sample(r, res, &sp, &t, r->t0);
    for (;;) {
        pthread_mutex_lock(&r->lock);
        /* a wrong answer stops the run itself (r->stop) */
        stop = r->first_error[0] != '\0';
        pthread_mutex_unlock(&r->lock);
        if (got_signal || stop || atomic_load(&r->stop) ||
            (o->rounds > 0 && res->rounds_done >= o->rounds) ||
            (o->duration_ns > 0 && folio_mono_ns() - r->t0 >= o->duration_ns)) {
            atomic_store(&r->stop, 1);
            pthread_barrier_wait(&r->round);
            break;
        }
        start = folio_mono_ns();
        pthread_barrier_wait(&r->round); /* go */
        pthread_barrier_wait(&r->round); /* all answered */
        end = folio_mono_ns();
        totals(r, &t);
        sample(r, res, &sp, &t, end); /* a point a round */
        n = folio_bench_answered(&t) - was;
        was = folio_bench_answered(&t);
        res->rounds_done++;
        if (!o->quiet) {
            fprintf(out,
                    "Simulated %llu requests in %s, rate of %.1f reqs / sec\n",
                    (unsigned long long)n,
                    round_time((double)(end - start), took, sizeof(took)),
                    end > start ? (double)n * 1e9 / (double)(end - start) : 0);
            fflush(out);
        }
        /* Like shakesapp's client, a failed request ends the rounds. */
        if (folio_bench_unexpected(&t) > folio_bench_errors_allowed(o, t.sent))
            atomic_store(&r->stop, 1);
    }
}

/*
 * The report files, opened before the run ("a": a run that does not
 * finish leaves an old file as it was).  0, or -1 with the reason said.
 */
static int
open_one(const char *opt, const char *path, FILE **f)
{
    if (path != NULL && (*f = fopen(path, "a")) == NULL) {
        fprintf(stderr, "folio-bench: --%s %s: %s\n", opt, path,
                strerror(errno));
        return -1;
    }
    return 0;
}

static int
open_reports(struct bench_opts *o)
{
    return open_one("hgrm", o->hgrm, &o->hgrm_f) != 0 ||
                   open_one("html", o->html, &o->html_f) != 0 ||
                   open_one("csv", o->csv, &o->csv_f) != 0
               ? -1
               : 0;
}

static void
close_reports(struct bench_opts *o)
{
    FILE **f[3] = {&o->hgrm_f, &o->html_f, &o->csv_f};
    int i;

    for (i = 0; i < 3; i++)
        if (*f[i] != NULL) {
            fclose(*f[i]);
            *f[i] = NULL;
        }
}

/* A report's writer returned rc: 1 (and the reason said) if it failed. */
static int
report_failed(const char *path, int rc)
{
    if (rc == 0)
        return 0;
    fprintf(stderr, "folio-bench: %s: %s\n", path, strerror(errno));
    return 1;
}

/* The command line, for the report's settings. */
static void
keep_cmdline(struct bench_opts *o, int argc, char *argv[])
{
    size_t n = 0;
    int i;

    for (i = 0; i < argc && n + 2 < sizeof(o->cmdline); i++)
        n += (size_t)snprintf(o->cmdline + n, sizeof(o->cmdline) - n, "%s%s",
                              i > 0 ? " " : "", argv[i]);
}

int
main(int argc, char *argv[])
{
    static struct bench_opts o;
    static struct bench_pool pool;
    static struct bench_run r;
    static struct bench_result res;
    struct sigaction sa;
    char err[512] = "";
    int rc, i;

    folio_bench_opts_init(&o);
    keep_cmdline(&o, argc, argv);
    if ((rc = folio_bench_opts_parse(argc, argv, &o)) != 0)
        return rc > 0 ? BENCH_EXIT_OK : BENCH_EXIT_USAGE;
    if (folio_addr_parse(o.addr, &r.target, err, sizeof(err)) != 0) {
        fprintf(stderr, "folio-bench: %s\n", err);
        return BENCH_EXIT_USAGE;
    }
    if (folio_bench_pool_build(&o, &pool, err, sizeof(err)) != 0) {
        fprintf(stderr, "folio-bench: %s\n", err);
        return BENCH_EXIT_USAGE;
    }
    /* What can be checked before the run is, rather than after it. */
    if (folio_bench_peer_setup(&o, &r.target, err, sizeof(err)) != 0) {
        fprintf(stderr, "folio-bench: %s\n", err);
        folio_bench_pool_free(&pool);
        return BENCH_EXIT_CONNECT;
    }
    /* "a": a run that does not finish leaves an old file as it was. */
    err[0] = '\0';
    if (folio_bench_html_baseline(&o) != 0 || open_reports(&o) != 0 ||
        folio_bench_server_check(&o, err, sizeof(err)) != 0) {
        if (err[0] != '\0')
            fprintf(stderr, "folio-bench: %s\n", err);
        close_reports(&o);
        folio_bench_pool_free(&pool);
        return BENCH_EXIT_USAGE;
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    r.o = &o;
    r.pool = &pool;
    r.nthreads = o.threads;
    atomic_store(&r.budget, o.mode == BENCH_ROUNDS ? 0 : o.total);
    if (folio_bench_run_start(&r) != 0) {
        fprintf(stderr, "folio-bench: %s\n", r.first_error);
        return BENCH_EXIT_CONNECT;
    }
    pthread_barrier_wait(&r.go); /* every thread has connected */
    if (r.connect_failed) {
        pthread_barrier_wait(&r.go);
        folio_bench_run_join(&r);
        fprintf(stderr, "folio-bench: %s\n", r.first_error);
        folio_bench_pool_free(&pool);
        return BENCH_EXIT_CONNECT;
    }
    if (o.warmup_ns == 0 && want_server(&o))
        snap(&o, &res.before, 1);
    r.t0 = folio_mono_ns();
    r.measure_ns = o.mode == BENCH_ROUNDS ? r.t0 : r.t0 + o.warmup_ns;
    r.stop_ns = o.duration_ns > 0 && o.mode != BENCH_ROUNDS
                    ? r.measure_ns + o.duration_ns
                    : 0;
    if (o.warmup_ns == 0 || o.mode == BENCH_ROUNDS)
        folio_bench_profile_start(&o);
    pthread_barrier_wait(&r.go); /* go */
    if (o.mode == BENCH_ROUNDS)
        rounds(&r, &res);
    else
        watch(&r, &res);
    folio_bench_run_join(&r);
    if (want_server(&o))
        snap(&o, &res.after, 1);

    totals(&r, &res.t);
    if (res.t.last_ns > r.measure_ns)
        res.secs = (double)(res.t.last_ns - r.measure_ns) / 1e9;
    folio_bench_judge(&r, &res);
    if (o.json)
        folio_bench_json(stdout, &r, &res);
    else
        folio_bench_summary(stdout, &r, &res);
    /* A report that could not be written is an error, like a bad run. */
    if (ferror(stdout) | fflush(stdout) | fclose(stdout)) {
        fprintf(stderr, "folio-bench: writing the report: %s\n",
                strerror(errno != 0 ? errno : EIO));
        if (res.status < BENCH_EXIT_USAGE)
            res.status = BENCH_EXIT_USAGE;
    }
    if (folio_bench_profile_finish(&o) != 0 && res.status == BENCH_EXIT_OK)
        res.status = BENCH_EXIT_CONNECT;
    if ((o.hgrm_f != NULL &&
         report_failed(o.hgrm, folio_bench_hgrm(o.hgrm_f, &res.t))) |
        (o.csv_f != NULL &&
         report_failed(o.csv, folio_bench_csv(o.csv_f, &res.series))) |
        (o.html_f != NULL &&
         report_failed(o.html, folio_bench_html(o.html_f, &r, &res)))) {
        if (res.status < BENCH_EXIT_USAGE)
            res.status = BENCH_EXIT_USAGE;
    }
    for (i = 0; i < res.nreasons; i++)
        fprintf(stderr, "folio-bench: %s\n", res.reasons[i]);
    free(r.th);
    folio_bench_series_free(&res.series);
    folio_bench_pool_free(&pool);
    return res.status;
}
