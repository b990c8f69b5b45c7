/*
 * corpus_probe.c - the server-side cost of corpus queries, without the
 * network: loads a corpus the way foliod does and times
 * folio_corpus_count and folio_corpus_search per call.  bench/corpus.sh
 * runs it, and runs it under callgrind for instruction counts.
 *
 * usage: corpus-probe [-c CACHEDIR] [-n REPEAT] [-p] [-r RANDOM] DIR
 *        corpus-probe [-c CACHEDIR] -q QUERY [-n REPEAT] [-s] DIR
 * The first form prints markdown tables; the second only runs QUERY's
 * count (or with -s its search, limit 10) REPEAT times (for callgrind).
 * -p prefaults the image first, as a worker does when it starts.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shm/corpus.h"
#include "src/clock.h"

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static uint64_t
pct(const uint64_t *v, size_t n, double p)
{
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);

    return v[i < n ? i : n - 1];
}

static uint64_t rng = 88172645463325252ull;

static uint32_t
rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static void
time_count(const struct folio_corpus *c, const char *label, const char *q,
           size_t len, int repeat, uint64_t *t)
{
    uint64_t n = 0, t0;
    int i;

    for (i = 0; i < 100; i++) /* warm the pages this query touches */
        folio_corpus_count(c, q, len, &n);
    for (i = 0; i < repeat; i++) {
        t0 = folio_mono_ns();
        folio_corpus_count(c, q, len, &n);
        t[i] = folio_mono_ns() - t0;
    }
    qsort(t, (size_t)repeat, sizeof(*t), cmp_u64);
    printf("| `%s` | %llu | %llu | %llu | %llu |\n", label,
           (unsigned long long)n, (unsigned long long)pct(t, repeat, 0.5),
           (unsigned long long)pct(t, repeat, 0.99),
           (unsigned long long)t[repeat - 1]);
}

static void
time_search(const struct folio_corpus *c, struct folio_corpus_scratch *s,
            const char *q, uint64_t offset, uint32_t limit, int strategy,
            int repeat, uint64_t *t)
{
    static uint32_t ids[FOLIO_CORPUS_MAX_LIMIT];
    static const char *names[] = {"auto", "sort", "scan"};
    uint64_t total = 0, t0;
    uint32_t n = 0;
    int i;

    folio_corpus_strategy(strategy);
    for (i = 0; i < repeat; i++) {
        t0 = folio_mono_ns();
        folio_corpus_search(c, s, q, strlen(q), offset, limit, &total, ids,
                            &n);
        t[i] = folio_mono_ns() - t0;
    }
    folio_corpus_strategy(0);
    qsort(t, (size_t)repeat, sizeof(*t), cmp_u64);
    printf("| `%s` | %llu | %u | %s | %u | %.1f | %.1f |\n",
           strcmp(q, " ") == 0 ? "\" \"" : q, (unsigned long long)offset,
           limit, names[strategy], n, (double)pct(t, repeat, 0.5) / 1000.0,
           (double)t[repeat - 1] / 1000.0);
}

