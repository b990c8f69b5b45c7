/*
 * stats.c - the shared stats region (see stats.h).  Mapped once by the
 * master before fork, like nginx's ngx_shm_alloc; backed by a memory file
 * so that the master's next image (an upgrade by re-exec) maps the same
 * pages.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/stats.h"
#include "src/alloc.h"
#include "src/log.h"

/* The mapping: header, retired slot, then one slot per process. */
struct stats_map {
    struct folio_stats_header sm_header;
    struct folio_worker_slot sm_retired;
    struct folio_worker_slot sm_slots[];
};

struct folio_stats_region {
    struct stats_map *sr_map;
    struct folio_worker_slot *sr_slots;
    unsigned sr_nslots;
    size_t sr_bytes;
    int sr_fd; /* the memory file, or -1 */
};

static size_t
region_bytes(unsigned nslots)
{
    return sizeof(struct stats_map) +
           (size_t)nslots * sizeof(struct folio_worker_slot);
}

static int
map_region(struct folio_stats_region *r, int fd)
{
    void *p;

    p = mmap(NULL, r->sr_bytes, PROT_READ | PROT_WRITE,
             fd != -1 ? MAP_SHARED : MAP_SHARED | MAP_ANONYMOUS, fd, 0);
    if (p == MAP_FAILED) {
        if (fd != -1)
            folio_log_error("mmap(MAP_SHARED, %zu, memfd %d)", r->sr_bytes,
                            fd);
        else
            folio_log_error("mmap(MAP_SHARED|MAP_ANONYMOUS, %zu)",
                            r->sr_bytes);
        return FOLIO_ESYS;
    }
    r->sr_map = p;
    r->sr_slots = r->sr_map->sm_slots;
    r->sr_fd = fd;
    return 0;
}

int
folio_stats_create(unsigned nslots, struct folio_stats_region **out)
{
    struct folio_stats_region *r;
    int fd, rc;

    if (nslots == 0 || nslots > FOLIO_MAX_SLOTS)
        return FOLIO_EINVAL;
    if ((r = folio_calloc(1, sizeof(*r))) == NULL)
        return FOLIO_ENOMEM;
    r->sr_bytes = region_bytes(nslots);
    /* A file of its own, so that an upgraded master can map it again. */
    if ((fd = memfd_create("folio-stats", MFD_CLOEXEC)) != -1 &&
        ftruncate(fd, (off_t)r->sr_bytes) == -1) {
        folio_log_error("ftruncate(memfd, %zu)", r->sr_bytes);
        close(fd);
        fd = -1;
    }
    if ((rc = map_region(r, fd)) != 0) {
        if (fd != -1)
            close(fd);
        folio_free(r);
        return rc;
    }
    r->sr_nslots = nslots;
    folio_stat_set(&r->sr_map->sm_header.sh_nslots, nslots);
    *out = r;
    return 0;
}

int
folio_stats_attach(int fd, struct folio_stats_region **out)
{
    struct folio_stats_region *r;
    struct stat st;
    uint64_t n;
    int rc;

    if (fstat(fd, &st) == -1) {
        folio_log_error("fstat(stats memfd %d)", fd);
        return FOLIO_ESYS;
    }
    if ((size_t)st.st_size < sizeof(struct stats_map))
        return FOLIO_ECORRUPT;
    if ((r = folio_calloc(1, sizeof(*r))) == NULL)
        return FOLIO_ENOMEM;
    r->sr_bytes = (size_t)st.st_size;
    if ((rc = map_region(r, fd)) != 0) {
        folio_free(r);
        return rc;
    }
    n = folio_stat_get(&r->sr_map->sm_header.sh_nslots);
    if (n == 0 || n > FOLIO_MAX_SLOTS || region_bytes((unsigned)n) != r->sr_bytes) {
        r->sr_fd = -1; /* the caller keeps its descriptor on failure */
        folio_stats_destroy(r);
        return FOLIO_ECORRUPT;
    }
    r->sr_nslots = (unsigned)n;
    *out = r;
    return 0;
}

int
folio_stats_fd(const struct folio_stats_region *r)
{
    return r->sr_fd;
}

