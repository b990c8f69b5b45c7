/*
 * prof_int.h - what the sampler (prof.c) and the symbolizer
 * (prof_sym.c) share.  Included by those two only.
 */
#ifndef FOLIO_PROF_INT_H
#define FOLIO_PROF_INT_H

#include <stdint.h>

struct folio_pprof;
struct folio_prof_sym;

/*
 * folio_prof_sym_begin - a symbolizer for this process's current
 * mappings, adding mappings (the main executable first, with build ids)
 * to p.  Returns
 * 0 or FOLIO_ENOMEM; without libdw's help (no file, no debug
 * information) names fall back to "module+0xoffset".
 */
int folio_prof_sym_begin(struct folio_pprof *p, struct folio_prof_sym **out);

/*
 * folio_prof_sym_stack - the locations of `pcs` (n return addresses, the
 * first the interrupted or calling one: `leaf` says whether pcs[0] is an
 * exact PC) in p, each added once per profile, into locs.  Returns 0 or
 * FOLIO_ENOMEM.
 */
int folio_prof_sym_stack(struct folio_prof_sym *s, const uint64_t *pcs,
                         uint32_t n, int leaf, uint32_t *locs);

/* folio_prof_sym_end - release it, and what libdw read; accepts NULL. */
void folio_prof_sym_end(struct folio_prof_sym *s);

/* folio_prof_sym_outer_name - the outermost function name of location
 * `loc` of p ("" if none): what heap stacks are trimmed by. */
const char *folio_prof_sym_outer_name(const struct folio_pprof *p,
                                      uint32_t loc);

#endif
