/*
 * prof.h - the sampling profiler of one foliod process (a worker, or the
 * master itself): CPU samples on SIGPROF, heap samples in the malloc
 * interposer (src/alloc.c), and their profile.proto; and the symbolizer
 * that names the profiles' addresses (function, file:line, inlined
 * frames; see prof_sym.c), so that pprof needs neither the binary nor its
 * debug files.
 *
 * A process's profile holds addresses only, with the mappings they fall
 * in (file, build id): building it reads the tables and nothing else, so
 * that a worker's loop stops for well under a millisecond.  The master
 * names them (folio_prof_symbolize): it is idle, holds the same binary
 * and libraries at the same addresses (the workers are its forks), and
 * keeps what it looked up between profiles.
 *
 * CPU: setitimer(ITIMER_PROF) at `hz` per second of CPU time (user and
 * system) of this process; timers are not inherited across fork(), so
 * each worker starts its own.  The SIGPROF handler runs in signal
 * context: it takes the stack with glibc's backtrace() (DWARF CFI through
 * every library, warmed up by folio_prof_init so that it never loads or
 * allocates then) and counts it in a table mapped at start; nothing there
 * allocates.  Stacks are of user space only: time in the kernel is
 * charged to the function that entered it (a system call's libc
 * wrapper); each profile says how much of its time that was.
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
 * folio_prof_after_fork - in a child, first thing: draw its own random
 * sampling intervals (the parent's would repeat in every worker) and
 * forget every sample of the parent's, CPU and heap: what the master
 * allocated before the fork (the corpus image, the tables, its
 * configuration) is the master's profile's, never charged to a worker.
 * Heap sampling goes on at the parent's rate.
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
 * cpu/nanoseconds; locations are addresses in this process's mappings
 * (with build ids), not yet named: see folio_prof_symbolize.  Releases
 * the samples.  Returns 0, FOLIO_EINVAL (nothing was sampled: no start)
 * or FOLIO_ENOMEM; on failure p is empty.
 */
int folio_prof_cpu_profile(struct folio_pprof *p);

/*
 * folio_prof_heap_profile - the heap samples as a profile (p initialized
 * here), addresses as above: alloc_objects/count, alloc_space/bytes,
 * inuse_objects/count, inuse_space/bytes, scaled to estimate every
 * allocation (Go's scaling), the default type inuse_space, or
 * alloc_space when `allocs`.  Stacks start in the allocator: the
 * symbolizer trims its frames.  Returns 0 or FOLIO_ENOMEM.
 */
int folio_prof_heap_profile(struct folio_pprof *p, int allocs);

/*
 * folio_prof_self_begin, _end - around the profiler's own work (building,
 * merging, naming and encoding profiles): the allocations in between are
 * not sampled, so that no profile shows the profiler.  They nest.
 */
void folio_prof_self_begin(void);
void folio_prof_self_end(void);

/*
 * The symbolizer: names for the addresses of profiles taken in this
 * process or in its forks (the master names its workers').  What it
 * reads (libdw's view of each file, every address it named) is kept
 * until folio_prof_syms_free, so that a profile costs the lookups of the
 * addresses no earlier profile had.  Debug files are looked up by build
 * id under /usr/lib/debug only, never over the network (debuginfod).
 *
 * folio_prof_syms_new - an empty one.  Returns 0 or FOLIO_ENOMEM.
 * folio_prof_syms_free - release it; accepts NULL.
 */
struct folio_prof_syms;
int folio_prof_syms_new(struct folio_prof_syms **out);
void folio_prof_syms_free(struct folio_prof_syms *s);

#define FOLIO_PROF_SYM_HEAP 0x1 /* trim the allocator's frames off stacks */

/*
 * folio_prof_symbolize - name every location of p that has no lines yet:
 * the function, file and line of its address, with a line per frame
 * inlined there, innermost first (what `eu-addr2line -i` prints), from
 * the DWARF of its mapping's file, else its ELF symbols, else
 * "file+0xSTART" (the function's start, from its unwind table).  A
 * mapping is read from this process when it has the same file at the
 * same place, else from the file on disk if its build id matches.
 * FOLIO_PROF_SYM_HEAP: each stack then starts at the allocator's caller.
 * Adds comments: what the naming cost, and which files lack symbols.
 * Counts into folio_prof_sym_lookups.  Its allocations are sampled unless
 * the caller is between folio_prof_self_begin and _end (the master's
 * profile.c is).  Returns 0 or FOLIO_ENOMEM.
 */
int folio_prof_symbolize(struct folio_prof_syms *s, struct folio_pprof *p,
                         unsigned flags);

/*
 * folio_prof_sym_lookups - addresses this process has named since it
 * started (or since its fork: a worker's stays 0, its profiles are
 * named by the master).
 */
uint64_t folio_prof_sym_lookups(void);

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
