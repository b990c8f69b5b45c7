/*
 * pprof.c - the profile.proto model, its encoder and decoder, and merging
 * (see pprof.h).  A small protobuf writer and reader of our own: the
 * message has six types and a dozen fields, and the encoder writes into
 * one growing buffer with two scratch buffers for nested messages, no
 * generated code and no .proto file to carry (Debian ships none).  Field
 * numbers are those of google/pprof's proto/profile.proto.
 */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "src/alloc.h"
#include "src/buf.h"
#include "src/err.h"
#include "src/hash.h"
#include "src/prof/pprof.h"

#define NONE_FN UINT32_MAX /* a line without a function (id 0) */

/* Make room for `need` elements of `size` bytes in *v (capacity *cap). */
static int
grow(void *vp, uint32_t *cap, uint64_t need, size_t size)
{
    void **v = vp;
    uint64_t n = *cap ? *cap : 16;
    void *nv;

    if (need <= *cap)
        return 0;
    if (need > UINT32_MAX / 2)
        return FOLIO_ENOMEM;
    while (n < need)
        n *= 2;
    if ((nv = folio_realloc(*v, (size_t)n * size)) == NULL)
        return FOLIO_ENOMEM;
    *v = nv;
    *cap = (uint32_t)n;
    return 0;
}

#define GROW(p, arr, n, cap, more)                                             \
    grow(&(p)->arr, &(p)->cap, (uint64_t)(p)->n + (more), sizeof(*(p)->arr))

/* ------------------------------------------------------------------ */
/* Strings                                                             */

static uint32_t
str_hash_of(const char *s, size_t len)
{
    return (uint32_t)folio_fnv1a64(s, len);
}

static int
rehash(struct folio_pprof *p, uint32_t cap)
{
    uint32_t *h, i, k;

    if ((h = folio_calloc(cap, sizeof(*h))) == NULL)
        return FOLIO_ENOMEM;
    for (i = 0; i < p->nstrings; i++) {
        k = str_hash_of(p->chars + p->str_off[i], p->str_len[i]) & (cap - 1);
        while (h[k] != 0) {
            /* Keep the first of equal strings (a decoded table may repeat). */
            if (p->str_len[h[k] - 1] == p->str_len[i] &&
                memcmp(p->chars + p->str_off[h[k] - 1],
                       p->chars + p->str_off[i], p->str_len[i]) == 0)
                break;
            k = (k + 1) & (cap - 1);
        }
        if (h[k] == 0)
            h[k] = i + 1;
    }
    folio_free(p->str_hash);
    p->str_hash = h;
    p->str_hash_cap = cap;
    return 0;
}

/* Append a string to the table without interning it. */
static int64_t
str_append(struct folio_pprof *p, const char *s, size_t len)
{
    size_t need;
    char *nc;

    if (len > UINT32_MAX / 2 || p->nchars + len + 1 > UINT32_MAX)
        return FOLIO_ENOMEM;
    if (GROW(p, str_off, nstrings, strings_cap, 1) != 0)
        return -1;
    /* str_len shares strings_cap: grow it to the same capacity. */
    if ((nc = folio_realloc(p->str_len, p->strings_cap * sizeof(uint32_t))) ==
        NULL)
        return -1;
    p->str_len = (uint32_t *)(void *)nc;
    need = p->nchars + len + 1;
    if (need > p->chars_cap) {
        size_t cap = p->chars_cap ? p->chars_cap : 1024;

        while (cap < need)
            cap *= 2;
        if ((nc = folio_realloc(p->chars, cap)) == NULL)
            return -1;
        p->chars = nc;
        p->chars_cap = cap;
    }
    if (len > 0)
        memcpy(p->chars + p->nchars, s, len);
    p->chars[p->nchars + len] = '\0';
    p->str_off[p->nstrings] = (uint32_t)p->nchars;
    p->str_len[p->nstrings] = (uint32_t)len;
    p->nchars += len + 1;
    return p->nstrings++;
}

int64_t
folio_pprof_str(struct folio_pprof *p, const char *s, size_t len)
{
    uint32_t k, i;
    int64_t idx;

    if (s == NULL)
        len = 0;
    if (p->str_hash_cap < 2 * (p->nstrings + 1) &&
        rehash(p, p->str_hash_cap ? p->str_hash_cap * 2 : 256) != 0)
        return -1;
    k = str_hash_of(s != NULL ? s : "", len) & (p->str_hash_cap - 1);
    while ((i = p->str_hash[k]) != 0) {
        if (p->str_len[i - 1] == len &&
            (len == 0 || memcmp(p->chars + p->str_off[i - 1], s, len) == 0))
            return i - 1;
        k = (k + 1) & (p->str_hash_cap - 1);
    }
    if ((idx = str_append(p, s, len)) < 0)
        return -1;
    p->str_hash[k] = (uint32_t)idx + 1;
    return idx;
}

int64_t
folio_pprof_cstr(struct folio_pprof *p, const char *s)
{
    return folio_pprof_str(p, s, s != NULL ? strlen(s) : 0);
}

const char *
folio_pprof_text(const struct folio_pprof *p, uint32_t i)
{
    return i < p->nstrings ? p->chars + p->str_off[i] : "";
}

/* ------------------------------------------------------------------ */
/* The model                                                           */

