/*
 * comments_cache.c - the per-worker cache of encoded comment pages (see
 * comments_cache.h): a chained hash table of entries, each holding its
 * path and a reference to its reply (shared bytes), on a
 * least-recently-used list.
 */
#include "config.h"

#include <string.h>

#include "src/alloc.h"
#include "src/bytes.h"
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
    struct folio_bytes *reply; /* one reference */
    struct folio_bytes *extra; /* attached (folio_ccache_attach), or NULL */
    uint64_t hash;
    uint32_t plen;
    char path[];
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
    return sizeof(*e) + e->plen + folio_bytes_cost(e->reply) +
           (e->extra != NULL ? folio_bytes_cost(e->extra) : 0);
}

static void
entry_free(struct entry *e)
{
    folio_bytes_unref(e->reply);
    folio_bytes_unref(e->extra);
    folio_free(e);
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
            memcmp((*pp)->path, path, plen) == 0)
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
    entry_free(e);
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

struct folio_bytes *
folio_ccache_get(struct folio_ccache *c, const char *path, size_t plen)
{
    struct entry *e = *find(c, folio_fnv1a64(path, plen), path, plen);

    if (e == NULL)
        return NULL;
    if (c->head != e) {
        lru_unlink(c, e);
        lru_push(c, e);
    }
    return e->reply;
}

int
folio_ccache_put(struct folio_ccache *c, const char *path, size_t plen,
                 struct folio_bytes *reply)
{
    uint64_t h = folio_fnv1a64(path, plen);
    struct entry **pp, *e;
    uint64_t need = sizeof(*e) + plen + folio_bytes_cost(reply);

    if (need > c->max_bytes / 4 || plen > UINT32_MAX)
        return FOLIO_ETOOBIG;
    if (*(pp = find(c, h, path, plen)) != NULL)
        remove_at(c, pp);
    while (c->bytes + need > c->max_bytes && c->tail != NULL) {
        e = c->tail;
        remove_at(c, find(c, e->hash, e->path, e->plen));
        c->evictions++;
    }
    if ((e = folio_malloc(sizeof(*e) + plen)) == NULL)
        return FOLIO_ENOMEM;
    e->reply = folio_bytes_ref(reply);
    e->extra = NULL;
    e->hash = h;
    e->plen = (uint32_t)plen;
    memcpy(e->path, path, plen);
    pp = &c->buckets[h & c->mask];
    e->hnext = *pp;
    *pp = e;
    lru_push(c, e);
    c->entries++;
    c->bytes += need;
    return 0;
}

struct folio_bytes *
folio_ccache_get_extra(struct folio_ccache *c, const char *path, size_t plen)
{
    struct entry *e = *find(c, folio_fnv1a64(path, plen), path, plen);

    if (e == NULL || e->extra == NULL)
        return NULL;
    if (c->head != e) {
        lru_unlink(c, e);
        lru_push(c, e);
    }
    return e->extra;
}

int
folio_ccache_attach(struct folio_ccache *c, const char *path, size_t plen,
                    const void *reply, size_t len, const void *extra,
                    size_t elen)
{
    struct entry *e = *find(c, folio_fnv1a64(path, plen), path, plen);
    struct folio_bytes *b;
    uint64_t before;

    if (e == NULL || e->reply->fb_len != len ||
        memcmp(e->reply->fb_data, reply, len) != 0)
        return FOLIO_ENOTFOUND;
    if (elen == 0 ||
        cost(e) - (e->extra != NULL ? folio_bytes_cost(e->extra) : 0) +
                sizeof(*b) + elen >
            c->max_bytes / 4)
        return FOLIO_ETOOBIG;
    if (folio_bytes_copy(extra, elen, &b) != 0)
        return FOLIO_ENOMEM;
    before = cost(e);
    folio_bytes_unref(e->extra);
    e->extra = b;
    c->bytes += cost(e) - before;
    /* Room for it: evict from the other end, never the page itself. */
    while (c->bytes > c->max_bytes && c->tail != NULL && c->tail != e) {
        struct entry *t = c->tail;

        remove_at(c, find(c, t->hash, t->path, t->plen));
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
        entry_free(e);
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
