/*
 * lmdb_check.c - checks of an LMDB environment before it is trusted (see
 * lmdb_check.h).
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "shm/lmdb_check.h"
#include "src/err.h"

int
folio_lmdb_size_check(MDB_env *env, const char *dir, char *why, size_t whylen)
{
    MDB_envinfo info;
    MDB_stat st;
    struct stat fs;
    char path[4200];
    uint64_t need;

    if (mdb_env_info(env, &info) != 0 || mdb_env_stat(env, &st) != 0) {
        snprintf(why, whylen, "its header cannot be read");
        return FOLIO_ECORRUPT;
    }
    snprintf(path, sizeof(path), "%s/data.mdb", dir);
    if (stat(path, &fs) != 0) {
        snprintf(why, whylen, "stat %s: %s", path, strerror(errno));
        return FOLIO_ECORRUPT;
    }
    need = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
    if ((uint64_t)fs.st_size < need) {
        snprintf(why, whylen,
                 "data.mdb is %lld bytes but its pages need %llu: truncated",
                 (long long)fs.st_size, (unsigned long long)need);
        return FOLIO_ECORRUPT;
    }
    return 0;
}
