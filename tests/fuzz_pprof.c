/*
 * fuzz_pprof.c - libFuzzer target: the profile.proto decoder
 * (src/prof/pprof.c), which reads what workers pass the master and what a
 * server sends `folio profile`.
 *
 * The input is a profile, gzipped or not.  Oracle: it decodes or is
 * refused with a reason; what decodes has every reference in range (the
 * top table and the merge walk it all), encodes again, and decodes
 * again to the same numbers of every element.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/buf.h"
#include "src/err.h"
#include "src/prof/pprof.h"
#include "tests/fuzz_harness.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    return 0;
}

static void
walk(const struct folio_pprof *p)
{
    const struct folio_pprof_tag tag = {"worker", NULL, 1, NULL};
    struct folio_pprof_top_row *rows;
    struct folio_pprof merged;
    struct folio_buf b;
    uint32_t n, t;
    int64_t total;
    int rc;

    for (t = 0; t < p->ntypes && t < 8; t++) {
        if (folio_pprof_top(p, (int)t, &rows, &n, &total) != 0)
            fuzz_fail("top of a decoded profile failed");
        free(rows);
    }
    if (folio_pprof_init(&merged) != 0)
        return;
    rc = folio_pprof_merge(&merged, p, &tag, 1);
    if (rc != 0 && rc != FOLIO_ENOMEM)
        fuzz_fail("merge into an empty profile: %s", folio_strerror(rc));
    if (rc == 0 && merged.nsamples != p->nsamples)
        fuzz_fail("merge lost samples: %u of %u", merged.nsamples,
                  p->nsamples);
    folio_pprof_free(&merged);
    memset(&b, 0, sizeof(b));
    if (p->ntypes > 0)
        folio_pprof_encode_legacy(p, 0, &b);
    folio_buf_free(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct folio_pprof p, q;
    struct folio_buf b;
    char err[256];
    int rc;

    err[0] = '\0';
    rc = folio_pprof_decode(data, size, &p, err, sizeof(err));
    if (rc != 0) {
        if (rc == FOLIO_EINVAL && err[0] == '\0')
            fuzz_fail("refused without a reason");
        folio_pprof_free(&p);
        return 0;
    }
    walk(&p);
    memset(&b, 0, sizeof(b));
    if (folio_pprof_encode(&p, &b) != 0)
        fuzz_fail("a decoded profile does not encode");
    if (folio_pprof_decode(folio_buf_at(&b, 0), folio_buf_pending(&b), &q, err,
                           sizeof(err)) != 0)
        fuzz_fail("a profile we encoded does not decode: %s", err);
    if (q.nsamples != p.nsamples || q.nlocations != p.nlocations ||
        q.nfunctions != p.nfunctions || q.nmappings != p.nmappings ||
        q.nlines != p.nlines || q.nstack != p.nstack ||
        q.nlabels != p.nlabels || q.ntypes != p.ntypes)
        fuzz_fail("the round trip changed the profile");
    folio_pprof_free(&q);
    folio_buf_free(&b);
    folio_pprof_free(&p);
    return 0;
}
