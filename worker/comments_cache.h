/*
 * comments_cache.h - a worker's cache of encoded comment pages for the
 * comments backends (comments_pg.c, comments_lmdb.c): the whole
 * comments.list reply of a page (array header, then the stored comments
 * as they are), keyed by normalized path, bounded in bytes, least
 * recently used out first.  Each reply is a block of shared bytes
 * (src/bytes.h): a hit hands it out, and a connection sends it by
 * reference (worker/out.c), so that a page listed by many connections at
 * once is held once, and no hit allocates or copies.  The HTTP face
 * attaches its JSON of a page to the page (folio_ccache_attach), so that
 * the two encodings are valid, and go, together.
 *
 * Invalidation is by page (a NOTIFY from PostgreSQL, or this worker's own
 * commit) or of everything (a reconnect; with LMDB, any new version of
 * the store).  Each invalidation also moves an epoch, so that a list
 * answered by the database after the page was invalidated is not cached
 * (its query may have read the page before the commit that invalidated
 * it): take folio_ccache_epoch() when the query is sent, and ask
 * folio_ccache_fresh() before folio_ccache_put().
 *
 * One per backend in a worker; not shared, not locked.  No libevent here.
 */
#ifndef FOLIO_COMMENTS_CACHE_H
#define FOLIO_COMMENTS_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct folio_bytes;
struct folio_ccache;

struct folio_ccache_info {
    uint64_t entries;
    uint64_t bytes;     /* held, counting each entry's bookkeeping (a
                           reply an output still sends outlives its
                           entry: worker/out.c counts it then) */
    uint64_t max_bytes;
    uint64_t evictions; /* entries pushed out by newer ones */
};

/*
 * folio_ccache_new - an empty cache of at most max_bytes (> 0).  Returns
 * 0 with *out (free with folio_ccache_free), or FOLIO_ENOMEM.
 */
int folio_ccache_new(uint64_t max_bytes, struct folio_ccache **out);

/* folio_ccache_free - release the cache and its entries; accepts NULL. */
void folio_ccache_free(struct folio_ccache *c);

/*
 * folio_ccache_get - the cached reply of page `path` (plen bytes), or
 * NULL: borrowed, valid until the next put, drop or clear (take a
 * reference, folio_bytes_ref, to keep it longer).  Marks the page
 * recently used.  Allocates nothing.
 */
struct folio_bytes *folio_ccache_get(struct folio_ccache *c, const char *path,
                                     size_t plen);

/*
 * folio_ccache_put - cache `reply` as page `path` (the cache takes a
 * reference of its own), replacing what was cached for it, evicting the
 * least recently used pages to make room.  Returns 0, FOLIO_ETOOBIG
 * (larger than a quarter of the cache: not cached) or FOLIO_ENOMEM (not
 * cached).
 */
int folio_ccache_put(struct folio_ccache *c, const char *path, size_t plen,
                     struct folio_bytes *reply);

/*
 * folio_ccache_attach - keep extra[0..elen) (another encoding of the same
 * page: the HTTP face's JSON) with page path's cached reply, if that is
 * reply[0..len) byte for byte: then it is the JSON of the very comments
 * cached, and goes when they do (put, drop, clear, eviction).  Returns 0,
 * FOLIO_ENOTFOUND (no such page cached, or another reply),
 * FOLIO_ETOOBIG or FOLIO_ENOMEM (nothing attached).
 */
int folio_ccache_attach(struct folio_ccache *c, const char *path, size_t plen,
                        const void *reply, size_t len, const void *extra,
                        size_t elen);

/*
 * folio_ccache_get_extra - what is attached to page path's cached reply,
 * or NULL (not cached, or nothing attached): shared bytes, which an
 * output may send by reference (worker/out.c) as it sends the reply.  As
 * folio_ccache_get: borrowed, valid until the next put, attach, drop or
 * clear (folio_bytes_ref to keep it longer); the page marked recently
 * used; no allocation.
 */
struct folio_bytes *folio_ccache_get_extra(struct folio_ccache *c,
                                           const char *path, size_t plen);

/* folio_ccache_drop - forget page `path`; moves the epoch. */
void folio_ccache_drop(struct folio_ccache *c, const char *path, size_t plen);

/* folio_ccache_clear - forget every page; moves the epoch. */
void folio_ccache_clear(struct folio_ccache *c);

/* folio_ccache_epoch - the current epoch (see above). */
uint64_t folio_ccache_epoch(const struct folio_ccache *c);

/*
 * folio_ccache_fresh - 1 if no invalidation that could touch page `path`
 * happened after epoch `since`, 0 otherwise (also, rarely, when another
 * page sharing its slot in the record was invalidated).
 */
int folio_ccache_fresh(const struct folio_ccache *c, const char *path,
                       size_t plen, uint64_t since);

/* folio_ccache_info - sizes and counts. */
void folio_ccache_info(const struct folio_ccache *c,
                       struct folio_ccache_info *out);

#endif
