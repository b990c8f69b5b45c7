/*
 * data.c - the data a generation's workers share, loaded by the master
 * once per start or reload (validate-then-switch: a reload that cannot
 * load its data keeps the old generation).  Each service adds its part.
 */
#include "config.h"

#include <sys/stat.h>

#include <stdio.h>
#include <string.h>

#include "master/master_int.h"
#include "shm/corpus.h"
#include "src/err.h"
#include "src/log.h"

#ifndef FOLIO_CORPUS_BUILTIN
#define FOLIO_CORPUS_BUILTIN ""
#endif

static int
is_dir(const char *path)
{
    struct stat st;

    return path[0] != '\0' && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * The corpus directory to load, or NULL for none: `corpus = off`, or
 * `auto` with neither the installed copy nor the build's copy present.
 */
static const char *
corpus_dir(const struct folio_config *cfg)
{
    if (cfg->corpus == NULL)
        return NULL;
    if (strcmp(cfg->corpus, "auto") != 0)
        return cfg->corpus;
    if (is_dir(FOLIO_PKGDATADIR "/shakespeare"))
        return FOLIO_PKGDATADIR "/shakespeare";
    if (is_dir(FOLIO_CORPUS_BUILTIN))
        return FOLIO_CORPUS_BUILTIN;
    return NULL;
}

static int
load_corpus(const struct folio_config *cfg, struct folio_worker_data *d,
            char *err, size_t errlen)
{
    struct folio_corpus_info in;
    struct folio_corpus *c;
    const char *dir = corpus_dir(cfg);
    char why[900];
    int rc;

    if (dir == NULL) {
        folio_log_notice("no corpus: corpus.* answer UNAVAILABLE (get one "
                         "with `make corpus`, or set --corpus DIR)");
        return 0;
    }
    rc = folio_corpus_open(dir, is_dir(cfg->data_dir) ? cfg->data_dir : NULL,
                           &c, why, sizeof(why));
    if (rc != 0) {
        snprintf(err, errlen, "%s", why);
        return rc;
    }
    folio_corpus_info(c, &in);
    if (in.from_cache)
        folio_log_notice("corpus %s: %u files, %u lines, %llu bytes; index "
                         "%llu bytes mapped from the cache in %llu ms",
                         dir, in.files, in.lines,
                         (unsigned long long)in.bytes,
                         (unsigned long long)in.index_bytes,
                         (unsigned long long)in.load_ms);
    else
        folio_log_notice("corpus %s: %u files, %u lines, %llu bytes; index "
                         "%llu bytes built in %llu ms (ready in %llu ms)",
                         dir, in.files, in.lines,
                         (unsigned long long)in.bytes,
                         (unsigned long long)in.index_bytes,
                         (unsigned long long)in.build_ms,
                         (unsigned long long)in.load_ms);
    d->corpus = c;
    return 0;
}

int
folio_data_load(const struct folio_config *cfg, struct folio_worker_data *d,
                char *err, size_t errlen)
{
    int rc;

    memset(d, 0, sizeof(*d));
    if ((rc = load_corpus(cfg, d, err, errlen)) != 0)
        goto fail;
    return 0;
fail:
    folio_data_free(d);
    return rc;
}

void
folio_data_free(struct folio_worker_data *d)
{
    folio_corpus_free((struct folio_corpus *)(uintptr_t)d->corpus);
    memset(d, 0, sizeof(*d));
}
