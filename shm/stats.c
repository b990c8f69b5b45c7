/*
 * stats.c - the shared stats region (see stats.h).  Mapped once by the
 * master before fork, like nginx's ngx_shm_alloc.
 */
#include "config.h"

#include <sys/mman.h>

#include <stdlib.h>
#include <string.h>

#include "shm/stats.h"
#include "src/alloc.h"
#include "src/log.h"

struct folio_stats_region {
    struct folio_worker_slot *sr_slots;
    unsigned sr_nslots;
    size_t sr_bytes;
};

int
folio_stats_create(unsigned nslots, struct folio_stats_region **out)
{
    struct folio_stats_region *r;
    void *p;

    if (nslots == 0 || nslots > FOLIO_MAX_SLOTS)
        return FOLIO_EINVAL;
    if ((r = folio_calloc(1, sizeof(*r))) == NULL)
        return FOLIO_ENOMEM;
    r->sr_bytes = (size_t)nslots * sizeof(struct folio_worker_slot);
    p = mmap(NULL, r->sr_bytes, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        folio_log_error("mmap(MAP_SHARED|MAP_ANONYMOUS, %zu)", r->sr_bytes);
        folio_free(r);
        return FOLIO_ESYS;
    }
    r->sr_slots = p;
    r->sr_nslots = nslots;
    *out = r;
    return 0;
}

void
folio_stats_destroy(struct folio_stats_region *r)
{
    if (r == NULL)
        return;
    munmap(r->sr_slots, r->sr_bytes);
    folio_free(r);
}

unsigned
folio_stats_nslots(const struct folio_stats_region *r)
{
    return r->sr_nslots;
}

struct folio_worker_slot *
folio_stats_slot(struct folio_stats_region *r, unsigned i)
{
    return i < r->sr_nslots ? &r->sr_slots[i] : NULL;
}
