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
#include "src/err.h"

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

    snprintf(path, sizeof(path), "%s/comments", cfg->data_dir);
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
    if ((rc = check_comments(cfg, err, errlen)) != 0)
        return rc;
    return 0;
}

void
folio_data_free(struct folio_worker_data *d)
{
    memset(d, 0, sizeof(*d));
}
