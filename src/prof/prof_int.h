/*
 * prof_int.h - what the sampler (prof.c) and the symbolizer
 * (prof_sym.c) both use: the executable mappings of this process
 * (prof_maps.c), read from the dynamic loader (dl_iterate_phdr), with
 * their build ids.  Included by those three only.
 */
#ifndef FOLIO_PROF_INT_H
#define FOLIO_PROF_INT_H

#include <stdint.h>

/* One executable segment of a loaded file, as /proc/self/maps shows it. */
struct folio_prof_map {
    uint64_t start, limit, offset; /* page-aligned, as the kernel maps it */
    const char *path;     /* the file; "[vdso]"; borrowed for the call */
    const char *build_id; /* hex, "" if the file has none */
    int main;             /* the main executable */
};

/*
 * folio_prof_each_map - call fn for each executable segment of every
 * file loaded in this process, the main executable's first, until fn
 * returns non-zero (which is returned).  Reads the loader's list and the
 * build-id notes in memory: no file is opened, nothing is allocated.
 * Not from signal context (the loader's lock).
 */
int folio_prof_each_map(int (*fn)(void *arg, const struct folio_prof_map *m),
                        void *arg);

/* folio_prof_maps_init - note the executable's path (folio_prof_init). */
void folio_prof_maps_init(void);

#endif
