/*
 * report.c - what folio-bench prints: the progress line each second on
 * stderr, the summary (text or one JSON object) on stdout, and the
 * latency distribution in HdrHistogram's percentile text format (.hgrm)
 * for plotting.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"

const char *
folio_bench_fmt_ns(double ns, char *buf, size_t len)
{
    if (ns < 1e3)
        snprintf(buf, len, "%.0fns", ns);
    else if (ns < 1e5)
        snprintf(buf, len, "%.1fus", ns / 1e3);
    else if (ns < 1e6)
        snprintf(buf, len, "%.0fus", ns / 1e3);
    else if (ns < 1e8)
        snprintf(buf, len, "%.2fms", ns / 1e6);
    else if (ns < 1e9)
        snprintf(buf, len, "%.1fms", ns / 1e6);
    else
        snprintf(buf, len, "%.2fs", ns / 1e9);
    return buf;
}

static double
pct(const struct bench_totals *t, double q)
{
    return (double)folio_bench_pct(t, q);
}

/* "812 B", "12.3 kB", "4.56 MB", "1.20 GB" (powers of 1000). */
static const char *
fmt_bytes(double v, char *buf, size_t len)
{
    if (v < 1e3)
        snprintf(buf, len, "%.0f B", v);
    else if (v < 1e6)
        snprintf(buf, len, "%.1f kB", v / 1e3);
    else if (v < 1e9)
        snprintf(buf, len, "%.2f MB", v / 1e6);
    else
        snprintf(buf, len, "%.2f GB", v / 1e9);
    return buf;
}

/* The largest latency recorded: exact, not a bucket's bound. */
static double
max_ns(const struct bench_totals *t)
{
    return (double)t->max_ns;
}

void
folio_bench_progress(const struct bench_run *r, const struct bench_totals *now,
                     const struct bench_totals *prev, double elapsed_s,
                     double interval_s)
{
    uint64_t done = folio_bench_answered(now), was = folio_bench_answered(prev);
    char p99[32], extra[64] = "";

    if (r->o->mode == BENCH_RAMP) {
        snprintf(extra, sizeof(extra), ", %llu users",
                 (unsigned long long)now->vus);
    } else if (r->o->mode == BENCH_OPEN) {
        /* Due by now on the schedule, but not sent: no room on any
         * connection because the server is slow to answer. */
        double due = r->o->rate * elapsed_s, behind = due - (double)now->paced;

        if (behind > r->nthreads + 1)
            snprintf(extra, sizeof(extra), ", %.0f behind schedule", behind);
    }
    fprintf(stderr, "[%6.1fs] %8.0f req/s, %llu errors, p99 %s%s\n", elapsed_s,
            interval_s > 0 ? (double)(done - was) / interval_s : 0,
            (unsigned long long)(now->err_replies + now->lost),
            folio_bench_fmt_ns(pct(now, 0.99), p99, sizeof(p99)), extra);
}

/* The server's spend over the run: -1 where unknown. */
struct spend {
    double reqs, cpu, allocs, client_cpu; /* < 0: unknown */
};

/* x per request of the run's (0 without any). */
static double
per_req(const struct spend *sp, double x)
{
    return sp->reqs > 0 ? x / sp->reqs : 0;
}

static int
server_spend(const struct bench_result *res, struct spend *sp)
{
    const struct bench_server_snap *a = &res->before, *b = &res->after;

    if (!a->ok || !b->ok)
        return 0;
    sp->reqs = a->requests >= 0 && b->requests >= 0
                   ? b->requests - a->requests
                   : (double)folio_bench_answered(&res->t);
    sp->cpu =
        a->cpu_s >= 0 && b->cpu_s >= 0 && a->cpu_from_proc == b->cpu_from_proc
            ? b->cpu_s - a->cpu_s
            : -1;
    sp->allocs = a->alloc_calls >= 0 && b->alloc_calls >= 0
                     ? b->alloc_calls - a->alloc_calls
                     : -1;
    sp->client_cpu = a->client_cpu_s >= 0 && b->client_cpu_s >= 0
                         ? b->client_cpu_s - a->client_cpu_s
                         : -1;
    return 1;
}

