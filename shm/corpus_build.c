/*
 * corpus_build.c - building the corpus index (master only, once per
 * corpus version): the suffix array of the lowercased text (libdivsufsort),
 * its two-byte bucket table, and the duplicate counts that make counting
 * the distinct lines of a suffix-array range O(1).
 *
 * Document counting (Sadakane 2007, "Succinct data structures for flexible
 * text retrieval systems", section 5.2): walk the suffix array; whenever
 * sa[j] lies in the same line as an earlier suffix sa[i] (i the last such
 * index), that pair is one duplicate, charged to the position k in (i, j]
 * where LCP is smallest (the pair's lowest common ancestor in the suffix
 * tree).  For the range [l, r] of every pattern, LCP[l] and LCP[r+1] are
 * below |pattern| and every LCP inside is not, so the pairs charged to
 * (l, r] are exactly the pairs with both ends in [l, r]:
 *
 *     distinct lines in [l, r] = (r - l + 1) - (D[r] - D[l]),
 *
 * D the prefix sums of the charges.  The minimum over (i, j] comes from a
 * monotonic stack of LCP values, searched by binary search.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <divsufsort.h>

#include "shm/corpus_int.h"
#include "src/alloc.h"
#include "src/err.h"

#define NONE 0xffffffffu

/* The lcp of each suffix with its predecessor in sa, by text position
 * (Kärkkäinen, Manzini, Puglisi 2009, the Phi algorithm), in place. */
static void
plcp_build(const uint8_t *t, const uint32_t *sa, uint32_t n, uint32_t *plcp)
{
    uint32_t i, p, q, h = 0;

    plcp[sa[0]] = NONE;
    for (i = 1; i < n; i++)
        plcp[sa[i]] = sa[i - 1];
    for (p = 0; p < n; p++) {
        q = plcp[p];
        if (q == NONE) {
            plcp[p] = 0;
            h = 0;
            continue;
        }
        while (p + h < n && q + h < n && t[p + h] == t[q + h])
            h++;
        plcp[p] = h;
        if (h > 0)
            h--;
    }
}

FOLIO_POPCNT
int
corpus_build_sa_h(struct folio_corpus *c, uint32_t *hc, char *err,
                  size_t errlen)
{
    uint32_t *sa = (uint32_t *)(uintptr_t)c->sa;
    uint32_t *bucket = (uint32_t *)(uintptr_t)c->bucket;
    uint32_t n = c->n, *plcp = NULL, *spos = NULL, *sval = NULL,
             *prev = NULL, top = 0, j, v, line, i, lo, hi, mid, key;
    const uint8_t *t = c->lower;
    int rc = FOLIO_ENOMEM;

    if (divsufsort(t, (saidx_t *)(void *)sa, (saidx_t)n) != 0) {
        snprintf(err, errlen, "divsufsort failed on %u bytes", n);
        return FOLIO_ENOMEM;
    }
    /* bucket[k]: the first sa index whose two first bytes are >= k (a
     * suffix of one byte counts as that byte followed by 0). */
    memset(bucket, 0, 4 * (CORPUS_BUCKETS + 1));
    for (j = 0; j < n; j++) {
        key = (uint32_t)t[sa[j]] << 8 | (sa[j] + 1 < n ? t[sa[j] + 1] : 0);
        bucket[key + 1]++;
    }
    for (key = 0; key < CORPUS_BUCKETS; key++)
        bucket[key + 1] += bucket[key];

    if ((plcp = folio_malloc(4 * (size_t)n)) == NULL ||
        (spos = folio_malloc(4 * (size_t)n)) == NULL ||
        (sval = folio_malloc(4 * (size_t)n)) == NULL ||
        (prev = folio_malloc(4 * (size_t)c->lines)) == NULL) {
        snprintf(err, errlen, "out of memory building the corpus index");
        goto done;
    }
    plcp_build(t, sa, n, plcp);
    memset(prev, 0xff, 4 * (size_t)c->lines);
    memset(hc, 0, 4 * (size_t)n);
    for (j = 0; j < n; j++) {
        if (j > 0) {
            v = plcp[sa[j]];
            while (top > 0 && sval[top - 1] >= v)
                top--;
            spos[top] = j;
            sval[top++] = v;
        }
        line = corpus_line_of(c, sa[j]);
        i = prev[line];
        prev[line] = j;
        if (i == NONE)
            continue;
        /* The first stack entry right of i holds the minimum of (i, j]. */
        lo = 0;
        hi = top;
        while (lo < hi) {
            mid = lo + (hi - lo) / 2;
            if (spos[mid] > i)
                hi = mid;
            else
                lo = mid + 1;
        }
        hc[spos[lo]]++;
    }
    rc = 0;
done:
    folio_free(plcp);
    folio_free(spos);
    folio_free(sval);
    folio_free(prev);
    return rc;
}

