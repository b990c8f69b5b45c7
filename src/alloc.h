/*
 * alloc.h - heap allocation, counted.
 *
 * Every heap allocation of a folio process is counted into the process's
 * current counter block (a worker points it at its stats slot).  In normal
 * builds the malloc family itself is interposed (glibc supports replacing
 * malloc: alloc.c forwards to __libc_malloc and friends), so the counts see
 * libevent, msgpack-c, LMDB and libc too.  Sanitizer builds cannot
 * interpose (ASan owns malloc): there only folio_malloc() and libevent
 * (routed through event_set_mem_functions) are counted.
 */
#ifndef FOLIO_ALLOC_H
#define FOLIO_ALLOC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Counters written by one process only; read by anyone (relaxed). */
struct folio_alloc_counters {
    _Atomic uint64_t ac_calls; /* malloc, calloc, realloc, memalign... */
    _Atomic uint64_t ac_bytes; /* usable bytes handed out */
    _Atomic uint64_t ac_frees; /* free() of a non-NULL pointer */
    _Atomic uint64_t ac_freed_bytes;
};

/*
 * folio_alloc_use - count this thread's allocations into `c` from now on
 * (NULL: back to the thread's own block).  `c` must stay mapped.  Every
 * other thread counts into a block of its own: one writer per block.
 */
void folio_alloc_use(struct folio_alloc_counters *c);

/*
 * Heap sampling hooks, installed by the profiler (src/prof/prof.c) and only
 * there; in builds configured --disable-profiling they are never called.
 * Every counted allocation subtracts its usable size from fs_left and
 * calls fs_sample(block, size) once that goes below zero (fs_sample sets
 * the next interval); every counted free calls fs_freed(address, size)
 * while fs_live (sampled blocks not yet freed) is not zero.  Plain
 * fields, one set per thread: the thread that installs the hooks is
 * the one sampled (a worker's loop); others sample nothing.
 */
struct folio_alloc_sampler {
    int64_t fs_left;
    uint64_t fs_live;
    void (*fs_sample)(void *p, size_t n);
    void (*fs_freed)(uintptr_t p, size_t n); /* the block's address */
};
extern __thread struct folio_alloc_sampler folio_alloc_sampler
    __attribute__((tls_model("initial-exec")));

/* folio_alloc_current - the block being counted into.  Never NULL. */
struct folio_alloc_counters *folio_alloc_current(void);

/* folio_alloc_interposed - 1 if the malloc family is counted, 0 if only folio_malloc. */
int folio_alloc_interposed(void);

/*
 * folio_alloc_route_libevent - make libevent allocate through folio_malloc
 * (needed only where the malloc family is not interposed).  Call before
 * any other libevent function.
 */
void folio_alloc_route_libevent(void);

void *folio_malloc(size_t n);
void *folio_calloc(size_t nmemb, size_t size);
void *folio_realloc(void *p, size_t n);
char *folio_strdup(const char *s);
char *folio_strndup(const char *s, size_t n);
void folio_free(void *p);

#endif
