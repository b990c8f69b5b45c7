/*
 * freight.c - quoting: the worker's read-only view of the LMDB
 * environment `freight`, SKU lookups and the quote itself.
 *
 * A worker opens the environment after fork and keeps one read-only
 * transaction handle: each request renews it (the snapshot of the
 * moment: the tables the master imported last), reads the compiled image
 * and the catalog in place through the map, and resets it.  Nothing here
 * allocates once the environment is open.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <lmdb.h>

#include "shm/freight.h"
#include "shm/freight_int.h"
#include "src/alloc.h"
#include "src/err.h"
#include "src/log.h"

#if !defined(__SIZEOF_INT128__)
#error "freight prices are computed with unsigned __int128"
#endif

struct folio_freight {
    MDB_env *env;
    MDB_txn *txn;  /* read-only, reset between requests */
    MDB_dbi meta, sku;
    int active;    /* between begin and end */
    const unsigned char *img; /* the compiled tables, in the map */
    size_t imglen;
};

/* ---- carts ---- */

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t
sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;

    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

void
folio_freight_cart_add(struct folio_freight_cart *c,
                       const struct folio_freight_item *it, uint32_t qty)
{
    uint64_t vol = sat_mul(sat_mul(it->fi_length_cm, it->fi_width_cm),
                           it->fi_height_cm);

    c->fc_weight_g = sat_add(c->fc_weight_g, sat_mul(it->fi_weight_g, qty));
    c->fc_volume_cm3 = sat_add(c->fc_volume_cm3, sat_mul(vol, qty));
    c->fc_value_cents =
        sat_add(c->fc_value_cents, sat_mul(it->fi_price_cents, qty));
}

/* ---- the image ---- */

/* Header checks: every array lies inside the image. */
static int
image_header(const unsigned char *img, size_t len, struct fb_header *h)
{
    if (len < sizeof(*h))
        return FOLIO_ECORRUPT;
    memcpy(h, img, sizeof(*h));
    if (h->h_magic != FB_MAGIC || h->h_format != FB_FORMAT ||
        h->h_size != len || h->h_ncarriers > FOLIO_FREIGHT_MAX_CARRIERS ||
        (uint64_t)h->h_carriers_off +
                (uint64_t)h->h_ncarriers * sizeof(struct fb_carrier) >
            len ||
        (uint64_t)h->h_ivs_off + (uint64_t)h->h_niv * sizeof(struct fb_iv) >
            len ||
        (uint64_t)h->h_bands_off +
                (uint64_t)h->h_nbands * sizeof(struct fb_band) >
            len ||
        (uint64_t)h->h_strings_off + h->h_strings_len > len)
        return FOLIO_ECORRUPT;
    return 0;
}

static int
image_carrier(const unsigned char *img, const struct fb_header *h,
              unsigned i, struct fb_carrier *c)
{
    memcpy(c, img + h->h_carriers_off + (size_t)i * sizeof(*c), sizeof(*c));
    if ((uint64_t)c->c_iv_first + c->c_niv > h->h_niv ||
        (uint64_t)c->c_name_off + c->c_name_len > h->h_strings_len)
        return FOLIO_ECORRUPT;
    return 0;
}

/*
 * price = abs + round_half_up(extra weight + percentage), the sum exact
 * in 10^-6 centavos: the rate is 10^-4 centavos per gram, the percentage
 * millionths of the value in centavos.
 */
static int64_t
band_price(const struct fb_band *b, uint64_t billed, uint64_t value)
{
    unsigned __int128 sub, total;

    sub = (unsigned __int128)(billed - b->b_w_lo) * b->b_rate * 100 +
          (unsigned __int128)value * b->b_pct;
    total = b->b_abs_cents + (sub + 500000) / 1000000;
    return total > INT64_MAX ? INT64_MAX : (int64_t)total;
}

