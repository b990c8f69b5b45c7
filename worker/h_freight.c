/*
 * h_freight.c - freight.quote and freight.info (PROTOCOL.md section 3).
 * The handlers read params with the mp cursor, look SKUs and bands up in
 * the worker's read-only LMDB view (shm/freight.h) and pack the reply:
 * no allocation per request.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "shm/freight.h"
#include "src/log.h"
#include "src/rpc.h"
#include "worker/dispatch.h"
#include "worker/h_freight.h"
#include "worker/worker_int.h"

/* This worker's view of the tables; NULL: none were imported. */
static struct folio_freight *freight;

#define NO_TABLES                                                        \
    "no freight tables loaded: set freight_dir to a directory of "       \
    "CARRIER.csv files (VTEX template) and catalog to the SKU CSV; see " \
    "foliod.conf(5)"

int
folio_h_freight_init(struct folio_worker *w)
{
    const struct folio_worker_data *d = w->args->data;
    char path[4096];
    int rc;

    if (d == NULL || !d->freight)
        return 0;
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", w->cfg->data_dir,
                         FOLIO_FREIGHT_ENV) >= sizeof(path))
        return FOLIO_ECONFIG;
    rc = folio_freight_open(path, &freight);
    if (rc == FOLIO_ENOTFOUND) {
        folio_log_warnx("freight: no tables in %s", path);
        return 0;
    }
    return rc;
}

void
folio_h_freight_fini(struct folio_worker *w)
{
    folio_freight_close(freight);
    freight = NULL;
}

static int
read_cep(struct folio_mp_cur *c, uint32_t *cep)
{
    const char *s;
    uint32_t len;
    uint64_t v;

    if (folio_mp_read_str(c, &s, &len) == 0)
        return folio_freight_cep_parse(s, len, cep) == 0 ? 0 : -1;
    if (folio_mp_read_uint(c, &v) == 0 && v <= FOLIO_FREIGHT_CEP_MAX) {
        *cep = (uint32_t)v;
        return 0;
    }
    return -1;
}

enum { K_SKU, K_QTY, K_WEIGHT, K_LENGTH, K_WIDTH, K_HEIGHT, K_PRICE, K_N };

static const char *const keys[K_N] = {
    "sku", "qty", "weight_g", "length_cm", "width_cm", "height_cm",
    "price_cents"};

static const uint64_t key_max[K_N] = {
    0, FOLIO_FREIGHT_MAX_QTY, FOLIO_FREIGHT_MAX_ITEM_G,
    FOLIO_FREIGHT_MAX_ITEM_CM, FOLIO_FREIGHT_MAX_ITEM_CM,
    FOLIO_FREIGHT_MAX_ITEM_CM, FOLIO_FREIGHT_MAX_ITEM_CENTS};

