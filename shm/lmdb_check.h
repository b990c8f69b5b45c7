/*
 * lmdb_check.h - checks of an LMDB environment before it is trusted,
 * shared by the freight and comments stores.  Included by shm/ only.
 */
#ifndef FOLIO_SHM_LMDB_CHECK_H
#define FOLIO_SHM_LMDB_CHECK_H

#include <stddef.h>

#include <lmdb.h>

/*
 * folio_lmdb_size_check - whether data.mdb in `dir` holds every page the
 * open environment `env` claims.  A file cut short (a partial copy, a
 * repaired file system) is mapped past its end, and any read there is
 * SIGBUS: call this after mdb_env_open() and before the first
 * transaction.  Returns 0, or FOLIO_ECORRUPT with the reason in `why`.
 * Any process.
 */
int folio_lmdb_size_check(MDB_env *env, const char *dir, char *why,
                          size_t whylen);

#endif
