/*
 * hist.h - log-linear latency histograms: buckets of 64 ns units, 16 per
 * octave (about 6% resolution), from 64 ns to about 17 s; the last bucket
 * takes anything longer.  Used by the server's stats slots and by
 * folio-bench, so both report the same percentiles.
 */
#ifndef FOLIO_HIST_H
#define FOLIO_HIST_H

#include <stdint.h>

#define FOLIO_LAT_UNIT_SHIFT 6
#define FOLIO_LAT_SUB_BITS 4
#define FOLIO_LAT_BUCKETS 400

/* folio_lat_bucket - the bucket of a duration in ns. */
static inline unsigned
folio_lat_bucket(uint64_t ns)
{
    uint64_t x = ns >> FOLIO_LAT_UNIT_SHIFT;
    unsigned msb, b;

    if (x < (1u << FOLIO_LAT_SUB_BITS))
        return (unsigned)x;
    msb = 63u - (unsigned)__builtin_clzll(x);
    b = (msb - FOLIO_LAT_SUB_BITS + 1) << FOLIO_LAT_SUB_BITS |
        (unsigned)((x >> (msb - FOLIO_LAT_SUB_BITS)) &
                   ((1u << FOLIO_LAT_SUB_BITS) - 1));
    return b < FOLIO_LAT_BUCKETS ? b : FOLIO_LAT_BUCKETS - 1;
}

/* folio_lat_bucket_upper - the largest ns value that falls in bucket b. */
uint64_t folio_lat_bucket_upper(unsigned b);

/*
 * folio_lat_percentile - the upper bound (ns) of the bucket holding the
 * q-quantile (0 < q <= 1) of histogram h; 0 if it is empty.
 */
uint64_t folio_lat_percentile(const uint64_t *h, double q);

#endif