uint64_t
corpus_wide_blocks(const uint32_t *hc, uint32_t n)
{
    uint64_t nwide = 0;
    uint32_t k, d = 0, first = 0;

    for (k = 0; k < n; k++) {
        d += hc[k];
        if ((k & 63) == 0)
            first = d;
        if ((k & 63) == 63 || k == n - 1)
            nwide += d - first > 0xffff;
    }
    return nwide;
}

void
corpus_fill_d(struct folio_corpus *c, const uint32_t *hc)
{
    uint32_t *dbase = (uint32_t *)(uintptr_t)c->dbase;
    uint16_t *doff = (uint16_t *)(uintptr_t)c->doff;
    uint32_t *dwide = (uint32_t *)(uintptr_t)c->dwide;
    uint32_t n = c->n, k, b, end, d = 0, first, w = 0, dk, x;

    for (b = 0; (uint64_t)b * 64 < n; b++) {
        end = (uint64_t)b * 64 + 64 < n ? b * 64 + 64 : n;
        /* the block's span decides its form */
        first = d + hc[b * 64];
        dk = d;
        for (k = b * 64; k < end; k++)
            dk += hc[k];
        if (dk - first > 0xffff) {
            dbase[b] = CORPUS_DWIDE | w;
            for (k = b * 64; k < end; k++) {
                d += hc[k];
                dwide[(uint64_t)w * 64 + (k - b * 64)] = d;
                doff[k] = 0;
            }
            w++;
        } else {
            dbase[b] = first;
            for (k = b * 64; k < end; k++) {
                d += hc[k];
                x = d - first;
                doff[k] = (uint16_t)x;
            }
        }
    }
}

/*
 * Line bitmaps for the broadest queries.  A search lists lines in corpus
 * order; for a suffix-array range too large to sort it scanned the text,
 * about 11 ns per matching line and more when the query starts with a
 * frequent byte: "e" at offset 100,000 took 1.1 ms, " th" near its end
 * 3.2 ms.  A range's bitmap of lines makes any page a count of set bits
 * to the offset (2,700 words for Shakespeare).  The ranges larger than
 * CORPUS_QMIN are few (at most n / CORPUS_QMIN at each query length, and
 * each inside its prefix's), found largest first from the one-byte ones
 * down, until the byte budget (or the work of filling them) is spent.
 */
struct qnode {
    uint32_t l, r, depth;
    uint32_t dup; /* the same range as its parent's: no bitmap of its own */
};

struct qheap {
    struct qnode *a;
    size_t n, cap;
};

static int
qheap_push(struct qheap *h, uint32_t l, uint32_t r, uint32_t depth,
           uint32_t dup)
{
    struct qnode x = {l, r, depth, dup}, t;
    size_t i, p;

    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 1024;
        struct qnode *a = folio_realloc(h->a, cap * sizeof(*a));

        if (a == NULL)
            return -1;
        h->a = a;
        h->cap = cap;
    }
    i = h->n++;
    h->a[i] = x;
    for (; i > 0; i = p) { /* larger ranges first */
        p = (i - 1) / 2;
        if (h->a[p].r - h->a[p].l >= h->a[i].r - h->a[i].l)
            break;
        t = h->a[p];
        h->a[p] = h->a[i];
        h->a[i] = t;
    }
    return 0;
}

