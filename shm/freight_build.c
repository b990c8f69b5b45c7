/*
 * freight_build.c - compiling validated tables into the lookup image, and
 * importing tables and catalog into the LMDB environment `freight`.
 * Master only (and tests): allocates, opens and closes its own
 * environment, never keeps one open across fork().
 *
 * Compiling: per carrier, the CEP axis is cut at every row's start and
 * end+1; each piece lists the rows that cover it, sorted by weight start.
 * Two rows that share a piece and whose weight ranges meet overlap (an
 * error).  Neighbouring pieces with the same rows merge, pieces with none
 * are dropped, and a lookup is a binary search over the pieces and one
 * over the piece's bands.
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <lmdb.h>

#include "shm/freight.h"
#include "shm/freight_int.h"
#include "shm/lmdb_check.h"
#include "src/alloc.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/hash.h"
#include "src/log.h"

#define MAX_PIECES (1u << 24) /* band copies of one image: 16M */
#define MAX_FILE_BYTES (256u << 20)
#define ENV_MAPSIZE ((size_t)1 << 30)

/* ---- compiling ---- */

/* A growable byte array. */
struct bytes {
    unsigned char *p;
    size_t len, cap;
};

static int
bytes_add(struct bytes *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap == 0 ? 4096 : b->cap;
        unsigned char *q;

        while (cap < b->len + n)
            cap *= 2;
        if ((q = folio_realloc(b->p, cap)) == NULL)
            return FOLIO_ENOMEM;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

struct piece {
    uint32_t iv;  /* elementary interval */
    uint32_t row;
    uint32_t w_lo;
};

static int
u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

static int
piece_cmp(const void *a, const void *b)
{
    const struct piece *x = a, *y = b;

    if (x->iv != y->iv)
        return x->iv < y->iv ? -1 : 1;
    if (x->w_lo != y->w_lo)
        return x->w_lo < y->w_lo ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

static int
carrier_cmp(const void *a, const void *b)
{
    const struct folio_freight_table *x = *(const struct folio_freight_table *const *)a;
    const struct folio_freight_table *y = *(const struct folio_freight_table *const *)b;

    return strcmp(x->ft_carrier, y->ft_carrier);
}

/* Index of the first point >= v (points sorted, unique). */
static uint32_t
lower_bound(const uint32_t *pts, uint32_t n, uint32_t v)
{
    uint32_t lo = 0, hi = n;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (pts[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct compiler {
    struct bytes ivs, bands, strings;
    uint32_t niv, nbands;
};

/* The offset of `name` in the string pool (appended). */
static int
add_string(struct compiler *cc, const char *name, uint32_t *off,
           uint32_t *len)
{
    *off = (uint32_t)cc->strings.len;
    *len = (uint32_t)strlen(name);
    return bytes_add(&cc->strings, name, *len);
}

static void
report_overlap(struct folio_freight_diag *d, const char *carrier,
               const struct folio_freight_row *a,
               const struct folio_freight_row *b)
{
    char file[FOLIO_FREIGHT_NAME_MAX + 8];

    if (a->fr_line > b->fr_line) {
        const struct folio_freight_row *t = a;

        a = b;
        b = t;
    }
    snprintf(file, sizeof(file), "%s.csv", carrier);
    folio_freight_report(d, file, b->fr_line, 1,
                         "overlaps line %u: CEP %08u-%08u, %u-%u g here, "
                         "CEP %08u-%08u, %u-%u g there",
                         a->fr_line, b->fr_cep_lo, b->fr_cep_hi, b->fr_w_lo,
                         b->fr_w_hi, a->fr_cep_lo, a->fr_cep_hi, a->fr_w_lo,
                         a->fr_w_hi);
}

/*
 * A carrier's table as compile_carrier() cuts it: the CEP axis cut at
 * every row's start and end + 1 (so the points bound its elementary
 * intervals), and a piece for each row and interval it covers.
 */
struct cut {
    const struct folio_freight_table *t;
    uint32_t *pts; /* the cut points, sorted, unique */
    uint32_t npts;
    struct piece *pc; /* sorted by interval, weight start, row */
    size_t npc;
    uint32_t *name_off; /* each row's band name in the string pool */
};

static void
cut_free(struct cut *c)
{
    folio_free(c->pc);
    folio_free(c->pts);
    folio_free(c->name_off);
}

/* Phase 1: the cut points, every row's start and end + 1. */
static int
cut_points(struct cut *c)
{
    const struct folio_freight_row *rows = c->t->ft_rows;
    size_t i, j, n = 0;

    if ((c->pts = folio_malloc(2 * c->t->ft_nrows * sizeof(*c->pts))) == NULL)
        return FOLIO_ENOMEM;
    for (i = 0; i < c->t->ft_nrows; i++) {
        c->pts[n++] = rows[i].fr_cep_lo;
        c->pts[n++] = rows[i].fr_cep_hi + 1; /* <= 10^8: no overflow */
    }
    qsort(c->pts, n, sizeof(*c->pts), u32_cmp);
    for (i = j = 0; i < n; i++)
        if (j == 0 || c->pts[j - 1] != c->pts[i])
            c->pts[j++] = c->pts[i];
    c->npts = (uint32_t)j;
    return 0;
}

/*
 * Phase 2: the pieces, sorted.  Refused (reported) when the ranges cut
 * each other into more than MAX_PIECES.
 */
static int
cut_pieces(struct cut *c, struct folio_freight_diag *d)
{
    const struct folio_freight_row *rows = c->t->ft_rows;
    size_t total = 0, i;
    uint32_t a, b, k;

    for (i = 0; i < c->t->ft_nrows; i++)
        total += lower_bound(c->pts, c->npts, rows[i].fr_cep_hi + 1) -
                 lower_bound(c->pts, c->npts, rows[i].fr_cep_lo);
    if (total > MAX_PIECES) {
        char file[FOLIO_FREIGHT_NAME_MAX + 8];

        snprintf(file, sizeof(file), "%s.csv", c->t->ft_carrier);
        folio_freight_report(d, file, 0, 0,
                             "the CEP ranges cut each other into more than "
                             "%u pieces",
                             MAX_PIECES);
        return FOLIO_ETOOBIG;
    }
    if ((c->pc = folio_malloc(total * sizeof(*c->pc))) == NULL)
        return FOLIO_ENOMEM;
    for (i = 0; i < c->t->ft_nrows; i++) {
        a = lower_bound(c->pts, c->npts, rows[i].fr_cep_lo);
        b = lower_bound(c->pts, c->npts, rows[i].fr_cep_hi + 1);
        for (k = a; k < b; k++) {
            c->pc[c->npc].iv = k;
            c->pc[c->npc].row = (uint32_t)i;
            c->pc[c->npc].w_lo = rows[i].fr_w_lo;
            c->npc++;
        }
    }
    qsort(c->pc, c->npc, sizeof(*c->pc), piece_cmp);
    return 0;
}

/* The rows' band names into the string pool, in row order. */
static int
band_names(struct compiler *cc, struct cut *c)
{
    const struct folio_freight_row *rows = c->t->ft_rows;
    uint32_t len;
    size_t i;
    int rc;

    if ((c->name_off = folio_malloc(c->t->ft_nrows * sizeof(*c->name_off))) ==
        NULL)
        return FOLIO_ENOMEM;
    for (i = 0; i < c->t->ft_nrows; i++) {
        /* Consecutive rows mostly share theirs. */
        if (i > 0 && strcmp(rows[i].fr_band, rows[i - 1].fr_band) == 0)
            c->name_off[i] = c->name_off[i - 1];
        else if ((rc = add_string(cc, rows[i].fr_band, &c->name_off[i],
                                  &len)) != 0)
            return rc;
    }
    return 0;
}

/* The end of the pieces of pc[i]'s interval: [i, end) share it. */
static size_t
interval_end(const struct cut *c, size_t i)
{
    size_t j;

    for (j = i + 1; j < c->npc && c->pc[j].iv == c->pc[i].iv; j++)
        ;
    return j;
}

/*
 * Phase 3: report each two rows of pieces [i, j) (one interval) whose
 * weight ranges meet, once a pair: in the interval where both start.
 */
static void
check_overlaps(const struct cut *c, size_t i, size_t j,
               struct folio_freight_diag *d)
{
    const struct folio_freight_row *rows = c->t->ft_rows, *r, *o;
    uint32_t hi_row = c->pc[i].row, start;
    size_t m, k;

    for (m = i + 1; m < j; m++) {
        r = &rows[c->pc[m].row];
        /* Sorted by start: r overlaps an earlier row of the interval
         * iff it starts at or before the furthest end so far. */
        if (r->fr_w_lo <= rows[hi_row].fr_w_hi) {
            for (k = i; k < m; k++) {
                o = &rows[c->pc[k].row];
                start =
                    o->fr_cep_lo > r->fr_cep_lo ? o->fr_cep_lo : r->fr_cep_lo;
                if (o->fr_w_hi >= r->fr_w_lo && start == c->pts[c->pc[i].iv])
                    report_overlap(d, c->t->ft_carrier, o, r);
            }
        }
        if (r->fr_w_hi > rows[hi_row].fr_w_hi)
            hi_row = c->pc[m].row;
    }
}

/* The interval emitted last, which the next one may extend. */
struct emitted {
    int have;
    size_t i, j; /* its pieces */
    uint32_t hi; /* its last CEP */
};

/*
 * Phase 4: the interval of pieces [i, j) into the image: it extends the
 * one emitted last when that ends where it starts and has the same rows;
 * else it is a new interval, with a band for each of its rows.
 */
static int
emit_interval(struct compiler *cc, const struct cut *c, size_t i, size_t j,
              struct emitted *last)
{
    const struct folio_freight_row *r;
    uint32_t iv = c->pc[i].iv, hi = c->pts[iv + 1] - 1, k;
    struct fb_band b;
    struct fb_iv v;
    int rc;

    /* (A row's end + 1 is a later point: hi is in the interval.) */
    if (last->have && last->hi + 1 == c->pts[iv] &&
        last->j - last->i == j - i) {
        for (k = 0; k < j - i; k++)
            if (c->pc[last->i + k].row != c->pc[i + k].row)
                break;
        if (k == j - i) {
            size_t at = (size_t)(cc->niv - 1) * sizeof(v);

            memcpy(&v, cc->ivs.p + at, sizeof(v));
            v.v_cep_hi = hi;
            memcpy(cc->ivs.p + at, &v, sizeof(v));
            last->hi = hi;
            return 0;
        }
    }
    v.v_cep_lo = c->pts[iv];
    v.v_cep_hi = hi;
    v.v_band_first = cc->nbands;
    v.v_nbands = (uint32_t)(j - i);
    if ((rc = bytes_add(&cc->ivs, &v, sizeof(v))) != 0)
        return rc;
    cc->niv++;
    for (k = (uint32_t)i; k < j; k++) {
        r = &c->t->ft_rows[c->pc[k].row];
        memset(&b, 0, sizeof(b));
        b.b_w_lo = r->fr_w_lo;
        b.b_w_hi = r->fr_w_hi;
        b.b_days = (r->fr_time_s + 86399) / 86400;
        b.b_pct = r->fr_pct;
        b.b_name_off = c->name_off[c->pc[k].row];
        b.b_name_len = (uint32_t)strlen(r->fr_band);
        b.b_abs_cents = r->fr_abs_cents;
        b.b_rate = r->fr_rate;
        if ((rc = bytes_add(&cc->bands, &b, sizeof(b))) != 0)
            return rc;
        cc->nbands++;
    }
    last->have = 1;
    last->i = i;
    last->j = j;
    last->hi = hi;
    return 0;
}

/*
 * One carrier into the image, in four phases: the cut points, the
 * pieces, the overlap check (every overlap reported; then nothing is
 * built), and the intervals merged and emitted.
 */
static int
compile_carrier(struct compiler *cc, const struct folio_freight_table *t,
                struct folio_freight_diag *d, struct fb_carrier *out)
{
    struct cut c;
    struct emitted last;
    unsigned errors = d->fd_errors;
    size_t i, j;
    int rc;

    memset(out, 0, sizeof(*out));
    memset(&c, 0, sizeof(c));
    memset(&last, 0, sizeof(last));
    c.t = t;
    out->c_iv_first = cc->niv;
    out->c_nrows = (uint32_t)t->ft_nrows;
    if ((rc = add_string(cc, t->ft_carrier, &out->c_name_off,
                         &out->c_name_len)) != 0)
        return rc;
    if (t->ft_nrows == 0)
        return 0;
    if (t->ft_nrows > MAX_PIECES)
        return FOLIO_ETOOBIG;
    if ((rc = cut_points(&c)) != 0 || (rc = cut_pieces(&c, d)) != 0 ||
        (rc = band_names(cc, &c)) != 0)
        goto done;
    for (i = 0; i < c.npc; i = j) {
        j = interval_end(&c, i);
        check_overlaps(&c, i, j, d);
    }
    if (d->fd_errors != errors) {
        rc = FOLIO_EINVAL;
        goto done;
    }
    for (i = 0; i < c.npc && rc == 0; i = j) {
        j = interval_end(&c, i);
        rc = emit_interval(cc, &c, i, j, &last);
    }
    out->c_niv = cc->niv - out->c_iv_first;
done:
    cut_free(&c);
    return rc;
}

static size_t
align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

int
folio_freight_compile(struct folio_freight_table *const *tables, size_t n,
                      struct folio_freight_diag *d, void **blob, size_t *len)
{
    struct folio_freight_table **sorted = NULL;
    struct fb_carrier carriers[FOLIO_FREIGHT_MAX_CARRIERS];
    struct compiler cc;
    struct fb_header h;
    unsigned char *img = NULL;
    size_t i, size, nrows = 0;
    unsigned errors = d->fd_errors;
    int rc = 0;

    *blob = NULL;
    *len = 0;
    memset(&cc, 0, sizeof(cc));
    if (n > FOLIO_FREIGHT_MAX_CARRIERS) {
        folio_freight_report(d, "freight_dir", 0, 0,
                             "%zu carriers: at most %d", n,
                             FOLIO_FREIGHT_MAX_CARRIERS);
        return FOLIO_ETOOBIG;
    }
    if (n > 0 && (sorted = folio_malloc(n * sizeof(*sorted))) == NULL)
        return FOLIO_ENOMEM;
    for (i = 0; i < n; i++)
        sorted[i] = tables[i];
    if (n > 1)
        qsort(sorted, n, sizeof(*sorted), carrier_cmp);
    for (i = 0; i < n; i++) {
        if (i > 0 &&
            strcmp(sorted[i - 1]->ft_carrier, sorted[i]->ft_carrier) == 0) {
            folio_freight_report(d, sorted[i]->ft_carrier, 0, 0,
                                 "two tables for carrier '%s'",
                                 sorted[i]->ft_carrier);
            continue;
        }
        nrows += sorted[i]->ft_nrows;
        rc = compile_carrier(&cc, sorted[i], d, &carriers[i]);
        if (rc != 0 && rc != FOLIO_EINVAL && rc != FOLIO_ETOOBIG)
            goto done;
        rc = 0;
    }
    if (d->fd_errors != errors) {
        rc = FOLIO_EINVAL;
        goto done;
    }
    memset(&h, 0, sizeof(h));
    h.h_magic = FB_MAGIC;
    h.h_format = FB_FORMAT;
    h.h_ncarriers = (uint32_t)n;
    h.h_nrows = (uint32_t)nrows;
    h.h_niv = cc.niv;
    h.h_nbands = cc.nbands;
    h.h_carriers_off = (uint32_t)align8(sizeof(h));
    size = h.h_carriers_off + n * sizeof(struct fb_carrier);
    h.h_ivs_off = (uint32_t)align8(size);
    size = h.h_ivs_off + cc.ivs.len;
    h.h_bands_off = (uint32_t)align8(size);
    size = h.h_bands_off + cc.bands.len;
    h.h_strings_off = (uint32_t)align8(size);
    h.h_strings_len = (uint32_t)cc.strings.len;
    size = h.h_strings_off + cc.strings.len;
    if (size > UINT32_MAX) {
        folio_freight_report(d, "freight_dir", 0, 0,
                             "the compiled tables would exceed 4 GiB");
        rc = FOLIO_ETOOBIG;
        goto done;
    }
    h.h_size = (uint32_t)size;
    if ((img = folio_calloc(1, size)) == NULL) {
        rc = FOLIO_ENOMEM;
        goto done;
    }
    memcpy(img, &h, sizeof(h));
    if (n > 0)
        memcpy(img + h.h_carriers_off, carriers, n * sizeof(carriers[0]));
    if (cc.ivs.len > 0)
        memcpy(img + h.h_ivs_off, cc.ivs.p, cc.ivs.len);
    if (cc.bands.len > 0)
        memcpy(img + h.h_bands_off, cc.bands.p, cc.bands.len);
    if (cc.strings.len > 0)
        memcpy(img + h.h_strings_off, cc.strings.p, cc.strings.len);
    *blob = img;
    *len = size;
done:
    folio_free(sorted);
    folio_free(cc.ivs.p);
    folio_free(cc.bands.p);
    folio_free(cc.strings.p);
    return rc;
}

int
folio_freight_catalog_compile(const struct folio_freight_catalog *c,
                              void **blob, size_t *len)
{
    size_t n = c != NULL ? c->fc_nskus : 0, nslots = 8, strings = 0, i;
    size_t size;
    struct fc_header h;
    unsigned char *img;
    uint32_t *slots;

    *blob = NULL;
    *len = 0;
    for (i = 0; i < n; i++)
        strings += strlen(c->fc_skus[i].fs_sku);
    while (nslots < 2 * n)
        nslots *= 2;
    memset(&h, 0, sizeof(h));
    h.h_magic = FC_MAGIC;
    h.h_format = FB_FORMAT;
    h.h_nskus = (uint32_t)n;
    h.h_nslots = (uint32_t)nslots;
    h.h_slots_off = (uint32_t)align8(sizeof(h));
    h.h_skus_off = (uint32_t)align8(h.h_slots_off + nslots * sizeof(uint32_t));
    size = h.h_skus_off + n * sizeof(struct fc_sku);
    if (size + strings > UINT32_MAX)
        return FOLIO_ETOOBIG;
    h.h_strings_off = (uint32_t)size;
    h.h_strings_len = (uint32_t)strings;
    size += strings;
    h.h_size = (uint32_t)size;
    if ((img = folio_calloc(1, size)) == NULL)
        return FOLIO_ENOMEM;
    memcpy(img, &h, sizeof(h));
    slots = (uint32_t *)(void *)(img + h.h_slots_off);
    for (i = 0, strings = 0; i < n; i++) {
        const struct folio_freight_sku *s = &c->fc_skus[i];
        struct fc_sku e;
        size_t slot;

        memset(&e, 0, sizeof(e));
        e.s_key_len = (uint32_t)strlen(s->fs_sku);
        e.s_key_off = (uint32_t)strings;
        e.s_hash = fc_hash(s->fs_sku, e.s_key_len);
        e.s_weight_g = (uint32_t)s->fs_item.fi_weight_g;
        e.s_length_cm = (uint32_t)s->fs_item.fi_length_cm;
        e.s_width_cm = (uint32_t)s->fs_item.fi_width_cm;
        e.s_height_cm = (uint32_t)s->fs_item.fi_height_cm;
        e.s_price_cents = s->fs_item.fi_price_cents;
        memcpy(img + h.h_skus_off + i * sizeof(e), &e, sizeof(e));
        memcpy(img + h.h_strings_off + strings, s->fs_sku, e.s_key_len);
        strings += e.s_key_len;
        for (slot = e.s_hash & (nslots - 1); slots[slot] != 0;
             slot = (slot + 1) & (nslots - 1))
            ;
        slots[slot] = (uint32_t)i + 1;
    }
    *blob = img;
    *len = size;
    return 0;
}

/* ---- importing ---- */

/* One input file, read whole. */
struct input {
    char name[FOLIO_FREIGHT_NAME_MAX + 8]; /* as in reports */
    char *path;
    char *buf;
    size_t len;
    uint64_t sum;
};

static int
read_input(struct input *in, char *err, size_t errlen)
{
    struct stat st;
    size_t off = 0;
    ssize_t r;
    int fd, rc = 0;

    if ((fd = open(in->path, O_RDONLY | O_CLOEXEC)) == -1) {
        snprintf(err, errlen, "%s: %s", in->path, strerror(errno));
        return FOLIO_ESYS;
    }
    if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", in->path);
        rc = FOLIO_ESYS;
        goto done;
    }
    if ((uint64_t)st.st_size > MAX_FILE_BYTES) {
        snprintf(err, errlen, "%s: larger than %u MiB", in->path,
                 MAX_FILE_BYTES >> 20);
        rc = FOLIO_ETOOBIG;
        goto done;
    }
    if ((in->buf = folio_malloc((size_t)st.st_size + 1)) == NULL) {
        rc = FOLIO_ENOMEM;
        goto done;
    }
    while (off < (size_t)st.st_size) {
        r = read(fd, in->buf + off, (size_t)st.st_size - off);
        if (r == -1 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(err, errlen, "%s: read: %s", in->path,
                     r == 0 ? "file shrank" : strerror(errno));
            rc = FOLIO_ESYS;
            goto done;
        }
        off += (size_t)r;
    }
    in->len = off;
    in->buf[off] = '\0';
    in->sum = folio_fnv1a64(in->buf, in->len);
done:
    close(fd);
    return rc;
}

static int
name_cmp(const void *a, const void *b)
{
    return strcmp(((const struct input *)a)->name,
                  ((const struct input *)b)->name);
}

static int
has_csv_suffix(const char *name)
{
    size_t n = strlen(name);

    return n > 4 && strcasecmp(name + n - 4, ".csv") == 0;
}

/*
 * The tables of `dir`: every *.csv not starting with '.', sorted, but the
 * catalog if it lies there too.  A missing default directory means no
 * tables; a missing configured one is an error.
 */
static int
list_tables(const char *dir, const char *catalog, struct input **out,
            size_t *n, char *err, size_t errlen)
{
    struct input *in = NULL;
    struct stat cst, st;
    struct dirent *de;
    size_t cap = 0;
    DIR *dp;
    int rc = 0, have_cat;

    *out = NULL;
    *n = 0;
    have_cat = catalog != NULL && stat(catalog, &cst) == 0;
    if ((dp = opendir(dir)) == NULL) {
        if (errno == ENOENT && strcmp(dir, FOLIO_FREIGHT_DEFAULT_DIR) == 0)
            return 0;
        snprintf(err, errlen, "freight_dir %s: %s", dir, strerror(errno));
        return FOLIO_ESYS;
    }
    while ((de = readdir(dp)) != NULL) {
        size_t len = strlen(de->d_name);

        if (de->d_name[0] == '.' || !has_csv_suffix(de->d_name))
            continue;
        if (*n == cap) {
            struct input *p;

            cap = cap == 0 ? 8 : cap * 2;
            if ((p = folio_realloc(in, cap * sizeof(*in))) == NULL) {
                rc = FOLIO_ENOMEM;
                goto done;
            }
            in = p;
        }
        memset(&in[*n], 0, sizeof(in[*n]));
        snprintf(in[*n].name, sizeof(in[*n].name), "%.*s",
                 (int)(len < sizeof(in[*n].name) ? len
                                                  : sizeof(in[*n].name) - 1),
                 de->d_name);
        if ((in[*n].path = folio_malloc(strlen(dir) + len + 2)) == NULL) {
            rc = FOLIO_ENOMEM;
            goto done;
        }
        sprintf(in[*n].path, "%s/%s", dir, de->d_name);
        if (have_cat && stat(in[*n].path, &st) == 0 &&
            st.st_dev == cst.st_dev && st.st_ino == cst.st_ino) {
            folio_free(in[*n].path);
            continue;
        }
        (*n)++;
    }
    if (*n > 1)
        qsort(in, *n, sizeof(*in), name_cmp);
done:
    closedir(dp);
    *out = in;
    return rc;
}

static void
free_inputs(struct input *in, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        folio_free(in[i].path);
        folio_free(in[i].buf);
    }
    folio_free(in);
}

/*
 * The manifest kept in the environment: the image format and, per file,
 * its name, size and checksum.  Equal manifests: nothing to import.
 */
static int
manifest(const struct input *tables, size_t n, const struct input *cat,
         struct bytes *b)
{
    uint32_t v = FB_FORMAT;
    size_t i;
    int rc;

    if ((rc = bytes_add(b, "folio-freight", 13)) != 0 ||
        (rc = bytes_add(b, &v, sizeof(v))) != 0)
        return rc;
    for (i = 0; i < n + 1; i++) {
        const struct input *in = i < n ? &tables[i] : cat;
        uint64_t len;

        if (in == NULL)
            break;
        len = in->len;
        if ((rc = bytes_add(b, i < n ? "T" : "C", 1)) != 0 ||
            (rc = bytes_add(b, in->name, strlen(in->name) + 1)) != 0 ||
            (rc = bytes_add(b, &len, sizeof(len))) != 0 ||
            (rc = bytes_add(b, &in->sum, sizeof(in->sum))) != 0)
            return rc;
    }
    return 0;
}

/* mkdir -p, mode 0750 for what it creates. */
static int
make_dirs(const char *path, char *err, size_t errlen)
{
    char buf[4096];
    size_t i, n = strlen(path);

    if (n == 0 || n >= sizeof(buf)) {
        snprintf(err, errlen, "data_dir: bad path '%s'", path);
        return FOLIO_ECONFIG;
    }
    memcpy(buf, path, n + 1);
    for (i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        buf[i] = '\0';
        if (mkdir(buf, 0750) == -1 && errno != EEXIST) {
            snprintf(err, errlen, "mkdir %s: %s", buf, strerror(errno));
            return FOLIO_ESYS;
        }
        buf[i] = path[i];
    }
    return 0;
}

static int
lmdb_fail(const char *what, int mrc, char *err, size_t errlen)
{
    snprintf(err, errlen, "freight environment: %s: %s", what,
             mdb_strerror(mrc));
    return mrc == MDB_MAP_FULL ? FOLIO_EFULL : FOLIO_ESTORE;
}

/*
 * What `envdir` holds: 1 and *sum if its manifest equals `m` and its
 * images match their integrity record; 0 if it holds something else (or
 * nothing, or an import of a version without the record); -1 with the
 * reason in `why` if it is damaged.  Call folio_lmdb_size_check first.
 */
static int
unchanged(MDB_env *env, const struct bytes *m,
          struct folio_freight_summary *sum, char *why, size_t whylen)
{
    MDB_txn *txn = NULL;
    MDB_dbi meta;
    MDB_val k, v, vt, vc;
    int same = 0, mrc;

    if ((mrc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) != 0)
        goto lmdb;
    if ((mrc = mdb_dbi_open(txn, "meta", 0, &meta)) != 0)
        goto lmdb;
    k.mv_data = (void *)(uintptr_t) "manifest";
    k.mv_size = 8;
    if ((mrc = mdb_get(txn, meta, &k, &v)) != 0)
        goto lmdb;
    if (v.mv_size != m->len || memcmp(v.mv_data, m->p, m->len) != 0)
        goto done;
    k.mv_data = (void *)(uintptr_t) "summary";
    k.mv_size = 7;
    if ((mrc = mdb_get(txn, meta, &k, &v)) != 0)
        goto lmdb;
    if (v.mv_size != sizeof(*sum))
        goto done;
    memcpy(sum, v.mv_data, sizeof(*sum));
    k.mv_data = (void *)(uintptr_t) "tables";
    k.mv_size = 6;
    if ((mrc = mdb_get(txn, meta, &k, &vt)) != 0)
        goto lmdb;
    k.mv_data = (void *)(uintptr_t) "catalog";
    k.mv_size = 7;
    if ((mrc = mdb_get(txn, meta, &k, &vc)) != 0)
        goto lmdb;
    k.mv_data = (void *)(uintptr_t) "integrity";
    k.mv_size = 9;
    if ((mrc = mdb_get(txn, meta, &k, &v)) != 0)
        goto lmdb;
    if (folio_freight_integrity_check(vt.mv_data, vt.mv_size, vc.mv_data,
                                      vc.mv_size, v.mv_data,
                                      v.mv_size) != 0) {
        snprintf(why, whylen, "the stored tables fail their checksum");
        same = -1;
        goto done;
    }
    same = 1;
    goto done;
lmdb:
    /* Not there: import.  Anything else: LMDB found damage. */
    if (mrc != MDB_NOTFOUND) {
        snprintf(why, whylen, "%s", mdb_strerror(mrc));
        same = -1;
    }
done:
    if (txn != NULL)
        mdb_txn_abort(txn);
    return same;
}

static int
put(MDB_txn *txn, MDB_dbi dbi, const void *key, size_t klen,
    const void *val, size_t vlen, unsigned flags)
{
    MDB_val k = {klen, (void *)(uintptr_t)key};
    MDB_val v = {vlen, (void *)(uintptr_t)val};

    return mdb_put(txn, dbi, &k, &v, flags);
}

/* Replace the environment's content in one write transaction. */
static int
write_env(MDB_env *env, const void *img, size_t imglen, const void *cat,
          size_t catlen, const struct folio_freight_summary *sum,
          const struct bytes *m, char *err, size_t errlen)
{
    MDB_txn *txn = NULL;
    MDB_dbi meta;
    struct fb_integrity in;
    int dead, mrc;

    in.i_tables = folio_fnv1a64(img, imglen);
    in.i_catalog = folio_fnv1a64(cat, catlen);
    mdb_reader_check(env, &dead);
    if ((mrc = mdb_txn_begin(env, NULL, 0, &txn)) != 0)
        return lmdb_fail("mdb_txn_begin", mrc, err, errlen);
    if ((mrc = mdb_dbi_open(txn, "meta", MDB_CREATE, &meta)) != 0) {
        mdb_txn_abort(txn);
        return lmdb_fail("mdb_dbi_open", mrc, err, errlen);
    }
    if ((mrc = put(txn, meta, "tables", 6, img, imglen, 0)) != 0 ||
        (mrc = put(txn, meta, "catalog", 7, cat, catlen, 0)) != 0 ||
        (mrc = put(txn, meta, "summary", 7, sum, sizeof(*sum), 0)) != 0 ||
        (mrc = put(txn, meta, "integrity", 9, &in, sizeof(in), 0)) != 0 ||
        (mrc = put(txn, meta, "manifest", 8, m->p, m->len, 0)) != 0) {
        mdb_txn_abort(txn);
        return lmdb_fail("mdb_put", mrc, err, errlen);
    }
    if ((mrc = mdb_txn_commit(txn)) != 0)
        return lmdb_fail("mdb_txn_commit", mrc, err, errlen);
    return 0;
}

static int
env_open(const char *envdir, MDB_env **out)
{
    MDB_env *env = NULL;
    int mrc;

    *out = NULL;
    if ((mrc = mdb_env_create(&env)) != 0 ||
        (mrc = mdb_env_set_mapsize(env, ENV_MAPSIZE)) != 0 ||
        (mrc = mdb_env_set_maxdbs(env, 2)) != 0 ||
        (mrc = mdb_env_set_maxreaders(env, 1024)) != 0 ||
        (mrc = mdb_env_open(env, envdir, MDB_NOTLS, 0640)) != 0) {
        if (env != NULL)
            mdb_env_close(env);
        return mrc;
    }
    *out = env;
    return 0;
}

/* LMDB's word for a file it cannot use as an environment. */
static int
damaged_code(int mrc)
{
    return mrc == MDB_INVALID || mrc == MDB_CORRUPTED ||
           mrc == MDB_PAGE_NOTFOUND || mrc == MDB_VERSION_MISMATCH ||
           mrc == MDB_BAD_TXN;
}

/*
 * Open the environment to import into, and make sure it can be trusted:
 * the freight environment only holds what the CSV files give, so a
 * damaged one (a truncated or overwritten data.mdb, images that fail
 * their checksum) is removed and created anew, and the import then
 * writes it again.  *same as unchanged().
 */
static int
env_open_checked(const char *envdir, const struct bytes *m,
                 struct folio_freight_summary *sum, MDB_env **out, int *same,
                 char *err, size_t errlen)
{
    char why[256], path[4200];
    const char *const files[2] = {"data.mdb", "lock.mdb"};
    int mrc, i;

    *same = 0;
    mrc = env_open(envdir, out);
    if (mrc == 0) {
        if (folio_lmdb_size_check(*out, envdir, why, sizeof(why)) == 0 &&
            (*same = unchanged(*out, m, sum, why, sizeof(why))) >= 0)
            return 0;
    } else if (damaged_code(mrc)) {
        snprintf(why, sizeof(why), "%s", mdb_strerror(mrc));
    } else {
        return lmdb_fail(envdir, mrc, err, errlen);
    }
    folio_log_warnx("freight environment %s is damaged (%s): rebuilding it "
                    "from the CSV files",
                    envdir, why);
    if (*out != NULL)
        mdb_env_close(*out);
    *out = NULL;
    *same = 0;
    memset(sum, 0, sizeof(*sum));
    for (i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s", envdir, files[i]);
        if (unlink(path) != 0 && errno != ENOENT) {
            snprintf(err, errlen, "freight environment: unlink %s: %s", path,
                     strerror(errno));
            return FOLIO_ESYS;
        }
    }
    if ((mrc = env_open(envdir, out)) != 0)
        return lmdb_fail(envdir, mrc, err, errlen);
    return 0;
}

/* Reports pass through; the first is kept for the one-line reason. */
struct first_diag {
    struct folio_freight_diag *user;
    char first[512];
};

static void
keep_first(void *arg, const char *file, unsigned line, unsigned col,
           const char *msg)
{
    struct first_diag *fd = arg;

    if (fd->first[0] == '\0')
        snprintf(fd->first, sizeof(fd->first), "%s:%u:%u: %s", file, line,
                 col, msg);
    if (fd->user != NULL) {
        fd->user->fd_errors++;
        if (fd->user->fd_report != NULL)
            fd->user->fd_report(fd->user->fd_arg, file, line, col, msg);
    }
}

/*
 * A shipped environment (shm/datafiles.h): used as it is, so it must hold
 * exactly these tables; never rebuilt here.
 */
static int
shipped_check(const char *envdir, const struct bytes *m,
              struct folio_freight_summary *sum, char *err, size_t errlen)
{
    MDB_env *env = NULL;
    char why[256] = "";
    int mrc, same = 0;

    if ((mrc = env_open(envdir, &env)) != 0)
        return lmdb_fail(envdir, mrc, err, errlen);
    if (folio_lmdb_size_check(env, envdir, why, sizeof(why)) == 0)
        same = unchanged(env, m, sum, why, sizeof(why));
    mdb_env_close(env);
    if (same > 0)
        return 0;
    snprintf(err, errlen,
             "the freight tables here are not the ones the shipped "
             "environment %s was built from%s%s: serve the same tables on "
             "every host, or build the data again",
             envdir, why[0] != '\0' ? ": " : "", why);
    return FOLIO_ECORRUPT;
}

int
folio_freight_import(const char *envdir, const char *freight_dir,
                     const char *catalog, unsigned flags,
                     struct folio_freight_diag *d,
                     struct folio_freight_summary *sum, int *present,
                     int *changed, char *err, size_t errlen)
{
    struct first_diag fd;
    struct folio_freight_diag diag = {keep_first, &fd, 0};
    struct input *tin = NULL, cin, *cat_in = NULL;
    struct folio_freight_table **tables = NULL;
    struct folio_freight_catalog *cat = NULL;
    struct bytes m = {NULL, 0, 0};
    MDB_env *env = NULL;
    void *img = NULL, *catimg = NULL;
    size_t nt = 0, imglen = 0, catlen = 0, i;
    int rc = 0, mrc;

    int check_only = (flags & FOLIO_FREIGHT_CHECK_ONLY) != 0;

    memset(sum, 0, sizeof(*sum));
    memset(&fd, 0, sizeof(fd));
    memset(&cin, 0, sizeof(cin));
    fd.user = d;
    *present = 0;
    *changed = 0;
    if (freight_dir != NULL &&
        (rc = list_tables(freight_dir, catalog, &tin, &nt, err, errlen)) !=
        0)
        goto done;
    if (nt == 0)
        goto done; /* no tables: nothing to serve, nothing to write */
    for (i = 0; i < nt; i++)
        if ((rc = read_input(&tin[i], err, errlen)) != 0)
            goto done;
    if (catalog != NULL) {
        const char *base = strrchr(catalog, '/');

        snprintf(cin.name, sizeof(cin.name), "%s",
                 base != NULL ? base + 1 : catalog);
        cin.path = (char *)(uintptr_t)catalog;
        if (access(catalog, F_OK) == -1 && errno == ENOENT &&
            strcmp(catalog, FOLIO_FREIGHT_DEFAULT_CATALOG) == 0) {
            /* The default catalog is not installed: no SKUs. */
        } else if ((rc = read_input(&cin, err, errlen)) != 0) {
            goto done;
        } else {
            cat_in = &cin;
        }
    }
    if ((rc = manifest(tin, nt, cat_in, &m)) != 0)
        goto done;
    if (flags & FOLIO_FREIGHT_SHIPPED) {
        if ((rc = shipped_check(envdir, &m, sum, err, errlen)) == 0)
            *present = 1;
        goto done;
    }

    if (!check_only) {
        if ((rc = make_dirs(envdir, err, errlen)) != 0)
            goto done;
        int same;

        if ((rc = env_open_checked(envdir, &m, sum, &env, &same, err,
                                   errlen)) != 0)
            goto done;
        if (same > 0) {
            *present = 1;
            goto done;
        }
    }

    if ((tables = folio_calloc(nt, sizeof(*tables))) == NULL) {
        rc = FOLIO_ENOMEM;
        goto done;
    }
    for (i = 0; i < nt; i++) {
        char carrier[FOLIO_FREIGHT_NAME_MAX + 8];

        snprintf(carrier, sizeof(carrier), "%.*s",
                 (int)(strlen(tin[i].name) - 4), tin[i].name);
        rc = folio_freight_table_parse(tin[i].name, carrier, tin[i].buf,
                                       tin[i].len, &diag, &tables[i]);
        if (rc == FOLIO_ENOMEM)
            goto done;
    }
    if (cat_in != NULL &&
        folio_freight_catalog_parse(cat_in->name, cat_in->buf, cat_in->len,
                                    &diag, &cat) == FOLIO_ENOMEM) {
        rc = FOLIO_ENOMEM;
        goto done;
    }
    if (diag.fd_errors == 0 &&
        (rc = folio_freight_compile(tables, nt, &diag, &img, &imglen)) ==
            FOLIO_ENOMEM)
        goto done;
    if (diag.fd_errors > 0) {
        snprintf(err, errlen, "%u problem%s in the freight tables; first: %s",
                 diag.fd_errors, diag.fd_errors == 1 ? "" : "s", fd.first);
        rc = FOLIO_EINVAL;
        goto done;
    }
    if (rc != 0) {
        snprintf(err, errlen, "freight tables: %s", folio_strerror(rc));
        goto done;
    }
    sum->fm_carriers = (uint32_t)nt;
    for (i = 0; i < nt; i++)
        sum->fm_rows += (uint32_t)tables[i]->ft_nrows;
    sum->fm_skus = cat != NULL ? (uint32_t)cat->fc_nskus : 0;
    sum->fm_imported_ms = folio_unix_ms();
    *present = 1;
    if (check_only)
        goto done;
    if ((rc = folio_freight_catalog_compile(cat, &catimg, &catlen)) != 0) {
        snprintf(err, errlen, "catalog: %s", folio_strerror(rc));
        goto done;
    }
    /* Room for the new images beside the old ones that readers may
     * still use, with a margin: the map only reserves address space. */
    {
        MDB_envinfo info;
        size_t need = (imglen + catlen) * 4 + ((size_t)64 << 20);

        if (mdb_env_info(env, &info) == 0 && info.me_mapsize < need &&
            (mrc = mdb_env_set_mapsize(env, need)) != 0) {
            rc = lmdb_fail("mdb_env_set_mapsize", mrc, err, errlen);
            goto done;
        }
    }
    if ((rc = write_env(env, img, imglen, catimg, catlen, sum, &m, err,
                        errlen)) != 0)
        goto done;
    *changed = 1;
done:
    if (env != NULL)
        mdb_env_close(env);
    for (i = 0; tables != NULL && i < nt; i++)
        folio_freight_table_free(tables[i]);
    folio_free(tables);
    folio_freight_catalog_free(cat);
    folio_free(img);
    folio_free(catimg);
    folio_free(m.p);
    free_inputs(tin, nt);
    folio_free(cin.buf);
    return rc;
}
