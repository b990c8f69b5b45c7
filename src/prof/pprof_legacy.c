/*
 * pprof_legacy.c - a profile in gperftools' own formats, for the pprof
 * of google-perftools (google-pprof, Perl), which reads no profile.proto:
 * a "symbolized profile" (what `pprof --raw` writes), so that it needs no
 * binary either.  See pprof.h.
 *
 *   --- symbol
 *   binary=foliod
 *   0x<pc> outer--inlined--innermost     one line per location
 *   ---
 *   --- profile                          CPU: gperftools' binary profile,
 *   <header 0 3 0 period_us 0> <count depth pc...>... <0 1 0>
 * or, for the heap,
 *   heap profile: N: B [N: B] @ heapprofile
 *   N: B [N: B] @ 0x<pc> 0x<pc> ...      one line per sample
 *
 * Each location gets a pc of its own (the real addresses of two workers'
 * images could meet), and its callers' pcs are written as they are:
 * pprof subtracts nothing from a symbolized profile's.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "src/buf.h"
#include "src/err.h"
#include "src/prof/pprof.h"

#define PC(i) (0x1000 + 16 * (uint64_t)(i))

static int
put(struct folio_buf *b, const char *s)
{
    return folio_buf_append(b, s, strlen(s));
}

static int
putf(struct folio_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
putf(struct folio_buf *b, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return FOLIO_EINVAL;
    return folio_buf_append(b, line,
                            (size_t)n < sizeof(line) ? (size_t)n
                                                     : sizeof(line) - 1);
}

static int
symbols(const struct folio_pprof *p, struct folio_buf *b)
{
    const char *file = "foliod", *slash;
    uint32_t i, k;
    int rc = 0;

    if (p->nmappings > 0 && p->mappings[0].file != 0) {
        file = folio_pprof_text(p, p->mappings[0].file);
        if ((slash = strrchr(file, '/')) != NULL)
            file = slash + 1;
    }
    rc |= putf(b, "--- symbol\nbinary=%s\n", file);
    for (i = 0; i < p->nlocations && rc == 0; i++) {
        const struct folio_pprof_location *l = &p->locations[i];

        rc |= putf(b, "0x%016" PRIx64 " ", PC(i));
        if (l->nline == 0)
            rc |= putf(b, "0x%" PRIx64, l->address);
        /* Callers first, as pprof --raw writes inlined frames. */
        for (k = l->nline; k-- > 0;) {
            const struct folio_pprof_line *ln = &p->lines[l->line + k];
            const char *name = ln->fn < p->nfunctions
                                   ? folio_pprof_text(
                                         p, p->functions[ln->fn].name)
                                   : "";

            rc |= putf(b, "%s%s", k + 1 < l->nline ? "--" : "",
                       *name != '\0' ? name : "??");
        }
        rc |= put(b, "\n");
    }
    return rc | put(b, "---\n");
}

static int
slot(struct folio_buf *b, uint64_t v)
{
    return folio_buf_append(b, &v, sizeof(v));
}

int
folio_pprof_encode_legacy(const struct folio_pprof *p, int type,
                          struct folio_buf *out)
{
    const char *name;
    uint32_t i, k;
    int rc;

    if (type < 0 || (uint32_t)type >= p->ntypes)
        return FOLIO_EINVAL;
    if ((rc = symbols(p, out)) != 0)
        return FOLIO_ENOMEM;
    name = folio_pprof_text(p, p->types[type].type);
    if (strcmp(name, "cpu") == 0 || strcmp(name, "samples") == 0) {
        int count = folio_pprof_type_index(p, "samples");
        uint64_t period_us = p->period > 0 ? (uint64_t)p->period / 1000 : 10000;

        rc |= put(out, "--- profile\n");
        rc |= slot(out, 0) | slot(out, 3) | slot(out, 0) |
              slot(out, period_us) | slot(out, 0);
        for (i = 0; i < p->nsamples && rc == 0; i++) {
            const struct folio_pprof_sample *s = &p->samples[i];
            int64_t n = p->values[s->value + (uint32_t)(count >= 0 ? count
                                                                    : type)];

            if (n <= 0 || s->nstack == 0)
                continue;
            rc |= slot(out, (uint64_t)n) | slot(out, s->nstack);
            for (k = 0; k < s->nstack; k++)
                rc |= slot(out, PC(p->stack[s->stack + k]));
        }
        rc |= slot(out, 0) | slot(out, 1) | slot(out, 0);
        return rc != 0 ? FOLIO_ENOMEM : 0;
    }
    /* The heap: in use, then allocated, as gperftools counts them. */
    {
        int t[4] = {folio_pprof_type_index(p, "inuse_objects"),
                    folio_pprof_type_index(p, "inuse_space"),
                    folio_pprof_type_index(p, "alloc_objects"),
                    folio_pprof_type_index(p, "alloc_space")};
        int64_t sum[4] = {0, 0, 0, 0};

        for (k = 0; k < 4; k++)
            if (t[k] < 0)
                return FOLIO_EINVAL;
        for (i = 0; i < p->nsamples; i++)
            for (k = 0; k < 4; k++)
                sum[k] += p->values[p->samples[i].value + (uint32_t)t[k]];
        rc |= putf(out,
                   "heap profile: %6" PRId64 ": %8" PRId64 " [%6" PRId64
                   ": %8" PRId64 "] @ heapprofile\n",
                   sum[0], sum[1], sum[2], sum[3]);
        for (i = 0; i < p->nsamples && rc == 0; i++) {
            const struct folio_pprof_sample *s = &p->samples[i];
            const int64_t *v = p->values + s->value;

            rc |= putf(out,
                       "%6" PRId64 ": %8" PRId64 " [%6" PRId64 ": %8" PRId64
                       "] @",
                       v[t[0]], v[t[1]], v[t[2]], v[t[3]]);
            for (k = 0; k < s->nstack; k++)
                rc |= putf(out, " 0x%016" PRIx64, PC(p->stack[s->stack + k]));
            rc |= put(out, "\n");
        }
    }
    return rc != 0 ? FOLIO_ENOMEM : 0;
}