static int
used_kinds(const struct bench_totals *t)
{
    int k, n = 0;

    for (k = 0; k < BENCH_NKINDS; k++)
        n += t->kind_sent[k] > 0;
    return n;
}

void
folio_bench_summary(FILE *f, const struct bench_run *r,
                    const struct bench_result *res)
{
    const struct bench_opts *o = r->o;
    const struct bench_totals *t = &res->t;
    const struct bench_server_snap *b = &res->after;
    uint64_t answered = folio_bench_answered(t);
    struct spend sp;
    char p[6][32];
    int k, first;

    fprintf(f, "folio-bench %s", folio_bench_mode_name(o->mode));
    switch (o->mode) {
    case BENCH_OPEN:
        fprintf(f, " loop at %.0f req/s", o->rate);
        break;
    case BENCH_CLOSED:
        fprintf(f, " loop");
        break;
    case BENCH_RAMP:
        fprintf(f, " of %d stages", o->nstages);
        break;
    case BENCH_ROUNDS:
        fprintf(f, ": %llu rounds of %llu",
                (unsigned long long)res->rounds_done,
                (unsigned long long)o->total);
        break;
    }
    fprintf(f, ", %d %s, %d threads, pipeline %d, %.2f s\n", o->conns,
            o->mode == BENCH_RAMP ? "users at most" : "connections",
            r->nthreads, o->pipeline, res->secs);
    fprintf(f, "  workload: %s\n", r->pool->desc);
    if (r->pool->ok_codes != 0) {
        fprintf(f, "  expected errors:");
        for (k = 0, first = 1; k < BENCH_CODES; k++) {
            if (!(r->pool->ok_codes & BENCH_CODE(k)))
                continue;
            fprintf(f, "%s %d %s", first ? "" : ",", k, folio_status_name(k));
            if (r->pool->code_why[k] != NULL)
                fprintf(f, " (%s)", r->pool->code_why[k]);
            first = 0;
        }
        fprintf(f, "; not held against --max-errors\n");
    }
    fprintf(f, "  sent %llu: %llu ok", (unsigned long long)t->sent,
            (unsigned long long)t->ok);
    if (t->wrong > 0)
        fprintf(f, ", %llu WRONG", (unsigned long long)t->wrong);
    fprintf(f, ", %llu errors", (unsigned long long)(t->err_replies + t->lost));
    if (t->expected > 0)
        fprintf(f, " (%llu expected)", (unsigned long long)t->expected);
    fprintf(f, "\n");
    if (t->err_replies + t->lost > 0) {
        fprintf(f, "  errors by code:");
        for (k = 0, first = 1; k < BENCH_CODES; k++) {
            if (t->codes[k] == 0)
                continue;
            fprintf(f, "%s %s%d %s %llu", first ? "" : ",",
                    k == FOLIO_ST_MAX ? ">" : "",
                    k == FOLIO_ST_MAX ? FOLIO_ST_MAX - 1 : k,
                    k == FOLIO_ST_MAX ? "OTHER" : folio_status_name(k),
                    (unsigned long long)t->codes[k]);
            if (t->codes_expected[k] == t->codes[k])
                fprintf(f, " (expected)");
            else if (t->codes_expected[k] > 0)
                fprintf(f, " (%llu expected)",
                        (unsigned long long)t->codes_expected[k]);
            first = 0;
        }
        if (t->lost > 0)
            fprintf(f, "%s lost (no answer) %llu", first ? "" : ",",
                    (unsigned long long)t->lost);
        fprintf(f, "\n");
    }
    if (t->wrong > 0)
        fprintf(f, "  WRONG answers %llu, the run stopped at the first: %s\n",
                (unsigned long long)t->wrong, r->first_wrong);
    if (used_kinds(t) > 1) {
        /* memtier's table: each method's latencies beside its counts. */
        fprintf(f, "  by method:\n");
        for (k = 0; k < BENCH_NKINDS; k++) {
            uint64_t n = folio_bench_kind_answered(t, k);
            const uint64_t *h = t->kind_hist[k], mx = t->kind_max_ns[k];

            if (t->kind_sent[k] == 0)
                continue;
            fprintf(f, "    %-20s %llu sent, %llu errors",
                    folio_bench_kind_method[k],
                    (unsigned long long)t->kind_sent[k],
                    (unsigned long long)t->kind_err[k]);
            if (n > 0)
                fprintf(
                    f, "; p50 %s, p90 %s, p99 %s, p99.9 %s, max %s, mean %s",
                    folio_bench_fmt_ns((double)folio_bench_pct_of(h, mx, 0.5),
                                       p[0], sizeof(p[0])),
                    folio_bench_fmt_ns((double)folio_bench_pct_of(h, mx, 0.9),
                                       p[1], sizeof(p[1])),
                    folio_bench_fmt_ns((double)folio_bench_pct_of(h, mx, 0.99),
                                       p[2], sizeof(p[2])),
                    folio_bench_fmt_ns((double)folio_bench_pct_of(h, mx, 0.999),
                                       p[3], sizeof(p[3])),
                    folio_bench_fmt_ns((double)mx, p[4], sizeof(p[4])),
                    folio_bench_fmt_ns((double)t->kind_sum_ns[k] / (double)n,
                                       p[5], sizeof(p[5])));
            fprintf(f, "\n");
        }
    }
    fprintf(f, "  throughput %.0f req/s",
            res->secs > 0 ? (double)answered / res->secs : 0);
    if (o->mode == BENCH_OPEN && t->behind > 0)
        fprintf(f,
                "; %llu requests due were never sent: the server did not "
                "keep up",
                (unsigned long long)t->behind);
    fprintf(f, "\n");
    {
        double out = (double)(t->bytes_out - res->bytes_out0),
               in = (double)(t->bytes_in - res->bytes_in0);
        char b0[32], b1[32], b2[32], b3[32];

        fprintf(f, "  traffic %s sent, %s received (%s/s, %s/s)\n",
                fmt_bytes(out, b0, sizeof(b0)), fmt_bytes(in, b1, sizeof(b1)),
                fmt_bytes(res->secs > 0 ? out / res->secs : 0, b2, sizeof(b2)),
                fmt_bytes(res->secs > 0 ? in / res->secs : 0, b3, sizeof(b3)));
    }
    if (answered == 0)
        fprintf(f, "  latency: no replies\n");
    else
        fprintf(f,
                "  latency p50 %s, p90 %s, p99 %s, p99.9 %s, max %s, mean "
                "%s%s\n",
                folio_bench_fmt_ns(pct(t, 0.5), p[0], sizeof(p[0])),
                folio_bench_fmt_ns(pct(t, 0.9), p[1], sizeof(p[1])),
                folio_bench_fmt_ns(pct(t, 0.99), p[2], sizeof(p[2])),
                folio_bench_fmt_ns(pct(t, 0.999), p[3], sizeof(p[3])),
                folio_bench_fmt_ns(max_ns(t), p[4], sizeof(p[4])),
                folio_bench_fmt_ns((double)t->sum_ns / (double)answered, p[5],
                                   sizeof(p[5])),
                o->mode == BENCH_OPEN ? " (from the intended send times)" : "");
    if (server_spend(res, &sp)) {
        fprintf(f, "  server (%s%s): %.0f requests",
                b->from_stats ? "server.stats" : "/proc",
                b->from_stats && b->cpu_from_proc ? ", CPU from /proc" : "",
                sp.reqs);
        if (sp.cpu >= 0)
            fprintf(f, ", %.3f CPU s, %.2f us CPU/request", sp.cpu,
                    per_req(&sp, sp.cpu * 1e6));
        if (sp.allocs >= 0)
            fprintf(f, ", %.0f allocations, %.3f/request", sp.allocs,
                    per_req(&sp, sp.allocs));
        fprintf(f, "\n");
        if (sp.client_cpu >= 0)
            fprintf(f, "  client (folio-bench): %.3f CPU s, %.2f us CPU/request\n",
                    sp.client_cpu,
                    per_req(&sp, sp.client_cpu * 1e6));
    }
    if ((o->admin != NULL || o->server_pid > 0) && b->why[0] != '\0')
        fprintf(f, "  server: %s\n", b->why);
    for (k = 0; k < res->nchecks; k++) {
        const struct bench_check *c = &res->checks[k];

        fprintf(f, "  threshold --%s %s: %s, %s%s%s%s\n", c->name,
                c->limit_text, c->failed ? "FAILED" : "passed",
                c->measured_text, c->detail[0] != '\0' ? " (" : "", c->detail,
                c->detail[0] != '\0' ? ")" : "");
    }
}