int
folio_freight_quote_blob(const void *blob, size_t len, uint32_t cep,
                         const struct folio_freight_cart *cart,
                         uint32_t threshold_g, struct folio_freight_quote *q)
{
    const unsigned char *img = blob;
    const unsigned char *ivs, *bands, *strings;
    struct fb_header h;
    uint64_t billed;
    unsigned i;
    int rc;

    if ((rc = image_header(img, len, &h)) != 0)
        return rc;
    ivs = img + h.h_ivs_off;
    bands = img + h.h_bands_off;
    strings = img + h.h_strings_off;
    q->fq_weight_g = cart->fc_weight_g;
    q->fq_cubic_g = cart->fc_volume_cm3 / 6 + (cart->fc_volume_cm3 % 6 != 0);
    billed = q->fq_cubic_g > threshold_g && q->fq_cubic_g > q->fq_weight_g
                 ? q->fq_cubic_g
                 : q->fq_weight_g;
    q->fq_billed_g = billed;
    q->fq_covering = 0;
    q->fq_max_g = 0;
    q->fq_nopts = 0;

    for (i = 0; i < h.h_ncarriers; i++) {
        struct folio_freight_option *o;
        struct fb_carrier c;
        struct fb_iv v;
        struct fb_band b, last;
        uint32_t lo, hi, mid;
        unsigned k;

        if ((rc = image_carrier(img, &h, i, &c)) != 0)
            return rc;
        if (c.c_niv == 0)
            continue;
        /* The last interval starting at or before the CEP. */
        lo = c.c_iv_first;
        hi = c.c_iv_first + c.c_niv;
        while (lo < hi) {
            mid = lo + (hi - lo) / 2;
            if (fb_u32(ivs + (size_t)mid * sizeof(v)) <= cep)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == c.c_iv_first)
            continue;
        memcpy(&v, ivs + (size_t)(lo - 1) * sizeof(v), sizeof(v));
        if (cep > v.v_cep_hi)
            continue;
        if (v.v_nbands == 0 ||
            (uint64_t)v.v_band_first + v.v_nbands > h.h_nbands)
            return FOLIO_ECORRUPT;
        q->fq_covering++;
        /* Bands are disjoint and sorted: the last ends furthest. */
        memcpy(&last,
               bands + (size_t)(v.v_band_first + v.v_nbands - 1) *
                           sizeof(last),
               sizeof(last));
        if (last.b_w_hi > q->fq_max_g)
            q->fq_max_g = last.b_w_hi;
        if (billed > last.b_w_hi)
            continue;
        lo = v.v_band_first;
        hi = v.v_band_first + v.v_nbands;
        while (lo < hi) {
            mid = lo + (hi - lo) / 2;
            if (fb_u32(bands + (size_t)mid * sizeof(b)) <= billed)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == v.v_band_first)
            continue; /* lighter than the first band */
        memcpy(&b, bands + (size_t)(lo - 1) * sizeof(b), sizeof(b));
        if (billed > b.b_w_hi)
            continue; /* between two bands */
        if ((uint64_t)b.b_name_off + b.b_name_len > h.h_strings_len)
            return FOLIO_ECORRUPT;

        /* Insert, sorted by price, then days, then carrier name. */
        {
            int64_t price = band_price(&b, billed, cart->fc_value_cents);

            for (k = q->fq_nopts; k > 0; k--) {
                const struct folio_freight_option *p = &q->fq_opts[k - 1];

                if (p->fo_price_cents < price ||
                    (p->fo_price_cents == price && p->fo_days <= b.b_days))
                    break;
                q->fq_opts[k] = *p;
            }
            o = &q->fq_opts[k];
            o->fo_carrier = (const char *)strings + c.c_name_off;
            o->fo_carrier_len = c.c_name_len;
            o->fo_band = (const char *)strings + b.b_name_off;
            o->fo_band_len = b.b_name_len;
            o->fo_price_cents = price;
            o->fo_days = b.b_days;
            q->fq_nopts++;
        }
    }
    if (q->fq_covering == 0)
        return FOLIO_ENOTFOUND;
    return q->fq_nopts > 0 ? 0 : FOLIO_ETOOBIG;
}

/* ---- the environment ---- */

int
folio_freight_open(const char *envdir, struct folio_freight **out)
{
    struct folio_freight *fr;
    MDB_txn *txn = NULL;
    int mrc, rc = FOLIO_ESTORE;

    *out = NULL;
    if ((fr = folio_calloc(1, sizeof(*fr))) == NULL)
        return FOLIO_ENOMEM;
    if ((mrc = mdb_env_create(&fr->env)) != 0 ||
        (mrc = mdb_env_set_maxdbs(fr->env, 4)) != 0 ||
        (mrc = mdb_env_set_maxreaders(fr->env, 1024)) != 0) {
        folio_log_warnx("freight: mdb_env_create: %s", mdb_strerror(mrc));
        goto fail;
    }
    if ((mrc = mdb_env_open(fr->env, envdir, MDB_RDONLY | MDB_NOTLS, 0640)) !=
        0) {
        if (mrc == ENOENT) {
            rc = FOLIO_ENOTFOUND;
            goto fail;
        }
        folio_log_warnx("freight: mdb_env_open %s: %s", envdir,
                        mdb_strerror(mrc));
        goto fail;
    }
    if ((mrc = mdb_txn_begin(fr->env, NULL, MDB_RDONLY, &txn)) != 0) {
        folio_log_warnx("freight: mdb_txn_begin: %s", mdb_strerror(mrc));
        goto fail;
    }
    if ((mrc = mdb_dbi_open(txn, "meta", 0, &fr->meta)) != 0 ||
        (mrc = mdb_dbi_open(txn, "sku", 0, &fr->sku)) != 0) {
        mdb_txn_abort(txn);
        if (mrc == MDB_NOTFOUND) {
            rc = FOLIO_ENOTFOUND;
            goto fail;
        }
        folio_log_warnx("freight: mdb_dbi_open: %s", mdb_strerror(mrc));
        goto fail;
    }
    /* Committing a read-only transaction keeps its database handles. */
    if ((mrc = mdb_txn_commit(txn)) != 0 ||
        (mrc = mdb_txn_begin(fr->env, NULL, MDB_RDONLY, &fr->txn)) != 0) {
        folio_log_warnx("freight: mdb_txn: %s", mdb_strerror(mrc));
        goto fail;
    }
    mdb_txn_reset(fr->txn);
    *out = fr;
    return 0;
fail:
    folio_freight_close(fr);
    return rc;
}

