/*
 * series.c - the run second by second: each point is what the answers of
 * one interval (a second; a round in the rounds mode) came to, from two
 * samples of the counters, and what the server spent meanwhile when its
 * counters can be read.  The --html report draws it, --csv writes it.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"

/* The quantile q of the answers between two samples (ns), 0 for none. */
static uint64_t
interval_pct(const uint64_t *h, uint64_t total, uint64_t max_bucket, double q)
{
    uint64_t want = (uint64_t)(q * (double)total + 0.999999), seen = 0;
    unsigned b;

    if (want == 0)
        want = 1;
    for (b = 0; b <= max_bucket; b++) {
        seen += h[b];
        if (seen >= want)
            return folio_lat_bucket_upper(b);
    }
    return folio_lat_bucket_upper(max_bucket);
}

int
folio_bench_series_add(struct bench_series *s, const struct bench_totals *now,
                       const struct bench_totals *prev, double t, double secs,
                       const struct bench_server_snap *srv_now,
                       const struct bench_server_snap *srv_prev)
{
    uint64_t h[FOLIO_LAT_BUCKETS], n = 0, top = 0, kn, ktop;
    struct bench_point *p;
    unsigned b;
    int k;

    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct bench_point *np = realloc(s->p, cap * sizeof(*np));

        if (np == NULL)
            return -1;
        s->p = np;
        s->cap = cap;
    }
    p = &s->p[s->n++];
    memset(p, 0, sizeof(*p));
    p->t = t;
    p->secs = secs;
    p->answered = folio_bench_answered(now) - folio_bench_answered(prev);
    p->errors = now->err_replies + now->lost - prev->err_replies - prev->lost;
    for (k = 0; k < BENCH_CODES; k++)
        p->codes[k] = now->codes[k] - prev->codes[k];
    p->lost = now->lost - prev->lost;
    for (b = 0; b < FOLIO_LAT_BUCKETS; b++) {
        h[b] = now->hist[b] - prev->hist[b];
        n += h[b];
        if (h[b] > 0)
            top = b;
    }
    p->lat_n = n;
    if (n > 0) {
        p->p50 = interval_pct(h, n, top, 0.5);
        p->p90 = interval_pct(h, n, top, 0.9);
        p->p99 = interval_pct(h, n, top, 0.99);
        p->p999 = interval_pct(h, n, top, 0.999);
        /* The interval's largest: its top bucket, within the run's max. */
        p->max = folio_lat_bucket_upper(top);
        if (p->max > now->max_ns)
            p->max = now->max_ns;
        if (p->p999 > p->max)
            p->p999 = p->max;
        if (p->p99 > p->max)
            p->p99 = p->max;
        p->mean = (now->sum_ns - prev->sum_ns) / n;
    }
    for (k = 0; k < BENCH_NKINDS; k++) {
        for (b = 0, kn = ktop = 0; b < FOLIO_LAT_BUCKETS; b++) {
            h[b] = now->kind_hist[k][b] - prev->kind_hist[k][b];
            kn += h[b];
            if (h[b] > 0)
                ktop = b;
        }
        if (kn == 0)
            continue;
        p->kind_p50[k] = interval_pct(h, kn, ktop, 0.5);
        p->kind_p99[k] = interval_pct(h, kn, ktop, 0.99);
        if (p->kind_p99[k] > now->kind_max_ns[k])
            p->kind_p99[k] = now->kind_max_ns[k];
        if (p->kind_p50[k] > p->kind_p99[k])
            p->kind_p50[k] = p->kind_p99[k];
    }
    p->bytes_out = now->bytes_out - prev->bytes_out;
    p->bytes_in = now->bytes_in - prev->bytes_in;
    p->users = now->vus;
    p->srv_cpu_s = p->srv_allocs = p->srv_requests = -1;
    if (srv_now != NULL && srv_prev != NULL && srv_now->ok && srv_prev->ok) {
        if (srv_now->cpu_s >= 0 && srv_prev->cpu_s >= 0 &&
            srv_now->cpu_from_proc == srv_prev->cpu_from_proc)
            p->srv_cpu_s = srv_now->cpu_s - srv_prev->cpu_s;
        if (srv_now->alloc_calls >= 0 && srv_prev->alloc_calls >= 0)
            p->srv_allocs = srv_now->alloc_calls - srv_prev->alloc_calls;
        if (srv_now->requests >= 0 && srv_prev->requests >= 0)
            p->srv_requests = srv_now->requests - srv_prev->requests;
    }
    return 0;
}