int
folio_pprof_init(struct folio_pprof *p)
{
    memset(p, 0, sizeof(*p));
    return folio_pprof_str(p, "", 0) == 0 ? 0 : FOLIO_ENOMEM;
}

void
folio_pprof_free(struct folio_pprof *p)
{
    if (p == NULL)
        return;
    folio_free(p->types);
    folio_free(p->samples);
    folio_free(p->stack);
    folio_free(p->values);
    folio_free(p->labels);
    folio_free(p->mappings);
    folio_free(p->locations);
    folio_free(p->lines);
    folio_free(p->functions);
    folio_free(p->comments);
    folio_free(p->chars);
    folio_free(p->str_off);
    folio_free(p->str_len);
    folio_free(p->str_hash);
    memset(p, 0, sizeof(*p));
}

#define STR(p, s, out)                                                         \
    do {                                                                       \
        int64_t s_ = folio_pprof_cstr((p), (s));                               \
        if (s_ < 0)                                                            \
            return FOLIO_ENOMEM;                                               \
        (out) = (uint32_t)s_;                                                  \
    } while (0)

int
folio_pprof_add_type(struct folio_pprof *p, const char *type, const char *unit)
{
    struct folio_pprof_vt vt;

    STR(p, type, vt.type);
    STR(p, unit, vt.unit);
    if (GROW(p, types, ntypes, types_cap, 1) != 0)
        return FOLIO_ENOMEM;
    p->types[p->ntypes] = vt;
    return (int)p->ntypes++;
}

int
folio_pprof_add_mapping(struct folio_pprof *p, uint64_t start, uint64_t limit,
                        uint64_t offset, const char *file, const char *build_id)
{
    struct folio_pprof_mapping m;

    memset(&m, 0, sizeof(m));
    m.start = start;
    m.limit = limit;
    m.offset = offset;
    STR(p, file, m.file);
    STR(p, build_id, m.build_id);
    m.has_functions = m.has_filenames = m.has_lines = m.has_inline = 1;
    if (GROW(p, mappings, nmappings, mappings_cap, 1) != 0)
        return FOLIO_ENOMEM;
    p->mappings[p->nmappings] = m;
    return (int)p->nmappings++;
}

int
folio_pprof_add_function(struct folio_pprof *p, const char *name,
                         const char *file, int64_t start_line)
{
    struct folio_pprof_function f;

    STR(p, name, f.name);
    f.system_name = f.name;
    STR(p, file, f.file);
    f.start_line = start_line;
    if (GROW(p, functions, nfunctions, functions_cap, 1) != 0)
        return FOLIO_ENOMEM;
    p->functions[p->nfunctions] = f;
    return (int)p->nfunctions++;
}

int
folio_pprof_add_location(struct folio_pprof *p, uint32_t mapping,
                         uint64_t address, const struct folio_pprof_line *lines,
                         uint32_t nlines)
{
    struct folio_pprof_location *l;
    uint32_t i;

    if (mapping > p->nmappings)
        return FOLIO_EINVAL;
    for (i = 0; i < nlines; i++)
        if (lines[i].fn != NONE_FN && lines[i].fn >= p->nfunctions)
            return FOLIO_EINVAL;
    if (GROW(p, locations, nlocations, locations_cap, 1) != 0 ||
        GROW(p, lines, nlines, lines_cap, nlines) != 0)
        return FOLIO_ENOMEM;
    l = &p->locations[p->nlocations];
    memset(l, 0, sizeof(*l));
    l->mapping = mapping;
    l->address = address;
    l->line = p->nlines;
    l->nline = nlines;
    if (nlines > 0)
        memcpy(p->lines + p->nlines, lines, nlines * sizeof(*lines));
    p->nlines += nlines;
    return (int)p->nlocations++;
}

int
folio_pprof_set_lines(struct folio_pprof *p, uint32_t loc,
                      const struct folio_pprof_line *lines, uint32_t nlines)
{
    uint32_t i;

    if (loc >= p->nlocations)
        return FOLIO_EINVAL;
    for (i = 0; i < nlines; i++)
        if (lines[i].fn != NONE_FN && lines[i].fn >= p->nfunctions)
            return FOLIO_EINVAL;
    if (GROW(p, lines, nlines, lines_cap, nlines) != 0)
        return FOLIO_ENOMEM;
    p->locations[loc].line = p->nlines;
    p->locations[loc].nline = nlines;
    if (nlines > 0)
        memcpy(p->lines + p->nlines, lines, nlines * sizeof(*lines));
    p->nlines += nlines;
    return 0;
}

int
folio_pprof_add_sample(struct folio_pprof *p, const uint32_t *stack,
                       uint32_t nstack, const int64_t *values,
                       const struct folio_pprof_label *labels, uint32_t nlabels)
{
    struct folio_pprof_sample *s;
    uint32_t i;

    for (i = 0; i < nstack; i++)
        if (stack[i] >= p->nlocations)
            return FOLIO_EINVAL;
    for (i = 0; i < nlabels; i++)
        if (labels[i].key >= p->nstrings || labels[i].str >= p->nstrings ||
            labels[i].unit >= p->nstrings)
            return FOLIO_EINVAL;
    if (GROW(p, samples, nsamples, samples_cap, 1) != 0 ||
        GROW(p, stack, nstack, stack_cap, nstack) != 0 ||
        GROW(p, values, nvalues, values_cap, p->ntypes) != 0 ||
        GROW(p, labels, nlabels, labels_cap, nlabels) != 0)
        return FOLIO_ENOMEM;
    s = &p->samples[p->nsamples];
    s->stack = p->nstack;
    s->nstack = nstack;
    s->value = p->nvalues;
    s->label = p->nlabels;
    s->nlabel = nlabels;
    if (nstack > 0)
        memcpy(p->stack + p->nstack, stack, nstack * sizeof(*stack));
    if (p->ntypes > 0)
        memcpy(p->values + p->nvalues, values, p->ntypes * sizeof(*values));
    if (nlabels > 0)
        memcpy(p->labels + p->nlabels, labels, nlabels * sizeof(*labels));
    p->nstack += nstack;
    p->nvalues += p->ntypes;
    p->nlabels += nlabels;
    return (int)p->nsamples++;
}

