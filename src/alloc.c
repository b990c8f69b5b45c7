/*
 * alloc.c - counted heap allocation (see alloc.h).
 * The counters are the test oracle of the zero-allocation hot path
 * (STYLE.md section 5); like Redis's zmalloc, but counting what the
 * libraries allocate too, by interposing the malloc family.
 */
#include "config.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "src/alloc.h"

#if !defined(FOLIO_SANITIZED) && defined(HAVE___LIBC_MALLOC) &&                   \
    defined(HAVE___LIBC_MEMALIGN) &&                    \
    defined(HAVE_MALLOC_USABLE_SIZE)
#define FOLIO_INTERPOSE 1
#endif

/*
 * Each thread counts into its block: a worker's loop into its stats slot
 * (folio_alloc_use), any other thread (the comments store's writer) into
 * a block of its own, so that every block keeps one writer.  The heap
 * sampler is per thread too: the profiler's is the loop's, and a thread
 * it never set up samples nothing.  initial-exec: the malloc path stays a
 * plain %fs-relative load.
 */
#define FOLIO_TLS __thread __attribute__((tls_model("initial-exec")))

static FOLIO_TLS struct folio_alloc_counters local_counters;
static FOLIO_TLS struct folio_alloc_counters *counters;

FOLIO_TLS struct folio_alloc_sampler folio_alloc_sampler = {INT64_MAX, 0, NULL,
                                                           NULL};

/* This thread's block: the one folio_alloc_use chose, else its own. */
static inline struct folio_alloc_counters *
block(void)
{
    struct folio_alloc_counters *c = counters;

    return c != NULL ? c : &local_counters;
}

#ifdef FOLIO_PROFILING
/* Between samples: one subtraction and a predictable branch. */
static inline void
sample_alloc(void *p, size_t n)
{
    if ((folio_alloc_sampler.fs_left -= (int64_t)n) < 0 &&
        folio_alloc_sampler.fs_sample != NULL)
        folio_alloc_sampler.fs_sample(p, n);
}

static inline void
sample_free(uintptr_t p, size_t n)
{
    if (folio_alloc_sampler.fs_live != 0)
        folio_alloc_sampler.fs_freed(p, n);
}
#else
#define sample_alloc(p, n) ((void)0)
#define sample_free(p, n) ((void)0)
#endif

/* One writer per block: a plain load and store, no locked instruction. */
static inline void
bump(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(
        c, atomic_load_explicit(c, memory_order_relaxed) + n,
        memory_order_relaxed);
}

static inline void
count_alloc(void *p)
{
    if (p != NULL) {
        size_t n = malloc_usable_size(p);

        struct folio_alloc_counters *c = block();

        bump(&c->ac_calls, 1);
        bump(&c->ac_bytes, n);
        sample_alloc(p, n);
    }
}

/*
 * A realloc is one allocation call; the old block counts as freed.  `p`
 * is the old block's address, taken before the realloc: only a number
 * once the block may be gone.
 */
static inline void
count_realloc(uintptr_t p, size_t old, void *q)
{
    struct folio_alloc_counters *c = block();
    size_t n;

    if (q == NULL)
        return;
    n = malloc_usable_size(q);
    bump(&c->ac_calls, 1);
    bump(&c->ac_bytes, n);
    if (p != 0) {
        bump(&c->ac_frees, 1);
        bump(&c->ac_freed_bytes, old);
        sample_free(p, old);
    }
    sample_alloc(q, n);
}

static inline void
count_free(void *p)
{
    if (p != NULL) {
        struct folio_alloc_counters *c = block();
        size_t n = malloc_usable_size(p);

        bump(&c->ac_frees, 1);
        bump(&c->ac_freed_bytes, n);
        sample_free((uintptr_t)p, n);
    }
}

void
folio_alloc_use(struct folio_alloc_counters *c)
{
    counters = c;
}

struct folio_alloc_counters *
folio_alloc_current(void)
{
    return block();
}

#ifdef FOLIO_INTERPOSE

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

/* glibc's documented way to replace malloc: define the whole family. */
void *malloc(size_t n);
void *calloc(size_t nmemb, size_t size);
void *realloc(void *p, size_t n);
void free(void *p);
void *memalign(size_t align, size_t n);
int posix_memalign(void **out, size_t align, size_t n);
void *aligned_alloc(size_t align, size_t n);
void *valloc(size_t n);
void *pvalloc(size_t n);

void *
malloc(size_t n)
{
    void *p = __libc_malloc(n);

    count_alloc(p);
    return p;
}

void *
calloc(size_t nmemb, size_t size)
{
    void *p = __libc_calloc(nmemb, size);

    count_alloc(p);
    return p;
}

void *
realloc(void *p, size_t n)
{
    size_t old = p != NULL ? malloc_usable_size(p) : 0;
    uintptr_t was = (uintptr_t)p;
    void *q;

    if (p != NULL && n == 0) {
        free(p);
        return NULL;
    }
    q = __libc_realloc(p, n);
    count_realloc(was, old, q);
    return q;
}

void
free(void *p)
{
    count_free(p);
    __libc_free(p);
}

void *
memalign(size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);

    count_alloc(p);
    return p;
}

int
posix_memalign(void **out, size_t align, size_t n)
{
    void *p;

    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    if ((p = memalign(align, n)) == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

void *
aligned_alloc(size_t align, size_t n)
{
    return memalign(align, n);
}

void *
valloc(size_t n)
{
    return memalign((size_t)sysconf(_SC_PAGESIZE), n);
}

void *
pvalloc(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);

    return memalign(pg, (n + pg - 1) & ~(pg - 1));
}

int
folio_alloc_interposed(void)
{
    return 1;
}

void
folio_alloc_route_libevent(void)
{
}

void *
folio_malloc(size_t n)
{
    return malloc(n);
}

void *
folio_calloc(size_t nmemb, size_t size)
{
    return calloc(nmemb, size);
}

void *
folio_realloc(void *p, size_t n)
{
    return realloc(p, n);
}

void
folio_free(void *p)
{
    free(p);
}

#else /* !FOLIO_INTERPOSE */

int
folio_alloc_interposed(void)
{
    return 0;
}

void *
folio_malloc(size_t n)
{
    void *p = malloc(n);

    count_alloc(p);
    return p;
}

void *
folio_calloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb, size);

    count_alloc(p);
    return p;
}

void *
folio_realloc(void *p, size_t n)
{
    size_t old = p != NULL ? malloc_usable_size(p) : 0;
    uintptr_t was = (uintptr_t)p;
    void *q;

    if (p != NULL && n == 0) {
        folio_free(p);
        return NULL;
    }
    q = realloc(p, n);
    count_realloc(was, old, q);
    return q;
}

void
folio_free(void *p)
{
    count_free(p);
    free(p);
}

void
folio_alloc_route_libevent(void)
{
    event_set_mem_functions(folio_malloc, folio_realloc, folio_free);
}

#endif /* FOLIO_INTERPOSE */

char *
folio_strdup(const char *s)
{
    return folio_strndup(s, strlen(s));
}

char *
folio_strndup(const char *s, size_t n)
{
    char *d;

    n = strnlen(s, n);
    if ((d = folio_malloc(n + 1)) == NULL)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}
