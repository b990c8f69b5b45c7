/*
 * hist.c - log-linear latency histograms (see hist.h).
 */
#include "config.h"

#include "src/hist.h"

uint64_t
folio_lat_bucket_upper(unsigned b)
{
    unsigned sub = 1u << FOLIO_LAT_SUB_BITS, octave, msb;
    uint64_t lo;

    if (b < sub)
        return ((uint64_t)(b + 1) << FOLIO_LAT_UNIT_SHIFT) - 1;
    octave = b >> FOLIO_LAT_SUB_BITS;
    msb = octave + FOLIO_LAT_SUB_BITS - 1;
    lo = ((uint64_t)1 << msb) |
         ((uint64_t)(b & (sub - 1)) << (msb - FOLIO_LAT_SUB_BITS));
    return ((lo + ((uint64_t)1 << (msb - FOLIO_LAT_SUB_BITS)))
            << FOLIO_LAT_UNIT_SHIFT) -
           1;
}

uint64_t
folio_lat_percentile(const uint64_t *h, double q)
{
    uint64_t total = 0, want, seen = 0;
    unsigned b;

    for (b = 0; b < FOLIO_LAT_BUCKETS; b++)
        total += h[b];
    if (total == 0)
        return 0;
    want = (uint64_t)(q * (double)total + 0.999999);
    if (want == 0)
        want = 1;
    for (b = 0; b < FOLIO_LAT_BUCKETS; b++) {
        seen += h[b];
        if (seen >= want)
            return folio_lat_bucket_upper(b);
    }
    return folio_lat_bucket_upper(FOLIO_LAT_BUCKETS - 1);
}
