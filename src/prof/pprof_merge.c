/*
 * pprof_merge.c - one profile from several processes' (see pprof.h):
 * the master merges its workers' profiles, each sample labelled with the
 * worker it came from.  Workers are forks of one master, so most of their
 * functions, locations and mappings are the same: those are kept once.
 */
#include "config.h"

#include <string.h>

#include "src/alloc.h"
#include "src/err.h"
#include "src/hash.h"
#include "src/prof/pprof.h"

/* An open-addressing set of dst element indices, keyed by content. */
struct set {
    uint32_t *slot; /* index + 1; 0: empty */
    uint32_t mask;
};

struct merge {
    struct folio_pprof *dst;
    const struct folio_pprof *src;
    uint32_t *str; /* src string -> dst string */
    uint32_t *fn;  /* src function -> dst function */
    uint32_t *map; /* src mapping -> dst mapping */
    uint32_t *loc; /* src location -> dst location */
};

/* Room for `n` elements at half load: never grows during one merge. */
static int
set_init(struct set *s, uint64_t n)
{
    uint64_t cap = 64;

    while (cap < 2 * n + 2)
        cap *= 2;
    if (cap > UINT32_MAX / 2)
        return FOLIO_ENOMEM;
    s->mask = (uint32_t)cap - 1;
    return (s->slot = folio_calloc(cap, sizeof(*s->slot))) == NULL
               ? FOLIO_ENOMEM
               : 0;
}

static uint64_t
hash_fn(const struct folio_pprof *p, uint32_t i)
{
    const struct folio_pprof_function *f = &p->functions[i];
    uint64_t v[4] = {f->name, f->system_name, f->file,
                     (uint64_t)f->start_line};

    return folio_fnv1a64(v, sizeof(v));
}

static int
same_fn(const struct folio_pprof *p, uint32_t a, uint32_t b)
{
    const struct folio_pprof_function *x = &p->functions[a],
                                      *y = &p->functions[b];

    return x->name == y->name && x->system_name == y->system_name &&
           x->file == y->file && x->start_line == y->start_line;
}

static uint64_t
hash_map(const struct folio_pprof *p, uint32_t i)
{
    const struct folio_pprof_mapping *m = &p->mappings[i];
    uint64_t v[5] = {m->start, m->limit, m->offset, m->file, m->build_id};

    return folio_fnv1a64(v, sizeof(v));
}

static int
same_map(const struct folio_pprof *p, uint32_t a, uint32_t b)
{
    const struct folio_pprof_mapping *x = &p->mappings[a],
                                     *y = &p->mappings[b];

    return x->start == y->start && x->limit == y->limit &&
           x->offset == y->offset && x->file == y->file &&
           x->build_id == y->build_id;
}

static uint64_t
hash_loc(const struct folio_pprof *p, uint32_t i)
{
    const struct folio_pprof_location *l = &p->locations[i];
    uint64_t v[3] = {l->address, l->mapping, l->nline}, h;
    uint32_t k;

    h = folio_fnv1a64(v, sizeof(v));
    for (k = 0; k < l->nline; k++) {
        uint64_t w[2] = {p->lines[l->line + k].fn,
                         (uint64_t)p->lines[l->line + k].line};

        h = h * 0x100000001b3ull ^ folio_fnv1a64(w, sizeof(w));
    }
    return h;
}

static int
same_loc(const struct folio_pprof *p, uint32_t a, uint32_t b)
{
    const struct folio_pprof_location *x = &p->locations[a],
                                      *y = &p->locations[b];
    uint32_t k;

    if (x->address != y->address || x->mapping != y->mapping ||
        x->nline != y->nline || x->folded != y->folded)
        return 0;
    for (k = 0; k < x->nline; k++)
        if (p->lines[x->line + k].fn != p->lines[y->line + k].fn ||
            p->lines[x->line + k].line != p->lines[y->line + k].line)
            return 0;
    return 1;
}

/*
 * Element `idx` of dst: the index of an equal element already in the set,
 * or idx itself, added.
 */
static uint32_t
set_put(struct set *s, const struct folio_pprof *p, uint32_t idx,
        uint64_t (*hash)(const struct folio_pprof *, uint32_t),
        int (*same)(const struct folio_pprof *, uint32_t, uint32_t))
{
    uint32_t k = (uint32_t)hash(p, idx) & s->mask;

    while (s->slot[k] != 0) {
        if (same(p, s->slot[k] - 1, idx))
            return s->slot[k] - 1;
        k = (k + 1) & s->mask;
    }
    s->slot[k] = idx + 1;
    return idx;
}

static int
same_types(const struct folio_pprof *a, const struct folio_pprof *b)
{
    uint32_t i;

    if (a->ntypes != b->ntypes)
        return 0;
    for (i = 0; i < a->ntypes; i++)
        if (strcmp(folio_pprof_text(a, a->types[i].type),
                   folio_pprof_text(b, b->types[i].type)) != 0 ||
            strcmp(folio_pprof_text(a, a->types[i].unit),
                   folio_pprof_text(b, b->types[i].unit)) != 0)
            return 0;
    return 1;
}

