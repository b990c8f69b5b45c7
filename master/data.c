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
#include "shm/comments.h"
#include "shm/corpus.h"
#include "shm/freight.h"
#include "src/err.h"
#include "src/log.h"

#ifndef FOLIO_CORPUS_BUILTIN
#define FOLIO_CORPUS_BUILTIN ""
#endif
/* The source tree's data/: the example tables of a foliod not installed. */
#ifdef FOLIO_DATA_BUILTIN
#define DATA_BUILTIN(name) FOLIO_DATA_BUILTIN name
#else
#define DATA_BUILTIN(name) ""
#endif

static int
is_dir(const char *path)
{
    struct stat st;

    return path[0] != '\0' && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int
is_file(const char *path)
{
    struct stat st;

    return path[0] != '\0' && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * The path to load for a setting that may be "auto": the installed copy
 * (`installed`) if it exists, else the build tree's (`built`: a foliod
 * run from where it was built), else NULL: none.  NULL (off) stays NULL;
 * any other value is itself.
 */
static const char *
auto_path(const char *value, const char *installed, const char *built,
          int dir)
{
    int (*exists)(const char *) = dir ? is_dir : is_file;

    if (value == NULL || strcmp(value, "auto") != 0)
        return value;
    if (exists(installed))
        return installed;
    if (exists(built))
        return built;
    return NULL;
}

/* The corpus directory to load, or NULL for none (off, or auto and none). */
static const char *
corpus_dir(const struct folio_config *cfg)
{
    return auto_path(cfg->corpus, FOLIO_PKGDATADIR "/shakespeare",
                     FOLIO_CORPUS_BUILTIN, 1);
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

#define MAX_REPORTS 100 /* problems logged one by one, then a count */

static void
log_problem(void *arg, const char *file, unsigned line, unsigned col,
            const char *msg)
{
    unsigned *n = arg;

    if (++*n <= MAX_REPORTS)
        folio_log_warnx("%s:%u:%u: %s", file, line, col, msg);
}

/*
 * The freight tables: imported into DATA_DIR/freight when a file changed.
 * The workers open that environment after fork.
 */
static int
freight_load(const struct folio_config *cfg, struct folio_worker_data *d,
             char *err, size_t errlen)
{
    struct folio_freight_summary sum;
    unsigned logged = 0;
    struct folio_freight_diag diag = {log_problem, &logged, 0};
    const char *tables = auto_path(cfg->freight_dir, FOLIO_FREIGHT_DEFAULT_DIR,
                                   DATA_BUILTIN("/freight"), 1),
               *catalog = auto_path(cfg->catalog, FOLIO_FREIGHT_DEFAULT_CATALOG,
                                    DATA_BUILTIN("/catalog.csv"), 0);
    char envdir[4096], why[768];
    int present, changed, rc;

    if ((size_t)snprintf(envdir, sizeof(envdir), "%s/%s", cfg->data_dir,
                         FOLIO_FREIGHT_ENV) >= sizeof(envdir)) {
        snprintf(err, errlen, "data_dir: path too long");
        return FOLIO_ECONFIG;
    }
    rc = folio_freight_import(envdir, tables, catalog, cfg->check_only, &diag,
                              &sum, &present, &changed, why, sizeof(why));
    if (logged > MAX_REPORTS)
        folio_log_warnx("... and %u more problems", logged - MAX_REPORTS);
    if (rc != 0) {
        snprintf(err, errlen, "freight: %s", why);
        return rc;
    }
    d->freight = present;
    if (!present)
        folio_log_notice("freight: no tables (freight_dir %s%s): freight.* "
                         "answer UNAVAILABLE",
                         cfg->freight_dir != NULL ? cfg->freight_dir : "off",
                         tables == NULL && cfg->freight_dir != NULL
                             ? ": neither installed nor built"
                             : "");
    else
        folio_log_info("freight: %u carriers, %u bands, %u SKUs from %s%s",
                       sum.fm_carriers, sum.fm_rows, sum.fm_skus, tables,
                       cfg->check_only ? " (checked)"
                       : changed        ? " (imported)"
                                        : " (unchanged)");
    return 0;
}

/*
 * The comments store: opened (created) and closed again, so that a data
 * directory the workers could not use fails the start or the reload.  The
 * workers open their own handles after fork.  --check-config creates
 * nothing: it checks a store only if there is one.
 */
static int
check_comments(const struct folio_config *cfg, char *err, size_t errlen)
{
    struct folio_comments_opts opts;
    struct folio_comments *cs;
    struct stat st;
    char path[4200], why[512];

    snprintf(path, sizeof(path), "%s/" FOLIO_COMMENTS_ENV, cfg->data_dir);
    if (cfg->check_only && stat(path, &st) != 0)
        return 0;
    memset(&opts, 0, sizeof(opts));
    opts.max_size = cfg->comments_max_size;
    if (folio_comments_open(cfg->data_dir, &opts, &cs, why, sizeof(why)) !=
        0) {
        snprintf(err, errlen, "%s", why);
        return FOLIO_ECONFIG;
    }
    folio_comments_close(cs);
    return 0;
}

int
folio_data_load(const struct folio_config *cfg, struct folio_worker_data *d,
                char *err, size_t errlen)
{
    int rc;

    memset(d, 0, sizeof(*d));
    /* Freight first: its import creates the data directory, where the
     * corpus caches its index. */
    if ((rc = freight_load(cfg, d, err, errlen)) != 0 ||
        (rc = load_corpus(cfg, d, err, errlen)) != 0 ||
        (rc = check_comments(cfg, err, errlen)) != 0)
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