int
main(int argc, char **argv)
{
    static const char *deep[] = {"e", " ", "th", " th", "the", ", ", "and"};
    static const char *queries[] = {"hello", "world", "to be, or not to be",
                                    "insolence", "e", "a", " ", "the",
                                    "zqxj"};
    struct folio_corpus_scratch *s;
    struct folio_corpus_info in;
    struct folio_corpus *c;
    const char *cache = NULL, *only = NULL;
    uint64_t *t, n;
    uint32_t ids[10], got;
    char err[512];
    int opt, repeat = 20000, nrand = 10000, do_search = 0, prefault = 0, i;
    size_t k;

    while ((opt = getopt(argc, argv, "c:n:pr:q:s")) != -1) {
        switch (opt) {
        case 'p':
            prefault = 1;
            break;
        case 'c':
            cache = optarg;
            break;
        case 'n':
            repeat = atoi(optarg);
            break;
        case 'r':
            nrand = atoi(optarg);
            break;
        case 'q':
            only = optarg;
            break;
        case 's':
            do_search = 1;
            break;
        default:
            fprintf(stderr, "usage: corpus-probe [-c CACHEDIR] [-n REPEAT] [-p] "
                            "[-r RANDOM] [-q QUERY [-s]] DIR\n");
            return 2;
        }
    }
    if (optind != argc - 1 || repeat < 1 || nrand < 1) {
        fprintf(stderr, "usage: corpus-probe [-c CACHEDIR] [-n REPEAT] "
                        "[-r RANDOM] [-q QUERY [-s]] DIR\n");
        return 2;
    }
    if (folio_corpus_open(argv[optind], cache, &c, err, sizeof(err)) != 0) {
        fprintf(stderr, "corpus-probe: %s\n", err);
        return 1;
    }
    if (folio_corpus_scratch_new(&s) != 0)
        return 1;
    if (prefault) {
        uint64_t t0 = folio_mono_ns();

        folio_corpus_prefault(c);
        fprintf(stderr, "prefault: %.1f ms\n",
                (double)(folio_mono_ns() - t0) / 1e6);
    }
    if (only != NULL) {
        for (i = 0; i < repeat; i++) {
            if (do_search)
                folio_corpus_search(c, s, only, strlen(only), 0, 10, &n, ids,
                                    &got);
            else
                folio_corpus_count(c, only, strlen(only), &n);
        }
        printf("%llu\n", (unsigned long long)n);
        folio_corpus_scratch_free(s);
        folio_corpus_free(c);
        return 0;
    }
    folio_corpus_info(c, &in);
    printf("corpus: %u files, %u lines, %llu bytes; image %llu bytes; "
           "index built in %llu ms%s; ready in %llu ms\n\n",
           in.files, in.lines, (unsigned long long)in.bytes,
           (unsigned long long)in.index_bytes,
           (unsigned long long)in.build_ms,
           in.from_cache ? " (mapped from the cache)" : "",
           (unsigned long long)in.load_ms);
    if ((t = malloc(sizeof(*t) * (size_t)(repeat > nrand ? repeat : nrand))) ==
        NULL)
        return 1;

    printf("corpus.match_count, time in folio_corpus_count (ns, %d calls "
           "each, warm)\n\n",
           repeat);
    printf("| query | count | p50 ns | p99 ns | max ns |\n|---|---:|---:|---:|---:|\n");
    for (k = 0; k < sizeof(queries) / sizeof(queries[0]); k++)
        time_count(c, strcmp(queries[k], " ") == 0 ? "\" \"" : queries[k],
                   queries[k], strlen(queries[k]), repeat, t);

    /* distinct random queries: substrings of random lines, 2..16 bytes */
    {
        uint64_t t0, total = 0;

        for (i = 0; i < nrand; i++) {
            struct folio_corpus_line ln;
            uint32_t len, st;

            folio_corpus_line(c, rnd(in.lines), &ln);
            if (ln.len < 2) {
                i--;
                continue;
            }
            len = 2 + rnd(ln.len - 1 < 15 ? ln.len - 1 : 15);
            st = rnd(ln.len - len + 1);
            t0 = folio_mono_ns();
            folio_corpus_count(c, ln.text + st, len, &n);
            t[i] = folio_mono_ns() - t0;
            total += t[i];
        }
        qsort(t, (size_t)nrand, sizeof(*t), cmp_u64);
        printf("\n%d distinct random queries (substrings of random lines, "
               "2..16 bytes, cold the first time)\n\n",
               nrand);
        printf("| mean ns | p50 ns | p99 ns | p99.9 ns | max ns |\n"
               "|---:|---:|---:|---:|---:|\n");
        printf("| %llu | %llu | %llu | %llu | %llu |\n",
               (unsigned long long)(total / (uint64_t)nrand),
               (unsigned long long)pct(t, nrand, 0.5),
               (unsigned long long)pct(t, nrand, 0.99),
               (unsigned long long)pct(t, nrand, 0.999),
               (unsigned long long)t[nrand - 1]);
    }

    printf("\ncorpus.search, time in folio_corpus_search (us, %d calls "
           "each)\n\n",
           repeat / 100 > 10 ? repeat / 100 : 10);
    printf("| query | offset | limit | strategy | lines | p50 us | max us |\n"
           "|---|---:|---:|---|---:|---:|---:|\n");
    {
        int r = repeat / 100 > 10 ? repeat / 100 : 10, st;

        for (k = 0; k < sizeof(queries) / sizeof(queries[0]); k++) {
            time_search(c, s, queries[k], 0, 10, 0, r, t);
            time_search(c, s, queries[k], 0, 1000, 0, r, t);
        }
        for (st = 0; st <= 2; st++) {
            time_search(c, s, "e", 100000, 1000, st, r, t);
            time_search(c, s, "world", 700, 10, st, r, t);
            time_search(c, s, "the", 40000, 10, st, r, t);
        }
        /* the last page of broad queries: the deepest offsets there are */
        for (k = 0; k < sizeof(deep) / sizeof(deep[0]); k++) {
            uint64_t cnt = 0;

            folio_corpus_count(c, deep[k], strlen(deep[k]), &cnt);
            time_search(c, s, deep[k], cnt > 1000 ? cnt - 1000 : 0, 1000, 0,
                        r, t);
        }
    }
    free(t);
    folio_corpus_scratch_free(s);
    folio_corpus_free(c);
    return 0;
}
