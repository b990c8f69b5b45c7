/*
 * data.c - the data a generation's workers share, loaded by the master
 * once per start or reload (validate-then-switch: a reload that cannot
 * load its data keeps the old generation).  Each service adds its part.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "master/master_int.h"
#include "shm/comments.h"
#include "shm/corpus.h"
#include "shm/datafiles.h"
#include "shm/freight.h"
#include "src/err.h"
#include "src/log.h"
#include "worker/comments_pg.h"

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
            int shipped, char *err, size_t errlen)
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
    if (shipped)
        rc =
            folio_corpus_open_shipped(dir, cfg->data_dir, &c, why, sizeof(why));
    else
        rc =
            folio_corpus_open(dir, is_dir(cfg->data_dir) ? cfg->data_dir : NULL,
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

/* The freight tables and catalog to load, or NULL (off, or auto and none). */
static const char *
freight_tables(const struct folio_config *cfg)
{
    return auto_path(cfg->freight_dir, FOLIO_FREIGHT_DEFAULT_DIR,
                     DATA_BUILTIN("/freight"), 1);
}

static const char *
freight_catalog(const struct folio_config *cfg)
{
    return auto_path(cfg->catalog, FOLIO_FREIGHT_DEFAULT_CATALOG,
                     DATA_BUILTIN("/catalog.csv"), 0);
}

/*
 * The freight tables: imported into DATA_DIR/freight when a file changed.
 * The workers open that environment after fork.
 */
static int
freight_load(const struct folio_config *cfg, struct folio_worker_data *d,
             int shipped, char *err, size_t errlen)
{
    struct folio_freight_summary sum;
    unsigned logged = 0;
    struct folio_freight_diag diag = {log_problem, &logged, 0};
    const char *tables = freight_tables(cfg), *catalog = freight_catalog(cfg);
    char envdir[4096], why[768];
    int present, changed, rc;

    if ((size_t)snprintf(envdir, sizeof(envdir), "%s/%s", cfg->data_dir,
                         FOLIO_FREIGHT_ENV) >= sizeof(envdir)) {
        snprintf(err, errlen, "data_dir: path too long");
        return FOLIO_ECONFIG;
    }
    rc = folio_freight_import(
        envdir, tables, catalog,
        (cfg->check_only ? FOLIO_FREIGHT_CHECK_ONLY : 0) |
            (shipped ? FOLIO_FREIGHT_SHIPPED : 0),
        &diag, &sum, &present, &changed, why, sizeof(why));
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
                       shipped           ? " (shipped)"
                       : cfg->check_only ? " (checked)"
                       : changed         ? " (imported)"
                                         : " (unchanged)");
    return 0;
}

/*
 * The postgres backend: a connection string libpq cannot parse fails the
 * start (or the reload); whether the database answers is the workers'
 * business (they retry), but --check-config connects once and says.
 */
static int
check_comments_pg(const struct folio_config *cfg, char *err, size_t errlen)
{
    char msg[512], name[300];
    int rc;

    if (folio_comments_pg_dsn_check(cfg->comments_dsn, err, errlen) != 0)
        return FOLIO_ECONFIG;
    if (!cfg->check_only)
        return 0;
    rc = folio_comments_pg_probe(cfg->comments_dsn, 5, msg, sizeof(msg));
    if (rc == 0) {
        printf("foliod: comments: %s\n", msg);
    } else if (rc == FOLIO_ECONFIG) {
        /* It answered, and no: the workers would fail the same way. */
        snprintf(err, errlen,
                 "comments: PostgreSQL refuses (%s): check %s (a libpq "
                 "connection string) and the database's grants",
                 msg, folio_config_name(cfg, "comments-dsn", name,
                                        sizeof(name)));
        return FOLIO_ECONFIG;
    } else {
        fprintf(stderr,
                "foliod: comments: warning: PostgreSQL does not answer "
                "(%s): the workers will keep trying\n",
                msg);
    }
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

    if (cfg->comments_backend == FOLIO_COMMENTS_POSTGRES)
        return check_comments_pg(cfg, err, errlen);
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

/*
 * A data directory of shipped files (foliod --build-data, copied here):
 * each is checked against its SHA-256 before anything uses it.  1 if
 * shipped, 0 if not, or an error.
 */
static int
verify_shipped(const struct folio_config *cfg, char *err, size_t errlen)
{
    unsigned n;
    int rc;

    if (!is_dir(cfg->data_dir))
        return 0;
    if ((rc = folio_datafiles_verify(cfg->data_dir, &n, err, errlen)) == 1)
        folio_log_notice("data directory %s: %u shipped file%s match %s",
                         cfg->data_dir, n, n == 1 ? "" : "s", FOLIO_DATA_SUMS);
    return rc;
}

/*
 * A path option of cfg that is set (not auto, not off) names something of
 * the right kind: 0, or FOLIO_ECONFIG with the reason in err.
 */
static int
check_path(const struct folio_config *cfg, const char *option,
           const char *path, int dir, char *err, size_t errlen)
{
    struct stat st;
    char name[300];

    if (path == NULL || strcmp(path, "auto") == 0)
        return 0;
    folio_config_name(cfg, option, name, sizeof(name));
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s %s: %s", name, path, strerror(errno));
        return FOLIO_ECONFIG;
    }
    if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s %s: not a %s", name, path,
                 dir ? "directory" : "file");
        return FOLIO_ECONFIG;
    }
    if (access(path, dir ? R_OK | X_OK : R_OK) != 0) {
        snprintf(err, errlen, "%s %s: %s", name, path, strerror(errno));
        return FOLIO_ECONFIG;
    }
    return 0;
}

