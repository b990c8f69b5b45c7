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
 * Line bitmaps for the broadest one- and two-byte keys.  A search lists
 * lines in corpus order; for a range too large to sort it scans the text,
 * about 11 ns per matching line here: "e" at offset 100,000 took 1.1 ms.
 * With the key's line bitmap it counts set bits up to the offset instead
 * (2,700 words for Shakespeare) and reads the lines from there.  Only
 * keys of one or two bytes can have such ranges in numbers (n / QMIN of
 * each length at most), and the budget bounds them on any corpus.
 */
struct qcand {
    uint32_t slot;
    uint32_t size;
};

static int
cmp_qcand(const void *a, const void *b)
{
    const struct qcand *x = a, *y = b;

    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

uint32_t
corpus_choose_qkeys(const struct folio_corpus *c, uint64_t budget,
                    uint16_t *qidx)
{
    struct qcand *cand;
    uint64_t each = 8 * (((uint64_t)c->lines + 63) / 64), used = 0;
    uint32_t slot, l, r, m = 0, i, nq = 0;

    for (slot = 0; slot < CORPUS_QKEYS; slot++)
        qidx[slot] = CORPUS_QNONE;
    /* without memory for the choice, no bitmaps: searches scan */
    if ((cand = folio_malloc(sizeof(*cand) * CORPUS_QKEYS)) == NULL)
        return 0;
    for (slot = 0; slot < CORPUS_QKEYS; slot++) {
        /* a key holding "\n" matches nothing */
        if (slot < 65536 ? ((slot >> 8) == '\n' || (slot & 0xff) == '\n')
                         : slot - 65536 == '\n')
            continue;
        corpus_qkey_range(c, slot, &l, &r);
        if (r - l > CORPUS_QMIN) {
            cand[m].slot = slot;
            cand[m].size = r - l;
            m++;
        }
    }
    qsort(cand, m, sizeof(cand[0]), cmp_qcand);
    for (i = 0; i < m && used + each <= budget && nq < CORPUS_QNONE;
         i++, used += each)
        qidx[cand[i].slot] = (uint16_t)nq++;
    folio_free(cand);
    return nq;
}

void
corpus_fill_qbits(struct folio_corpus *c)
{
    uint64_t *bits = (uint64_t *)(uintptr_t)c->qbits, bit;
    const uint8_t *t = c->lower;
    uint32_t p, line = 0, word = 0;
    uint16_t i;

    /* One pass over the text: each byte, and each pair in a line. */
    for (p = 0; p < c->n; p++) {
        if (t[p] == '\n') {
            line++;
            continue;
        }
        word = line >> 6;
        bit = (uint64_t)1 << (line & 63);
        if ((i = c->qidx[65536u + t[p]]) != CORPUS_QNONE)
            bits[(uint64_t)i * c->qwords + word] |= bit;
        if (p + 1 < c->n &&
            (i = c->qidx[(uint32_t)t[p] << 8 | t[p + 1]]) != CORPUS_QNONE)
            bits[(uint64_t)i * c->qwords + word] |= bit;
    }
}
