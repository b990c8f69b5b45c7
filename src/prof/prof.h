/*
 * prof.h - the sampling profiler of one foliod process (a worker, or the
 * master itself): CPU samples on SIGPROF, heap samples in the malloc
 * interposer (src/alloc.c), and the profile.proto of either, symbolized
 * here (function, file:line, inlined frames; see prof_sym.c), so that
 * pprof needs neither the binary nor its debug files.
 *
 * CPU: setitimer(ITIMER_PROF) at `hz` per second of CPU time (user and
 * system) of this process; timers are not inherited across fork(), so
 * each worker starts its own.  The SIGPROF handler runs in signal
 * context: it takes the stack with glibc's backtrace() (DWARF CFI through
 * every library, warmed up by folio_prof_init so that it never loads or
 * allocates then) and counts it in a table mapped at start; nothing there
 * allocates.
 *
 * Heap: one sample every `rate` bytes allocated on average (exponential
 * intervals, as Go's runtime.MemProfileRate), with its stack; a freed
 * sampled block leaves the in-use counts.  Sampling costs nothing but a
 * subtraction per allocation between samples, and allocates nothing.
 *
 * foliod's processes are single-threaded: the profiler is too (a second
 * thread would only lose samples, never corrupt them).
 */
#ifndef FOLIO_PROF_H
#define FOLIO_PROF_H

#include <stdint.h>

struct folio_pprof;

#define FOLIO_PROF_HZ 100          /* CPU samples per second, as Go's */
#define FOLIO_PROF_MAX_DEPTH 64    /* frames kept of a stack */
#define FOLIO_PROF_HEAP_RATE 524288 /* default bytes between heap samples */

/*
 * folio_prof_init - make the process ready to sample: warm the unwinder
 * and hook the heap sampler into the allocator, sampling every `rate`
 * bytes (0: no heap sampling).  Call once, early in main(), before the
 * first fork; a second call only changes the rate (folio_prof_heap_rate).
 */
void folio_prof_init(uint64_t heap_rate);

/*
 * folio_prof_after_fork - in a child: draw its own random sampling
 * intervals (the parent's would repeat in every worker) and forget the
 * parent's CPU samples.  Heap samples of blocks inherited stay: those
 * blocks are in the child's heap too.
 */
void folio_prof_after_fork(void);

/*
 * folio_prof_heap_rate - sample every `rate` bytes from now on; 0 stops
 * heap sampling and forgets every heap sample.  Returns the old rate.
 */
uint64_t folio_prof_heap_rate(uint64_t rate);

/* folio_prof_heap_reset - forget allocations so far (alloc_* counts);
 * what is in use stays. */
void folio_prof_heap_reset(void);

/*
 * folio_prof_cpu_start - sample the CPU `hz` times a second until
 * folio_prof_cpu_stop.  Returns 0, FOLIO_EAGAIN (already sampling),
 * FOLIO_EINVAL (hz not in 1..1000), FOLIO_ENOMEM (mmap of the table) or
 * FOLIO_ESYS (sigaction or setitimer; errno set).
 */
int folio_prof_cpu_start(unsigned hz);

/* folio_prof_cpu_running - 1 between start and stop. */
int folio_prof_cpu_running(void);

/*
 * folio_prof_cpu_stop - stop sampling (the timer, then the handler); the
 * samples stay until folio_prof_cpu_profile or the next start.
 */
void folio_prof_cpu_stop(void);

/*
 * folio_prof_cpu_profile - the samples of the last start..stop as a
 * profile (p is initialized here): sample types samples/count and
 * cpu/nanoseconds, symbolized, with mappings and build ids.  Releases
 * the samples.  Returns 0, FOLIO_EINVAL (nothing was sampled: no start)
 * or FOLIO_ENOMEM; on failure p is empty.
 */
int folio_prof_cpu_profile(struct folio_pprof *p);

/*
 * folio_prof_heap_profile - the heap samples as a profile (p initialized
 * here): alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes, scaled to estimate every allocation (Go's
 * scaling), the default type inuse_space, or alloc_space when `allocs`.
 * Returns 0 or FOLIO_ENOMEM.
 */
int folio_prof_heap_profile(struct folio_pprof *p, int allocs);

/* Counters of the sampler itself, for tests and the profile's comments. */
struct folio_prof_stats {
    uint64_t cpu_samples;      /* taken since the last start */
    uint64_t cpu_dropped;      /* not stored: the table was full */
    uint64_t cpu_unwind_ns;    /* time spent taking stacks */
    uint64_t heap_samples;     /* since the process started */
    uint64_t heap_dropped;
    uint64_t heap_live;        /* sampled blocks not yet freed */
    uint64_t heap_rate;
};
void folio_prof_get_stats(struct folio_prof_stats *s);

#endif
