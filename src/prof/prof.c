/*
 * prof.c - CPU and heap sampling (see prof.h), and their profiles, as
 * addresses in this process's mappings (prof_sym.c names them).
 *
 * Stacks are counted in tables mapped with mmap (never malloc: the heap
 * sampler runs inside malloc, the CPU sampler in a signal handler): an
 * open-addressing table of distinct stacks whose frames are appended to
 * one array.  The CPU table is mapped at each start and unmapped when its
 * profile is taken; the heap table lives as long as heap sampling is on,
 * with a second table of the sampled blocks still allocated.  A child
 * maps tables of its own at fork (folio_prof_after_fork).
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>

#include <errno.h>
#include <execinfo.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "src/alloc.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/hash.h"
#include "src/prof/pprof.h"
#include "src/prof/prof.h"
#include "src/prof/prof_int.h"

#define CPU_SLOTS 16384           /* distinct stacks of one CPU profile */
#define HEAP_SLOTS 16384          /* distinct stacks of sampled blocks */
#define FRAMES_PER_SLOT 24        /* frames array: mean depth budget */
#define LIVE_SLOTS 65536          /* sampled blocks not yet freed */

struct slot {
    uint64_t hash;
    uint32_t off;   /* frames[off .. off + depth) */
    uint16_t depth;
    uint8_t used;
    uint8_t leaf;   /* frames[off] is an exact PC (a CPU sample) */
    double v[4];    /* CPU: samples; heap: alloc n, bytes, inuse n, bytes */
};

struct table {
    struct slot *slots;
    uint32_t mask, used;
    uint64_t *frames;
    uint32_t frames_cap, frames_used;
    uint64_t dropped;
    size_t slots_len, frames_len;
};

struct live {
    uintptr_t ptr; /* 0: empty */
    uint32_t slot;
    uint32_t pad;
    double w;      /* the sample's weight (1 / probability) */
    uint64_t size;
};

static struct {
    struct table tab;
    volatile sig_atomic_t active;
    unsigned hz;
    uint64_t start_unix_ns, start_mono_ns, stop_mono_ns;
    uint64_t samples, unwind_ns;
    /* Samples that hit the heap sampler's own unwinding (see heap_sample):
     * waiting for its stack, and in all. */
    _Atomic uint32_t deferred;
    uint64_t deferred_total;
    struct rusage ru_start, ru_stop; /* the kernel's share of the time */
} cpu;

static struct {
    struct table tab;
    struct live *live;
    size_t live_len;
    uint32_t live_mask;
    uint64_t rate;
    uint64_t rng;
    uint64_t samples;
    uint64_t live_dropped;
} heap;

/* Set while the heap sampler takes a stack: SIGPROF defers its sample. */
static volatile sig_atomic_t unwinding;
/* Above 0 during the profiler's own work (folio_prof_self_begin): its
 * allocations are not sampled. */
static int self_depth;
static int initialized;

static void *
map_zeroed(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    return p == MAP_FAILED ? NULL : p;
}

static void
table_free(struct table *t)
{
    if (t->slots != NULL)
        munmap(t->slots, t->slots_len);
    if (t->frames != NULL)
        munmap(t->frames, t->frames_len);
    memset(t, 0, sizeof(*t));
}

static int
table_init(struct table *t, uint32_t nslots)
{
    memset(t, 0, sizeof(*t));
    t->slots_len = (size_t)nslots * sizeof(struct slot);
    t->frames_cap = nslots * FRAMES_PER_SLOT;
    t->frames_len = (size_t)t->frames_cap * sizeof(uint64_t);
    t->slots = map_zeroed(t->slots_len);
    t->frames = map_zeroed(t->frames_len);
    if (t->slots == NULL || t->frames == NULL) {
        table_free(t);
        return FOLIO_ENOMEM;
    }
    t->mask = nslots - 1;
    return 0;
}

/*
 * The slot counting stack pcs[0..n), added if new; NULL when the table
 * is full (counted in t->dropped).  Async-signal-safe: no allocation, no
 * lock.
 */
