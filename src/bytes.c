/*
 * bytes.c - immutable shared bytes (see bytes.h).
 */
#include "config.h"

#include <string.h>

#include "src/alloc.h"
#include "src/bytes.h"
#include "src/err.h"

int
folio_bytes_new(size_t len, struct folio_bytes **out)
{
    struct folio_bytes *b;

    *out = NULL;
    if (len > SIZE_MAX - sizeof(*b) ||
        (b = folio_malloc(sizeof(*b) + len)) == NULL)
        return FOLIO_ENOMEM;
    b->fb_refs = 1;
    b->fb_outrefs = 0;
    b->fb_len = len;
    *out = b;
    return 0;
}

int
folio_bytes_copy(const void *p, size_t len, struct folio_bytes **out)
{
    int rc;

    if ((rc = folio_bytes_new(len, out)) == 0 && len > 0)
        memcpy((*out)->fb_data, p, len);
    return rc;
}

void
folio_bytes_unref(struct folio_bytes *b)
{
    if (b != NULL && --b->fb_refs == 0)
        folio_free(b);
}