/* A JSON string ('<' escaped too, so that HTML can hold it). */
void
folio_bench_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20 || ch == '<')
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* ,"name":{"CODE":N,...} of the codes with a count. */
static void
json_codes(FILE *f, const char *name, const uint64_t counts[BENCH_CODES])
{
    int k, first;

    fprintf(f, ",\"%s\":{", name);
    for (k = 0, first = 1; k < BENCH_CODES; k++) {
        if (counts[k] == 0)
            continue;
        if (k == FOLIO_ST_MAX)
            fprintf(f, "%s\"other\":%llu", first ? "" : ",",
                    (unsigned long long)counts[k]);
        else
            fprintf(f, "%s\"%d\":%llu", first ? "" : ",", k,
                    (unsigned long long)counts[k]);
        first = 0;
    }
    fprintf(f, "}");
}

/*
 * A number, or null for NaN: nothing measured.  Latencies with one
 * decimal (of microseconds); `exact`: as many digits as it takes.
 */
static void
json_num(FILE *f, const char *name, int exact, double v)
{
    fprintf(f, ",\"%s\":", name);
    if (isnan(v))
        fputs("null", f);
    else if (exact)
        fprintf(f, "%.15g", v);
    else
        fprintf(f, "%.1f", v);
}

void
folio_bench_json(FILE *f, const struct bench_run *r,
                 const struct bench_result *res)
{
    const struct bench_opts *o = r->o;
    const struct bench_totals *t = &res->t;
    const struct bench_server_snap *b = &res->after;
    uint64_t answered = folio_bench_answered(t), unexpected[BENCH_CODES];
    double none = answered > 0 ? 0 : NAN; /* no replies: no latencies */
    struct spend sp;
    int k, first;

    fprintf(f,
            "{\"mode\":\"%s\",\"proto\":\"%s\",\"workload\":",
            folio_bench_mode_name(o->mode), folio_bench_proto_name(o->proto));
    folio_bench_json_str(f, o->workload);
    fprintf(f, ",\"description\":");
    folio_bench_json_str(f, r->pool->desc);
    fprintf(f,
            ",\"connections\":%d,\"threads\":%d,\"pipeline\":%d,"
            "\"seconds\":%.3f,\"sent\":%llu,\"ok\":%llu,\"errors\":%llu,"
            "\"error_replies\":%llu,\"lost\":%llu,\"expected_errors\":%llu,"
            "\"unexpected_errors\":%llu,\"wrong\":%llu,\"requests\":%llu,"
            "\"rps\":%.1f",
            o->conns, r->nthreads, o->pipeline, res->secs,
            (unsigned long long)t->sent, (unsigned long long)t->ok,
            (unsigned long long)(t->err_replies + t->lost),
            (unsigned long long)t->err_replies, (unsigned long long)t->lost,
            (unsigned long long)t->expected,
            (unsigned long long)folio_bench_unexpected(t),
            (unsigned long long)t->wrong, (unsigned long long)answered,
            res->secs > 0 ? (double)answered / res->secs : 0);
    fprintf(f, ",\"bytes_sent\":%llu,\"bytes_received\":%llu",
            (unsigned long long)(t->bytes_out - res->bytes_out0),
            (unsigned long long)(t->bytes_in - res->bytes_in0));
    json_num(f, "p50_us", 0, none + pct(t, 0.5) / 1e3);
    json_num(f, "p90_us", 0, none + pct(t, 0.9) / 1e3);
    json_num(f, "p99_us", 0, none + pct(t, 0.99) / 1e3);
    json_num(f, "p999_us", 0, none + pct(t, 0.999) / 1e3);
    json_num(f, "max_us", 0, none + max_ns(t) / 1e3);
    json_num(f, "mean_us", 0,
             answered > 0 ? (double)t->sum_ns / (double)answered / 1e3 : NAN);
    json_codes(f, "errors_by_code", t->codes);
    json_codes(f, "expected_by_code", t->codes_expected);
    for (k = 0; k < BENCH_CODES; k++)
        unexpected[k] = t->codes[k] - t->codes_expected[k];
    json_codes(f, "unexpected_by_code", unexpected);
    fprintf(f, ",\"expected_codes\":[");
    for (k = 0, first = 1; k < BENCH_CODES; k++) {
        if (!(r->pool->ok_codes & BENCH_CODE(k)))
            continue;
        fprintf(f, "%s%d", first ? "" : ",", k);
        first = 0;
    }
    fprintf(f, "],\"methods\":{");
    for (k = 0, first = 1; k < BENCH_NKINDS; k++) {
        uint64_t n = folio_bench_kind_answered(t, k);
        const uint64_t *h = t->kind_hist[k], mx = t->kind_max_ns[k];
        double no = n > 0 ? 0 : NAN;

        if (t->kind_sent[k] == 0)
            continue;
        fprintf(f, "%s\"%s\":{\"sent\":%llu,\"errors\":%llu,\"requests\":%llu",
                first ? "" : ",", folio_bench_kind_method[k],
                (unsigned long long)t->kind_sent[k],
                (unsigned long long)t->kind_err[k], (unsigned long long)n);
        json_num(f, "p50_us", 0,
                 no + (double)folio_bench_pct_of(h, mx, 0.5) / 1e3);
        json_num(f, "p90_us", 0,
                 no + (double)folio_bench_pct_of(h, mx, 0.9) / 1e3);
        json_num(f, "p99_us", 0,
                 no + (double)folio_bench_pct_of(h, mx, 0.99) / 1e3);
        json_num(f, "p999_us", 0,
                 no + (double)folio_bench_pct_of(h, mx, 0.999) / 1e3);
        json_num(f, "max_us", 0, no + (double)mx / 1e3);
        json_num(f, "mean_us", 0,
                 n > 0 ? (double)t->kind_sum_ns[k] / (double)n / 1e3 : NAN);
        fprintf(f, "}");
        first = 0;
    }
    fprintf(f, "}");
    if (o->mode == BENCH_OPEN)
        fprintf(f, ",\"rate\":%.1f,\"behind\":%llu", o->rate,
                (unsigned long long)t->behind);
    if (o->mode == BENCH_ROUNDS)
        fprintf(f, ",\"rounds\":%llu", (unsigned long long)res->rounds_done);
    if (server_spend(res, &sp)) {
        fprintf(f,
                ",\"server\":{\"source\":\"%s\",\"cpu_source\":\"%s\","
                "\"requests\":%.0f",
                b->from_stats ? "server.stats" : "proc",
                b->cpu_from_proc ? "proc" : "server.stats", sp.reqs);
        if (sp.cpu >= 0)
            fprintf(f, ",\"cpu_s\":%.6f,\"cpu_us_per_req\":%.3f", sp.cpu,
                    per_req(&sp, sp.cpu * 1e6));
        if (sp.allocs >= 0)
            fprintf(f, ",\"allocs\":%.0f,\"allocs_per_req\":%.4f", sp.allocs,
                    per_req(&sp, sp.allocs));
        fprintf(f, "}");
        if (sp.client_cpu >= 0)
            fprintf(f, ",\"client\":{\"cpu_s\":%.6f,\"cpu_us_per_req\":%.3f}",
                    sp.client_cpu,
                    per_req(&sp, sp.client_cpu * 1e6));
    }
    fprintf(f, ",\"thresholds\":[");
    for (k = 0; k < res->nchecks; k++) {
        const struct bench_check *c = &res->checks[k];

        fprintf(f, "%s{\"threshold\":\"%s\",\"unit\":\"%s\"", k > 0 ? "," : "",
                c->name, c->unit);
        json_num(f, "limit", 1, c->limit);
        json_num(f, "measured", 1, c->measured);
        fprintf(f, ",\"passed\":%s,\"text\":", c->failed ? "false" : "true");
        folio_bench_json_str(f, c->measured_text);
        if (c->detail[0] != '\0') {
            fprintf(f, ",\"detail\":");
            folio_bench_json_str(f, c->detail);
        }
        fprintf(f, "}");
    }
    fprintf(f, "],\"status\":%d", res->status);
    if (res->why[0] != '\0') {
        fprintf(f, ",\"why\":");
        folio_bench_json_str(f, res->why);
    }
    fprintf(f, "}\n");
}