static struct slot *
table_find(struct table *t, const uint64_t *pcs, uint32_t n, int leaf)
{
    uint64_t h = folio_fnv1a64(pcs, n * sizeof(*pcs)) ^ (uint64_t)leaf;
    uint32_t k = (uint32_t)(h ^ (h >> 32)) & t->mask;
    struct slot *s;

    for (;;) {
        s = &t->slots[k];
        if (!s->used)
            break;
        if (s->hash == h && s->depth == n && s->leaf == leaf &&
            memcmp(t->frames + s->off, pcs, n * sizeof(*pcs)) == 0)
            return s;
        k = (k + 1) & t->mask;
    }
    /* A new stack: keep the table at most 3/4 full. */
    if (t->used >= t->mask / 4 * 3 || t->frames_cap - t->frames_used < n) {
        t->dropped++;
        return NULL;
    }
    memcpy(t->frames + t->frames_used, pcs, n * sizeof(*pcs));
    s->hash = h;
    s->off = t->frames_used;
    s->depth = (uint16_t)n;
    s->leaf = (uint8_t)leaf;
    s->used = 1;
    t->frames_used += n;
    t->used++;
    return s;
}

/* ------------------------------------------------------------------ */
/* Stacks                                                              */

static uintptr_t
context_pc(const void *ucv)
{
#if defined(__x86_64__)
    return (uintptr_t)((const ucontext_t *)ucv)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)((const ucontext_t *)ucv)->uc_mcontext.pc;
#else
    (void)ucv;
    return 0;
#endif
}

/*
 * The stack interrupted by a signal: backtrace() walks from the handler
 * through the signal frame (glibc's sigreturn trampoline has CFI) into
 * the interrupted code; everything before the interrupted PC is ours.
 */
static uint32_t
signal_stack(const void *ucv, uint64_t *pcs)
{
    void *buf[FOLIO_PROF_MAX_DEPTH + 8];
    uintptr_t pc = context_pc(ucv);
    int n, i, k;

    n = backtrace(buf, (int)(sizeof(buf) / sizeof(buf[0])));
    for (i = 0; i < n && (uintptr_t)buf[i] != pc; i++)
        ;
    if (i == n) {
        /* Not found (no PC on this architecture): skip handler + trampoline. */
        if (pc != 0 || n < 3) {
            pcs[0] = pc;
            return pc != 0 ? 1 : 0;
        }
        i = 2;
    }
    for (k = 0; i < n && k < FOLIO_PROF_MAX_DEPTH; i++, k++)
        pcs[k] = (uint64_t)(uintptr_t)buf[i];
    return (uint32_t)k;
}

static void
on_sigprof(int sig, siginfo_t *si, void *ucv)
{
    uint64_t pcs[FOLIO_PROF_MAX_DEPTH], t0;
    struct slot *s;
    uint32_t n;
    int saved = errno;

    (void)sig;
    (void)si;
    if (!cpu.active)
        goto out;
    cpu.samples++;
    if (unwinding) {
        /*
         * The heap sampler is taking a stack: unwinding again from here
         * would take the unwinder's lock twice.  Its stack is this one's
         * but for the unwinder's frames: heap_sample counts the sample
         * with it, once it has it.
         */
        atomic_fetch_add_explicit(&cpu.deferred, 1, memory_order_relaxed);
        cpu.deferred_total++;
        goto out;
    }
    t0 = folio_mono_ns();
    n = signal_stack(ucv, pcs);
    cpu.unwind_ns += folio_mono_ns() - t0;
    if (n > 0 && (s = table_find(&cpu.tab, pcs, n, 1)) != NULL)
        s->v[0] += 1;
out:
    errno = saved;
}

/* ------------------------------------------------------------------ */
/* CPU                                                                 */

