/*
 * comments_cache.c - the per-worker cache of encoded comment pages (see
 * comments_cache.h): a chained hash table of entries, each one allocation
 * holding its path and its reply, on a least-recently-used list.
 */
#include "config.h"

#include <string.h>

#include "src/alloc.h"
#include "src/err.h"
#include "src/hash.h"
#include "worker/comments_cache.h"

#define MIN_BUCKETS 64
#define MAX_BUCKETS (1u << 20)
#define BYTES_PER_BUCKET 4096 /* an ordinary page's reply, roughly */
#define STALE_SLOTS 4096      /* the invalidation record (power of 2) */

struct entry {
    struct entry *hnext;       /* bucket chain */
    struct entry *prev, *next; /* LRU list: head is the most recent */
    uint64_t hash;
    uint32_t plen;
    uint32_t len;
    uint32_t elen; /* bytes attached (folio_ccache_attach) */
    char bytes[];  /* path, then reply, then what is attached */
};

struct folio_ccache {
    struct entry **buckets;
    uint32_t mask;
    struct entry *head, *tail;
    uint64_t entries, bytes, max_bytes, evictions;
    uint64_t epoch;
    uint64_t all_epoch;          /* the last clear */
    uint64_t stale[STALE_SLOTS]; /* epoch of the last drop, by hash */
};

static uint64_t
cost(const struct entry *e)
{
    return sizeof(*e) + e->plen + e->len + e->elen;
}

int
folio_ccache_new(uint64_t max_bytes, struct folio_ccache **out)
{
    struct folio_ccache *c;
    uint64_t want = max_bytes / BYTES_PER_BUCKET;
    uint32_t n = MIN_BUCKETS;

    *out = NULL;
    while (n < want && n < MAX_BUCKETS)
        n <<= 1;
    if ((c = folio_calloc(1, sizeof(*c))) == NULL)
        return FOLIO_ENOMEM;
    if ((c->buckets = folio_calloc(n, sizeof(*c->buckets))) == NULL) {
        folio_free(c);
        return FOLIO_ENOMEM;
    }
    c->mask = n - 1;
    c->max_bytes = max_bytes;
    *out = c;
    return 0;
}

static void
lru_unlink(struct folio_ccache *c, struct entry *e)
{
    if (e->prev != NULL)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next != NULL)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void
lru_push(struct folio_ccache *c, struct entry *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head != NULL)
        c->head->prev = e;
    c->head = e;
    if (c->tail == NULL)
        c->tail = e;
}

/* The link that points at page path's entry (or at the chain's NULL). */
static struct entry **
find(struct folio_ccache *c, uint64_t h, const char *path, size_t plen)
{
    struct entry **pp = &c->buckets[h & c->mask];

    for (; *pp != NULL; pp = &(*pp)->hnext)
        if ((*pp)->hash == h && (*pp)->plen == plen &&
            memcmp((*pp)->bytes, path, plen) == 0)
            break;
    return pp;
}

/* Unlink *pp's entry from everything and free it. */
static void
remove_at(struct folio_ccache *c, struct entry **pp)
{
    struct entry *e = *pp;

    *pp = e->hnext;
    lru_unlink(c, e);
    c->entries--;
    c->bytes -= cost(e);
    folio_free(e);
}

void
folio_ccache_free(struct folio_ccache *c)
{
    if (c == NULL)
        return;
    folio_ccache_clear(c);
    folio_free(c->buckets);
    folio_free(c);
}

const void *
folio_ccache_get(struct folio_ccache *c, const char *path, size_t plen,
                 size_t *len)
{
    struct entry *e = *find(c, folio_fnv1a64(path, plen), path, plen);

    if (e == NULL)
        return NULL;
    if (c->head != e) {
        lru_unlink(c, e);
        lru_push(c, e);
    }
    *len = e->len;
    return e->bytes + e->plen;
}