static struct qnode
qheap_pop(struct qheap *h)
{
    struct qnode top = h->a[0], t;
    size_t i = 0, k, best;

    h->a[0] = h->a[--h->n];
    for (;;) {
        best = i;
        for (k = 2 * i + 1; k <= 2 * i + 2 && k < h->n; k++)
            if (h->a[k].r - h->a[k].l > h->a[best].r - h->a[best].l)
                best = k;
        if (best == i)
            break;
        t = h->a[i];
        h->a[i] = h->a[best];
        h->a[best] = t;
        i = best;
    }
    return top;
}

static int
cmp_qkey(const void *a, const void *b)
{
    const struct corpus_qkey *x = a, *y = b;

    if (x->q_l != y->q_l)
        return x->q_l < y->q_l ? -1 : 1;
    return x->q_r < y->q_r ? -1 : x->q_r > y->q_r;
}

/* The byte at `depth` of the suffix at sa[i] (its query has no "\n", the
 * text ends with one: always inside the text). */
static inline uint8_t
qbyte(const struct folio_corpus *c, uint32_t i, uint32_t depth)
{
    return c->lower[c->sa[i] + depth];
}

int64_t
corpus_choose_qkeys(const struct folio_corpus *c, uint64_t budget,
                    struct corpus_qkey **keys)
{
    uint64_t each = 8 * (uint64_t)corpus_qwords(c->lines);
    uint64_t want = each > 0 ? budget / each : 0, work = 0;
    struct qheap h = {NULL, 0, 0};
    struct corpus_qkey *k = NULL;
    struct qnode x;
    uint32_t b, l, r, i, j, lo, hi, mid;
    uint8_t ch;
    int64_t nk = 0;

    *keys = NULL;
    if (want == 0)
        return 0;
    if (want > 65536)
        want = 65536; /* a bound for corpora of very short lines */
    if ((k = folio_malloc(sizeof(*k) * want)) == NULL)
        return -1;
    for (b = 0; b < 256; b++) {
        l = c->bucket[b << 8];
        r = c->bucket[(b + 1) << 8];
        if (b != '\n' && r - l > CORPUS_QMIN && qheap_push(&h, l, r, 1, 0) != 0)
            goto nomem;
    }
    /*
     * Filling a bitmap reads its range: the ranges' sum is bounded too
     * (a corpus of one long run of a byte nests a range in every other).
     */
    while (h.n > 0 && (uint64_t)nk < want) {
        x = qheap_pop(&h);
        if (!x.dup) {
            if ((work += x.r - x.l) > 8 * (uint64_t)c->n)
                break;
            k[nk].q_l = x.l;
            k[nk].q_r = x.r;
            nk++;
        }
        /* its extensions by one byte: runs of equal bytes at x.depth */
        for (i = x.l; i < x.r; i = j) {
            ch = qbyte(c, i, x.depth);
            lo = i + 1;
            hi = x.r;
            while (lo < hi) { /* the first index past the run of ch */
                mid = lo + (hi - lo) / 2;
                if (qbyte(c, mid, x.depth) <= ch)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            j = lo;
            if (ch != '\n' && j - i > CORPUS_QMIN &&
                qheap_push(&h, i, j, x.depth + 1, i == x.l && j == x.r) != 0)
                goto nomem;
        }
    }
    folio_free(h.a);
    qsort(k, (size_t)nk, sizeof(*k), cmp_qkey);
    *keys = k;
    return nk;
nomem:
    folio_free(h.a);
    folio_free(k);
    return -1;
}

FOLIO_POPCNT
void
corpus_fill_qbits(struct folio_corpus *c)
{
    uint64_t *bits;
    uint32_t k, i, line;

    for (k = 0; k < c->nq; k++) {
        bits = (uint64_t *)(uintptr_t)(c->qbits + (uint64_t)k * c->qwords);
        for (i = c->qkeys[k].q_l; i < c->qkeys[k].q_r; i++) {
            line = corpus_line_of(c, c->sa[i]);
            bits[line >> 6] |= (uint64_t)1 << (line & 63);
        }
    }
}