int
folio_pprof_add_comment(struct folio_pprof *p, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    int64_t s;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if ((s = folio_pprof_cstr(p, text)) < 0 ||
        GROW(p, comments, ncomments, comments_cap, 1) != 0)
        return FOLIO_ENOMEM;
    p->comments[p->ncomments] = (uint32_t)s;
    return (int)p->ncomments++;
}

/* ------------------------------------------------------------------ */
/* Encoding                                                            */

static int
put_varint(struct folio_buf *b, uint64_t v)
{
    unsigned char tmp[10];
    size_t n = 0;

    do {
        tmp[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v != 0)
            tmp[n] |= 0x80;
        n++;
    } while (v != 0);
    return folio_buf_append(b, tmp, n);
}

/* A varint field; zero is the default and is not written. */
static int
put_u64(struct folio_buf *b, uint32_t field, uint64_t v)
{
    if (v == 0)
        return 0;
    if (put_varint(b, (uint64_t)field << 3) != 0)
        return FOLIO_ENOMEM;
    return put_varint(b, v);
}

static int
put_i64(struct folio_buf *b, uint32_t field, int64_t v)
{
    return put_u64(b, field, (uint64_t)v);
}

static int
put_bytes(struct folio_buf *b, uint32_t field, const void *data, size_t len)
{
    if (put_varint(b, ((uint64_t)field << 3) | 2) != 0 ||
        put_varint(b, len) != 0 || folio_buf_append(b, data, len) != 0)
        return FOLIO_ENOMEM;
    return 0;
}

/* A nested message, encoded in `sub`, appended to b as field `field`. */
static int
put_msg(struct folio_buf *b, uint32_t field, struct folio_buf *sub)
{
    size_t len = folio_buf_pending(sub);
    /* An empty one may have no buffer at all: no pointer into it then. */
    int rc = put_bytes(b, field, len > 0 ? folio_buf_at(sub, 0) : "", len);

    folio_buf_reset(sub);
    return rc;
}

static int
put_vt(struct folio_buf *b, uint32_t field, const struct folio_pprof_vt *vt,
       struct folio_buf *sub)
{
    if (put_u64(sub, 1, vt->type) != 0 || put_u64(sub, 2, vt->unit) != 0)
        return FOLIO_ENOMEM;
    return put_msg(b, field, sub);
}

/* A packed repeated varint field. */
static int
put_packed(struct folio_buf *b, uint32_t field, const void *v, uint32_t n,
           int is_u32_plus1, struct folio_buf *sub)
{
    uint32_t i;

    if (n == 0)
        return 0;
    for (i = 0; i < n; i++) {
        uint64_t x = is_u32_plus1 ? (uint64_t)((const uint32_t *)v)[i] + 1
                                  : (uint64_t)((const int64_t *)v)[i];

        if (put_varint(sub, x) != 0)
            return FOLIO_ENOMEM;
    }
    return put_msg(b, field, sub);
}

static int
encode(const struct folio_pprof *p, struct folio_buf *b, struct folio_buf *s1,
       struct folio_buf *s2)
{
    uint32_t i, j;