int
folio_prof_cpu_start(unsigned hz)
{
    struct sigaction sa;
    struct itimerval it;
    int rc;

    if (cpu.active)
        return FOLIO_EAGAIN;
    if (hz < 1 || hz > 1000)
        return FOLIO_EINVAL;
    table_free(&cpu.tab);
    if ((rc = table_init(&cpu.tab, CPU_SLOTS)) != 0)
        return rc;
    cpu.hz = hz;
    cpu.samples = cpu.unwind_ns = cpu.deferred_total = 0;
    atomic_store(&cpu.deferred, 0);
    getrusage(RUSAGE_SELF, &cpu.ru_start);
    cpu.start_unix_ns = folio_unix_ns();
    cpu.start_mono_ns = folio_mono_ns();
    cpu.stop_mono_ns = 0;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    cpu.active = 1;
    if (sigaction(SIGPROF, &sa, NULL) != 0)
        goto fail;
    memset(&it, 0, sizeof(it));
    it.it_interval.tv_sec = 0;
    it.it_interval.tv_usec = (suseconds_t)(1000000 / hz);
    it.it_value = it.it_interval;
    if (setitimer(ITIMER_PROF, &it, NULL) != 0)
        goto fail;
    return 0;
fail:
    rc = errno;
    cpu.active = 0;
    signal(SIGPROF, SIG_IGN);
    table_free(&cpu.tab);
    errno = rc;
    return FOLIO_ESYS;
}

int
folio_prof_cpu_running(void)
{
    return cpu.active;
}

void
folio_prof_cpu_stop(void)
{
    struct itimerval it;

    if (!cpu.active)
        return;
    memset(&it, 0, sizeof(it));
    setitimer(ITIMER_PROF, &it, NULL);
    /* Ignored, not default: a SIGPROF still pending must not kill us. */
    signal(SIGPROF, SIG_IGN);
    cpu.active = 0;
    cpu.stop_mono_ns = folio_mono_ns();
    getrusage(RUSAGE_SELF, &cpu.ru_stop);
}

/* ------------------------------------------------------------------ */
/* Profiles                                                            */

#define MAX_MAPS 512 /* executable mappings of a profile */

/*
 * A profile being built: addresses to locations, each added once, in the
 * mapping that holds it (sorted by start, for a binary search).
 */
struct build {
    struct folio_pprof *p;
    uint64_t *key;  /* address + 1; 0: empty */
    uint32_t *val;  /* its location */
    uint32_t mask;
    struct {
        uint64_t start, limit;
        uint32_t index;
    } maps[MAX_MAPS];
    uint32_t nmaps;
};

static int
add_map(void *arg, const struct folio_prof_map *m)
{
    struct build *b = arg;
    int idx;

    if (b->nmaps == MAX_MAPS)
        return 1;
    if ((idx = folio_pprof_add_mapping(b->p, m->start, m->limit, m->offset,
                                       m->path, m->build_id)) < 0)
        return idx;
    /* Not named yet: prof_sym.c sets these when it has named them. */
    b->p->mappings[idx].has_functions = b->p->mappings[idx].has_filenames =
        b->p->mappings[idx].has_lines = b->p->mappings[idx].has_inline = 0;
    b->maps[b->nmaps].start = m->start;
    b->maps[b->nmaps].limit = m->limit;
    b->maps[b->nmaps].index = (uint32_t)idx;
    b->nmaps++;
    return 0;
}

static int
cmp_map(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b; /* each element starts with its start */

    return *x < *y ? -1 : *x > *y;
}

/* Ready to add stacks of at most `frames` frames in all. */
static int
build_begin(struct build *b, struct folio_pprof *p, uint32_t frames)
{
    uint32_t cap = 1024;
    int rc;

    while (cap < 2 * frames && cap < (1u << 30))
        cap *= 2;
    b->p = p;
    b->mask = cap - 1;
    b->key = folio_calloc(cap, sizeof(*b->key));
    b->val = folio_calloc(cap, sizeof(*b->val));
    if (b->key == NULL || b->val == NULL)
        return FOLIO_ENOMEM;
    if ((rc = folio_prof_each_map(add_map, b)) < 0)
        return rc;
    qsort(b->maps, b->nmaps, sizeof(b->maps[0]), cmp_map);
    return 0;
}

static void
build_end(struct build *b)
{
    folio_free(b->key);
    folio_free(b->val);
}

