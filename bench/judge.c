/*
 * judge.c - the verdict of a run: every threshold (--max-errors,
 * --max-p99, ...) evaluated into a list of checks, each reported whether
 * it failed or not, and the exit status: the highest of a wrong answer
 * (4), a failed connection (3), a failed threshold (1).  A threshold is a
 * row of the table below: say whether it applies and measure it.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"

uint64_t
folio_bench_errors_allowed(const struct bench_opts *o, uint64_t sent)
{
    return o->max_errors_pct >= 0
               ? (uint64_t)floor(o->max_errors_pct / 100.0 * (double)sent)
               : o->max_errors;
}

const char *
folio_bench_codes_text(const uint64_t counts[BENCH_CODES], uint64_t lost,
                       char *buf, size_t len)
{
    size_t n = 0;
    int k;

    buf[0] = '\0';
    for (k = 0; k < BENCH_CODES && n < len; k++) {
        if (counts[k] == 0)
            continue;
        n +=
            (size_t)snprintf(buf + n, len - n, "%s%s%d %s %llu",
                             n > 0 ? ", " : "", k == FOLIO_ST_MAX ? ">" : "",
                             k == FOLIO_ST_MAX ? FOLIO_ST_MAX - 1 : k,
                             k == FOLIO_ST_MAX ? "OTHER" : folio_status_name(k),
                             (unsigned long long)counts[k]);
    }
    if (lost > 0 && n < len)
        snprintf(buf + n, len - n, "%slost (no answer) %llu", n > 0 ? ", " : "",
                 (unsigned long long)lost);
    return buf;
}

/* --max-errors: unexpected errors and lost requests. */
static int
max_errors_on(const struct bench_opts *o)
{
    (void)o;
    return 1; /* default 0: any unexpected error fails the run */
}

static void
max_errors_eval(const struct bench_run *r, const struct bench_result *res,
                struct bench_check *c)
{
    const struct bench_opts *o = r->o;
    const struct bench_totals *t = &res->t;
    uint64_t unexpected[BENCH_CODES],
        n = folio_bench_unexpected(t),
        allowed = folio_bench_errors_allowed(o, t->sent);
    char codes[200];
    int k;

    c->unit = "errors";
    c->verb = ", more than";
    c->limit = (double)allowed;
    c->measured = (double)n;
    c->failed = n > allowed;
    if (o->max_errors_pct >= 0)
        snprintf(c->limit_text, sizeof(c->limit_text), "%g%% (%llu)",
                 o->max_errors_pct, (unsigned long long)allowed);
    else
        snprintf(c->limit_text, sizeof(c->limit_text), "%llu",
                 (unsigned long long)allowed);
    snprintf(c->measured_text, sizeof(c->measured_text),
             "%llu unexpected error%s", (unsigned long long)n,
             n == 1 ? "" : "s");
    for (k = 0; k < BENCH_CODES; k++)
        unexpected[k] = t->codes[k] - t->codes_expected[k];
    folio_bench_codes_text(unexpected, t->lost, codes, sizeof(codes));
    if (codes[0] != '\0')
        snprintf(c->detail, sizeof(c->detail), "%s", codes);
}

/* --max-p99: the 99th percentile latency. */
static int
max_p99_on(const struct bench_opts *o)
{
    return o->max_p99_ns > 0;
}

static void
max_p99_eval(const struct bench_run *r, const struct bench_result *res,
             struct bench_check *c)
{
    const struct bench_opts *o = r->o;
    uint64_t p99 = folio_bench_pct(&res->t, 0.99);
    char v[32];

    c->unit = "us";
    c->limit = (double)o->max_p99_ns / 1e3;
    folio_bench_fmt_ns((double)o->max_p99_ns, c->limit_text,
                       sizeof(c->limit_text));
    if (folio_bench_answered(&res->t) == 0) {
        /* No latency to hold against the limit: that fails it. */
        c->measured = NAN;
        c->failed = 1;
        c->verb = ", so no p99 to hold against";
        snprintf(c->measured_text, sizeof(c->measured_text), "no replies");
        return;
    }
    c->verb = " is over";
    c->measured = (double)p99 / 1e3;
    c->failed = p99 > o->max_p99_ns;
    snprintf(c->measured_text, sizeof(c->measured_text), "p99 %s",
             folio_bench_fmt_ns((double)p99, v, sizeof(v)));
}

static const struct threshold {
    const char *name; /* the option without "--" */
    int (*on)(const struct bench_opts *o);
    void (*eval)(const struct bench_run *r, const struct bench_result *res,
                 struct bench_check *c);
} thresholds[] = {
    {"max-errors", max_errors_on, max_errors_eval},
    {"max-p99", max_p99_on, max_p99_eval},
};

/* A reason of the status: in res->reasons, and in res->why after "; ". */
static void reason(struct bench_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
reason(struct bench_result *res, const char *fmt, ...)
{
    const int max = (int)(sizeof(res->reasons) / sizeof(res->reasons[0]));
    char *text;
    size_t n = strlen(res->why);
    va_list ap;

    if (res->nreasons == max)
        return;
    text = res->reasons[res->nreasons++];
    va_start(ap, fmt);
    vsnprintf(text, sizeof(res->reasons[0]), fmt, ap);
    va_end(ap);
    snprintf(res->why + n, sizeof(res->why) - n, "%s%s", n > 0 ? "; " : "",
             text);
}

static void
raise_status(struct bench_result *res, int status)
{
    if (status > res->status)
        res->status = status;
}

void
folio_bench_judge(const struct bench_run *r, struct bench_result *res)
{
    struct bench_check *c;
    size_t i;

    res->status = BENCH_EXIT_OK;
    res->why[0] = '\0';
    res->nreasons = 0;
    res->nchecks = 0;
    if (res->t.wrong > 0) {
        raise_status(res, BENCH_EXIT_WRONG);
        reason(res, "wrong answer: %s", r->first_wrong);
    }
    if (res->t.conn_failures > 0 || r->first_error[0] != '\0') {
        raise_status(res, BENCH_EXIT_CONNECT);
        reason(res, "%s", r->first_error);
    }
    for (i = 0; i < sizeof(thresholds) / sizeof(thresholds[0]) &&
                res->nchecks < BENCH_MAX_CHECKS;
         i++) {
        if (!thresholds[i].on(r->o))
            continue;
        c = &res->checks[res->nchecks++];
        memset(c, 0, sizeof(*c));
        c->name = thresholds[i].name;
        thresholds[i].eval(r, res, c);
        if (!c->failed)
            continue;
        raise_status(res, BENCH_EXIT_THRESHOLD);
        reason(res, "%s%s%s%s%s --%s %s", c->measured_text,
               c->detail[0] != '\0' ? " (" : "", c->detail,
               c->detail[0] != '\0' ? ")" : "", c->verb, c->name,
               c->limit_text);
    }
}
