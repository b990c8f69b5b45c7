/*
 * datafiles.h - the data a foliod host can be given as files, built once
 * and copied to several hosts (foliod --build-data DIR; RUNNING ON
 * SEVERAL HOSTS in foliod(8)):
 * the corpus index (corpus-CHECKSUM.idx) and the freight environment
 * (freight/data.mdb), with the manifest FOLIO_DATA_SUMS of their SHA-256
 * checksums in the format of sha256sum(1), so that `sha256sum -c' checks
 * a copy too.  A data directory that holds the manifest is "shipped": the
 * master verifies every file it lists before it uses any (at start, at a
 * reload and with --check-config), and then uses them as they are, never
 * rebuilding or rewriting them.  Master only; no libevent here.
 */
#ifndef FOLIO_SHM_DATAFILES_H
#define FOLIO_SHM_DATAFILES_H

#include <stddef.h>

/* The manifest, in the data directory. */
#define FOLIO_DATA_SUMS "folio-data.sha256"

/*
 * folio_datafiles_write - compute the SHA-256 of the files `names` (n
 * paths relative to `dir`) and write them to dir/FOLIO_DATA_SUMS, which
 * is replaced atomically.  Returns 0, or FOLIO_ESYS with the file and the
 * reason in err.
 */
int folio_datafiles_write(const char *dir, const char *const *names,
                          size_t n, char *err, size_t errlen);

/*
 * folio_datafiles_verify - if dir/FOLIO_DATA_SUMS exists, check that every
 * file it lists is there with its checksum.  Returns 1 (shipped, all
 * good; *nfiles, may be NULL, gets how many), 0 (no manifest: not
 * shipped), or FOLIO_ECORRUPT (a file is missing, or differs) or
 * FOLIO_ESYS (cannot read) with the file and what to do in err.
 */
int folio_datafiles_verify(const char *dir, unsigned *nfiles, char *err,
                           size_t errlen);

#endif
