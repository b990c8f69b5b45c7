/*
 * freight.c - quoting: the worker's read-only view of the LMDB
 * environment `freight`, SKU lookups and the quote itself.
 *
 * A worker opens the environment after fork and keeps one read-only
 * transaction handle: each request renews it (the snapshot of the
 * moment: the tables the master imported last), reads the compiled
 * tables and the catalog in place through the map, and resets it.  The
 * two images are looked up again only when the snapshot changed.
 * Nothing here allocates once the environment is open.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <lmdb.h>

#include "shm/freight.h"
#include "shm/freight_int.h"
#include "shm/lmdb_check.h"
#include "src/alloc.h"
#include "src/err.h"
#include "src/hash.h"
#include "src/log.h"

#if !defined(__SIZEOF_INT128__)
#error "freight prices are computed with unsigned __int128"
#endif

struct folio_freight {
    MDB_env *env;
    MDB_txn *txn;  /* read-only, reset between requests */
    MDB_dbi meta;
    int active;    /* between begin and end */
    /*
     * The images in the map, as of snapshot `txnid`.  While no write
     * commits the snapshot stays the newest, so its pages are neither
     * freed nor reused: a renewed transaction with the same id may use
     * the same pointers without looking them up again.
     */
    size_t txnid;  /* 0: none cached */
    const unsigned char *img; /* the compiled tables */
    size_t imglen;
    const unsigned char *cat; /* the catalog */
    size_t catlen;
    struct fb_header img_h;   /* their headers, checked */
    struct fc_header cat_h;
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
catalog_header(const unsigned char *cat, size_t len, struct fc_header *h)
{
    if (len < sizeof(*h))
        return FOLIO_ECORRUPT;
    memcpy(h, cat, sizeof(*h));
    if (h->h_magic != FC_MAGIC || h->h_format != FB_FORMAT ||
        h->h_size != len || h->h_nslots == 0 ||
        (h->h_nslots & (h->h_nslots - 1)) != 0 ||
        h->h_nskus > h->h_nslots ||
        (uint64_t)h->h_slots_off + (uint64_t)h->h_nslots * 4 > len ||
        (uint64_t)h->h_skus_off + (uint64_t)h->h_nskus * sizeof(struct fc_sku) >
            len ||
        (uint64_t)h->h_strings_off + h->h_strings_len > len)
        return FOLIO_ECORRUPT;
    return 0;
}

/* Find sku in a catalog image whose header h was checked. */
static int
sku_find(const unsigned char *cat, const struct fc_header *hp,
         const char *sku, size_t skulen, struct folio_freight_item *it)
{
    const struct fc_header h = *hp;
    uint32_t hash, slot, n, idx;
    struct fc_sku e;

    if (skulen == 0 || skulen > FOLIO_FREIGHT_NAME_MAX)
        return FOLIO_ENOTFOUND;
    hash = fc_hash(sku, skulen);
    for (n = 0, slot = hash & (h.h_nslots - 1); n < h.h_nslots;
         n++, slot = (slot + 1) & (h.h_nslots - 1)) {
        if ((idx = fb_u32(cat + h.h_slots_off + (size_t)slot * 4)) == 0)
            return FOLIO_ENOTFOUND;
        if (idx > h.h_nskus)
            return FOLIO_ECORRUPT;
        memcpy(&e, cat + h.h_skus_off + (size_t)(idx - 1) * sizeof(e),
               sizeof(e));
        if (e.s_hash != hash || e.s_key_len != skulen)
            continue;
        if ((uint64_t)e.s_key_off + e.s_key_len > h.h_strings_len)
            return FOLIO_ECORRUPT;
        if (memcmp(cat + h.h_strings_off + e.s_key_off, sku, skulen) != 0)
            continue;
        it->fi_weight_g = e.s_weight_g;
        it->fi_length_cm = e.s_length_cm;
        it->fi_width_cm = e.s_width_cm;
        it->fi_height_cm = e.s_height_cm;
        it->fi_price_cents = e.s_price_cents;
        return 0;
    }
    return FOLIO_ENOTFOUND;
}

