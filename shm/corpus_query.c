/*
 * corpus_query.c - counting and listing the lines that contain a query.
 * Runs in the workers on the shared read-only image; allocates nothing
 * (a search uses the caller's per-process scratch area).
 *
 * A count is two binary searches in the query's two-byte bucket of the
 * suffix array (O(|q| log n)) and four reads of D (corpus_build.c).  A
 * search lists the lines in corpus order: for a small suffix-array range
 * it sorts the range's line numbers; for a large one it scans the
 * lowercased text from the start until it has offset+limit lines, which
 * costs about n * (offset+limit) / count bytes.  It takes the cheaper;
 * the ranges too large to sort have line bitmaps, when the index's budget
 * allowed (corpus_build.c): any page of them is a count of set bits.
 */
#include "config.h"

#include <string.h>

#include "shm/corpus.h"
#include "shm/corpus_int.h"
#include "src/alloc.h"
#include "src/err.h"

#define SORT_MAX CORPUS_QMIN /* largest range sorted: the scratch's size */
#define RADIX_BITS 11
#define RADIX (1u << RADIX_BITS)

/* Estimated costs: a range entry gathered and sorted vs a byte scanned. */
#define COST_GATHER 64      /* in units of COST_SCAN */
#define COST_SCAN 1

struct folio_corpus_scratch {
    uint32_t ids[SORT_MAX];
    uint32_t tmp[SORT_MAX];
    uint32_t hist[RADIX];
};

static int strategy; /* test hook: 0 auto, 1 gather, 2 scan */

int
folio_corpus_strategy(int s)
{
    int old = strategy;

    strategy = s;
    return old;
}

/* Compare the suffix at p with q from byte `from` on: <0, 0 (q is a
 * prefix of the suffix), >0. */
static inline int
cmp_suffix(const struct folio_corpus *c, uint32_t p, const uint8_t *q,
           uint32_t len, uint32_t from)
{
    uint32_t rest = c->n - p, m;
    int r;

    if (rest < from)
        return -1;
    rest -= from;
    m = len - from;
    r = memcmp(c->lower + p + from, q + from, rest < m ? rest : m);
    if (r != 0)
        return r;
    return rest < m ? -1 : 0;
}

/* The sa range [*l, *r) of the suffixes that start with q (lowercased,
 * 1..1024 bytes, no "\n"). */
static void
find_range(const struct folio_corpus *c, const uint8_t *q, uint32_t len,
           uint32_t *l, uint32_t *r)
{
    uint32_t lo, hi, mid, a, b;

    if (len == 1) {
        *l = c->bucket[(uint32_t)q[0] << 8];
        *r = c->bucket[((uint32_t)q[0] + 1) << 8];
        return;
    }
    a = (uint32_t)q[0] << 8 | q[1];
    lo = c->bucket[a];
    hi = c->bucket[a + 1];
    if (len == 2 || lo == hi) {
        *l = lo;
        *r = hi;
        return;
    }
    /* lower bound: first suffix >= q */
    a = lo;
    b = hi;
    while (a < b) {
        mid = a + (b - a) / 2;
        if (cmp_suffix(c, c->sa[mid], q, len, 2) < 0)
            a = mid + 1;
        else
            b = mid;
    }
    *l = a;
    /* upper bound: first suffix > q that q is not a prefix of */
    b = hi;
    while (a < b) {
        mid = a + (b - a) / 2;
        if (cmp_suffix(c, c->sa[mid], q, len, 2) <= 0)
            a = mid + 1;
        else
            b = mid;
    }
    *r = a;
}

/* Lowercase q into buf; 0, or 1 if it holds "\n" (matches nothing). */
static int
lower_query(const char *q, size_t len, uint8_t *buf)
{
    size_t i;
    int nl = 0;

    for (i = 0; i < len; i++) {
        uint8_t b = (uint8_t)q[i];

        buf[i] = b >= 'A' && b <= 'Z' ? (uint8_t)(b + 32) : b;
        nl |= b == '\n';
    }
    return nl;
}

