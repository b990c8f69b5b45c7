/*
 * latency.c - the figures of `folio --latency` (continuous
 * server.ping, as redis-cli --latency): minimum, average and maximum
 * round trip, and a histogram of the samples in powers of two of a
 * microsecond, printed for people or as JSON.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "src/cli/cli_int.h"

#define BAR 40 /* the widest bar of the histogram, in characters */

void
folio_cli_lat_add(struct folio_cli_lat *l, uint64_t ns)
{
    unsigned b = 0;
    uint64_t us = (ns + 999) / 1000;

    /*
     * Bucket b holds (2^(b-1), 2^b] microseconds, bucket 0 up to 1 us;
     * the last one all that is longer (over half an hour: never, with
     * --timeout).
     */
    while (b < FOLIO_CLI_LAT_BUCKETS - 1 && (1ull << b) < us)
        b++;
    l->bucket[b]++;
    if (l->n == 0 || ns < l->min_ns)
        l->min_ns = ns;
    if (ns > l->max_ns)
        l->max_ns = ns;
    l->sum_ns += (double)ns;
    l->n++;
}

/* A bucket's upper bound in milliseconds. */
static double
upper_ms(unsigned b)
{
    return (double)(1ull << b) / 1000.0;
}

void
folio_cli_lat_line(FILE *f, const struct folio_cli_lat *l)
{
    if (l->n == 0) {
        fputs("no samples", f);
        return;
    }
    fprintf(f, "min %.3f ms, avg %.3f ms, max %.3f ms, %llu sample%s",
            (double)l->min_ns / 1e6, l->sum_ns / (double)l->n / 1e6,
            (double)l->max_ns / 1e6, (unsigned long long)l->n,
            l->n == 1 ? "" : "s");
}

/* The first and last buckets with samples: 0, or -1 if none. */
static int
span(const struct folio_cli_lat *l, unsigned *lo, unsigned *hi)
{
    unsigned b;
    int any = 0;

    for (b = 0; b < FOLIO_CLI_LAT_BUCKETS; b++) {
        if (l->bucket[b] == 0)
            continue;
        if (!any)
            *lo = b;
        *hi = b;
        any = 1;
    }
    return any ? 0 : -1;
}

void
folio_cli_lat_histogram(FILE *f, const struct folio_cli_lat *l)
{
    uint64_t most = 0;
    unsigned lo = 0, hi = 0, b;
    char bar[BAR + 1];
    int w;

    if (span(l, &lo, &hi) != 0)
        return;
    for (b = lo; b <= hi; b++)
        if (l->bucket[b] > most)
            most = l->bucket[b];
    fprintf(f, "%14s %10s %6s\n", "latency (ms)", "samples", "%");
    for (b = lo; b <= hi; b++) {
        w = (int)((l->bucket[b] * BAR + most - 1) / most);
        memset(bar, '#', (size_t)w);
        bar[w] = '\0';
        fprintf(f, "  <=%11.3f %10llu %6.2f %s\n", upper_ms(b),
                (unsigned long long)l->bucket[b],
                100.0 * (double)l->bucket[b] / (double)l->n, bar);
    }
}

void
folio_cli_lat_json(FILE *f, const struct folio_cli_lat *l)
{
    unsigned lo = 0, hi = 0, b;

    fprintf(f, "{\"samples\": %llu", (unsigned long long)l->n);
    if (l->n > 0)
        fprintf(f, ", \"min_ms\": %.6f, \"avg_ms\": %.6f, \"max_ms\": %.6f",
                (double)l->min_ns / 1e6, l->sum_ns / (double)l->n / 1e6,
                (double)l->max_ns / 1e6);
    fputs(", \"histogram\": [", f);
    if (span(l, &lo, &hi) == 0)
        for (b = lo; b <= hi; b++)
            fprintf(f, "%s{\"le_ms\": %.3f, \"samples\": %llu}",
                    b > lo ? ", " : "", upper_ms(b),
                    (unsigned long long)l->bucket[b]);
    fputs("]}\n", f);
}