/* One cart line, added to the cart; 0 or an error set on call. */
static int
read_item(struct folio_call *call, uint32_t i, struct folio_freight_cart *cart)
{
    struct folio_mp_cur *c = &call->params;
    struct folio_freight_item it;
    uint64_t v[K_N] = {0};
    const char *key, *sku = NULL;
    uint32_t n, klen, skulen = 0, k, j;
    unsigned seen = 0;
    char b[80];
    int rc;

    if (folio_mp_read_map(c, &n) != 0)
        return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                "items[%u]: expected a map", i);
    for (k = 0; k < n; k++) {
        if (folio_mp_read_str(c, &key, &klen) != 0)
            return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                    "items[%u]: keys must be strings", i);
        for (j = 0; j < K_N; j++)
            if (folio_mp_str_eq(key, klen, keys[j]))
                break;
        if (j == K_N)
            return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                    "items[%u]: unknown key '%s'", i,
                                    folio_call_printable(key, klen, b, 40));
        if (seen & (1u << j))
            return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                    "items[%u]: '%s' given twice", i,
                                    keys[j]);
        seen |= 1u << j;
        if (j == K_SKU) {
            if (folio_mp_read_str(c, &sku, &skulen) != 0)
                return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                        "items[%u].sku: expected a string",
                                        i);
        } else if (folio_mp_read_uint(c, &v[j]) != 0 || v[j] > key_max[j] ||
                   (j == K_QTY && v[j] == 0)) {
            return folio_call_error(
                call, FOLIO_ST_INVALID_ARGUMENT,
                "items[%u].%s: expected an integer %u..%llu", i, keys[j],
                j == K_QTY ? 1u : 0u, (unsigned long long)key_max[j]);
        }
    }
    if (!(seen & (1u << K_QTY)))
        return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                "items[%u]: qty is missing", i);
    if (!(seen & (1u << K_SKU)) == !(seen & (1u << K_WEIGHT)))
        return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                "items[%u]: give either sku or weight_g", i);
    if (sku != NULL) {
        if (seen & ~((1u << K_SKU) | (1u << K_QTY)))
            return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                    "items[%u]: an item with a sku takes "
                                    "only qty", i);
        rc = folio_freight_sku_get(freight, sku, skulen, &it);
        if (rc == FOLIO_ENOTFOUND)
            return folio_call_error(call, FOLIO_ST_NOT_FOUND,
                                    "items[%u]: unknown SKU '%s'", i,
                                    folio_call_printable(sku, skulen, b, 72));
        if (rc != 0)
            return folio_call_error(call, FOLIO_ST_INTERNAL,
                                    "catalog lookup failed: %s",
                                    folio_strerror(rc));
    } else {
        it.fi_weight_g = v[K_WEIGHT];
        it.fi_length_cm = v[K_LENGTH];
        it.fi_width_cm = v[K_WIDTH];
        it.fi_height_cm = v[K_HEIGHT];
        it.fi_price_cents = v[K_PRICE];
    }
    folio_freight_cart_add(cart, &it, (uint32_t)v[K_QTY]);
    return 0;
}

/*
 * Constant parts of the reply, already encoded: a fixstr header (0xa0 +
 * length) before each key, a fixmap header (0x80 + size) before a map's
 * first key.  One write each instead of a header and a body.
 */
#define RAW(pk, lit) ((pk)->callback((pk)->data, (lit), sizeof(lit) - 1))

static int
pack_quote(msgpack_packer *pk, const char cep[10],
           const struct folio_freight_quote *q)
{
    char text[10];
    unsigned i;

    text[0] = (char)0xa9; /* str of 9 */
    memcpy(text + 1, cep, 9);
    if (RAW(pk, "\x85\xa3" "cep") != 0 ||
        pk->callback(pk->data, text, sizeof(text)) != 0 ||
        RAW(pk, "\xa8" "weight_g") != 0 ||
        msgpack_pack_uint64(pk, q->fq_weight_g) != 0 ||
        RAW(pk, "\xae" "cubic_weight_g") != 0 ||
        msgpack_pack_uint64(pk, q->fq_cubic_g) != 0 ||
        RAW(pk, "\xaf" "billed_weight_g") != 0 ||
        msgpack_pack_uint64(pk, q->fq_billed_g) != 0 ||
        RAW(pk, "\xa7" "options") != 0 ||
        msgpack_pack_array(pk, q->fq_nopts) != 0)
        return -1;
    for (i = 0; i < q->fq_nopts; i++) {
        const struct folio_freight_option *o = &q->fq_opts[i];

        if (RAW(pk, "\x84\xa7" "carrier") != 0 ||
            folio_pack_str(pk, o->fo_carrier, o->fo_carrier_len) != 0 ||
            RAW(pk, "\xa4" "band") != 0 ||
            folio_pack_str(pk, o->fo_band, o->fo_band_len) != 0 ||
            RAW(pk, "\xab" "price_cents") != 0 ||
            msgpack_pack_int64(pk, o->fo_price_cents) != 0 ||
            RAW(pk, "\xa4" "days") != 0 ||
            msgpack_pack_uint32(pk, o->fo_days) != 0)
            return -1;
    }
    return 0;
}

/* An error of folio_freight_begin as a reply. */
static int
begin_failed(struct folio_call *call, int rc)
{
    if (rc == FOLIO_ENOTFOUND)
        return folio_call_error(call, FOLIO_ST_UNAVAILABLE, NO_TABLES);
    return folio_call_error(call, FOLIO_ST_INTERNAL,
                            "freight tables unreadable: %s",
                            folio_strerror(rc));
}