static uint32_t
range_count(const struct folio_corpus *c, uint32_t l, uint32_t r)
{
    if (l >= r)
        return 0;
    return (r - l) - (corpus_d(c, r - 1) - corpus_d(c, l));
}

int
folio_corpus_count(const struct folio_corpus *c, const char *q, size_t len,
                   uint64_t *count)
{
    uint8_t buf[FOLIO_CORPUS_MAX_QUERY];
    uint32_t l, r;

    if (len == 0 || len > FOLIO_CORPUS_MAX_QUERY)
        return FOLIO_EINVAL;
    if (lower_query(q, len, buf)) {
        *count = 0;
        return 0;
    }
    find_range(c, buf, (uint32_t)len, &l, &r);
    *count = range_count(c, l, r);
    return 0;
}

int
folio_corpus_scratch_new(struct folio_corpus_scratch **out)
{
    if ((*out = folio_malloc(sizeof(**out))) == NULL)
        return FOLIO_ENOMEM;
    return 0;
}

void
folio_corpus_scratch_free(struct folio_corpus_scratch *s)
{
    folio_free(s);
}

/* Sort a[0..m) (values < limit) with LSD radix passes through tmp. */
static void
radix_sort(struct folio_corpus_scratch *s, uint32_t *a, uint32_t m,
           uint32_t limit)
{
    uint32_t *src = a, *dst = s->tmp, *t, shift, i, sum, v;

    for (shift = 0; shift < 32 && (limit - 1) >> shift != 0;
         shift += RADIX_BITS) {
        memset(s->hist, 0, sizeof(s->hist));
        for (i = 0; i < m; i++)
            s->hist[(src[i] >> shift) & (RADIX - 1)]++;
        for (i = 0, sum = 0; i < RADIX; i++) {
            v = s->hist[i];
            s->hist[i] = sum;
            sum += v;
        }
        for (i = 0; i < m; i++)
            dst[s->hist[(src[i] >> shift) & (RADIX - 1)]++] = src[i];
        t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, 4 * (size_t)m);
}

/* The lines of sa range [l, r), sorted, distinct; skip, take. */
FOLIO_POPCNT
static uint32_t
search_gather(const struct folio_corpus *c, struct folio_corpus_scratch *s,
              uint32_t l, uint32_t r, uint64_t offset, uint32_t want,
              uint32_t *ids)
{
    uint32_t m = r - l, i, k = 0, out = 0, last = 0xffffffffu;

    for (i = 0; i < m; i++)
        s->ids[i] = corpus_line_of(c, c->sa[l + i]);
    radix_sort(s, s->ids, m, c->lines);
    for (i = 0; i < m && out < want; i++) {
        if (s->ids[i] == last)
            continue;
        last = s->ids[i];
        if (k++ >= offset)
            ids[out++] = last;
    }
    return out;
}

/* The same by scanning the lowercased text from its start. */
FOLIO_POPCNT
static uint32_t
search_scan(const struct folio_corpus *c, const uint8_t *q, uint32_t len,
            uint64_t offset, uint32_t want, uint32_t *ids)
{
    const uint8_t *t = c->lower, *hit;
    uint64_t found = 0, need = offset + want;
    uint32_t p = 0, id, out = 0;

    while (found < need && p < c->n) {
        hit = len == 1 ? memchr(t + p, q[0], c->n - p)
                       : memmem(t + p, c->n - p, q, len);
        if (hit == NULL)
            break;
        id = corpus_line_of(c, (uint32_t)(hit - t));
        if (found++ >= offset)
            ids[out++] = id;
        p = c->lstart[id + 1];
    }
    return out;
}

