/*
 * corpus_int.h - the layout of the corpus image (shm/corpus*.c only).
 *
 * The image is one contiguous region, the same bytes in memory and in the
 * cache file: a header, then sections at 64-byte aligned offsets.  With n
 * the text length (file bytes + one terminator per file):
 *
 *   text    n bytes   the files' bytes, each file followed by "\n": every
 *                     line (piece of the split) ends with a "\n"
 *   lower   n bytes   text, ASCII-lowercased: what the index is over
 *   sa      n u32     suffix array of lower (libdivsufsort)
 *   bucket  65537 u32 first sa index of each two-byte prefix
 *   dbase   ceil(n/64) u32, doff n u16, dwide 64*nwide u32:
 *                     D[k] = sum of H[1..k], H[k] the duplicates charged
 *                     to sa position k (see corpus_build.c); a block of
 *                     64 is dbase[b] + doff[k], or, when its span does not
 *                     fit 16 bits, dbase[b] = WIDE | w and D = dwide[64w+j]
 *   nlbits  ceil(n/64) u64  bit p set when lower[p] is a line terminator
 *   nlrank  ceil(n/64) u32  terminators before each word: line of p in O(1)
 *   lstart  lines+1 u32     text offset of each line; lstart[lines] = n
 *   files   nfiles struct corpus_file
 *   names   the work names (file names without ".txt"), back to back
 *   qkeys   nq struct corpus_qkey: the sa ranges [l, r) that have a line
 *                     bitmap, sorted by l then r (a range is its queries:
 *                     every query with that range matches the same lines)
 *   qbits   nq * ceil(lines/64) u64, in qkeys' order: bit L set when line
 *                     L holds the range's queries; only for ranges too
 *                     large to sort (corpus_query.c), within a byte budget
 */
#ifndef FOLIO_SHM_CORPUS_INT_H
#define FOLIO_SHM_CORPUS_INT_H

#include <stdint.h>

#include "shm/corpus.h"

#define CORPUS_MAGIC "FOLIOCX\0"
#define CORPUS_VERSION 3
#define CORPUS_DWIDE 0x80000000u
#define CORPUS_BUCKETS 65536
#define CORPUS_QMIN 65536 /* a range above this may get a bitmap */

struct corpus_qkey {
    uint32_t q_l, q_r;
};

/* The 64-bit words of one line bitmap. */
static inline uint32_t
corpus_qwords(uint32_t lines)
{
    return (uint32_t)(((uint64_t)lines + 63) / 64);
}

struct corpus_file {
    uint32_t cf_first_line;
    uint32_t cf_lines;
    uint64_t cf_offset;    /* in text */
    uint64_t cf_bytes;     /* the file's size */
    uint32_t cf_name_off;  /* in names */
    uint32_t cf_name_len;  /* the file name */
    uint32_t cf_work_len;  /* without ".txt" */
    uint32_t cf_pad;
};

struct corpus_hdr {
    char h_magic[8];
    uint32_t h_version;
    uint32_t h_hdr_size;
    uint64_t h_checksum;
    uint64_t h_image_bytes;
    uint64_t h_n;          /* text bytes */
    uint64_t h_file_bytes;
    uint32_t h_files;
    uint32_t h_lines;
    uint64_t h_nwide;
    uint64_t h_build_ms;
    uint64_t h_off_text, h_off_lower, h_off_sa, h_off_bucket;
    uint64_t h_off_dbase, h_off_doff, h_off_dwide;
    uint64_t h_off_nlbits, h_off_nlrank, h_off_lstart;
    uint64_t h_off_files, h_off_names, h_names_bytes;
    uint64_t h_nq, h_off_qkeys, h_off_qbits;
    uint64_t h_image_sum;  /* hash of everything after the header */
};

