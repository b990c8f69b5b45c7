/*
 * prof_off.c - the profiler of a foliod configured --disable-profiling
 * (see prof.h): nothing samples, and every profile is refused.
 */
#include "config.h"

#include <string.h>

#include "src/err.h"
#include "src/prof/pprof.h"
#include "src/prof/prof.h"

void
folio_prof_init(uint64_t heap_rate)
{
    (void)heap_rate;
}

void
folio_prof_after_fork(void)
{
}

uint64_t
folio_prof_heap_rate(uint64_t rate)
{
    (void)rate;
    return 0;
}

void
folio_prof_heap_reset(void)
{
}

int
folio_prof_cpu_start(unsigned hz)
{
    (void)hz;
    return FOLIO_EINVAL;
}

int
folio_prof_cpu_running(void)
{
    return 0;
}

void
folio_prof_cpu_stop(void)
{
}

int
folio_prof_cpu_profile(struct folio_pprof *p)
{
    memset(p, 0, sizeof(*p));
    return FOLIO_EINVAL;
}

int
folio_prof_heap_profile(struct folio_pprof *p, int allocs)
{
    (void)allocs;
    memset(p, 0, sizeof(*p));
    return FOLIO_EINVAL;
}

void
folio_prof_self_begin(void)
{
}

void
folio_prof_self_end(void)
{
}

int
folio_prof_syms_new(struct folio_prof_syms **out)
{
    *out = NULL;
    return FOLIO_EINVAL;
}

void
folio_prof_syms_free(struct folio_prof_syms *s)
{
    (void)s;
}

int
folio_prof_symbolize(struct folio_prof_syms *s, struct folio_pprof *p,
                     unsigned flags)
{
    (void)s;
    (void)p;
    (void)flags;
    return FOLIO_EINVAL;
}

uint64_t
folio_prof_sym_lookups(void)
{
    return 0;
}

void
folio_prof_get_stats(struct folio_prof_stats *s)
{
    memset(s, 0, sizeof(*s));
}