int
folio_freight_sku_blob(const void *blob, size_t len, const char *sku,
                       size_t skulen, struct folio_freight_item *it)
{
    struct fc_header h;
    int rc;

    if ((rc = catalog_header(blob, len, &h)) != 0)
        return rc;
    return sku_find(blob, &h, sku, skulen, it);
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

/* Quote against an image whose header hp was checked. */
static int
quote_img(const unsigned char *img, const struct fb_header *hp, uint32_t cep,
          const struct folio_freight_cart *cart, uint32_t threshold_g,
          struct folio_freight_quote *q)
{
    const struct fb_header h = *hp;
    const unsigned char *ivs, *bands, *strings;
    uint64_t billed;
    unsigned i;
    int rc;

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

int
folio_freight_quote_blob(const void *blob, size_t len, uint32_t cep,
                         const struct folio_freight_cart *cart,
                         uint32_t threshold_g, struct folio_freight_quote *q)
{
    struct fb_header h;
    int rc;

    if ((rc = image_header(blob, len, &h)) != 0)
        return rc;
    return quote_img(blob, &h, cep, cart, threshold_g, q);
}

/* ---- the environment ---- */

int
folio_freight_integrity_check(const void *tables, size_t tlen,
                              const void *catalog, size_t clen,
                              const void *integ, size_t ilen)
{
    struct fb_integrity in;

    if (ilen != sizeof(in))
        return FOLIO_ECORRUPT;
    memcpy(&in, integ, sizeof(in));
    if (in.i_tables != folio_fnv1a64(tables, tlen) ||
        in.i_catalog != folio_fnv1a64(catalog, clen))
        return FOLIO_ECORRUPT;
    return 0;
}

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
        (mrc = mdb_env_set_maxdbs(fr->env, 2)) != 0 ||
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
    {
        char why[256];

        if (folio_lmdb_size_check(fr->env, envdir, why, sizeof(why)) != 0) {
            folio_log_warnx("freight: %s: %s", envdir, why);
            rc = FOLIO_ECORRUPT;
            goto fail;
        }
    }
    if ((mrc = mdb_txn_begin(fr->env, NULL, MDB_RDONLY, &txn)) != 0) {
        folio_log_warnx("freight: mdb_txn_begin: %s", mdb_strerror(mrc));
        goto fail;
    }
    if ((mrc = mdb_dbi_open(txn, "meta", 0, &fr->meta)) != 0) {
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

/* The images of the current snapshot, looked up and checked. */
static int
fetch_images(struct folio_freight *fr)
{
    MDB_val kt = {6, (void *)(uintptr_t) "tables"};
    MDB_val kc = {7, (void *)(uintptr_t) "catalog"};
    MDB_val ki = {9, (void *)(uintptr_t) "integrity"};
    MDB_val vt, vc, vi;
    int mrc;

    fr->txnid = 0;
    if ((mrc = mdb_get(fr->txn, fr->meta, &kt, &vt)) != 0 ||
        (mrc = mdb_get(fr->txn, fr->meta, &kc, &vc)) != 0) {
        if (mrc == MDB_NOTFOUND)
            return FOLIO_ENOTFOUND;
        folio_log_warnx("freight: mdb_get: %s", mdb_strerror(mrc));
        return FOLIO_ESTORE;
    }
    /* Once per snapshot (an import), about 50 us for the shipped tables. */
    if ((mrc = mdb_get(fr->txn, fr->meta, &ki, &vi)) != 0 ||
        folio_freight_integrity_check(vt.mv_data, vt.mv_size, vc.mv_data,
                                      vc.mv_size, vi.mv_data,
                                      vi.mv_size) != 0) {
        folio_log_warnx("freight: the stored tables fail their checksum");
        return FOLIO_ECORRUPT;
    }
    if (image_header(vt.mv_data, vt.mv_size, &fr->img_h) != 0 ||
        catalog_header(vc.mv_data, vc.mv_size, &fr->cat_h) != 0) {
        folio_log_warnx("freight: the stored tables fail their checks");
        return FOLIO_ECORRUPT;
    }
    fr->img = vt.mv_data;
    fr->imglen = vt.mv_size;
    fr->cat = vc.mv_data;
    fr->catlen = vc.mv_size;
    fr->txnid = mdb_txn_id(fr->txn);
    return 0;
}

int
folio_freight_begin(struct folio_freight *fr)
{
    int mrc;

    if (fr->active)
        folio_freight_end(fr);
    mrc = mdb_txn_renew(fr->txn);
    if (mrc == MDB_MAP_RESIZED) {
        /* The master grew the map: adopt its size, no transaction open. */
        fr->txnid = 0;
        if ((mrc = mdb_env_set_mapsize(fr->env, 0)) == 0)
            mrc = mdb_txn_renew(fr->txn);
    }
    if (mrc != 0) {
        folio_log_warnx("freight: mdb_txn_renew: %s", mdb_strerror(mrc));
        return FOLIO_ESTORE;
    }
    fr->active = 1;
    if (fr->txnid != 0 && fr->txnid == mdb_txn_id(fr->txn))
        return 0;
    return fetch_images(fr);
}

void
folio_freight_end(struct folio_freight *fr)
{
    if (!fr->active)
        return;
    mdb_txn_reset(fr->txn);
    fr->active = 0;
}

int
folio_freight_sku_get(struct folio_freight *fr, const char *sku, size_t len,
                      struct folio_freight_item *it)
{
    if (!fr->active || fr->txnid == 0)
        return FOLIO_ENOTFOUND;
    return sku_find(fr->cat, &fr->cat_h, sku, len, it);
}

int
folio_freight_quote(struct folio_freight *fr, uint32_t cep,
                    const struct folio_freight_cart *cart,
                    uint32_t threshold_g, struct folio_freight_quote *q)
{
    if (!fr->active || fr->txnid == 0)
        return FOLIO_ENOTFOUND;
    return quote_img(fr->img, &fr->img_h, cep, cart, threshold_g, q);
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
    struct fb_carrier c;

    if (!fr->active || fr->txnid == 0 || i >= fr->img_h.h_ncarriers ||
        image_carrier(fr->img, &fr->img_h, i, &c) != 0)
        return FOLIO_ENOTFOUND;
    *name = (const char *)fr->img + fr->img_h.h_strings_off + c.c_name_off;
    *len = c.c_name_len;
    return 0;
}