struct folio_corpus {
    void *map;             /* the image */
    size_t map_len;
    int from_cache;
    uint64_t load_ms;
    char *dir;
    /* pointers into the image, from the header */
    const struct corpus_hdr *hdr;
    const uint8_t *text;
    const uint8_t *lower;
    const uint32_t *sa;
    const uint32_t *bucket;
    const uint32_t *dbase;
    const uint16_t *doff;
    const uint32_t *dwide;
    const uint64_t *nlbits;
    const uint32_t *nlrank;
    const uint32_t *lstart;
    const struct corpus_file *files;
    const char *names;
    const struct corpus_qkey *qkeys;
    const uint64_t *qbits;
    uint32_t nq;
    uint32_t qwords; /* ceil(lines / 64): one bitmap's words */
    uint32_t n;
    uint32_t lines;
    uint32_t nfiles;
};

/* The section sizes of an image, from n, lines, files, names and nwide. */
struct corpus_layout {
    uint64_t off_text, off_lower, off_sa, off_bucket, off_dbase, off_doff,
        off_dwide, off_nlbits, off_nlrank, off_lstart, off_files, off_names,
        off_qkeys, off_qbits;
    uint64_t total;
};

/* corpus.c: fill `l` for these sizes (nq: the query bitmaps). */
void corpus_layout(uint64_t n, uint32_t lines, uint32_t nfiles,
                   uint64_t names_bytes, uint64_t nwide, uint64_t nq,
                   struct corpus_layout *l);

/* corpus.c: set c's section pointers from its image's header. */
void corpus_bind(struct folio_corpus *c);

/*
 * corpus_build_sa_h - the suffix array of c's lower text into c's sa
 * section, the bucket table, and H (per-sa-position duplicate counts,
 * n u32 allocated by the caller).  Returns 0 or a FOLIO_E*.
 */
int corpus_build_sa_h(struct folio_corpus *c, uint32_t *h, char *err,
                      size_t errlen);

/* corpus_wide_blocks - how many 64-blocks of D (from H) need dwide. */
uint64_t corpus_wide_blocks(const uint32_t *h, uint32_t n);

/* corpus_fill_d - dbase, doff and dwide from H. */
void corpus_fill_d(struct folio_corpus *c, const uint32_t *h);

/*
 * corpus_choose_qkeys - the sa ranges that get a line bitmap: every range
 * of a query (of any length) larger than CORPUS_QMIN, largest first,
 * while their bitmaps fit in `budget` bytes; in *keys (folio_malloc'ed,
 * sorted by l then r).  Returns how many, or -1 out of memory.
 */
int64_t corpus_choose_qkeys(const struct folio_corpus *c, uint64_t budget,
                            struct corpus_qkey **keys);

/* corpus_fill_qbits - set the bits of c's ranges (c bound, qbits zero). */
void corpus_fill_qbits(struct folio_corpus *c);

/*
 * FOLIO_POPCNT - on a function that counts bits in its loops (directly or
 * through corpus_line_of, inlined): a second copy built for the POPCNT
 * instruction, which the loader picks where the CPU has it (an ifunc).
 * The baseline x86-64 build calls libgcc's __popcountdi2 instead: a
 * quarter of a deep corpus.search's CPU in a profile of foliod.
 */
/*
 * GCC only: clang (14, the fuzzers' compiler) names the ifunc of a
 * function defined with target_clones apart from the symbol other files
 * call, so they fail to link; it inlines popcount without POPCNT anyway,
 * with no libcall.
 */
#if defined(HAVE_TARGET_CLONES_POPCNT) && !defined(__clang__)
#define FOLIO_POPCNT __attribute__((target_clones("popcnt", "default")))
#else
#define FOLIO_POPCNT
#endif

/* The line holding text offset p (O(1)). */
static inline uint32_t
corpus_line_of(const struct folio_corpus *c, uint32_t p)
{
    uint64_t w = c->nlbits[p >> 6];
    uint64_t mask = (p & 63) ? (~(uint64_t)0 >> (64 - (p & 63))) : 0;

    return c->nlrank[p >> 6] + (uint32_t)__builtin_popcountll(w & mask);
}

/* D[k] (k < n). */
static inline uint32_t
corpus_d(const struct folio_corpus *c, uint32_t k)
{
    uint32_t b = c->dbase[k >> 6];

    if (b & CORPUS_DWIDE)
        return c->dwide[(uint64_t)(b & ~CORPUS_DWIDE) * 64 + (k & 63)];
    return b + c->doff[k];
}

#endif
