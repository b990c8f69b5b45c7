/*
 * corpus.h - the corpus image: every file of a corpus directory, its
 * ASCII-lowercased copy, the line table, the work (file) boundaries and a
 * suffix-array index, in ONE read-only mapping built by the master before
 * fork (or mapped from a cache file under the data directory) and
 * inherited by the workers, which never copy it.
 *
 * Semantics (PROTOCOL.md section 3): files in byte order of their names;
 * each file split on "\n", every piece a line (so a file ending in "\n"
 * has an empty last line); a line matches when its ASCII-lowercased bytes
 * contain the ASCII-lowercased query.  Counting uses document counting
 * over the suffix array (Sadakane's duplicate counts at the lowest common
 * ancestors, stored as prefix sums): O(|q| log n) to find the range, O(1)
 * to count the distinct lines in it.  No libevent here.
 */
#ifndef FOLIO_SHM_CORPUS_H
#define FOLIO_SHM_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#define FOLIO_CORPUS_MAX_QUERY 1024   /* bytes */
#define FOLIO_CORPUS_MAX_LIMIT 1000   /* corpus.search lines per reply */
#define FOLIO_CORPUS_DEFAULT_LIMIT 10

struct folio_corpus;         /* opaque; the image and its handle */
struct folio_corpus_scratch; /* per-process work area for searches */

struct folio_corpus_info {
    uint32_t files;
    uint32_t lines;        /* pieces of the split, summed over files */
    uint64_t bytes;        /* bytes of the files */
    uint64_t index_bytes;  /* size of the whole image (text, index, tables) */
    uint64_t checksum;     /* of names and contents: the cache key */
    uint64_t build_ms;     /* time the index took to build (when built) */
    uint64_t load_ms;      /* time this process took to have it ready */
    int from_cache;        /* 1: mapped from the cache file */
    const char *dir;       /* the corpus directory (borrowed) */
};

/* One line of a search result: spans into the image. */
struct folio_corpus_line {
    const char *work;      /* file name without ".txt" (not NUL-terminated) */
    uint32_t work_len;
    uint32_t line;         /* 1-based within its file */
    const char *text;      /* original bytes, without the "\n" */
    uint32_t len;
};

/*
 * folio_corpus_open - read every regular file of `dir` whose name does not
 * start with '.', and map the image for it: from `cache_dir` (the file
 * corpus-<checksum>.idx, checked against the files) when it is there and
 * valid, else built now and written there for the next start (cache_dir
 * NULL or unwritable: built in anonymous shared memory, not cached).
 * Master (or tests) only; the image is read-only once this returns.
 * On success *out owns the image: free with folio_corpus_free().
 * Returns 0, or FOLIO_ENOTFOUND (dir missing or no files), FOLIO_ESYS (a
 * file or the directory cannot be read), FOLIO_ETOOBIG (over 2 GiB),
 * FOLIO_ENOMEM, with a message in err.
 */
int folio_corpus_open(const char *dir, const char *cache_dir,
                      struct folio_corpus **out, char *err, size_t errlen);

/*
 * folio_corpus_open_shipped - folio_corpus_open for a data directory of
 * shipped files (shm/datafiles.h): the index must be in cache_dir, valid
 * for exactly these files; it is never built, written or removed.
 * Returns as folio_corpus_open, and FOLIO_ECORRUPT (with what to do in
 * err) when there is no valid index for this corpus.
 */
int folio_corpus_open_shipped(const char *dir, const char *cache_dir,
                              struct folio_corpus **out, char *err,
                              size_t errlen);

/* folio_corpus_free - unmap and free; accepts NULL. */
void folio_corpus_free(struct folio_corpus *c);

/*
 * folio_corpus_prefault - map every page of the image into this process's
 * page tables now (MADV_POPULATE_READ), so the first queries of a new
 * worker take no page faults.  The pages are the shared ones: this costs
 * page-table memory (about 2 KB per MB), not copies.  Best effort.
 */
void folio_corpus_prefault(const struct folio_corpus *c);

/* folio_corpus_info - sizes and provenance of the image. */
void folio_corpus_info(const struct folio_corpus *c,
                       struct folio_corpus_info *out);

/*
 * folio_corpus_work - the name of file `i` (0..files-1) without ".txt";
 * *len its length.  A span into the image, not NUL-terminated.
 */
const char *folio_corpus_work(const struct folio_corpus *c, uint32_t i,
                              uint32_t *len);

/*
 * folio_corpus_count - the number of lines that contain q[0..len)
 * (case-insensitively, ASCII).  Any process that maps the image; no
 * allocation, no lock.  Returns 0 with *count set, or FOLIO_EINVAL when
 * len is 0 or over FOLIO_CORPUS_MAX_QUERY.  A query holding "\n" counts 0.
 */
int folio_corpus_count(const struct folio_corpus *c, const char *q,
                       size_t len, uint64_t *count);

/*
 * folio_corpus_scratch_new - a work area for folio_corpus_search (one per
 * process, made at start-up: searching then allocates nothing).
 * Returns 0 or FOLIO_ENOMEM.  Free with folio_corpus_scratch_free().
 */
int folio_corpus_scratch_new(struct folio_corpus_scratch **out);
void folio_corpus_scratch_free(struct folio_corpus_scratch *s);

/*
 * folio_corpus_search - the lines that contain q, in corpus order,
 * skipping `offset` of them and returning at most `limit` (at most
 * FOLIO_CORPUS_MAX_LIMIT) as line ids in ids[] (sized by the caller);
 * *n gets how many, *count the total as folio_corpus_count.  Turn an id
 * into its work, number and text with folio_corpus_line().
 * Returns 0 or FOLIO_EINVAL (bad query or limit).  No allocation.
 */
int folio_corpus_search(const struct folio_corpus *c,
                        struct folio_corpus_scratch *s, const char *q,
                        size_t len, uint64_t offset, uint32_t limit,
                        uint64_t *count, uint32_t *ids, uint32_t *n);

/* folio_corpus_line - line `id` (0..lines-1) of the corpus. */
void folio_corpus_line(const struct folio_corpus *c, uint32_t id,
                       struct folio_corpus_line *out);

/*
 * folio_corpus_strategy - test hook: force folio_corpus_search to gather
 * and sort the suffix-array range (1), to scan the text (2), or let it
 * choose by estimated cost (0, the default).  Returns the old value.
 */
int folio_corpus_strategy(int s);

#endif