/* The location of address `addr` (a PC, or a return address - 1). */
static int64_t
location(struct build *b, uint64_t addr)
{
    uint32_t k = (uint32_t)((addr * 0x9E3779B97F4A7C15ull) >> 34) & b->mask;
    uint32_t lo = 0, hi = b->nmaps, mapping = 0;
    int idx;

    while (b->key[k] != 0 && b->key[k] != addr + 1)
        k = (k + 1) & b->mask;
    if (b->key[k] != 0)
        return b->val[k];
    /* Its mapping: the last starting at or below addr. */
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;

        if (b->maps[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && addr < b->maps[lo - 1].limit)
        mapping = b->maps[lo - 1].index + 1;
    if ((idx = folio_pprof_add_location(b->p, mapping, addr, NULL, 0)) < 0)
        return idx;
    b->key[k] = addr + 1;
    b->val[k] = (uint32_t)idx;
    return idx;
}

/*
 * Every slot of t as a sample of the profile, with values from
 * `values`.  A return address is looked up one byte back, inside the
 * call (what addr2line and pprof do).
 */
static int
add_stacks(struct build *b, const struct table *t,
           void (*values)(const struct slot *s, int64_t *v))
{
    uint32_t locs[FOLIO_PROF_MAX_DEPTH], i, k;
    int64_t v[4], l;
    int rc;

    for (i = 0; i <= t->mask; i++) {
        const struct slot *s = &t->slots[i];
        const uint64_t *pcs = t->frames + s->off;

        if (!s->used)
            continue;
        values(s, v);
        if (v[0] == 0 && (b->p->ntypes < 3 || v[2] == 0))
            continue; /* heap: nothing left to say about it */
        for (k = 0; k < s->depth; k++) {
            if ((l = location(b, s->leaf && k == 0 ? pcs[k] : pcs[k] - 1)) < 0)
                return (int)l;
            locs[k] = (uint32_t)l;
        }
        if ((rc = folio_pprof_add_sample(b->p, locs, s->depth, v, NULL, 0)) <
            0)
            return rc;
    }
    return 0;
}

static int64_t cpu_period;

static void
cpu_values(const struct slot *s, int64_t *v)
{
    v[0] = (int64_t)s->v[0];
    v[1] = (int64_t)s->v[0] * cpu_period;
}

/* Every profile starts the same way: types, mappings, the comments. */
static int
profile_begin(struct folio_pprof *p, struct build *b, const struct table *t)
{
    int rc;

    memset(b, 0, sizeof(*b));
    if ((rc = folio_pprof_init(p)) != 0)
        return rc;
    if ((rc = build_begin(b, p, t != NULL ? t->frames_used : 0)) != 0)
        return rc;
#ifdef FOLIO_SANITIZED
    if (folio_pprof_add_comment(
            p, "sanitizer build: malloc is not interposed; the heap "
               "samples cover folio_malloc() and libevent only") < 0)
        return FOLIO_ENOMEM;
#endif
    return 0;
}

static double
tv_s(const struct timeval *tv)
{
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

/* What sampling cost, and how much of the time the stacks cannot show. */
static int
cpu_comments(struct folio_pprof *p)
{
    double user = tv_s(&cpu.ru_stop.ru_utime) - tv_s(&cpu.ru_start.ru_utime);
    double sys = tv_s(&cpu.ru_stop.ru_stime) - tv_s(&cpu.ru_start.ru_stime);

    /* '#': for pprof -comments, not in the header of -top. */
    if (cpu.samples > 0 &&
        folio_pprof_add_comment(
            p, "# pid %ld: %llu samples, %.1f us per stack taken",
            (long)getpid(), (unsigned long long)cpu.samples,
            (double)cpu.unwind_ns / 1e3 /
                (double)(cpu.samples - cpu.deferred_total > 0
                             ? cpu.samples - cpu.deferred_total
                             : 1)) < 0)
        return FOLIO_ENOMEM;
    if (user + sys > 0 &&
        folio_pprof_add_comment(
            p,
            "# pid %ld: user-space stacks only: %.0f%% of its CPU time was "
            "in the kernel (getrusage)",
            (long)getpid(), 100.0 * sys / (user + sys)) < 0)
        return FOLIO_ENOMEM;
    if (cpu.tab.dropped > 0 &&
        folio_pprof_add_comment(p,
                                "%llu samples dropped: more distinct stacks "
                                "than the table holds (%u)",
                                (unsigned long long)cpu.tab.dropped,
                                CPU_SLOTS / 4 * 3) < 0)
        return FOLIO_ENOMEM;
    return 0;
}

int
folio_prof_cpu_profile(struct folio_pprof *p)
{
    struct build *b = NULL;
    uint64_t stop;
    int rc;

    memset(p, 0, sizeof(*p));
    if (cpu.tab.slots == NULL)
        return FOLIO_EINVAL;
    folio_prof_cpu_stop();
    folio_prof_self_begin();
    if ((b = folio_malloc(sizeof(*b))) == NULL) {
        rc = FOLIO_ENOMEM;
        goto done;
    }
    if ((rc = profile_begin(p, b, &cpu.tab)) != 0)
        goto done;
    cpu_period = 1000000000 / (int64_t)cpu.hz;
    if (folio_pprof_add_type(p, "samples", "count") < 0 ||
        folio_pprof_add_type(p, "cpu", "nanoseconds") < 0) {
        rc = FOLIO_ENOMEM;
        goto done;
    }
    p->period_type = p->types[1];
    p->period = cpu_period;
    p->time_nanos = (int64_t)cpu.start_unix_ns;
    stop = cpu.stop_mono_ns != 0 ? cpu.stop_mono_ns : folio_mono_ns();
    p->duration_nanos = (int64_t)(stop - cpu.start_mono_ns);
    if ((rc = add_stacks(b, &cpu.tab, cpu_values)) == 0)
        rc = cpu_comments(p);
done:
    if (b != NULL)
        build_end(b);
    folio_free(b);
    table_free(&cpu.tab);
    if (rc != 0)
        folio_pprof_free(p);
    folio_prof_self_end();
    return rc;
}

/*
 * CPU samples deferred while the heap sampler unwound (on_sigprof):
 * counted with the stack it took, which starts in heap_sample.  Called
 * with `unwinding` still set, so that no SIGPROF touches the table
 * meanwhile (one that comes now is deferred to the next heap sample).
 */
static void
cpu_take_deferred(void *const *buf, int n)
{
    uint64_t pcs[FOLIO_PROF_MAX_DEPTH];
    uint32_t d = atomic_exchange_explicit(&cpu.deferred, 0,
                                          memory_order_relaxed);
    struct slot *s;
    int k;

    if (d == 0 || !cpu.active || n <= 0)
        return;
    for (k = 0; k < n && k < FOLIO_PROF_MAX_DEPTH; k++)
        pcs[k] = (uint64_t)(uintptr_t)buf[k];
    if ((s = table_find(&cpu.tab, pcs, (uint32_t)k, 0)) != NULL)
        s->v[0] += d;
}

void
folio_prof_self_begin(void)
{
    self_depth++;
}

void
folio_prof_self_end(void)
{
    if (self_depth > 0)
        self_depth--;
}
/* ------------------------------------------------------------------ */
/* Heap                                                                */

static uint64_t
rng_next(void)
{
    uint64_t x = heap.rng;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    heap.rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Bytes to the next sample: exponential with mean heap.rate. */
static int64_t
next_interval(void)
{
    double u = ((double)(rng_next() >> 11) + 1.0) / 9007199254740993.0;
    double x = -log(u) * (double)heap.rate;

    return x >= 4e18 ? (int64_t)4e18 : (int64_t)x;
}

static uint32_t
live_hash(uintptr_t p)
{
    uint64_t h = (uint64_t)p * 0x9E3779B97F4A7C15ull;

    return (uint32_t)(h >> 32) & heap.live_mask;
}

/* Remember a sampled block until its free; 0 when the table is full. */
static int
live_put(uintptr_t p, uint32_t slot, double w, uint64_t size)
{
    uint32_t k = live_hash(p);

    if (folio_alloc_sampler.fs_live >= heap.live_mask / 4 * 3) {
        heap.live_dropped++;
        return 0;
    }
    while (heap.live[k].ptr != 0 && heap.live[k].ptr != p)
        k = (k + 1) & heap.live_mask;
    if (heap.live[k].ptr == 0) {
        folio_alloc_sampler.fs_live++;
    } else {
        /* Its free went uncounted: that block is gone. */
        struct slot *old = &heap.tab.slots[heap.live[k].slot];

        old->v[2] -= heap.live[k].w;
        old->v[3] -= heap.live[k].w * (double)heap.live[k].size;
    }
    heap.live[k].ptr = p;
    heap.live[k].slot = slot;
    heap.live[k].w = w;
    heap.live[k].size = size;
    return 1;
}

/* Remove entry k, shifting later entries of its run back (no tombstones). */
static void
live_del(uint32_t k)
{
    uint32_t j = k, h;

    heap.live[k].ptr = 0;
    for (;;) {
        j = (j + 1) & heap.live_mask;
        if (heap.live[j].ptr == 0)
            break;
        h = live_hash(heap.live[j].ptr);
        /* Move j to k if its home is not in (k, j]. */
        if ((j > k && (h <= k || h > j)) || (j < k && h <= k && h > j)) {
            heap.live[k] = heap.live[j];
            heap.live[j].ptr = 0;
            k = j;
        }
    }
    folio_alloc_sampler.fs_live--;
}

/* The allocator calls this when the interval is used up (see alloc.h). */
__attribute__((noinline)) static void
heap_sample(void *ptr, size_t size)
{
    void *buf[FOLIO_PROF_MAX_DEPTH + 1];
    uint64_t pcs[FOLIO_PROF_MAX_DEPTH];
    struct slot *s;
    double w;
    int n, i;

    folio_alloc_sampler.fs_left = next_interval();
    if (unwinding || self_depth > 0 || heap.rate == 0)
        return; /* the profiler's own allocation: not sampled */
    unwinding = 1;
    n = backtrace(buf, (int)(sizeof(buf) / sizeof(buf[0])));
    if (atomic_load_explicit(&cpu.deferred, memory_order_relaxed) != 0)
        cpu_take_deferred(buf, n);
    unwinding = 0;
    /* buf[0] is here, in heap_sample: start at the allocator. */
    for (i = 1; i < n; i++)
        pcs[i - 1] = (uint64_t)(uintptr_t)buf[i];
    heap.samples++;
    if (n < 2 || (s = table_find(&heap.tab, pcs, (uint32_t)n - 1, 0)) == NULL)
        return;
    /* P(sampled) = 1 - exp(-size/rate): each sample stands for 1/P. */
    w = 1.0 / -expm1(-(double)size / (double)heap.rate);
    s->v[0] += w;
    s->v[1] += w * (double)size;
    /* In use only if its free can be seen. */
    if (live_put((uintptr_t)ptr, (uint32_t)(s - heap.tab.slots), w, size)) {
        s->v[2] += w;
        s->v[3] += w * (double)size;
    }
}

static void
heap_freed(uintptr_t ptr, size_t size)
{
    uint32_t k = live_hash(ptr);
    struct slot *s;

    (void)size;
    while (heap.live[k].ptr != 0) {
        if (heap.live[k].ptr == ptr) {
            s = &heap.tab.slots[heap.live[k].slot];
            s->v[2] -= heap.live[k].w;
            s->v[3] -= heap.live[k].w * (double)heap.live[k].size;
            if (s->v[2] < 1e-9)
                s->v[2] = s->v[3] = 0;
            live_del(k);
            return;
        }
        k = (k + 1) & heap.live_mask;
    }
}

static void
heap_off(void)
{
    folio_alloc_sampler.fs_sample = NULL;
    folio_alloc_sampler.fs_freed = NULL;
    folio_alloc_sampler.fs_live = 0;
    folio_alloc_sampler.fs_left = INT64_MAX;
    table_free(&heap.tab);
    if (heap.live != NULL)
        munmap(heap.live, heap.live_len);
    heap.live = NULL;
    heap.rate = 0;
}

uint64_t
folio_prof_heap_rate(uint64_t rate)
{
    uint64_t old = heap.rate;

    if (rate == 0) {
        heap_off();
        return old;
    }
    if (heap.live == NULL) {
        heap.live_len = (size_t)LIVE_SLOTS * sizeof(struct live);
        if (table_init(&heap.tab, HEAP_SLOTS) != 0 ||
            (heap.live = map_zeroed(heap.live_len)) == NULL) {
            heap_off();
            return old;
        }
        heap.live_mask = LIVE_SLOTS - 1;
    }
    heap.rate = rate;
    folio_alloc_sampler.fs_left = next_interval();
    folio_alloc_sampler.fs_freed = heap_freed;
    folio_alloc_sampler.fs_sample = heap_sample;
    return old;
}

void
folio_prof_heap_reset(void)
{
    uint32_t i;

    if (heap.tab.slots == NULL)
        return;
    for (i = 0; i <= heap.tab.mask; i++) {
        heap.tab.slots[i].v[0] = 0;
        heap.tab.slots[i].v[1] = 0;
    }
}

static void
heap_values(const struct slot *s, int64_t *v)
{
    int k;

    for (k = 0; k < 4; k++)
        v[k] = (int64_t)llround(s->v[k]);
}

int
folio_prof_heap_profile(struct folio_pprof *p, int allocs)
{
    struct build *b;
    int rc;

    memset(p, 0, sizeof(*p));
    folio_prof_self_begin();
    if ((b = folio_malloc(sizeof(*b))) == NULL) {
        folio_prof_self_end();
        return FOLIO_ENOMEM;
    }
    if ((rc = profile_begin(p, b, &heap.tab)) != 0)
        goto done;
    if (folio_pprof_add_type(p, "alloc_objects", "count") < 0 ||
        folio_pprof_add_type(p, "alloc_space", "bytes") < 0 ||
        folio_pprof_add_type(p, "inuse_objects", "count") < 0 ||
        folio_pprof_add_type(p, "inuse_space", "bytes") < 0) {
        rc = FOLIO_ENOMEM;
        goto done;
    }
    p->period_type.type = p->types[1].type;
    p->period_type.unit = p->types[1].unit;
    p->period = (int64_t)heap.rate;
    p->default_type = allocs ? p->types[1].type : p->types[3].type;
    p->time_nanos = (int64_t)folio_unix_ns();
    if (heap.rate == 0) {
        if (folio_pprof_add_comment(p, "heap sampling is off "
                                       "(profile_heap_rate = 0)") < 0)
            rc = FOLIO_ENOMEM;
        goto done;
    }
    rc = add_stacks(b, &heap.tab, heap_values);
    if (rc == 0 && heap.tab.dropped + heap.live_dropped > 0 &&
        folio_pprof_add_comment(p,
                                "%llu heap samples dropped: the tables are "
                                "full",
                                (unsigned long long)(heap.tab.dropped +
                                                     heap.live_dropped)) < 0)
        rc = FOLIO_ENOMEM;
done:
    build_end(b);
    folio_free(b);
    if (rc != 0)
        folio_pprof_free(p);
    folio_prof_self_end();
    return rc;
}

/* ------------------------------------------------------------------ */

static void
seed(void)
{
    uint64_t ns = folio_mono_ns();

    heap.rng = ((uint64_t)getpid() << 32) ^ ns % 1000000000 ^
               (ns / 1000000000 * 0x9E3779B97F4A7C15ull);
    if (heap.rng == 0)
        heap.rng = 0x2545F4914F6CDD1DULL;
}

void
folio_prof_init(uint64_t heap_rate)
{
    void *warm[4];

    if (!initialized) {
        initialized = 1;
        seed();
        /* The first backtrace() loads libgcc_s (and allocates): now. */
        backtrace(warm, 4);
        folio_prof_maps_init();
    }
    folio_prof_heap_rate(heap_rate);
}

void
folio_prof_after_fork(void)
{
    uint64_t rate = heap.rate;

    seed();
    if (cpu.active)
        folio_prof_cpu_stop();
    table_free(&cpu.tab);
    atomic_store(&cpu.deferred, 0);
    cpu.samples = 0;
    /* The parent's heap samples are the parent's: fresh tables. */
    heap_off();
    heap.samples = 0;
    heap.live_dropped = 0;
    if (rate != 0)
        folio_prof_heap_rate(rate);
}

void
folio_prof_get_stats(struct folio_prof_stats *s)
{
    memset(s, 0, sizeof(*s));
    s->cpu_samples = cpu.samples;
    s->cpu_dropped = cpu.tab.dropped;
    s->cpu_unwind_ns = cpu.unwind_ns;
    s->heap_samples = heap.samples;
    s->heap_dropped = heap.tab.dropped + heap.live_dropped;
    s->heap_live = folio_alloc_sampler.fs_live;
    s->heap_rate = heap.rate;
}