void
folio_bench_series_free(struct bench_series *s)
{
    free(s->p);
    memset(s, 0, sizeof(*s));
}

/* The codes that occur in the series, as a set (BENCH_CODE bits). */
unsigned
folio_bench_series_codes(const struct bench_series *s)
{
    unsigned set = 0;
    size_t i;
    int k;

    for (i = 0; i < s->n; i++)
        for (k = 0; k < BENCH_CODES; k++)
            if (s->p[i].codes[k] > 0)
                set |= BENCH_CODE(k);
    return set;
}

/* The per-request figure of a server's spend, or -1 when unknown. */
double
folio_bench_point_per_req(double spend, const struct bench_point *p)
{
    double reqs = p->srv_requests >= 0 ? p->srv_requests : (double)p->answered;

    return spend >= 0 && reqs > 0 ? spend / reqs : -1;
}

int
folio_bench_csv(FILE *f, const struct bench_series *s)
{
    unsigned codes = folio_bench_series_codes(s);
    size_t i;
    int k, e;

    if (ftruncate(fileno(f), 0) != 0) { /* opened to append, before the run */
        fclose(f);
        return -1;
    }
    fprintf(f, "t_s,interval_s,requests,rps,errors,lost,p50_us,p90_us,p99_us,"
               "p999_us,max_us,mean_us,users,server_cpu_s,"
               "server_cpu_us_per_req,server_allocs_per_req,bytes_sent,"
               "bytes_received");
    for (k = 0; k < BENCH_CODES; k++)
        if (codes & BENCH_CODE(k))
            fprintf(f, ",code_%s",
                    k == FOLIO_ST_MAX ? "OTHER" : folio_status_name(k));
    fprintf(f, "\n");
    for (i = 0; i < s->n; i++) {
        const struct bench_point *p = &s->p[i];
        double cpu = folio_bench_point_per_req(p->srv_cpu_s, p),
               allocs = folio_bench_point_per_req(p->srv_allocs, p);

        fprintf(f,
                "%.3f,%.3f,%llu,%.1f,%llu,%llu,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,"
                "%llu,",
                p->t, p->secs, (unsigned long long)p->answered,
                p->secs > 0 ? (double)p->answered / p->secs : 0,
                (unsigned long long)p->errors, (unsigned long long)p->lost,
                (double)p->p50 / 1e3, (double)p->p90 / 1e3,
                (double)p->p99 / 1e3, (double)p->p999 / 1e3,
                (double)p->max / 1e3, (double)p->mean / 1e3,
                (unsigned long long)p->users);
        /* Unknown figures are left empty. */
        if (p->srv_cpu_s >= 0)
            fprintf(f, "%.6f", p->srv_cpu_s);
        fputc(',', f);
        if (cpu >= 0)
            fprintf(f, "%.3f", cpu * 1e6);
        fputc(',', f);
        if (allocs >= 0)
            fprintf(f, "%.4f", allocs);
        fprintf(f, ",%llu,%llu", (unsigned long long)p->bytes_out,
                (unsigned long long)p->bytes_in);
        for (k = 0; k < BENCH_CODES; k++)
            if (codes & BENCH_CODE(k))
                fprintf(f, ",%llu", (unsigned long long)p->codes[k]);
        fprintf(f, "\n");
    }
    e = ferror(f);
    if (fclose(f) != 0 || e) {
        errno = errno ? errno : EIO;
        return -1;
    }
    return 0;
}
