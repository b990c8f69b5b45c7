/*
 * data.c - the data a generation's workers share, loaded by the master
 * once per start or reload (validate-then-switch: a reload that cannot
 * load its data keeps the old generation).  Each service adds its part.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "master/master_int.h"
#include "shm/freight.h"
#include "src/err.h"
#include "src/log.h"

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
    char envdir[4096], why[768];
    int present, changed, rc;

    if ((size_t)snprintf(envdir, sizeof(envdir), "%s/%s", cfg->data_dir,
                         FOLIO_FREIGHT_ENV) >= sizeof(envdir)) {
        snprintf(err, errlen, "data_dir: path too long");
        return FOLIO_ECONFIG;
    }
    rc = folio_freight_import(envdir, cfg->freight_dir, cfg->catalog,
                              cfg->check_only, &diag, &sum, &present,
                              &changed, why, sizeof(why));
    if (logged > MAX_REPORTS)
        folio_log_warnx("... and %u more problems", logged - MAX_REPORTS);
    if (rc != 0) {
        snprintf(err, errlen, "freight: %s", why);
        return rc;
    }
    d->freight = present;
    if (!present)
        folio_log_notice("freight: no tables (freight_dir %s): freight.* "
                         "answer UNAVAILABLE",
                         cfg->freight_dir != NULL ? cfg->freight_dir : "off");
    else
        folio_log_info("freight: %u carriers, %u bands, %u SKUs%s",
                       sum.fm_carriers, sum.fm_rows, sum.fm_skus,
                       cfg->check_only ? " (checked)"
                       : changed        ? " (imported)"
                                        : " (unchanged)");
    return 0;
}

int
folio_data_load(const struct folio_config *cfg, struct folio_worker_data *d,
                char *err, size_t errlen)
{
    int rc;

    memset(d, 0, sizeof(*d));
    if ((rc = freight_load(cfg, d, err, errlen)) != 0)
        return rc;
    return 0;
}

void
folio_data_free(struct folio_worker_data *d)
{
    memset(d, 0, sizeof(*d));
}