void
folio_freight_close(struct folio_freight *fr)
{
    if (fr == NULL)
        return;
    if (fr->txn != NULL)
        mdb_txn_abort(fr->txn);
    if (fr->env != NULL)
        mdb_env_close(fr->env);
    folio_free(fr);
}

int
folio_freight_begin(struct folio_freight *fr)
{
    struct fb_header h;
    MDB_val k = {6, (void *)(uintptr_t) "tables"}, v;
    int mrc;

    if (fr->active)
        folio_freight_end(fr);
    mrc = mdb_txn_renew(fr->txn);
    if (mrc == MDB_MAP_RESIZED) {
        /* The master grew the map: adopt its size, no transaction open. */
        if ((mrc = mdb_env_set_mapsize(fr->env, 0)) == 0)
            mrc = mdb_txn_renew(fr->txn);
    }
    if (mrc != 0) {
        folio_log_warnx("freight: mdb_txn_renew: %s", mdb_strerror(mrc));
        return FOLIO_ESTORE;
    }
    fr->active = 1;
    if ((mrc = mdb_get(fr->txn, fr->meta, &k, &v)) != 0) {
        if (mrc == MDB_NOTFOUND)
            return FOLIO_ENOTFOUND;
        folio_log_warnx("freight: mdb_get tables: %s", mdb_strerror(mrc));
        return FOLIO_ESTORE;
    }
    fr->img = v.mv_data;
    fr->imglen = v.mv_size;
    if (image_header(fr->img, fr->imglen, &h) != 0) {
        folio_log_warnx("freight: the tables image fails its checks");
        return FOLIO_ECORRUPT;
    }
    return 0;
}

void
folio_freight_end(struct folio_freight *fr)
{
    if (!fr->active)
        return;
    mdb_txn_reset(fr->txn);
    fr->active = 0;
    fr->img = NULL;
    fr->imglen = 0;
}

int
folio_freight_sku_get(struct folio_freight *fr, const char *sku, size_t len,
                      struct folio_freight_item *it)
{
    MDB_val k = {len, (void *)(uintptr_t)sku}, v;
    struct fb_sku r;
    int mrc;

    if (len == 0 || len > FOLIO_FREIGHT_NAME_MAX)
        return FOLIO_ENOTFOUND;
    if ((mrc = mdb_get(fr->txn, fr->sku, &k, &v)) != 0) {
        if (mrc == MDB_NOTFOUND)
            return FOLIO_ENOTFOUND;
        folio_log_warnx("freight: mdb_get sku: %s", mdb_strerror(mrc));
        return FOLIO_ESTORE;
    }
    if (v.mv_size != sizeof(r))
        return FOLIO_ECORRUPT;
    memcpy(&r, v.mv_data, sizeof(r));
    it->fi_weight_g = r.s_weight_g;
    it->fi_length_cm = r.s_length_cm;
    it->fi_width_cm = r.s_width_cm;
    it->fi_height_cm = r.s_height_cm;
    it->fi_price_cents = r.s_price_cents;
    return 0;
}

int
folio_freight_quote(struct folio_freight *fr, uint32_t cep,
                    const struct folio_freight_cart *cart,
                    uint32_t threshold_g, struct folio_freight_quote *q)
{
    if (fr->img == NULL)
        return FOLIO_ENOTFOUND;
    return folio_freight_quote_blob(fr->img, fr->imglen, cep, cart,
                                    threshold_g, q);
}

int
folio_freight_info(struct folio_freight *fr,
                   struct folio_freight_summary *sum)
{
    MDB_val k = {7, (void *)(uintptr_t) "summary"}, v;
    int mrc;

    if ((mrc = mdb_get(fr->txn, fr->meta, &k, &v)) != 0) {
        folio_log_warnx("freight: mdb_get summary: %s", mdb_strerror(mrc));
        return FOLIO_ESTORE;
    }
    if (v.mv_size != sizeof(*sum))
        return FOLIO_ECORRUPT;
    memcpy(sum, v.mv_data, sizeof(*sum));
    return 0;
}

int
folio_freight_carrier(struct folio_freight *fr, unsigned i,
                      const char **name, uint32_t *len)
{
    struct fb_header h;
    struct fb_carrier c;

    if (fr->img == NULL || image_header(fr->img, fr->imglen, &h) != 0 ||
        i >= h.h_ncarriers || image_carrier(fr->img, &h, i, &c) != 0)
        return FOLIO_ENOTFOUND;
    *name = (const char *)fr->img + h.h_strings_off + c.c_name_off;
    *len = c.c_name_len;
    return 0;
}