#define XSTR(m, i) ((m)->str[(i) < (m)->src->nstrings ? (i) : 0])

/* The first profile merged in gives dst its types and period. */
static int
take_header(struct merge *m)
{
    struct folio_pprof *dst = m->dst;
    const struct folio_pprof *src = m->src;
    uint32_t i;

    for (i = 0; i < src->ntypes; i++)
        if (folio_pprof_add_type(
                dst, folio_pprof_text(src, src->types[i].type),
                folio_pprof_text(src, src->types[i].unit)) < 0)
            return FOLIO_ENOMEM;
    dst->period_type.type = XSTR(m, src->period_type.type);
    dst->period_type.unit = XSTR(m, src->period_type.unit);
    dst->period = src->period;
    dst->default_type = XSTR(m, src->default_type);
    dst->drop_frames = XSTR(m, src->drop_frames);
    dst->keep_frames = XSTR(m, src->keep_frames);
    return 0;
}

static int
merge_elements(struct merge *m, struct set *fns, struct set *maps,
               struct set *locs)
{
    struct folio_pprof *dst = m->dst;
    const struct folio_pprof *src = m->src;
    struct folio_pprof_line lines[64], *lp;
    uint32_t i, k, got, nl;
    int idx;

    for (i = 0; i < src->nfunctions; i++) {
        const struct folio_pprof_function *f = &src->functions[i];

        if ((idx = folio_pprof_add_function(dst, "", "", 0)) < 0)
            return FOLIO_ENOMEM;
        dst->functions[idx].name = XSTR(m, f->name);
        dst->functions[idx].system_name = XSTR(m, f->system_name);
        dst->functions[idx].file = XSTR(m, f->file);
        dst->functions[idx].start_line = f->start_line;
        got = set_put(fns, dst, (uint32_t)idx, hash_fn, same_fn);
        if (got != (uint32_t)idx)
            dst->nfunctions--; /* met before: drop the copy */
        m->fn[i] = got;
    }
    for (i = 0; i < src->nmappings; i++) {
        const struct folio_pprof_mapping *s = &src->mappings[i];

        if ((idx = folio_pprof_add_mapping(dst, s->start, s->limit, s->offset,
                                           "", "")) < 0)
            return FOLIO_ENOMEM;
        dst->mappings[idx] = *s;
        dst->mappings[idx].file = XSTR(m, s->file);
        dst->mappings[idx].build_id = XSTR(m, s->build_id);
        got = set_put(maps, dst, (uint32_t)idx, hash_map, same_map);
        if (got != (uint32_t)idx)
            dst->nmappings--;
        m->map[i] = got;
    }
    for (i = 0; i < src->nlocations; i++) {
        const struct folio_pprof_location *l = &src->locations[i];

        nl = l->nline;
        lp = nl <= 64 ? lines : folio_malloc(nl * sizeof(*lp));
        if (lp == NULL)
            return FOLIO_ENOMEM;
        for (k = 0; k < nl; k++) {
            lp[k] = src->lines[l->line + k];
            if (lp[k].fn < src->nfunctions)
                lp[k].fn = m->fn[lp[k].fn];
        }
        idx = folio_pprof_add_location(
            dst, l->mapping == 0 ? 0 : m->map[l->mapping - 1] + 1, l->address,
            lp, nl);
        if (lp != lines)
            folio_free(lp);
        if (idx < 0)
            return idx;
        dst->locations[idx].folded = l->folded;
        got = set_put(locs, dst, (uint32_t)idx, hash_loc, same_loc);
        if (got != (uint32_t)idx) {
            dst->nlocations--;
            dst->nlines -= nl;
        }
        m->loc[i] = got;
    }
    return 0;
}