int
folio_data_check(const struct folio_config *cfg, char *err, size_t errlen)
{
    int rc;

    if ((rc = check_path(cfg, "corpus", cfg->corpus, 1, err, errlen)) != 0 ||
        (rc = check_path(cfg, "freight-dir", cfg->freight_dir, 1, err,
                         errlen)) != 0 ||
        (rc = check_path(cfg, "catalog", cfg->catalog, 0, err, errlen)) != 0)
        return rc;
    if (cfg->comments_backend == FOLIO_COMMENTS_POSTGRES &&
        folio_comments_pg_dsn_check(cfg->comments_dsn, err, errlen) != 0)
        return FOLIO_ECONFIG;
    return 0;
}

int
folio_data_load(const struct folio_config *cfg, struct folio_worker_data *d,
                char *err, size_t errlen)
{
    int rc, shipped;

    memset(d, 0, sizeof(*d));
    if ((shipped = verify_shipped(cfg, err, errlen)) < 0)
        return shipped;
    /* Freight first: its import creates the data directory, where the
     * corpus caches its index. */
    if ((rc = freight_load(cfg, d, shipped, err, errlen)) != 0 ||
        (rc = load_corpus(cfg, d, shipped, err, errlen)) != 0 ||
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

int
folio_data_build(const struct folio_config *cfg, const char *dir, char *err,
                 size_t errlen)
{
    struct folio_freight_summary sum;
    struct folio_freight_diag diag = {log_problem, NULL, 0};
    struct folio_corpus_info in;
    struct folio_corpus *c = NULL;
    struct folio_priv nobody;
    unsigned logged = 0;
    const char *names[2], *cdir = corpus_dir(cfg);
    char path[4200], idx[64], why[768];
    int n = 0, present, changed, rc;

    diag.fd_arg = &logged;
    memset(&nobody, 0, sizeof(nobody));
    if (folio_priv_mkdirs(&nobody, dir, 0755) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return FOLIO_ESYS;
    }
    /* No manifest while the files change: a half-built DIR is not shipped. */
    snprintf(path, sizeof(path), "%s/" FOLIO_DATA_SUMS, dir);
    if (unlink(path) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return FOLIO_ESYS;
    }
    if (cdir != NULL) {
        if ((rc = folio_corpus_open(cdir, dir, &c, why, sizeof(why))) != 0) {
            snprintf(err, errlen, "%s", why);
            return rc;
        }
        folio_corpus_info(c, &in);
        folio_corpus_free(c);
        snprintf(idx, sizeof(idx), "corpus-%016llx.idx",
                 (unsigned long long)in.checksum);
        snprintf(path, sizeof(path), "%s/%s", dir, idx);
        if (access(path, R_OK) != 0) {
            snprintf(err, errlen,
                     "the corpus index could not be written to "
                     "%s (see the log)",
                     dir);
            return FOLIO_ESYS;
        }
        names[n++] = idx;
        printf("foliod: %s/%s: the index of %s (%u files, %u lines)\n", dir,
               idx, cdir, in.files, in.lines);
    }
    snprintf(path, sizeof(path), "%s/%s", dir, FOLIO_FREIGHT_ENV);
    rc = folio_freight_import(path, freight_tables(cfg), freight_catalog(cfg),
                              0, &diag, &sum, &present, &changed, why,
                              sizeof(why));
    if (rc != 0) {
        snprintf(err, errlen, "freight: %s", why);
        return rc;
    }
    if (present) {
        names[n++] = FOLIO_FREIGHT_ENV "/data.mdb";
        printf("foliod: %s/%s/data.mdb: %u carriers, %u bands, %u SKUs\n", dir,
               FOLIO_FREIGHT_ENV, sum.fm_carriers, sum.fm_rows, sum.fm_skus);
    }
    if (n == 0) {
        snprintf(err, errlen, "no corpus and no freight tables to build");
        return FOLIO_ENOTFOUND;
    }
    if ((rc = folio_datafiles_write(dir, names, (size_t)n, err, errlen)) != 0)
        return rc;
    printf("foliod: %s/%s: their SHA-256 checksums; copy these files into "
           "each host's data directory\n",
           dir, FOLIO_DATA_SUMS);
    return 0;
}
