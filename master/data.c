/*
 * data.c - the data a generation's workers share, loaded by the master
 * once per start or reload (validate-then-switch: a reload that cannot
 * load its data keeps the old generation).  Each service adds its part.
 */
#include "config.h"

#include <string.h>

#include "master/master_int.h"
#include "src/err.h"

int
folio_data_load(const struct folio_config *cfg, struct folio_worker_data *d,
                char *err, size_t errlen)
{
    memset(d, 0, sizeof(*d));
    return 0;
}

void
folio_data_free(struct folio_worker_data *d)
{
    memset(d, 0, sizeof(*d));
}