    for (i = 0; i < p->ntypes; i++)
        if (put_vt(b, 1, &p->types[i], s1) != 0)
            return FOLIO_ENOMEM;
    for (i = 0; i < p->nsamples; i++) {
        const struct folio_pprof_sample *s = &p->samples[i];

        if (put_packed(s1, 1, s->nstack > 0 ? p->stack + s->stack : NULL,
                       s->nstack, 1, s2) != 0 ||
            put_packed(s1, 2, p->values + s->value, p->ntypes, 0, s2) != 0)
            return FOLIO_ENOMEM;
        for (j = 0; j < s->nlabel; j++) {
            const struct folio_pprof_label *l = &p->labels[s->label + j];

            if (put_u64(s2, 1, l->key) != 0 || put_u64(s2, 2, l->str) != 0 ||
                put_i64(s2, 3, l->num) != 0 || put_u64(s2, 4, l->unit) != 0 ||
                put_msg(s1, 3, s2) != 0)
                return FOLIO_ENOMEM;
        }
        if (put_msg(b, 2, s1) != 0)
            return FOLIO_ENOMEM;
    }
    for (i = 0; i < p->nmappings; i++) {
        const struct folio_pprof_mapping *m = &p->mappings[i];

        if (put_u64(s1, 1, (uint64_t)i + 1) != 0 ||
            put_u64(s1, 2, m->start) != 0 || put_u64(s1, 3, m->limit) != 0 ||
            put_u64(s1, 4, m->offset) != 0 || put_u64(s1, 5, m->file) != 0 ||
            put_u64(s1, 6, m->build_id) != 0 ||
            put_u64(s1, 7, m->has_functions) != 0 ||
            put_u64(s1, 8, m->has_filenames) != 0 ||
            put_u64(s1, 9, m->has_lines) != 0 ||
            put_u64(s1, 10, m->has_inline) != 0 || put_msg(b, 3, s1) != 0)
            return FOLIO_ENOMEM;
    }
    for (i = 0; i < p->nlocations; i++) {
        const struct folio_pprof_location *l = &p->locations[i];

        if (put_u64(s1, 1, (uint64_t)i + 1) != 0 ||
            put_u64(s1, 2, l->mapping) != 0 || put_u64(s1, 3, l->address) != 0)
            return FOLIO_ENOMEM;
        for (j = 0; j < l->nline; j++) {
            const struct folio_pprof_line *ln = &p->lines[l->line + j];

            if (put_u64(s2, 1, ln->fn == NONE_FN ? 0 : (uint64_t)ln->fn + 1) !=
                    0 ||
                put_i64(s2, 2, ln->line) != 0 || put_msg(s1, 4, s2) != 0)
                return FOLIO_ENOMEM;
        }
        if (put_u64(s1, 5, l->folded) != 0 || put_msg(b, 4, s1) != 0)
            return FOLIO_ENOMEM;
    }
    for (i = 0; i < p->nfunctions; i++) {
        const struct folio_pprof_function *f = &p->functions[i];

        if (put_u64(s1, 1, (uint64_t)i + 1) != 0 ||
            put_u64(s1, 2, f->name) != 0 ||
            put_u64(s1, 3, f->system_name) != 0 ||
            put_u64(s1, 4, f->file) != 0 || put_i64(s1, 5, f->start_line) != 0 ||
            put_msg(b, 5, s1) != 0)
            return FOLIO_ENOMEM;
    }
    for (i = 0; i < p->nstrings; i++)
        if (put_bytes(b, 6, p->str_len[i] > 0 ? p->chars + p->str_off[i] : "",
                      p->str_len[i]) != 0)
            return FOLIO_ENOMEM;
    if (put_u64(b, 7, p->drop_frames) != 0 ||
        put_u64(b, 8, p->keep_frames) != 0 ||
        put_i64(b, 9, p->time_nanos) != 0 ||
        put_i64(b, 10, p->duration_nanos) != 0)
        return FOLIO_ENOMEM;
    if ((p->period_type.type != 0 || p->period_type.unit != 0) &&
        put_vt(b, 11, &p->period_type, s1) != 0)
        return FOLIO_ENOMEM;
    if (put_i64(b, 12, p->period) != 0)
        return FOLIO_ENOMEM;
    for (i = 0; i < p->ncomments; i++)
        if (put_u64(b, 13, p->comments[i]) != 0)
            return FOLIO_ENOMEM;
    return put_u64(b, 14, p->default_type);
}

/* Every reference in range: what the encoder writes must decode. */
static int
check_refs(const struct folio_pprof *p)
{
    uint32_t i;

    for (i = 0; i < p->nstack; i++)
        if (p->stack[i] >= p->nlocations)
            return FOLIO_EINVAL;
    for (i = 0; i < p->nlocations; i++)
        if (p->locations[i].mapping > p->nmappings ||
            (uint64_t)p->locations[i].line + p->locations[i].nline > p->nlines)
            return FOLIO_EINVAL;
    for (i = 0; i < p->nlines; i++)
        if (p->lines[i].fn != NONE_FN && p->lines[i].fn >= p->nfunctions)
            return FOLIO_EINVAL;
    return 0;
}

int
folio_pprof_encode(const struct folio_pprof *p, struct folio_buf *out)
{
    struct folio_buf s1, s2;
    int rc;

    if ((rc = check_refs(p)) != 0)
        return rc;
    memset(&s1, 0, sizeof(s1));
    memset(&s2, 0, sizeof(s2));
    rc = encode(p, out, &s1, &s2);
    folio_buf_free(&s1);
    folio_buf_free(&s2);
    return rc;
}

/* zlib allocates through folio_malloc: counted like everything else. */
static void *
z_alloc(void *opaque, unsigned n, unsigned size)
{
    return folio_calloc(n, size);
}

static void
z_free(void *opaque, void *ptr)
{
    folio_free(ptr);
}

int
folio_pprof_encode_gz(const struct folio_pprof *p, struct folio_buf *out)
{
    struct folio_buf raw;
    z_stream z;
    int rc, zr;

    memset(&raw, 0, sizeof(raw));
    if ((rc = folio_pprof_encode(p, &raw)) != 0) {
        folio_buf_free(&raw);
        return rc;
    }
    memset(&z, 0, sizeof(z));
    z.zalloc = z_alloc;
    z.zfree = z_free;
    /* Go's pprof writes with gzip.BestSpeed: a profile is read once. */
    if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
        folio_buf_free(&raw);
        return FOLIO_ENOMEM;
    }
    z.next_in = (Bytef *)folio_buf_at(&raw, 0);
    z.avail_in = (uInt)folio_buf_pending(&raw);
    rc = 0;
    do {
        if (folio_buf_reserve(out, 65536) != 0) {
            rc = FOLIO_ENOMEM;
            break;
        }
        z.next_out = (Bytef *)(out->b_data + out->b_len);
        z.avail_out = (uInt)folio_buf_space(out);
        zr = deflate(&z, Z_FINISH);
        out->b_len = (size_t)((char *)z.next_out - out->b_data);
        if (zr == Z_STREAM_ERROR) {
            rc = FOLIO_ENOMEM;
            break;
        }
    } while (zr != Z_STREAM_END);
    deflateEnd(&z);
    folio_buf_free(&raw);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Decoding                                                            */