static int
merge_samples(struct merge *m, const struct folio_pprof_tag *tags,
              unsigned nextra)
{
    struct folio_pprof *dst = m->dst;
    const struct folio_pprof *src = m->src;
    struct folio_pprof_label extra[8], *lab = NULL;
    uint32_t *stack = NULL, maxstack = 0, maxlab = 0, i, k;
    int64_t s;
    int rc = 0;

    if (nextra > 8)
        return FOLIO_EINVAL;
    for (i = 0; i < nextra; i++) {
        memset(&extra[i], 0, sizeof(extra[i]));
        if ((s = folio_pprof_cstr(dst, tags[i].key)) < 0)
            return FOLIO_ENOMEM;
        extra[i].key = (uint32_t)s;
        if (tags[i].str == NULL) {
            extra[i].num = tags[i].num;
            if (tags[i].unit != NULL) {
                if ((s = folio_pprof_cstr(dst, tags[i].unit)) < 0)
                    return FOLIO_ENOMEM;
                extra[i].unit = (uint32_t)s;
            }
            continue;
        }
        if ((s = folio_pprof_cstr(dst, tags[i].str)) < 0)
            return FOLIO_ENOMEM;
        extra[i].str = (uint32_t)s;
    }
    for (i = 0; i < src->nsamples; i++) {
        if (src->samples[i].nstack > maxstack)
            maxstack = src->samples[i].nstack;
        if (src->samples[i].nlabel > maxlab)
            maxlab = src->samples[i].nlabel;
    }
    if ((stack = folio_malloc((maxstack + 1) * sizeof(*stack))) == NULL ||
        (lab = folio_malloc((maxlab + nextra + 1) * sizeof(*lab))) == NULL) {
        rc = FOLIO_ENOMEM;
        goto done;
    }
    for (i = 0; i < src->nsamples && rc == 0; i++) {
        const struct folio_pprof_sample *sm = &src->samples[i];
        uint32_t n = 0;

        for (k = 0; k < sm->nstack; k++)
            stack[k] = m->loc[src->stack[sm->stack + k]];
        for (k = 0; k < sm->nlabel; k++) {
            const struct folio_pprof_label *l = &src->labels[sm->label + k];
            unsigned e;

            /* An extra label replaces the sample's own of that key. */
            for (e = 0; e < nextra; e++)
                if (strcmp(folio_pprof_text(src, l->key), tags[e].key) == 0)
                    break;
            if (e < nextra)
                continue;
            lab[n] = *l;
            lab[n].key = XSTR(m, l->key);
            lab[n].str = XSTR(m, l->str);
            lab[n].unit = XSTR(m, l->unit);
            n++;
        }
        memcpy(lab + n, extra, nextra * sizeof(*lab));
        rc = folio_pprof_add_sample(dst, stack, sm->nstack,
                                    src->values + sm->value, lab, n + nextra);
        if (rc > 0)
            rc = 0;
    }
done:
    folio_free(stack);
    folio_free(lab);
    return rc;
}

int
folio_pprof_merge(struct folio_pprof *dst, const struct folio_pprof *src,
                  const struct folio_pprof_tag *tags, unsigned ntags)
{
    struct merge m;
    struct set fns, maps, locs;
    uint32_t i, k;
    int64_t s;
    int rc = FOLIO_ENOMEM;

    if (dst->ntypes > 0 && !same_types(dst, src))
        return FOLIO_EINVAL;
    memset(&m, 0, sizeof(m));
    memset(&fns, 0, sizeof(fns));
    memset(&maps, 0, sizeof(maps));
    memset(&locs, 0, sizeof(locs));
    m.dst = dst;
    m.src = src;
    if ((m.str = folio_calloc(src->nstrings + 1, sizeof(*m.str))) == NULL ||
        (m.fn = folio_calloc(src->nfunctions + 1, sizeof(*m.fn))) == NULL ||
        (m.map = folio_calloc(src->nmappings + 1, sizeof(*m.map))) == NULL ||
        (m.loc = folio_calloc(src->nlocations + 1, sizeof(*m.loc))) == NULL)
        goto done;
    for (i = 0; i < src->nstrings; i++) {
        if ((s = folio_pprof_cstr(dst, folio_pprof_text(src, i))) < 0)
            goto done;
        m.str[i] = (uint32_t)s;
    }
    if (dst->ntypes == 0 && (rc = take_header(&m)) != 0)
        goto done;
    rc = FOLIO_ENOMEM;
    /* The sets hold dst's elements first: workers share most of theirs. */
    if (set_init(&fns, (uint64_t)dst->nfunctions + src->nfunctions) != 0 ||
        set_init(&maps, (uint64_t)dst->nmappings + src->nmappings) != 0 ||
        set_init(&locs, (uint64_t)dst->nlocations + src->nlocations) != 0)
        goto done;
    for (i = 0; i < dst->nfunctions; i++)
        set_put(&fns, dst, i, hash_fn, same_fn);
    for (i = 0; i < dst->nmappings; i++)
        set_put(&maps, dst, i, hash_map, same_map);
    for (i = 0; i < dst->nlocations; i++)
        set_put(&locs, dst, i, hash_loc, same_loc);
    if ((rc = merge_elements(&m, &fns, &maps, &locs)) != 0 ||
        (rc = merge_samples(&m, tags, ntags)) != 0)
        goto done;
    for (i = 0; i < src->ncomments; i++) {
        uint32_t c = XSTR(&m, src->comments[i]);

        for (k = 0; k < dst->ncomments && dst->comments[k] != c; k++)
            ;
        if (k == dst->ncomments &&
            folio_pprof_add_comment(dst, "%s", folio_pprof_text(dst, c)) < 0) {
            rc = FOLIO_ENOMEM;
            goto done;
        }
    }
    if (src->duration_nanos > dst->duration_nanos)
        dst->duration_nanos = src->duration_nanos;
    if (src->time_nanos != 0 &&
        (dst->time_nanos == 0 || src->time_nanos < dst->time_nanos))
        dst->time_nanos = src->time_nanos;
    rc = 0;
done:
    folio_free(m.str);
    folio_free(m.fn);
    folio_free(m.map);
    folio_free(m.loc);
    folio_free(fns.slot);
    folio_free(maps.slot);
    folio_free(locs.slot);
    return rc;
}