int
folio_h_freight_quote(struct folio_call *call)
{
    struct folio_freight_cart cart = {0, 0, 0};
    struct folio_freight_quote q;
    struct folio_mp_cur *c = &call->params;
    char text[10];
    uint32_t cep, n, i;
    int rc;

    if (freight == NULL)
        return folio_call_error(call, FOLIO_ST_UNAVAILABLE, NO_TABLES);
    if (read_cep(c, &cep) != 0)
        return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                "cep: expected \"NNNNN-NNN\", \"NNNNNNNN\" "
                                "or an integer 0..99999999");
    if (folio_mp_read_array(c, &n) != 0 || n < 1 ||
        n > FOLIO_FREIGHT_MAX_ITEMS)
        return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                "items: expected an array of 1..%u items",
                                FOLIO_FREIGHT_MAX_ITEMS);
    if ((rc = folio_freight_begin(freight)) != 0) {
        folio_freight_end(freight);
        return begin_failed(call, rc);
    }
    for (i = 0, rc = 0; i < n && rc == 0; i++)
        rc = read_item(call, i, &cart);
    if (rc == 0) {
        rc = folio_freight_quote(freight, cep, &cart,
                                 call->w->cfg->cubic_threshold_g, &q);
        folio_freight_cep_format(cep, text);
        if (rc == 0)
            rc = pack_quote(call->pk, text, &q);
        else if (rc == FOLIO_ENOTFOUND)
            rc = folio_call_error(call, FOLIO_ST_NOT_FOUND,
                                  "no carrier delivers to CEP %s", text);
        else if (rc == FOLIO_ETOOBIG)
            rc = folio_call_error(call, FOLIO_ST_OUT_OF_RANGE,
                                  "no band for a billed weight of %llu g "
                                  "to CEP %s (the heaviest band ends at "
                                  "%u g)",
                                  (unsigned long long)q.fq_billed_g, text,
                                  q.fq_max_g);
        else
            rc = folio_call_error(call, FOLIO_ST_INTERNAL,
                                  "freight tables unreadable: %s",
                                  folio_strerror(rc));
    }
    folio_freight_end(freight);
    return rc;
}

int
folio_h_freight_info(struct folio_call *call)
{
    struct folio_freight_summary sum;
    msgpack_packer *pk = call->pk;
    const char *name;
    uint32_t len;
    unsigned i;
    int rc;

    if (freight == NULL)
        return folio_call_error(call, FOLIO_ST_UNAVAILABLE, NO_TABLES);
    if ((rc = folio_freight_begin(freight)) != 0 ||
        (rc = folio_freight_info(freight, &sum)) != 0) {
        folio_freight_end(freight);
        return begin_failed(call, rc);
    }
    if (msgpack_pack_map(pk, 6) != 0 || folio_pack_cstr(pk, "carriers") != 0 ||
        msgpack_pack_uint32(pk, sum.fm_carriers) != 0 ||
        folio_pack_cstr(pk, "bands") != 0 ||
        msgpack_pack_uint32(pk, sum.fm_rows) != 0 ||
        folio_pack_cstr(pk, "skus") != 0 ||
        msgpack_pack_uint32(pk, sum.fm_skus) != 0 ||
        folio_pack_cstr(pk, "cubic_threshold_g") != 0 ||
        msgpack_pack_uint32(pk, call->w->cfg->cubic_threshold_g) != 0 ||
        folio_pack_cstr(pk, "imported_at") != 0 ||
        msgpack_pack_uint64(pk, sum.fm_imported_ms) != 0 ||
        folio_pack_cstr(pk, "carrier_names") != 0 ||
        msgpack_pack_array(pk, sum.fm_carriers) != 0)
        rc = -1;
    for (i = 0; rc == 0 && i < sum.fm_carriers; i++) {
        if (folio_freight_carrier(freight, i, &name, &len) != 0)
            rc = folio_call_error(call, FOLIO_ST_INTERNAL,
                                  "freight tables unreadable");
        else if (folio_pack_str(pk, name, len) != 0)
            rc = -1;
    }
    folio_freight_end(freight);
    return rc;
}