struct rd {
    const uint8_t *p, *end;
};

struct dec {
    struct folio_pprof *p;
    char *err;
    size_t errlen;
    /* Ids as read, resolved to indices once everything is read. */
    uint64_t *stack_ids;
    uint32_t stack_ids_cap;
    uint64_t *loc_ids, *loc_map;
    uint32_t loc_ids_cap, loc_map_cap;
    uint64_t *line_fn;
    uint32_t line_fn_cap;
    uint64_t *fn_ids;
    uint32_t fn_ids_cap;
    uint64_t *map_ids;
    uint32_t map_ids_cap;
    /* String references, checked against the table at the end. */
    uint64_t max_str;
};

static int
bad(struct dec *d, const char *what)
{
    snprintf(d->err, d->errlen, "malformed profile: %s", what);
    return FOLIO_EINVAL;
}

static int
rd_varint(struct rd *r, uint64_t *v)
{
    uint64_t x = 0;
    unsigned shift = 0;

    while (r->p < r->end) {
        uint8_t c = *r->p++;

        if (shift == 63 && c > 1)
            return -1;
        x |= (uint64_t)(c & 0x7f) << shift;
        if ((c & 0x80) == 0) {
            *v = x;
            return 0;
        }
        shift += 7;
        if (shift > 63)
            return -1;
    }
    return -1;
}

/*
 * The next field: its number and wire type; a varint's value in *v, a
 * length-delimited field's bytes in *sub.  Fixed 32/64-bit fields are
 * skipped (wire 1, 5: profile.proto has none).  Returns 1, 0 at the end,
 * -1 when malformed.
 */
static int
rd_field(struct rd *r, uint32_t *field, uint32_t *wire, uint64_t *v,
         struct rd *sub)
{
    uint64_t key, len;

    if (r->p >= r->end)
        return 0;
    if (rd_varint(r, &key) != 0 || (key >> 3) == 0 || (key >> 3) > UINT32_MAX)
        return -1;
    *field = (uint32_t)(key >> 3);
    *wire = (uint32_t)(key & 7);
    switch (*wire) {
    case 0:
        return rd_varint(r, v) == 0 ? 1 : -1;
    case 1:
        if (r->end - r->p < 8)
            return -1;
        r->p += 8;
        return 1;
    case 2:
        if (rd_varint(r, &len) != 0 || len > (uint64_t)(r->end - r->p))
            return -1;
        sub->p = r->p;
        sub->end = r->p + len;
        r->p += len;
        return 1;
    case 5:
        if (r->end - r->p < 4)
            return -1;
        r->p += 4;
        return 1;
    default:
        return -1;
    }
}