/* The line bitmap of sa range [l, r), or NULL if it has none. */
static const uint64_t *
range_bits(const struct folio_corpus *c, uint32_t l, uint32_t r)
{
    uint32_t lo = 0, hi = c->nq, mid;

    while (lo < hi) { /* the first key with q_l >= l */
        mid = lo + (hi - lo) / 2;
        if (c->qkeys[mid].q_l < l)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < c->nq && c->qkeys[lo].q_l == l; lo++)
        if (c->qkeys[lo].q_r == r)
            return c->qbits + (uint64_t)lo * c->qwords;
    return NULL;
}

/* The same from the query's line bitmap: skip `offset` set bits, take. */
FOLIO_POPCNT
static uint32_t
search_bits(const struct folio_corpus *c, const uint64_t *bits, uint64_t offset,
            uint32_t want, uint32_t *ids)
{
    uint64_t x;
    uint32_t w, pc, out = 0;

    for (w = 0; w < c->qwords && out < want; w++) {
        x = bits[w];
        pc = (uint32_t)__builtin_popcountll(x);
        if (offset >= pc) {
            offset -= pc;
            continue;
        }
        for (; offset > 0; offset--)
            x &= x - 1;
        for (; x != 0 && out < want; x &= x - 1)
            ids[out++] = w * 64 + (uint32_t)__builtin_ctzll(x);
    }
    return out;
}

FOLIO_POPCNT
int
folio_corpus_search(const struct folio_corpus *c,
                    struct folio_corpus_scratch *s, const char *q, size_t len,
                    uint64_t offset, uint32_t limit, uint64_t *count,
                    uint32_t *ids, uint32_t *n)
{
    uint8_t buf[FOLIO_CORPUS_MAX_QUERY];
    const uint64_t *bits;
    uint32_t l, r, cnt, want;
    uint64_t scan_bytes;
    int gather;

    *n = 0;
    *count = 0;
    if (len == 0 || len > FOLIO_CORPUS_MAX_QUERY ||
        limit > FOLIO_CORPUS_MAX_LIMIT)
        return FOLIO_EINVAL;
    if (lower_query(q, len, buf))
        return 0;
    find_range(c, buf, (uint32_t)len, &l, &r);
    *count = cnt = range_count(c, l, r);
    if (offset >= cnt || limit == 0)
        return 0;
    want = cnt - offset < limit ? (uint32_t)(cnt - offset) : limit;
    if (r - l > SORT_MAX && strategy != 2 &&
        (bits = range_bits(c, l, r)) != NULL) {
        *n = search_bits(c, bits, offset, want, ids);
        return 0;
    }
    /* Scanning reads about n * (offset + want) / cnt bytes. */
    scan_bytes = (uint64_t)c->n * (offset + want) / cnt;
    gather = r - l <= SORT_MAX &&
             (uint64_t)(r - l) * COST_GATHER <= scan_bytes * COST_SCAN;
    if (strategy == 1 && r - l <= SORT_MAX)
        gather = 1;
    else if (strategy == 2)
        gather = 0;
    if (gather)
        *n = search_gather(c, s, l, r, offset, want, ids);
    else
        *n = search_scan(c, buf, (uint32_t)len, offset, want, ids);
    return 0;
}

void
folio_corpus_line(const struct folio_corpus *c, uint32_t id,
                  struct folio_corpus_line *out)
{
    uint32_t lo = 0, hi = c->nfiles, mid;
    const struct corpus_file *f;

    /* the last file whose first line is <= id */
    while (hi - lo > 1) {
        mid = lo + (hi - lo) / 2;
        if (c->files[mid].cf_first_line <= id)
            lo = mid;
        else
            hi = mid;
    }
    f = &c->files[lo];
    out->work = c->names + f->cf_name_off;
    out->work_len = f->cf_work_len;
    out->line = id - f->cf_first_line + 1;
    out->text = (const char *)c->text + c->lstart[id];
    out->len = c->lstart[id + 1] - c->lstart[id] - 1;
}
