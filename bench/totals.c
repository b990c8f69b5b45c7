/*
 * totals.c - folio-bench's arithmetic of the counters (bench.h): the
 * threads' blocks summed into totals, and what the summary, the
 * verdict, the series and the reports read from them (answers,
 * unexpected errors, percentiles).
 */
#include "config.h"

#include "bench/bench.h"

void
folio_bench_counts_sum(struct bench_totals *t, const struct bench_counts *c)
{
    uint64_t v;
    int i, b;

    t->sent += folio_stat_get(&c->sent);
    t->ok += folio_stat_get(&c->ok);
    t->err_replies += folio_stat_get(&c->err_replies);
    t->expected += folio_stat_get(&c->expected);
    t->lost += folio_stat_get(&c->lost);
    t->wrong += folio_stat_get(&c->wrong);
    t->behind += folio_stat_get(&c->behind);
    for (i = 0; i < BENCH_CODES; i++) {
        t->codes[i] += folio_stat_get(&c->codes[i]);
        t->codes_expected[i] += folio_stat_get(&c->codes_expected[i]);
    }
    for (i = 0; i < BENCH_NKINDS; i++) {
        t->kind_sent[i] += folio_stat_get(&c->kind_sent[i]);
        t->kind_err[i] += folio_stat_get(&c->kind_err[i]);
        if ((v = folio_stat_get(&c->kind_max_ns[i])) == 0 &&
            folio_stat_get(&c->kind_sum_ns[i]) == 0)
            continue; /* no answer of this kind: nothing to add */
        for (b = 0; b < FOLIO_LAT_BUCKETS; b++) {
            uint64_t n = folio_stat_get(&c->kind_hist[i][b]);

            t->kind_hist[i][b] += n;
            t->hist[b] += n;
        }
        if (v > t->kind_max_ns[i])
            t->kind_max_ns[i] = v;
        if (v > t->max_ns)
            t->max_ns = v;
        t->kind_sum_ns[i] += folio_stat_get(&c->kind_sum_ns[i]);
        t->sum_ns += folio_stat_get(&c->kind_sum_ns[i]);
    }
    if ((v = folio_stat_get(&c->last_ns)) > t->last_ns)
        t->last_ns = v;
    t->conn_failures += folio_stat_get(&c->conn_failures);
    t->vus += folio_stat_get(&c->vus);
    t->paced += folio_stat_get(&c->paced);
    t->bytes_out += folio_stat_get(&c->bytes_out);
    t->bytes_in += folio_stat_get(&c->bytes_in);
}

uint64_t
folio_bench_answered(const struct bench_totals *t)
{
    return t->ok + t->wrong + t->err_replies;
}

uint64_t
folio_bench_unexpected(const struct bench_totals *t)
{
    return t->err_replies - t->expected + t->lost;
}

uint64_t
folio_bench_pct_of(const uint64_t *hist, uint64_t max_ns, double q)
{
    uint64_t v = folio_lat_percentile(hist, q);

    /* A bucket's bound may pass the largest latency seen: clamp it. */
    return v < max_ns ? v : max_ns;
}

uint64_t
folio_bench_pct(const struct bench_totals *t, double q)
{
    return folio_bench_pct_of(t->hist, t->max_ns, q);
}

uint64_t
folio_bench_kind_answered(const struct bench_totals *t, int k)
{
    uint64_t n = 0;
    unsigned b;

    for (b = 0; b < FOLIO_LAT_BUCKETS; b++)
        n += t->kind_hist[k][b];
    return n;
}
