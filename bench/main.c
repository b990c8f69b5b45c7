/*
 * main.c - folio-bench: the load generator for foliod (folio-bench(1)).
 *
 * Parses the mode and options, builds the request pool, starts the
 * engine's threads, prints progress each second while they run (or the
 * rounds, one line each), reads the server's counters before and after,
 * and turns the outcome into the summary and the exit status.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "src/clock.h"
#include "src/cpus.h"
#include "src/defaults.h"

static volatile sig_atomic_t got_signal;

static void
on_signal(int sig)
{
    (void)sig;
    got_signal = 1;
}

static void
usage(FILE *f)
{
    fprintf(
        f,
        "usage: folio-bench [closed | open | ramp | rounds] [-H host:port | -U "
        "socket]\n"
        "                   [-c conns] [-t threads] [-P depth] [-d duration | "
        "-n requests]\n"
        "                   [--warmup duration] [-R rate] [--stages stages] "
        "[--rounds n]\n"
        "                   [-w ping | corpus | search | freight | comments | "
        "mixed]\n"
        "                   [--queries file] [--corpus dir] [--catalog file]\n"
        "                   [--uncovered percent] [--write-ratio ratio] "
        "[--pages n]\n"
        "                   [--zipf s] [--mix spec] [--admin socket] "
        "[--server-pid pid]\n"
        "                   [--json] [--hgrm file] [--html file] [--csv file]\n"
        "                   [--max-p99 duration]\n"
        "                   [--max-errors n | percent%%] [--timeout duration]\n"
        "                   [--seed n] [--send-each] [--profile file] "
        "[--metrics host:port] [-q]\n"
        "                   [--proto msgpack | resp | memcache | raw] "
        "[--value-size n]\n"
        "                   [--key name] [--raw-request bytes]\n"
        "                   [--raw-reply-len n | --raw-reply-end bytes]\n"
        "       folio-bench --version | --help\n");
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
bad(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "folio-bench: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    usage(stderr);
    return -1;
}

/* "1.5", "250ms", "2m", "30s", "100us", "5ns"; a bare number is `unit` ns. */
static int
parse_duration(const char *s, double unit, uint64_t *out)
{
    char *e;
    double v;

    errno = 0;
    v = strtod(s, &e);
    if (e == s || errno != 0 || v < 0 || !isfinite(v))
        return -1;
    if (*e == '\0')
        v *= unit;
    else if (strcmp(e, "ns") == 0)
        ;
    else if (strcmp(e, "us") == 0)
        v *= 1e3;
    else if (strcmp(e, "ms") == 0)
        v *= 1e6;
    else if (strcmp(e, "s") == 0)
        v *= 1e9;
    else if (strcmp(e, "m") == 0)
        v *= 60e9;
    else if (strcmp(e, "h") == 0)
        v *= 3600e9;
    else
        return -1;
    if (v > 1e18)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

static int
parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    unsigned long long v;
    char *e;

    errno = 0;
    if (*s == '-' || *s == '\0')
        return -1;
    v = strtoull(s, &e, 10);
    if (*e != '\0' || errno != 0 || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int
parse_int(const char *s, int min, int max, int *out)
{
    uint64_t v;

    if (parse_u64(s, (uint64_t)min, (uint64_t)max, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

static int
parse_double(const char *s, double min, double max, double *out)
{
    char *e;
    double v;

    errno = 0;
    v = strtod(s, &e);
    if (e == s || *e != '\0' || errno != 0 || !(v >= min && v <= max))
        return -1;
    *out = v;
    return 0;
}

/* --stages 30s:240,60s:480,10s:0 */
static int
parse_stages(const char *spec, struct bench_opts *o)
{
    char buf[1024], *tok, *save = NULL, *colon;
    uint64_t target;

    if (strlen(spec) >= sizeof(buf))
        return -1;
    snprintf(buf, sizeof(buf), "%s", spec);
    o->nstages = 0;
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (o->nstages == BENCH_MAX_STAGES ||
            (colon = strchr(tok, ':')) == NULL)
            return -1;
        *colon = '\0';
        if (parse_duration(tok, 1e9, &o->stages[o->nstages].dur_ns) != 0 ||
            o->stages[o->nstages].dur_ns == 0 ||
            parse_u64(colon + 1, 0, BENCH_MAX_CONNS, &target) != 0)
            return -1;
        o->stages[o->nstages++].target = (uint32_t)target;
    }
    return o->nstages > 0 ? 0 : -1;
}

enum {
    O_WARMUP = 256,
    O_STAGES,
    O_ROUNDS,
    O_QUERIES,
    O_CORPUS,
    O_CATALOG,
    O_UNCOVERED,
    O_WRITE_RATIO,
    O_PAGES,
    O_ZIPF,
    O_MIX,
    O_ADMIN,
    O_SERVER_PID,
    O_JSON,
    O_HGRM,
    O_HTML,
    O_CSV,
    O_MAX_P99,
    O_MAX_ERRORS,
    O_TIMEOUT,
    O_SEED,
    O_PROTO,
    O_VALUE_SIZE,
    O_KEY,
    O_RAW_REQUEST,
    O_RAW_REPLY_LEN,
    O_RAW_REPLY_END,
    O_SEND_EACH,
    O_PROFILE,
    O_METRICS
};

/* Returns 0 to run, 1 after --help/--version, -1 on a usage error. */
static int
parse_args(int argc, char *argv[], struct bench_opts *o)
{
    static const struct option lo[] = {
        {"host", required_argument, NULL, 'H'},
        {"socket", required_argument, NULL, 'U'},
        {"unix", required_argument, NULL, 'U'}, /* the old spelling */
        {"connections", required_argument, NULL, 'c'},
        {"threads", required_argument, NULL, 't'},
        {"pipeline", required_argument, NULL, 'P'},
        {"duration", required_argument, NULL, 'd'},
        {"requests", required_argument, NULL, 'n'},
        {"rate", required_argument, NULL, 'R'},
        {"workload", required_argument, NULL, 'w'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"warmup", required_argument, NULL, O_WARMUP},
        {"stages", required_argument, NULL, O_STAGES},
        {"rounds", required_argument, NULL, O_ROUNDS},
        {"queries", required_argument, NULL, O_QUERIES},
        {"corpus", required_argument, NULL, O_CORPUS},
        {"catalog", required_argument, NULL, O_CATALOG},
        {"uncovered", required_argument, NULL, O_UNCOVERED},
        {"write-ratio", required_argument, NULL, O_WRITE_RATIO},
        {"pages", required_argument, NULL, O_PAGES},
        {"zipf", required_argument, NULL, O_ZIPF},
        {"mix", required_argument, NULL, O_MIX},
        {"admin", required_argument, NULL, O_ADMIN},
        {"server-pid", required_argument, NULL, O_SERVER_PID},
        {"json", no_argument, NULL, O_JSON},
        {"hgrm", required_argument, NULL, O_HGRM},
        {"html", required_argument, NULL, O_HTML},
        {"csv", required_argument, NULL, O_CSV},
        {"max-p99", required_argument, NULL, O_MAX_P99},
        {"max-errors", required_argument, NULL, O_MAX_ERRORS},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"seed", required_argument, NULL, O_SEED},
        {"proto", required_argument, NULL, O_PROTO},
        {"value-size", required_argument, NULL, O_VALUE_SIZE},
        {"key", required_argument, NULL, O_KEY},
        {"raw-request", required_argument, NULL, O_RAW_REQUEST},
        {"raw-reply-len", required_argument, NULL, O_RAW_REPLY_LEN},
        {"raw-reply-end", required_argument, NULL, O_RAW_REPLY_END},
        {"send-each", no_argument, NULL, O_SEND_EACH},
        {"profile", required_argument, NULL, O_PROFILE},
        {"metrics", required_argument, NULL, O_METRICS},
        {NULL, 0, NULL, 0},
    };
    const char *mode = NULL;
    int ch, have_c = 0, have_t = 0, have_d = 0, have_n = 0, v, i;
    uint64_t u;
    double d;

    if (argc > 1 && argv[1][0] != '-') {
        mode = argv[1];
        argv[1] = argv[0];
        argc--;
        argv++;
        if (folio_bench_mode_parse(mode, &o->mode) != 0)
            return bad("unknown mode '%s' (closed, open, ramp, rounds)", mode);
    }
    while ((ch = getopt_long(argc, argv, "H:U:c:t:P:d:n:R:w:qhV", lo, NULL)) !=
           -1) {
        switch (ch) {
        case 'H':
            snprintf(o->addr, sizeof(o->addr), "%s", optarg);
            break;
        case 'U':
            snprintf(o->addr, sizeof(o->addr), "unix:%s", optarg);
            break;
        case 'c':
            if (parse_int(optarg, 1, BENCH_MAX_CONNS, &o->conns) != 0)
                return bad("-c: %s is not 1 to 100000", optarg);
            have_c = 1;
            break;
        case 't':
            if (parse_int(optarg, 1, 1024, &o->threads) != 0)
                return bad("-t: %s is not 1 to 1024", optarg);
            have_t = 1;
            break;
        case 'P':
            if (parse_int(optarg, 1, BENCH_MAX_DEPTH, &o->pipeline) != 0)
                return bad("-P: %s is not 1 to 4096", optarg);
            break;
        case 'd':
            if (parse_duration(optarg, 1e9, &o->duration_ns) != 0 ||
                o->duration_ns == 0)
                return bad("-d: bad duration '%s'", optarg);
            have_d = 1;
            break;
        case 'n':
            if (parse_u64(optarg, 1, UINT64_MAX / 2, &o->total) != 0)
                return bad("-n: bad count '%s'", optarg);
            have_n = 1;
            break;
        case 'R':
            if (parse_double(optarg, 1e-3, 1e9, &o->rate) != 0)
                return bad("-R: bad rate '%s'", optarg);
            break;
        case 'w':
            o->workload = optarg;
            break;
        case 'q':
            o->quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return 1;
        case 'V':
            printf("folio-bench %s\n", PACKAGE_VERSION);
            return 1;
        case O_WARMUP:
            if (parse_duration(optarg, 1e9, &o->warmup_ns) != 0)
                return bad("--warmup: bad duration '%s'", optarg);
            break;
        case O_STAGES:
            if (parse_stages(optarg, o) != 0)
                return bad("--stages: '%s' is not DURATION:USERS,...", optarg);
            break;
        case O_ROUNDS:
            if (parse_u64(optarg, 0, UINT64_MAX / 2, &o->rounds) != 0)
                return bad("--rounds: bad count '%s'", optarg);
            break;
        case O_QUERIES:
            o->queries = optarg;
            break;
        case O_CORPUS:
            o->corpus = optarg;
            break;
        case O_CATALOG:
            o->catalog = optarg;
            break;
        case O_UNCOVERED:
            if (parse_double(optarg, 0, 100, &o->uncovered) != 0)
                return bad("--uncovered: %s is not a percentage", optarg);
            break;
        case O_WRITE_RATIO:
            if (parse_double(optarg, 0, 1, &o->write_ratio) != 0)
                return bad("--write-ratio: %s is not 0 to 1", optarg);
            break;
        case O_PAGES:
            if (parse_int(optarg, 1, 100000000, &v) != 0)
                return bad("--pages: bad count '%s'", optarg);
            o->pages = (uint32_t)v;
            break;
        case O_ZIPF:
            if (parse_double(optarg, 0, 10, &o->zipf) != 0)
                return bad("--zipf: %s is not 0 to 10", optarg);
            break;
        case O_MIX:
            o->mix = optarg;
            break;
        case O_ADMIN:
            o->admin = optarg;
            break;
        case O_SERVER_PID:
            if (parse_int(optarg, 1, INT_MAX, &v) != 0)
                return bad("--server-pid: bad pid '%s'", optarg);
            o->server_pid = (pid_t)v;
            break;
        case O_JSON:
            o->json = 1;
            break;
        case O_HGRM:
            o->hgrm = optarg;
            break;
        case O_HTML:
            o->html = optarg;
            break;
        case O_CSV:
            o->csv = optarg;
            break;
        case O_MAX_P99:
            if (parse_duration(optarg, 1e6, &o->max_p99_ns) != 0 ||
                o->max_p99_ns == 0)
                return bad("--max-p99: bad duration '%s'", optarg);
            break;
        case O_MAX_ERRORS:
            i = (int)strlen(optarg);
            if (i > 1 && optarg[i - 1] == '%') {
                char num[64];

                snprintf(num, sizeof(num), "%.*s", i - 1, optarg);
                if (parse_double(num, 0, 100, &d) != 0)
                    return bad("--max-errors: bad percentage '%s'", optarg);
                o->max_errors_pct = d;
            } else if (parse_u64(optarg, 0, UINT64_MAX / 2, &u) != 0) {
                return bad("--max-errors: bad count '%s'", optarg);
            } else {
                o->max_errors = u;
                o->max_errors_pct = -1;
            }
            break;
        case O_TIMEOUT:
            if (parse_duration(optarg, 1e9, &o->timeout_ns) != 0 ||
                o->timeout_ns == 0)
                return bad("--timeout: bad duration '%s'", optarg);
            break;
        case O_SEED:
            if (parse_u64(optarg, 0, UINT64_MAX / 2, &o->seed) != 0)
                return bad("--seed: bad number '%s'", optarg);
            break;
        case O_PROTO:
            if (folio_bench_proto_parse(optarg, &o->proto) != 0)
                return bad("--proto: '%s' is not msgpack, resp, memcache or "
                           "raw",
                           optarg);
            break;
        case O_VALUE_SIZE:
            if (parse_int(optarg, 1, 64 << 20, &v) != 0)
                return bad("--value-size: %s is not 1 to 64M", optarg);
            o->value_size = (uint32_t)v;
            break;
        case O_KEY:
            if (optarg[0] == '\0' || strpbrk(optarg, " \r\n") != NULL)
                return bad("--key: '%s' is not a key (no spaces)", optarg);
            o->key = optarg;
            break;
        case O_RAW_REQUEST:
            free((char *)o->raw_request);
            if ((o->raw_request = folio_bench_unescape(
                     optarg, &o->raw_request_len)) == NULL)
                return bad("--raw-request: bad escape in '%s'", optarg);
            break;
        case O_RAW_REPLY_LEN:
            if (parse_int(optarg, 1, 1 << 20, &v) != 0)
                return bad("--raw-reply-len: %s is not 1 to 1M", optarg);
            o->raw_reply_len = (uint32_t)v;
            break;
        case O_SEND_EACH:
            o->send_each = 1;
            break;
        case O_RAW_REPLY_END:
            free((char *)o->raw_reply_end);
            if ((o->raw_reply_end = folio_bench_unescape(
                     optarg, &o->raw_reply_end_len)) == NULL ||
                o->raw_reply_end_len == 0)
                return bad("--raw-reply-end: bad or empty '%s'", optarg);
            break;
        case O_PROFILE:
            o->profile = optarg;
            break;
        case O_METRICS:
            o->metrics = optarg;
            break;
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind < argc)
        return bad("unexpected argument '%s' (the mode comes first)",
                   argv[optind]);

    /* The mode: named, or implied by -R and --stages. */
    if (o->rate > 0 && mode == NULL)
        o->mode = BENCH_OPEN;
    if (o->nstages > 0 && mode == NULL)
        o->mode = BENCH_RAMP;
    if (o->rate > 0 && o->mode != BENCH_OPEN)
        return bad("-R goes with the open mode, not %s",
                   folio_bench_mode_name(o->mode));
    if (o->nstages > 0 && o->mode != BENCH_RAMP)
        return bad("--stages goes with the ramp mode, not %s",
                   folio_bench_mode_name(o->mode));
    if (o->mode == BENCH_OPEN && o->rate <= 0)
        return bad("%s", "the open mode needs -R RATE");
    if (o->mode == BENCH_RAMP && o->nstages == 0)
        return bad("%s", "the ramp mode needs --stages");
    if (o->mode == BENCH_RAMP && (have_n || have_d))
        return bad("%s", "the ramp mode runs its --stages: no -n or -d");
    if (o->rounds > 0 && o->mode != BENCH_ROUNDS)
        return bad("%s", "--rounds goes with the rounds mode");
    if (have_n && have_d && o->mode != BENCH_ROUNDS)
        return bad("%s", "-n or -d, not both");
    if (o->proto != BENCH_P_MSGPACK) {
        if (o->admin != NULL)
            return bad("--admin reads folio's server.stats: not with --proto "
                       "%s (--server-pid reads any server's CPU)",
                       folio_bench_proto_name(o->proto));
        if (o->mode == BENCH_ROUNDS)
            return bad("%s", "the rounds mode is folio's: msgpack only");
        if (o->workload == NULL)
            o->workload = o->proto == BENCH_P_MEMCACHE ? "version"
                          : o->proto == BENCH_P_RAW    ? "raw"
                                                       : "ping";
    }
    if ((o->raw_request != NULL || o->raw_reply_len > 0 ||
         o->raw_reply_end != NULL) &&
        o->proto != BENCH_P_RAW)
        return bad("%s", "--raw-request and --raw-reply-* go with --proto raw");
    if (o->value_size == 0)
        o->value_size = 3; /* redis-benchmark's -d default */

    switch (o->mode) {
    case BENCH_ROUNDS:
        if (!have_n)
            o->total = 20;
        if (!have_c || (uint64_t)o->conns > o->total)
            o->conns =
                (int)(o->total < BENCH_MAX_CONNS ? o->total : BENCH_MAX_CONNS);
        if (!have_t)
            o->threads = 1;
        if (o->workload == NULL)
            o->workload = "corpus";
        break;
    case BENCH_RAMP:
        o->conns = 0;
        for (i = 0; i < o->nstages; i++)
            if ((int)o->stages[i].target > o->conns)
                o->conns = (int)o->stages[i].target;
        if (o->conns == 0)
            return bad("%s", "--stages: no stage has a user");
        break;
    default:
        if (!have_n && !have_d)
            o->duration_ns = 5000000000ull;
        break;
    }
    if (o->workload == NULL)
        o->workload = "ping";
    if (o->profile != NULL && folio_bench_profile_seconds(o) == 0)
        return bad("%s", "--profile needs a run of known length: -d or "
                         "--stages");
    if (o->metrics == NULL)
        o->metrics = folio_default_metrics();
    if (o->threads <= 0)
        o->threads = folio_cpu_count();
    if (o->threads > o->conns)
        o->threads = o->conns;
    return 0;
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
        fprintf(out, "Simulated %llu requests in %s, rate of %.1f reqs / sec\n",
                (unsigned long long)n,
                round_time((double)(end - start), took, sizeof(took)),
                end > start ? (double)n * 1e9 / (double)(end - start) : 0);
        fflush(out);
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

    snprintf(o.addr, sizeof(o.addr), "%s", FOLIO_DEFAULT_LISTEN);
    o.conns = 50;
    o.pipeline = 1;
    o.timeout_ns = 10000000000ull;
    o.uncovered = 7.5;
    o.write_ratio = 0.01;
    o.pages = 1000;
    o.zipf = 1.0;
    o.max_errors_pct = -1;
    keep_cmdline(&o, argc, argv);
    if ((rc = parse_args(argc, argv, &o)) != 0)
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
    if (open_reports(&o) != 0 ||
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