/* A string reference: remembered for the check at the end. */
static uint32_t
str_ref(struct dec *d, uint64_t v)
{
    if (v > d->max_str)
        d->max_str = v;
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/*
 * A repeated varint, packed (wire 2) or not (wire 0): call `each` for
 * every value.
 */
static int
rd_repeated(struct dec *d, uint32_t wire, uint64_t v, struct rd *sub,
            int (*each)(struct dec *d, uint64_t v))
{
    if (wire == 0)
        return each(d, v);
    if (wire != 2)
        return -1;
    while (sub->p < sub->end) {
        if (rd_varint(sub, &v) != 0 || each(d, v) != 0)
            return -1;
    }
    return 0;
}

static int
rd_vt(struct dec *d, struct rd *r, struct folio_pprof_vt *vt)
{
    uint32_t f, w;
    uint64_t v = 0;
    struct rd sub;
    int rc;

    memset(vt, 0, sizeof(*vt));
    while ((rc = rd_field(r, &f, &w, &v, &sub)) == 1) {
        if (w == 0 && f == 1)
            vt->type = str_ref(d, v);
        else if (w == 0 && f == 2)
            vt->unit = str_ref(d, v);
    }
    return rc;
}

static int
push_stack_id(struct dec *d, uint64_t v)
{
    struct folio_pprof *p = d->p;

    if (grow(&d->stack_ids, &d->stack_ids_cap, (uint64_t)p->nstack + 1,
             sizeof(uint64_t)) != 0 ||
        GROW(p, stack, nstack, stack_cap, 1) != 0)
        return -1;
    d->stack_ids[p->nstack] = v;
    p->stack[p->nstack++] = 0;
    return 0;
}

static int
push_value(struct dec *d, uint64_t v)
{
    struct folio_pprof *p = d->p;

    if (GROW(p, values, nvalues, values_cap, 1) != 0)
        return -1;
    p->values[p->nvalues++] = (int64_t)v;
    return 0;
}

static int
push_comment(struct dec *d, uint64_t v)
{
    struct folio_pprof *p = d->p;

    if (GROW(p, comments, ncomments, comments_cap, 1) != 0)
        return -1;
    p->comments[p->ncomments++] = str_ref(d, v);
    return 0;
}

static int
rd_label(struct dec *d, struct rd *r)
{
    struct folio_pprof *p = d->p;
    struct folio_pprof_label l;
    uint32_t f, w;
    uint64_t v = 0;
    struct rd sub;
    int rc;

    memset(&l, 0, sizeof(l));
    while ((rc = rd_field(r, &f, &w, &v, &sub)) == 1) {
        if (w != 0)
            continue;
        if (f == 1)
            l.key = str_ref(d, v);
        else if (f == 2)
            l.str = str_ref(d, v);
        else if (f == 3)
            l.num = (int64_t)v;
        else if (f == 4)
            l.unit = str_ref(d, v);
    }
    if (rc != 0 || GROW(p, labels, nlabels, labels_cap, 1) != 0)
        return -1;
    p->labels[p->nlabels++] = l;
    return 0;
}

static int
rd_sample(struct dec *d, struct rd *r)
{
    struct folio_pprof *p = d->p;
    struct folio_pprof_sample s;
    uint32_t f, w;
    uint64_t v = 0;
    struct rd sub;
    int rc;

    memset(&s, 0, sizeof(s));
    s.stack = p->nstack;
    s.value = p->nvalues;
    s.label = p->nlabels;
    while ((rc = rd_field(r, &f, &w, &v, &sub)) == 1) {
        if (f == 1 && rd_repeated(d, w, v, &sub, push_stack_id) != 0)
            return -1;
        if (f == 2 && rd_repeated(d, w, v, &sub, push_value) != 0)
            return -1;
        if (f == 3 && w == 2 && rd_label(d, &sub) != 0)
            return -1;
    }
    if (rc != 0 || GROW(p, samples, nsamples, samples_cap, 1) != 0)
        return -1;
    /* Its value count is checked against the types once all is read. */
    s.nstack = p->nstack - s.stack;
    s.nlabel = p->nlabels - s.label;
    p->samples[p->nsamples++] = s;
    return 0;
}

static int
rd_mapping(struct dec *d, struct rd *r)
{
    struct folio_pprof *p = d->p;
    struct folio_pprof_mapping m;
    uint32_t f, w;
    uint64_t v = 0, id = 0;
    struct rd sub;
    int rc;

    memset(&m, 0, sizeof(m));
    while ((rc = rd_field(r, &f, &w, &v, &sub)) == 1) {
        if (w != 0)
            continue;
        switch (f) {
        case 1:
            id = v;
            break;
        case 2:
            m.start = v;
            break;
        case 3:
            m.limit = v;
            break;
        case 4:
            m.offset = v;
            break;
        case 5:
            m.file = str_ref(d, v);
            break;
        case 6:
            m.build_id = str_ref(d, v);
            break;
        case 7:
            m.has_functions = v != 0;
            break;
        case 8:
            m.has_filenames = v != 0;
            break;
        case 9:
            m.has_lines = v != 0;
            break;
        case 10:
            m.has_inline = v != 0;
            break;
        }
    }
    if (rc != 0 || id == 0 || GROW(p, mappings, nmappings, mappings_cap, 1) ||
        grow(&d->map_ids, &d->map_ids_cap, (uint64_t)p->nmappings + 1,
             sizeof(uint64_t)) != 0)
        return -1;
    d->map_ids[p->nmappings] = id;
    p->mappings[p->nmappings++] = m;
    return 0;
}

static int
rd_line(struct dec *d, struct rd *r)
{
    struct folio_pprof *p = d->p;
    uint32_t f, w;
    uint64_t v = 0, fn = 0;
    int64_t line = 0;
    struct rd sub;
    int rc;

    while ((rc = rd_field(r, &f, &w, &v, &sub)) == 1) {
        if (w == 0 && f == 1)
            fn = v;
        else if (w == 0 && f == 2)
            line = (int64_t)v;
    }
    if (rc != 0 || GROW(p, lines, nlines, lines_cap, 1) != 0 ||
        grow(&d->line_fn, &d->line_fn_cap, (uint64_t)p->nlines + 1,
             sizeof(uint64_t)) != 0)
        return -1;
    d->line_fn[p->nlines] = fn;
    p->lines[p->nlines].fn = 0;
    p->lines[p->nlines++].line = line;
    return 0;
}

static int
rd_location(struct dec *d, struct rd *r)
{
    struct folio_pprof *p = d->p;
    struct folio_pprof_location l;
    uint32_t f, w;
    uint64_t v = 0, id = 0, map = 0;
    struct rd sub;
    int rc;

    memset(&l, 0, sizeof(l));
    l.line = p->nlines;
    while ((rc = rd_field(r, &f, &w, &v, &sub)) == 1) {
        if (f == 1 && w == 0)
            id = v;
        else if (f == 2 && w == 0)
            map = v;
        else if (f == 3 && w == 0)
            l.address = v;
        else if (f == 4 && w == 2 && rd_line(d, &sub) != 0)
            return -1;
        else if (f == 5 && w == 0)
            l.folded = v != 0;
    }
    if (rc != 0 || id == 0 ||
        GROW(p, locations, nlocations, locations_cap, 1) != 0 ||
        grow(&d->loc_ids, &d->loc_ids_cap, (uint64_t)p->nlocations + 1,
             sizeof(uint64_t)) != 0 ||
        grow(&d->loc_map, &d->loc_map_cap, (uint64_t)p->nlocations + 1,
             sizeof(uint64_t)) != 0)
        return -1;
    l.nline = p->nlines - l.line;
    d->loc_ids[p->nlocations] = id;
    d->loc_map[p->nlocations] = map;
    p->locations[p->nlocations++] = l;
    return 0;
}

static int
rd_function(struct dec *d, struct rd *r)
{
    struct folio_pprof *p = d->p;
    struct folio_pprof_function fn;
    uint32_t f, w;
    uint64_t v = 0, id = 0;
    struct rd sub;
    int rc;

    memset(&fn, 0, sizeof(fn));
    while ((rc = rd_field(r, &f, &w, &v, &sub)) == 1) {
        if (w != 0)
            continue;
        if (f == 1)
            id = v;
        else if (f == 2)
            fn.name = str_ref(d, v);
        else if (f == 3)
            fn.system_name = str_ref(d, v);
        else if (f == 4)
            fn.file = str_ref(d, v);
        else if (f == 5)
            fn.start_line = (int64_t)v;
    }
    if (rc != 0 || id == 0 ||
        GROW(p, functions, nfunctions, functions_cap, 1) != 0 ||
        grow(&d->fn_ids, &d->fn_ids_cap, (uint64_t)p->nfunctions + 1,
             sizeof(uint64_t)) != 0)
        return -1;
    d->fn_ids[p->nfunctions] = id;
    p->functions[p->nfunctions++] = fn;
    return 0;
}

static int
rd_profile(struct dec *d, struct rd *r)
{
    struct folio_pprof *p = d->p;
    uint32_t f, w;
    uint64_t v = 0;
    struct rd sub;
    int rc;

    while ((rc = rd_field(r, &f, &w, &v, &sub)) == 1) {
        int ok = 0;

        switch (f) {
        case 1:
            ok = w == 2 && GROW(p, types, ntypes, types_cap, 1) == 0 &&
                 rd_vt(d, &sub, &p->types[p->ntypes]) == 0;
            if (ok)
                p->ntypes++;
            break;
        case 2:
            ok = w == 2 && rd_sample(d, &sub) == 0;
            break;
        case 3:
            ok = w == 2 && rd_mapping(d, &sub) == 0;
            break;
        case 4:
            ok = w == 2 && rd_location(d, &sub) == 0;
            break;
        case 5:
            ok = w == 2 && rd_function(d, &sub) == 0;
            break;
        case 6:
            ok = w == 2 &&
                 str_append(p, (const char *)sub.p,
                            (size_t)(sub.end - sub.p)) >= 0;
            break;
        case 7:
            p->drop_frames = str_ref(d, v);
            ok = w == 0;
            break;
        case 8:
            p->keep_frames = str_ref(d, v);
            ok = w == 0;
            break;
        case 9:
            p->time_nanos = (int64_t)v;
            ok = w == 0;
            break;
        case 10:
            p->duration_nanos = (int64_t)v;
            ok = w == 0;
            break;
        case 11:
            ok = w == 2 && rd_vt(d, &sub, &p->period_type) == 0;
            break;
        case 12:
            p->period = (int64_t)v;
            ok = w == 0;
            break;
        case 13:
            ok = rd_repeated(d, w, v, &sub, push_comment) == 0;
            break;
        case 14:
            p->default_type = str_ref(d, v);
            ok = w == 0;
            break;
        default:
            ok = 1; /* a field of a newer profile.proto */
        }
        if (!ok)
            return bad(d, "a field could not be read");
    }
    return rc == 0 ? 0 : bad(d, "truncated or not protobuf");
}

struct idpair {
    uint64_t id;
    uint32_t index;
};

static int
cmp_idpair(const void *a, const void *b)
{
    const struct idpair *x = a, *y = b;

    return x->id < y->id ? -1 : x->id > y->id;
}

/* Sorted (id, index) pairs for ids[0..n); duplicates are an error. */
static struct idpair *
id_table(const uint64_t *ids, uint32_t n, int *dup)
{
    struct idpair *t = folio_malloc((n ? n : 1) * sizeof(*t));
    uint32_t i;

    *dup = 0;
    if (t == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        t[i].id = ids[i];
        t[i].index = i;
    }
    qsort(t, n, sizeof(*t), cmp_idpair);
    for (i = 1; i < n; i++)
        if (t[i].id == t[i - 1].id)
            *dup = 1;
    return t;
}

static int64_t
id_find(const struct idpair *t, uint32_t n, uint64_t id)
{
    uint32_t lo = 0, hi = n;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (t[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && t[lo].id == id ? (int64_t)t[lo].index : -1;
}

/* Ids to indices, and every reference checked. */
static int
resolve(struct dec *d)
{
    struct folio_pprof *p = d->p;
    struct idpair *locs = NULL, *fns = NULL, *maps = NULL;
    uint32_t i;
    int64_t k;
    int dup = 0, d2 = 0, d3 = 0, rc = 0;

    if (d->max_str >= p->nstrings)
        return bad(d, "a string index is out of the table");
    if (p->nstrings == 0 || p->str_len[0] != 0)
        return bad(d, "the string table does not start with \"\"");
    /* As Go's Profile.CheckValid: a sample's values need their types. */
    if (p->nsamples > 0 && p->ntypes == 0)
        return bad(d, "samples without sample type information");
    for (i = 0; i < p->nsamples; i++) {
        uint32_t end = i + 1 < p->nsamples ? p->samples[i + 1].value
                                           : p->nvalues;

        if (end - p->samples[i].value != p->ntypes)
            return bad(d, "a sample has not one value per sample type");
    }
    locs = id_table(d->loc_ids, p->nlocations, &dup);
    fns = id_table(d->fn_ids, p->nfunctions, &d2);
    maps = id_table(d->map_ids, p->nmappings, &d3);
    if (locs == NULL || fns == NULL || maps == NULL) {
        rc = FOLIO_ENOMEM;
        goto done;
    }
    if (dup || d2 || d3) {
        rc = bad(d, "two elements have the same id");
        goto done;
    }
    for (i = 0; i < p->nstack; i++) {
        if ((k = id_find(locs, p->nlocations, d->stack_ids[i])) < 0) {
            rc = bad(d, "a sample names an unknown location");
            goto done;
        }
        p->stack[i] = (uint32_t)k;
    }
    for (i = 0; i < p->nlocations; i++) {
        if (d->loc_map[i] == 0) {
            p->locations[i].mapping = 0;
        } else if ((k = id_find(maps, p->nmappings, d->loc_map[i])) < 0) {
            rc = bad(d, "a location names an unknown mapping");
            goto done;
        } else {
            p->locations[i].mapping = (uint32_t)k + 1;
        }
    }
    for (i = 0; i < p->nlines; i++) {
        if (d->line_fn[i] == 0) {
            p->lines[i].fn = NONE_FN;
        } else if ((k = id_find(fns, p->nfunctions, d->line_fn[i])) < 0) {
            rc = bad(d, "a line names an unknown function");
            goto done;
        } else {
            p->lines[i].fn = (uint32_t)k;
        }
    }
    for (i = 256; i < 2 * p->nstrings + 2; i *= 2)
        ;
    rc = rehash(p, i);
done:
    folio_free(locs);
    folio_free(fns);
    folio_free(maps);
    return rc;
}

/* Unzip `data` into `out`, at most FOLIO_PPROF_MAX_BYTES. */
static int
gunzip(const void *data, size_t len, struct folio_buf *out, char *err,
       size_t errlen)
{
    z_stream z;
    int zr, rc = 0;

    memset(&z, 0, sizeof(z));
    z.zalloc = z_alloc;
    z.zfree = z_free;
    if (inflateInit2(&z, 15 + 32) != Z_OK)
        return FOLIO_ENOMEM;
    z.next_in = (Bytef *)(uintptr_t)data;
    z.avail_in = (uInt)(len > UINT32_MAX ? UINT32_MAX : len);
    for (;;) {
        if (folio_buf_pending(out) >= FOLIO_PPROF_MAX_BYTES) {
            snprintf(err, errlen, "profile over %u MiB unzipped",
                     FOLIO_PPROF_MAX_BYTES >> 20);
            rc = FOLIO_ETOOBIG;
            break;
        }
        if (folio_buf_reserve(out, 65536) != 0) {
            rc = FOLIO_ENOMEM;
            break;
        }
        z.next_out = (Bytef *)(out->b_data + out->b_len);
        z.avail_out = (uInt)folio_buf_space(out);
        zr = inflate(&z, Z_NO_FLUSH);
        out->b_len = (size_t)((char *)z.next_out - out->b_data);
        if (zr == Z_STREAM_END)
            break;
        if (zr == Z_MEM_ERROR) {
            rc = FOLIO_ENOMEM;
            break;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR) {
            snprintf(err, errlen, "malformed profile: gzip: %s",
                     z.msg != NULL ? z.msg : "bad data");
            rc = FOLIO_EINVAL;
            break;
        }
        if (zr == Z_BUF_ERROR && z.avail_in == 0) {
            snprintf(err, errlen, "malformed profile: gzip data truncated");
            rc = FOLIO_EINVAL;
            break;
        }
    }
    inflateEnd(&z);
    return rc;
}

int
folio_pprof_decode(const void *data, size_t len, struct folio_pprof *p,
                   char *err, size_t errlen)
{
    const uint8_t *b = data;
    struct folio_buf raw;
    struct dec d;
    struct rd r;
    int rc;

    memset(p, 0, sizeof(*p));
    memset(&raw, 0, sizeof(raw));
    memset(&d, 0, sizeof(d));
    d.p = p;
    d.err = err;
    d.errlen = errlen;
    if (len >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
        if ((rc = gunzip(data, len, &raw, err, errlen)) != 0)
            goto done;
        r.p = (const uint8_t *)folio_buf_at(&raw, 0);
        r.end = r.p + folio_buf_pending(&raw);
    } else if (len > FOLIO_PPROF_MAX_BYTES) {
        snprintf(err, errlen, "profile over %u MiB",
                 FOLIO_PPROF_MAX_BYTES >> 20);
        rc = FOLIO_ETOOBIG;
        goto done;
    } else {
        r.p = b;
        r.end = b + len;
    }
    if ((rc = rd_profile(&d, &r)) == 0)
        rc = resolve(&d);
    if (rc == FOLIO_ENOMEM)
        snprintf(err, errlen, "out of memory reading a profile");
done:
    folio_buf_free(&raw);
    folio_free(d.stack_ids);
    folio_free(d.loc_ids);
    folio_free(d.loc_map);
    folio_free(d.line_fn);
    folio_free(d.fn_ids);
    folio_free(d.map_ids);
    if (rc != 0)
        folio_pprof_free(p);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Merging                                                             */