int
folio_ccache_put(struct folio_ccache *c, const char *path, size_t plen,
                 const void *reply, size_t len)
{
    uint64_t h = folio_fnv1a64(path, plen);
    struct entry **pp, *e;
    uint64_t need = sizeof(*e) + plen + len;

    if (need > c->max_bytes / 4 || len > UINT32_MAX)
        return FOLIO_ETOOBIG;
    if (*(pp = find(c, h, path, plen)) != NULL)
        remove_at(c, pp);
    while (c->bytes + need > c->max_bytes && c->tail != NULL) {
        e = c->tail;
        remove_at(c, find(c, e->hash, e->bytes, e->plen));
        c->evictions++;
    }
    if ((e = folio_malloc(need)) == NULL)
        return FOLIO_ENOMEM;
    e->hash = h;
    e->plen = (uint32_t)plen;
    e->len = (uint32_t)len;
    e->elen = 0;
    memcpy(e->bytes, path, plen);
    memcpy(e->bytes + plen, reply, len);
    pp = &c->buckets[h & c->mask];
    e->hnext = *pp;
    *pp = e;
    lru_push(c, e);
    c->entries++;
    c->bytes += need;
    return 0;
}

const void *
folio_ccache_get_extra(struct folio_ccache *c, const char *path, size_t plen,
                       size_t *len)
{
    struct entry *e = *find(c, folio_fnv1a64(path, plen), path, plen);

    if (e == NULL || e->elen == 0)
        return NULL;
    if (c->head != e) {
        lru_unlink(c, e);
        lru_push(c, e);
    }
    *len = e->elen;
    return e->bytes + e->plen + e->len;
}

int
folio_ccache_attach(struct folio_ccache *c, const char *path, size_t plen,
                    const void *reply, size_t len, const void *extra,
                    size_t elen)
{
    uint64_t h = folio_fnv1a64(path, plen);
    struct entry **pp = find(c, h, path, plen), *e = *pp, *n;
    uint64_t need;

    if (e == NULL || e->len != len || memcmp(e->bytes + plen, reply, len) != 0)
        return FOLIO_ENOTFOUND;
    need = sizeof(*e) + plen + len + elen;
    if (need > c->max_bytes / 4 || elen > UINT32_MAX || elen == 0)
        return FOLIO_ETOOBIG;
    if ((n = folio_malloc(need)) == NULL)
        return FOLIO_ENOMEM;
    /* The new entry takes the old one's place: chain, list, counts. */
    memcpy(n, e, sizeof(*e) + plen + len);
    n->elen = (uint32_t)elen;
    memcpy(n->bytes + plen + len, extra, elen);
    *pp = n;
    if (n->prev != NULL)
        n->prev->next = n;
    else
        c->head = n;
    if (n->next != NULL)
        n->next->prev = n;
    else
        c->tail = n;
    c->bytes += elen - e->elen;
    folio_free(e);
    /* Room for it: evict from the other end, never the page itself. */
    while (c->bytes > c->max_bytes && c->tail != NULL && c->tail != n) {
        e = c->tail;
        remove_at(c, find(c, e->hash, e->bytes, e->plen));
        c->evictions++;
    }
    return 0;
}

void
folio_ccache_drop(struct folio_ccache *c, const char *path, size_t plen)
{
    uint64_t h = folio_fnv1a64(path, plen);
    struct entry **pp = find(c, h, path, plen);

    c->stale[h & (STALE_SLOTS - 1)] = ++c->epoch;
    if (*pp != NULL)
        remove_at(c, pp);
}

void
folio_ccache_clear(struct folio_ccache *c)
{
    struct entry *e, *next;

    for (e = c->head; e != NULL; e = next) {
        next = e->next;
        folio_free(e);
    }
    memset(c->buckets, 0, ((size_t)c->mask + 1) * sizeof(*c->buckets));
    c->head = c->tail = NULL;
    c->entries = 0;
    c->bytes = 0;
    c->all_epoch = ++c->epoch;
}

uint64_t
folio_ccache_epoch(const struct folio_ccache *c)
{
    return c->epoch;
}

int
folio_ccache_fresh(const struct folio_ccache *c, const char *path, size_t plen,
                   uint64_t since)
{
    uint64_t h = folio_fnv1a64(path, plen);

    return c->all_epoch <= since && c->stale[h & (STALE_SLOTS - 1)] <= since;
}

void
folio_ccache_info(const struct folio_ccache *c, struct folio_ccache_info *out)
{
    out->entries = c->entries;
    out->bytes = c->bytes;
    out->max_bytes = c->max_bytes;
    out->evictions = c->evictions;
}