int
folio_bench_hgrm(FILE *f, const struct bench_totals *t)
{
    const double scale = 1e6; /* ns -> ms */
    uint64_t total = 0, cum = 0;
    double level = 0, cur, mean = 0, var = 0, mid, lo, half;
    unsigned b, last = 0;
    int ticks = 5, e;

    if (ftruncate(fileno(f), 0) != 0) { /* opened to append, before the run */
        fclose(f);
        return -1;
    }
    for (b = 0; b < FOLIO_LAT_BUCKETS; b++) {
        total += t->hist[b];
        if (t->hist[b] > 0)
            last = b;
    }
    fprintf(f, "%12s %12s %12s %12s\n\n", "Value", "Percentile", "TotalCount",
            "1/(1-Percentile)");
    /*
     * HdrHistogram's percentile iterator: report levels 0%, 10%, ... 50%,
     * then `ticks` levels in each halving of the distance to 100%.  Each
     * line gives the highest value of the bucket where the level is
     * reached.
     */
    for (b = 0; b < FOLIO_LAT_BUCKETS && total > 0; b++) {
        if (t->hist[b] == 0)
            continue;
        cum += t->hist[b];
        cur = 100.0 * (double)cum / (double)total;
        while (level <= cur) {
            fprintf(f, "%12.3f %12f %12llu %12.2f\n",
                    (double)folio_lat_bucket_upper(b) / scale, level / 100.0,
                    (unsigned long long)cum, 1.0 / (1.0 - level / 100.0));
            half = pow(2, floor(log(100.0 / (100.0 - level)) / log(2)) + 1);
            level += 100.0 / (ticks * half);
            if (b == last)
                break;
        }
        if (b == last) {
            fprintf(f, "%12.3f %12f %12llu %12.2f\n",
                    (double)folio_lat_bucket_upper(b) / scale, 1.0,
                    (unsigned long long)cum, INFINITY);
            break;
        }
    }
    if (total > 0) {
        mean = (double)t->sum_ns / (double)total;
        for (b = 0; b < FOLIO_LAT_BUCKETS; b++) {
            if (t->hist[b] == 0)
                continue;
            lo = b == 0 ? 0 : (double)folio_lat_bucket_upper(b - 1) + 1;
            mid = (lo + (double)folio_lat_bucket_upper(b)) / 2;
            var += (double)t->hist[b] * (mid - mean) * (mid - mean);
        }
        var /= (double)total;
    }
    fprintf(f,
            "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n"
            "#[Max     = %12.3f, Total count    = %12llu]\n"
            "#[Buckets = %12d, SubBuckets     = %12d]\n",
            mean / scale, sqrt(var) / scale, (double)t->max_ns / scale,
            (unsigned long long)total, FOLIO_LAT_BUCKETS >> FOLIO_LAT_SUB_BITS,
            1 << FOLIO_LAT_SUB_BITS);
    e = ferror(f);
    if (fclose(f) != 0 || e) {
        errno = errno ? errno : EIO;
        return -1;
    }
    return 0;
}