void
folio_stats_destroy(struct folio_stats_region *r)
{
    if (r == NULL)
        return;
    munmap(r->sr_map, r->sr_bytes);
    if (r->sr_fd != -1)
        close(r->sr_fd);
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

struct folio_stats_header *
folio_stats_header_of(struct folio_stats_region *r)
{
    return &r->sr_map->sm_header;
}

struct folio_worker_slot *
folio_stats_retired(struct folio_stats_region *r)
{
    return &r->sr_map->sm_retired;
}

/*
 * The lists as tables (f: field, k: key, kd: kind, u: unit, t: total,
 * w: worker, l: label, h: help).
 */
const struct folio_stat_desc folio_worker_stat_descs[] = {
#define DESC(f, k, kd, u, t, w, l, h)                                          \
    {.key = k,                                                                 \
     .total = t,                                                               \
     .worker = w,                                                              \
     .label = l,                                                               \
     .help = h,                                                                \
     .kind = kd,                                                               \
     .unit = u,                                                                \
     .off = offsetof(struct folio_worker_slot, ws_##f)},
    FOLIO_WORKER_STATS(DESC)
#undef DESC
};
const unsigned folio_worker_nstats =
    sizeof(folio_worker_stat_descs) / sizeof(folio_worker_stat_descs[0]);

const struct folio_stat_desc folio_server_stat_descs[] = {
#define DESC(f, k, kd, fam, h)                                                 \
    {.key = k,                                                                 \
     .total = fam,                                                             \
     .worker = NULL,                                                           \
     .label = "",                                                              \
     .help = h,                                                                \
     .kind = kd,                                                               \
     .unit = FOLIO_SU_ONE,                                                     \
     .off = offsetof(struct folio_stats_header, sh_##f)},
    FOLIO_SERVER_STATS(DESC)
#undef DESC
};
const unsigned folio_server_nstats =
    sizeof(folio_server_stat_descs) / sizeof(folio_server_stat_descs[0]);

static _Atomic uint64_t *
stat_at(void *base, const struct folio_stat_desc *d)
{
    return (_Atomic uint64_t *)((char *)base + d->off);
}

uint64_t
folio_stat_raw(const void *base, const struct folio_stat_desc *d)
{
    return folio_stat_get(
        (const _Atomic uint64_t *)((const char *)base + d->off));
}

double
folio_stat_base_units(const struct folio_stat_desc *d, uint64_t raw)
{
    switch (d->unit) {
    case FOLIO_SU_US:
        return (double)raw / 1e6;
    case FOLIO_SU_KIB:
        return (double)raw * 1024;
    }
    return (double)raw;
}

static inline void
add(_Atomic uint64_t *acc, const _Atomic uint64_t *v)
{
    folio_stat_add(acc, folio_stat_get(v));
}

void
folio_stats_sum(struct folio_worker_slot *acc,
                const struct folio_worker_slot *s, int gauges)
{
    unsigned r, k;
    uint64_t v;

    for (k = 0; k < folio_worker_nstats; k++) {
        const struct folio_stat_desc *d = &folio_worker_stat_descs[k];

        v = folio_stat_raw(s, d);
        if (d->kind == FOLIO_SK_COUNTER ||
            (gauges && d->kind != FOLIO_SK_SHARED))
            folio_stat_add(stat_at(acc, d), v);
        else if (gauges && v > folio_stat_raw(acc, d))
            folio_stat_set(stat_at(acc, d), v);
    }
    /* Every request is timed (dispatch.c): none, no histogram to add. */
    if (folio_stat_get(&s->ws_requests) +
            folio_stat_get(&s->ws_notifications) !=
        0) {
        add(&acc->ws_queue_ns, &s->ws_queue_ns);
        for (k = 0; k < FOLIO_LAT_BUCKETS; k++)
            add(&acc->ws_queue_hist[k], &s->ws_queue_hist[k]);
    }
    for (r = 0; r < FOLIO_METHOD_ROWS; r++) {
        const struct folio_method_stats *sm = &s->ws_methods[r];
        struct folio_method_stats *am = &acc->ws_methods[r];
        uint64_t calls = 0;

        for (k = 0; k < FOLIO_ST_MAX; k++)
            calls += folio_stat_get(&sm->ms_codes[k]);
        if (calls == 0)
            continue; /* most rows are empty: skip the histogram */
        for (k = 0; k < FOLIO_ST_MAX; k++)
            add(&am->ms_codes[k], &sm->ms_codes[k]);
        add(&am->ms_ns, &sm->ms_ns);
        for (k = 0; k < FOLIO_LAT_BUCKETS; k++)
            add(&am->ms_hist[k], &sm->ms_hist[k]);
    }
}

void
folio_stats_fold(struct folio_stats_region *r, unsigned i)
{
    struct folio_stats_header *h = &r->sr_map->sm_header;
    struct folio_worker_slot *s = &r->sr_slots[i];

    atomic_fetch_add_explicit(&h->sh_seq, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    folio_stats_sum(&r->sr_map->sm_retired, s, 0);
    memset(s, 0, sizeof(*s));
    atomic_thread_fence(memory_order_seq_cst);
    atomic_fetch_add_explicit(&h->sh_seq, 1, memory_order_relaxed);
}

void
folio_stats_total(struct folio_stats_region *r, struct folio_worker_slot *acc)
{
    struct folio_stats_header *h = &r->sr_map->sm_header;
    uint64_t seq;
    unsigned i, tries;

    for (tries = 0;; tries++) {
        seq = atomic_load_explicit(&h->sh_seq, memory_order_acquire);
        memset(acc, 0, sizeof(*acc));
        if (seq & 1) {
            if (tries < 1000)
                continue;
        }
        atomic_thread_fence(memory_order_seq_cst);
        folio_stats_sum(acc, &r->sr_map->sm_retired, 0);
        for (i = 0; i < r->sr_nslots; i++)
            if (folio_stat_get(&r->sr_slots[i].ws_pid) != 0)
                folio_stats_sum(acc, &r->sr_slots[i], 1);
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&h->sh_seq, memory_order_acquire) == seq ||
            tries >= 1000)
            return;
    }
}

/*
 * Each state's number is one of 1 .. FOLIO_WS_NSTATES - 1, and the switch
 * below refuses two of one number: arrays of FOLIO_WS_NSTATES hold them.
 */
#define IN_RANGE(NAME, value, count, name, help)                               \
    _Static_assert(value > 0 && value < FOLIO_WS_NSTATES,                      \
                   "FOLIO_WS_" #NAME " out of range");
FOLIO_WORKER_STATE_LIST(IN_RANGE)
#undef IN_RANGE

const char *
folio_stats_state_name(unsigned state)
{
    /* A switch: two states of one number do not compile. */
    switch (state) {
    case FOLIO_WS_FREE:
        return "free";
#define CASE(NAME, value, count, name, help)                                   \
    case FOLIO_WS_##NAME:                                                      \
        return name;
        FOLIO_WORKER_STATE_LIST(CASE)
#undef CASE
    }
    return "unknown";
}
