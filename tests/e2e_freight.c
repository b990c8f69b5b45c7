/*
 * e2e_freight.c - freight.quote and freight.info over the wire against
 * the real foliod: covered, uncovered (5) and too heavy (11) carts,
 * unknown SKUs, every kind of malformed param (3), no tables (14), the
 * shipped example data, a reload with a changed table (new prices, no
 * failed request) and a reload with a broken one (old prices, the reason
 * logged), a broken table at start-up.
 */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "src/client.h"
#include "src/err.h"
#include "src/rpc.h"
#include "tests/e2e_util.h"
#include "tests/check_run.h"

#define HDR_SEMI                                                           \
    "ZipCodeStart;ZipCodeEnd;PolygonName;WeightStart;WeightEnd;"           \
    "AbsoluteMoneyCost;PricePercent;PriceByExtraWeight;MaxVolume;TimeCost;" \
    "Country;MinimumValueInsurance\n"
#define HDR_COMMA                                                          \
    "ZipCodeStart,ZipCodeEnd,PolygonName,WeightStart,WeightEnd,"           \
    "AbsoluteMoneyCost,PricePercent,PriceByExtraWeight,MaxVolume,TimeCost," \
    "Country,MinimumValueInsurance\n"

/* "cheap" covers SP and RJ up to 30 kg; "fast" the SP capital to 10 kg. */
#define CHEAP(price)                                                       \
    HDR_SEMI "01000000;09999999;SP;0;1000;" price ";0;0;0;2.00:00:00;BRA;0\n" \
             "01000000;09999999;SP;1001;30000;20,00;1;0,001;0;3.00:00:00;"    \
             "BRA;0\n"                                                        \
             "20000000;28999999;RJ;0;30000;30,00;0;0;0;5.00:00:00;BRA;0\n"
#define FAST                                                               \
    HDR_COMMA "01000000,05999999,Capital,0,10000,25.00,0,0,0,0.12:00:00," \
              "BRA,0\n"
#define CATALOG                                                            \
    "sku,weight_g,length_cm,width_cm,height_cm,price_cents\n"              \
    "BOOK,500,20,14,3,5000\n"                                              \
    "TV,9000,100,60,12,200000\n"                                           \
    "PEN,20,1,1,15,350\n"

static struct e2e_server srv;
static char tables[256]; /* our own temporary directory */

static void
write_in(const char *name, const char *text)
{
    char path[400];

    snprintf(path, sizeof(path), "%s/%s", tables, name);
    ck_assert_int_eq(e2e_write_file(path, text), 0);
}

static void
setup(void)
{
    snprintf(tables, sizeof(tables), "%s/folio-freight-e2e.XXXXXX",
             getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tables));
    write_in("cheap.csv", CHEAP("10,00"));
    write_in("fast.csv", FAST);
    write_in("catalog.csv", CATALOG);
}

static void
teardown(void)
{
    char cmd[400];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tables);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tables);
}

static void
start(const char *extra)
{
    char conf[1024];

    snprintf(conf, sizeof(conf),
             "freight_dir = %s\ncatalog = %s/catalog.csv\n%s", tables, tables,
             extra != NULL ? extra : "");
    ck_assert_msg(e2e_start(&srv, conf, NULL) == 0, "foliod did not start");
}

/* ---- requests ---- */

struct item {
    const char *sku;
    int64_t weight_g, qty, l, w, h, price; /* < 0: not sent */
};

static void
pack_item(msgpack_packer *pk, const struct item *it)
{
    static const char *const names[] = {"weight_g", "qty", "length_cm",
                                        "width_cm", "height_cm",
                                        "price_cents"};
    const int64_t v[] = {it->weight_g, it->qty, it->l, it->w, it->h,
                         it->price};
    unsigned n = it->sku != NULL, i;

    for (i = 0; i < 6; i++)
        n += v[i] >= 0;
    msgpack_pack_map(pk, n);
    if (it->sku != NULL) {
        folio_pack_cstr(pk, "sku");
        folio_pack_cstr(pk, it->sku);
    }
    for (i = 0; i < 6; i++) {
        if (v[i] < 0)
            continue;
        folio_pack_cstr(pk, names[i]);
        msgpack_pack_int64(pk, v[i]);
    }
}

#define SKU(s, q) {(s), -1, (q), -1, -1, -1, -1}
#define GRAMS(g, q) {NULL, (g), (q), -1, -1, -1, -1}

/* Send freight.quote [cep (a str, or an int when cep_int >= 0), items]. */
static uint32_t
send_quote(struct folio_client *c, const char *cep, int64_t cep_int,
           const struct item *items, unsigned n)
{
    msgpack_packer *pk;
    uint32_t id;
    unsigned i;

    pk = folio_client_request(c, 0, "freight.quote", 2, &id);
    if (cep_int >= 0)
        msgpack_pack_int64(pk, cep_int);
    else
        folio_pack_cstr(pk, cep);
    msgpack_pack_array(pk, n);
    for (i = 0; i < n; i++)
        pack_item(pk, &items[i]);
    ck_assert_int_eq(folio_client_flush(c), 0);
    return id;
}

struct option {
    char carrier[32], band[32];
    int64_t price, days;
};

struct quote {
    int code;
    char message[512];
    char cep[16];
    int64_t weight, cubic, billed;
    unsigned nopts;
    struct option opts[8];
};

static void
read_str(struct folio_mp_cur *c, char *out, size_t cap)
{
    const char *s;
    uint32_t len;

    ck_assert_int_eq(folio_mp_read_str(c, &s, &len), 0);
    ck_assert_uint_lt(len, cap);
    memcpy(out, s, len);
    out[len] = '\0';
}

static int64_t
read_int(struct folio_mp_cur *c)
{
    int64_t v;

    ck_assert_int_eq(folio_mp_read_int(c, &v), 0);
    return v;
}

static void
recv_quote(struct folio_client *c, uint32_t id, struct quote *q)
{
    struct folio_reply r;
    struct folio_mp_cur *m = &r.result;
    char key[32];
    uint32_t n, k, i, no, j;

    memset(q, 0, sizeof(*q));
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    ck_assert_uint_eq(r.msgid, id);
    q->code = r.code;
    if (r.code != 0) {
        snprintf(q->message, sizeof(q->message), "%.*s",
                 (int)r.message_len, r.message);
        return;
    }
    ck_assert_int_eq(folio_mp_read_map(m, &n), 0);
    ck_assert_uint_eq(n, 5);
    for (k = 0; k < n; k++) {
        read_str(m, key, sizeof(key));
        if (strcmp(key, "cep") == 0) {
            read_str(m, q->cep, sizeof(q->cep));
        } else if (strcmp(key, "weight_g") == 0) {
            q->weight = read_int(m);
        } else if (strcmp(key, "cubic_weight_g") == 0) {
            q->cubic = read_int(m);
        } else if (strcmp(key, "billed_weight_g") == 0) {
            q->billed = read_int(m);
        } else {
            ck_assert_str_eq(key, "options");
            ck_assert_int_eq(folio_mp_read_array(m, &q->nopts), 0);
            ck_assert_uint_le(q->nopts, 8);
            for (i = 0; i < q->nopts; i++) {
                struct option *o = &q->opts[i];

                ck_assert_int_eq(folio_mp_read_map(m, &no), 0);
                ck_assert_uint_eq(no, 4);
                for (j = 0; j < no; j++) {
                    read_str(m, key, sizeof(key));
                    if (strcmp(key, "carrier") == 0)
                        read_str(m, o->carrier, sizeof(o->carrier));
                    else if (strcmp(key, "band") == 0)
                        read_str(m, o->band, sizeof(o->band));
                    else if (strcmp(key, "price_cents") == 0)
                        o->price = read_int(m);
                    else if (strcmp(key, "days") == 0)
                        o->days = read_int(m);
                    else
                        ck_abort_msg("unexpected key %s", key);
                }
            }
        }
    }
}

static void
quote(struct folio_client *c, const char *cep, const struct item *items,
      unsigned n, struct quote *q)
{
    recv_quote(c, send_quote(c, cep, -1, items, n), q);
}

#define ck_error(q, want, text)                                           \
    do {                                                                  \
        ck_assert_msg((q).code == (want), "code %d (%s), want %d",        \
                      (q).code, (q).message, (want));                     \
        ck_assert_msg(strstr((q).message, (text)) != NULL,                \
                      "'%s' lacks '%s'", (q).message, (text));            \
    } while (0)

/* ---- tests ---- */

START_TEST(test_quotes)
{
    struct folio_client *c;
    struct quote q;
    const struct item book = SKU("BOOK", 1);

    start(NULL);
    c = e2e_connect(&srv);
    ck_assert_ptr_nonnull(c);

    /* A book to the SP capital: both carriers, cheaper first. */
    quote(c, "01310-100", &book, 1, &q);
    ck_assert_int_eq(q.code, 0);
    ck_assert_str_eq(q.cep, "01310-100");
    ck_assert_int_eq(q.weight, 500);
    ck_assert_int_eq(q.cubic, 140); /* 840 cm3 / 6 */
    ck_assert_int_eq(q.billed, 500);
    ck_assert_uint_eq(q.nopts, 2);
    ck_assert_str_eq(q.opts[0].carrier, "cheap");
    ck_assert_str_eq(q.opts[0].band, "SP");
    ck_assert_int_eq(q.opts[0].price, 1000);
    ck_assert_int_eq(q.opts[0].days, 2);
    ck_assert_str_eq(q.opts[1].carrier, "fast");
    ck_assert_str_eq(q.opts[1].band, "Capital");
    ck_assert_int_eq(q.opts[1].price, 2500);
    ck_assert_int_eq(q.opts[1].days, 1); /* 12 hours */

    /* The same CEP as 8 digits and as an integer. */
    quote(c, "01310100", &book, 1, &q);
    ck_assert_int_eq(q.code, 0);
    ck_assert_str_eq(q.cep, "01310-100");
    recv_quote(c, send_quote(c, NULL, 1310100, &book, 1), &q);
    ck_assert_int_eq(q.code, 0);
    ck_assert_str_eq(q.cep, "01310-100");
    ck_assert_uint_eq(q.nopts, 2);

    /* A TV: its cubic weight (72000 cm3 / 6 = 12 kg) is billed; only
     * cheap carries 12 kg: 20,00 + 10999 g * 0,001 + 1% of 2000,00. */
    {
        const struct item tv = SKU("TV", 1);

        quote(c, "01310-100", &tv, 1, &q);
        ck_assert_int_eq(q.code, 0);
        ck_assert_int_eq(q.weight, 9000);
        ck_assert_int_eq(q.cubic, 12000);
        ck_assert_int_eq(q.billed, 12000);
        ck_assert_uint_eq(q.nopts, 1);
        ck_assert_int_eq(q.opts[0].price, 2000 + 1100 + 2000);
        ck_assert_int_eq(q.opts[0].days, 3);
    }
    /* Items by weight and size, quantities, several lines. */
    {
        const struct item items[] = {
            {NULL, 100, 2, 50, 40, 30, 1000}, /* 120000 cm3: 20 kg cubic */
            SKU("PEN", 10),
        };

        quote(c, "20040-020", items, 2, &q);
        ck_assert_int_eq(q.code, 0);
        ck_assert_int_eq(q.weight, 400);
        ck_assert_int_eq(q.cubic, 20025); /* (120000 + 150) / 6 */
        ck_assert_int_eq(q.billed, 20025);
        ck_assert_uint_eq(q.nopts, 1);
        ck_assert_str_eq(q.opts[0].band, "RJ");
        ck_assert_int_eq(q.opts[0].price, 3000);
        ck_assert_int_eq(q.opts[0].days, 5);
    }
    /* Uncovered CEPs: 5. */
    quote(c, "00500-000", &book, 1, &q);
    ck_error(q, 5, "no carrier delivers to CEP 00500-000");
    quote(c, "50000-000", &book, 1, &q);
    ck_error(q, 5, "50000-000");
    /* Covered but too heavy: 11. */
    {
        const struct item heavy = GRAMS(30001, 1);
        const struct item tvs = SKU("TV", 4);

        quote(c, "01310-100", &heavy, 1, &q);
        ck_error(q, 11, "30000 g");
        quote(c, "01310-100", &tvs, 1, &q);
        ck_error(q, 11, "48000 g");
    }
    /* Unknown SKU: 5. */
    {
        const struct item items[] = {SKU("BOOK", 1), SKU("NOPE", 1)};

        quote(c, "01310-100", items, 2, &q);
        ck_error(q, 5, "items[1]: unknown SKU 'NOPE'");
    }
    /* Still serving. */
    quote(c, "01310-100", &book, 1, &q);
    ck_assert_int_eq(q.code, 0);
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_malformed)
{
    static const struct {
        const char *cep;
        struct item it;
        const char *text;
    } cases[] = {
        {"1310-100", SKU("BOOK", 1), "cep: expected"},
        {"01310-1000", SKU("BOOK", 1), "cep: expected"},
        {"0131O100", SKU("BOOK", 1), "cep: expected"},
        {"", SKU("BOOK", 1), "cep: expected"},
        {"01310-100", SKU("BOOK", 0), "items[0].qty: expected an integer 1"},
        {"01310-100", SKU("BOOK", 10001), "items[0].qty"},
        {"01310-100", SKU("BOOK", -1), "items[0]: qty is missing"},
        {"01310-100", {"BOOK", 1, 1, -1, -1, -1, -1}, "either sku or"},
        {"01310-100", {NULL, -1, 1, 1, -1, -1, -1}, "either sku or"},
        {"01310-100", {"BOOK", -1, 1, 1, -1, -1, -1}, "takes only qty"},
        {"01310-100", {NULL, 100000001, 1, -1, -1, -1, -1}, "weight_g"},
        {"01310-100", {NULL, 1, 1, 100001, -1, -1, -1}, "length_cm"},
        {"01310-100", {NULL, 1, 1, -1, -1, -1, 10000000001}, "price_cents"},
    };
    struct folio_client *c;
    msgpack_packer *pk;
    struct quote q;
    uint32_t id;
    size_t i;

    start(NULL);
    c = e2e_connect(&srv);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        quote(c, cases[i].cep, &cases[i].it, 1, &q);
        ck_assert_msg(q.code == 3, "case %zu: code %d (%s)", i, q.code,
                      q.message);
        ck_assert_msg(strstr(q.message, cases[i].text) != NULL,
                      "case %zu: '%s' lacks '%s'", i, q.message,
                      cases[i].text);
    }
    /* Wrong types and shapes, packed by hand. */
    recv_quote(c, send_quote(c, NULL, 100000000, NULL, 0), &q);
    ck_error(q, 3, "cep");
    pk = folio_client_request(c, 0, "freight.quote", 2, &id);
    msgpack_pack_double(pk, 1310100.0);
    msgpack_pack_array(pk, 0);
    folio_client_flush(c);
    recv_quote(c, id, &q);
    ck_error(q, 3, "cep");
    pk = folio_client_request(c, 0, "freight.quote", 2, &id);
    msgpack_pack_int64(pk, -5);
    msgpack_pack_array(pk, 0);
    folio_client_flush(c);
    recv_quote(c, id, &q);
    ck_error(q, 3, "cep");
    recv_quote(c, send_quote(c, "01310-100", -1, NULL, 0), &q);
    ck_error(q, 3, "items: expected an array of 1..1000");
    pk = folio_client_request(c, 0, "freight.quote", 2, &id);
    folio_pack_cstr(pk, "01310-100");
    folio_pack_cstr(pk, "BOOK");
    folio_client_flush(c);
    recv_quote(c, id, &q);
    ck_error(q, 3, "items: expected an array");
    pk = folio_client_request(c, 0, "freight.quote", 2, &id);
    folio_pack_cstr(pk, "01310-100");
    msgpack_pack_array(pk, 1001);
    for (i = 0; i < 1001; i++) {
        msgpack_pack_map(pk, 2);
        folio_pack_cstr(pk, "weight_g");
        msgpack_pack_int(pk, 1);
        folio_pack_cstr(pk, "qty");
        msgpack_pack_int(pk, 1);
    }
    folio_client_flush(c);
    recv_quote(c, id, &q);
    ck_error(q, 3, "1..1000");
    pk = folio_client_request(c, 0, "freight.quote", 2, &id);
    folio_pack_cstr(pk, "01310-100");
    msgpack_pack_array(pk, 2);
    msgpack_pack_map(pk, 2);
    folio_pack_cstr(pk, "sku");
    folio_pack_cstr(pk, "BOOK");
    folio_pack_cstr(pk, "qty");
    msgpack_pack_int(pk, 1);
    msgpack_pack_array(pk, 1);
    msgpack_pack_int(pk, 1);
    folio_client_flush(c);
    recv_quote(c, id, &q);
    ck_error(q, 3, "items[1]: expected a map");
    pk = folio_client_request(c, 0, "freight.quote", 2, &id);
    folio_pack_cstr(pk, "01310-100");
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 3);
    folio_pack_cstr(pk, "sku");
    folio_pack_cstr(pk, "BOOK");
    folio_pack_cstr(pk, "qty");
    msgpack_pack_int(pk, 1);
    folio_pack_cstr(pk, "colour");
    folio_pack_cstr(pk, "red");
    folio_client_flush(c);
    recv_quote(c, id, &q);
    ck_error(q, 3, "unknown key 'colour'");
    pk = folio_client_request(c, 0, "freight.quote", 2, &id);
    folio_pack_cstr(pk, "01310-100");
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 2);
    folio_pack_cstr(pk, "sku");
    msgpack_pack_int(pk, 7);
    folio_pack_cstr(pk, "qty");
    msgpack_pack_int(pk, 1);
    folio_client_flush(c);
    recv_quote(c, id, &q);
    ck_error(q, 3, "sku: expected a string");
    pk = folio_client_request(c, 0, "freight.quote", 2, &id);
    folio_pack_cstr(pk, "01310-100");
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 2);
    folio_pack_cstr(pk, "qty");
    msgpack_pack_int(pk, 1);
    folio_pack_cstr(pk, "qty");
    msgpack_pack_int(pk, 1);
    folio_client_flush(c);
    recv_quote(c, id, &q);
    ck_error(q, 3, "given twice");
    /* Arity. */
    pk = folio_client_request(c, 0, "freight.quote", 1, &id);
    folio_pack_cstr(pk, "01310-100");
    folio_client_flush(c);
    recv_quote(c, id, &q);
    ck_error(q, 3, "takes 2 params");
    /* The connection survived all of it. */
    {
        const struct item book = SKU("BOOK", 1);

        quote(c, "01310-100", &book, 1, &q);
        ck_assert_int_eq(q.code, 0);
    }
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* freight.info: {"carriers", "bands", "skus", ...}. */
static void
info(struct folio_client *c, int64_t *carriers, int64_t *bands, int64_t *skus,
     int *code)
{
    struct folio_reply r;
    char key[32];
    uint32_t n, k;

    ck_assert_int_eq(folio_client_call0(c, "freight.info", &r), 1);
    *code = r.code;
    if (r.code != 0)
        return;
    ck_assert_int_eq(folio_mp_read_map(&r.result, &n), 0);
    for (k = 0; k < n; k++) {
        read_str(&r.result, key, sizeof(key));
        if (strcmp(key, "carriers") == 0)
            *carriers = read_int(&r.result);
        else if (strcmp(key, "bands") == 0)
            *bands = read_int(&r.result);
        else if (strcmp(key, "skus") == 0)
            *skus = read_int(&r.result);
        else
            ck_assert_int_eq(folio_mp_skip(&r.result), 0);
    }
}

START_TEST(test_info_and_no_tables)
{
    struct folio_client *c;
    struct folio_reply r;
    int64_t carriers = 0, bands = 0, skus = 0;
    const struct item book = SKU("BOOK", 1);
    struct quote q;
    int code;

    start(NULL);
    c = e2e_connect(&srv);
    info(c, &carriers, &bands, &skus, &code);
    ck_assert_int_eq(code, 0);
    ck_assert_int_eq(carriers, 2);
    ck_assert_int_eq(bands, 4);
    ck_assert_int_eq(skus, 3);
    ck_assert_int_eq(folio_client_call0(c, "server.methods", &r), 1);
    ck_assert_int_eq(r.code, 0);
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);

    /* No tables: 14, saying what to set. */
    ck_assert_int_eq(e2e_start(&srv, "freight_dir = off\n", NULL), 0);
    c = e2e_connect(&srv);
    quote(c, "01310-100", &book, 1, &q);
    ck_error(q, 14, "freight_dir");
    info(c, &carriers, &bands, &skus, &code);
    ck_assert_int_eq(code, 14);
    ck_assert(e2e_log_has(&srv, "freight: no tables"));
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_shipped_data)
{
    static const struct item cart[] = {SKU("BOOK-00001", 1),
                                       SKU("SHOE-00002", 2),
                                       SKU("ACC-00003", 1)};
    struct folio_client *c;
    struct quote q;
    int64_t carriers = 0, bands = 0, skus = 0;
    int code;
    char conf[512];

    snprintf(conf, sizeof(conf),
             "freight_dir = %s/data/freight\ncatalog = %s/data/catalog.csv\n",
             FOLIO_SRCDIR, FOLIO_SRCDIR);
    ck_assert_int_eq(e2e_start(&srv, conf, NULL), 0);
    c = e2e_connect(&srv);
    info(c, &carriers, &bands, &skus, &code);
    ck_assert_int_eq(code, 0);
    ck_assert_int_eq(carriers, 2);
    ck_assert_int_eq(skus, 1000);
    /* SP capital: both carriers; Manaus (AM, second range): economy. */
    quote(c, "01310-100", cart, 3, &q);
    ck_assert_int_eq(q.code, 0);
    ck_assert_uint_eq(q.nopts, 2);
    ck_assert_str_eq(q.opts[0].carrier, "economy");
    ck_assert_str_eq(q.opts[0].band, "SP-Capital");
    ck_assert_int_lt(q.opts[0].price, q.opts[1].price);
    ck_assert_int_lt(q.opts[1].days, q.opts[0].days);
    quote(c, "69400-000", cart, 3, &q);
    ck_assert_int_eq(q.code, 0);
    ck_assert_uint_eq(q.nopts, 1);
    ck_assert_str_eq(q.opts[0].band, "AM");
    quote(c, "00999-999", cart, 3, &q);
    ck_assert_int_eq(q.code, 5);
    quote(c, "01000-000", cart, 3, &q);
    ck_assert_int_eq(q.code, 0);
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * The defaults (auto): a foliod that is built but not installed serves
 * the build tree's data/, as it serves the build's corpus; installed,
 * the installed copy.  "foliod -f --data-dir DIR" answers quotes.
 */
START_TEST(test_auto_finds_built_data)
{
    const struct item book = SKU("BOOK-00001", 2);
    struct folio_client *c;
    struct quote q;
    int64_t carriers = 0, bands = 0, skus = 0;
    int code, installed = access(FOLIO_PKGDATADIR "/freight", F_OK) == 0;

    ck_assert_int_eq(
        e2e_start(&srv, "freight_dir = auto\ncatalog = auto\n", NULL), 0);
    c = e2e_connect(&srv);
    info(c, &carriers, &bands, &skus, &code);
    ck_assert_int_eq(code, 0);
    ck_assert_int_eq(carriers, 2);
    ck_assert_int_eq(skus, 1000);
    quote(c, "01310-100", &book, 1, &q);
    ck_assert_int_eq(q.code, 0);
    ck_assert_uint_eq(q.nopts, 2);
    ck_assert(e2e_log_has(&srv, installed ? FOLIO_PKGDATADIR "/freight"
                                          : FOLIO_SRCDIR "/data/freight"));
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);
    /* The command line alone, as the README runs it: the same. */
    ck_assert_int_eq(
        e2e_start(&srv, NULL,
                  (const char *const[]){"--freight-dir", "auto", "--catalog",
                                        "auto", NULL}),
        0);
    c = e2e_connect(&srv);
    quote(c, "01310-100", &book, 1, &q);
    ck_assert_int_eq(q.code, 0);
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_reload_changed_and_broken)
{
    enum { NC = 6 };
    const struct item book = SKU("BOOK", 1);
    struct folio_client *c[NC];
    struct quote q;
    uint64_t deadline;
    int i, sent = 0;

    start("workers = 2\n");
    for (i = 0; i < NC; i++) {
        c[i] = e2e_connect(&srv);
        ck_assert_ptr_nonnull(c[i]);
        quote(c[i], "01310-100", &book, 1, &q);
        ck_assert_int_eq(q.opts[0].price, 1000);
    }
    ck_assert(e2e_log_has(&srv, "(imported)"));

    /* A changed table: quotes and pings on open connections all succeed
     * during the reload; after it, the new price. */
    write_in("cheap.csv", CHEAP("11,00"));
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    deadline = e2e_now_ms() + 10000;
    while (e2e_wait_ready(&srv, 2, 0) != 0) {
        ck_assert_msg(e2e_now_ms() < deadline, "reload not done");
        for (i = 0; i < NC; i++, sent++) {
            quote(c[i], "01310-100", &book, 1, &q);
            ck_assert_msg(q.code == 0, "request %d failed: %s", sent,
                          q.message);
            ck_assert(q.opts[0].price == 1000 || q.opts[0].price == 1100);
            ck_assert_int_eq(e2e_ping(c[i]), 0);
        }
    }
    for (i = 0; i < NC; i++) {
        quote(c[i], "01310-100", &book, 1, &q);
        ck_assert_int_eq(q.code, 0);
        ck_assert_int_eq(q.opts[0].price, 1100);
    }

    /* Nothing changed: nothing imported. */
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    ck_assert_int_eq(e2e_wait_ready(&srv, 3, E2E_READY_MS), 0);
    ck_assert(e2e_log_has(&srv, "(unchanged)"));

    /* A broken table: the reload fails, says where, the old prices stay. */
    write_in("cheap.csv", CHEAP("12,00")
              "30000000;39999999;MG;0;1000;1O,00;0;0;0;1;BRA;0\n");
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    ck_assert_int_eq(e2e_wait_log(&srv, "reload failed", 10000), 0);
    ck_assert(e2e_log_has(&srv, "cheap.csv:5:6: AbsoluteMoneyCost"));
    for (i = 0; i < NC; i++) {
        quote(c[i], "01310-100", &book, 1, &q);
        ck_assert_int_eq(q.code, 0);
        ck_assert_int_eq(q.opts[0].price, 1100);
    }
    ck_assert_int_eq(e2e_wait_ready(&srv, 3, 0), 0);
    ck_assert_uint_eq(srv.generation, 3);
    for (i = 0; i < NC; i++)
        folio_client_close(c[i]);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_broken_at_start)
{
    char cmd[1024], conf[400];

    write_in("cheap.csv", HDR_SEMI "1;2;x;0;1;1;0;0;0;1;ARG;0\n");
    /* --check-config says what is wrong and where. */
    snprintf(conf, sizeof(conf), "%s/foliod.conf", tables);
    snprintf(cmd, sizeof(cmd),
             "freight_dir = %s\ndata_dir = %s/data\nlisten = 127.0.0.1:0\n"
             "admin_socket = off\n",
             tables, tables);
    ck_assert_int_eq(e2e_write_file(conf, cmd), 0);
    snprintf(cmd, sizeof(cmd),
             "%s --check-config -c %s 2>%s/err.txt >/dev/null", e2e_foliod(),
             conf, tables);
    ck_assert_int_ne(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "grep -q 'cheap.csv:2:11: Country' %s/err.txt",
             tables);
    ck_assert_int_eq(system(cmd), 0);

    /* foliod does not start, and says why. */
    snprintf(cmd, sizeof(cmd), "freight_dir = %s\ncatalog = %s/catalog.csv\n",
             tables, tables);
    ck_assert_int_ne(e2e_start(&srv, cmd, NULL), 0);
    ck_assert(e2e_log_has(&srv, "cheap.csv:2:11: Country: unknown country"));
    e2e_stop(&srv);
}
END_TEST

/*
 * No heap allocation per quote, whatever its answer: warm up, then 10,000
 * quotes (ok, 5, 11, 3) pipelined on four connections, and the workers'
 * allocation counter must not move.
 */
static void
quotes_pipelined(struct folio_client *c, int n, unsigned long *codes)
{
    static const struct item book[] = {SKU("BOOK", 1), SKU("PEN", 3)};
    static const struct item heavy[] = {SKU("TV", 4)};
    static const struct item unknown[] = {SKU("NOPE", 1)};
    static const struct item bad[] = {SKU("BOOK", 0)};
    static const struct {
        const char *cep;
        const struct item *items;
        unsigned n;
    } mix[] = {{"01310-100", book, 2}, {"20040-020", book, 2},
               {"00500-000", book, 2}, {"01310-100", heavy, 1},
               {"01310-100", unknown, 1}, {"01310-100", bad, 1}};
    struct folio_reply r;
    int i;

    for (i = 0; i < n; i++) {
        unsigned k = (unsigned)i % (sizeof(mix) / sizeof(mix[0]));

        send_quote(c, mix[k].cep, -1, mix[k].items, mix[k].n);
    }
    for (i = 0; i < n; i++) {
        ck_assert_int_eq(folio_client_reply(c, &r), 1);
        codes[r.code < 16 ? r.code : 15]++;
    }
}

START_TEST(test_zero_alloc)
{
    struct folio_client *c[4], *a;
    struct folio_reply r;
    unsigned long codes[16] = {0};
    double before, after;
    int i, k;

    start(NULL);
    for (i = 0; i < 4; i++)
        ck_assert_ptr_nonnull(c[i] = e2e_connect(&srv));
    ck_assert_ptr_nonnull(a = e2e_connect_admin(&srv));
    for (k = 0; k < 2; k++) {
        for (i = 0; i < 4; i++)
            quotes_pipelined(c[i], 50, codes);
        ck_assert_int_eq(e2e_stats(a, &r), 0);
    }
    before = e2e_stat_num(&r, "totals", "alloc_calls", NULL);
    memset(codes, 0, sizeof(codes));
    /* 50 in flight: their replies fit the connection's base buffer
     * (16 KiB), which the worker shrinks back to when a connection is
     * idle; deeper pipelines grow it again, an allocation per burst. */
    for (k = 0; k < 50; k++)
        for (i = 0; i < 4; i++)
            quotes_pipelined(c[i], 50, codes);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    after = e2e_stat_num(&r, "totals", "alloc_calls", NULL);
    /* 200 batches of 50: mix entries 0 and 1 9 times each, others 8. */
    ck_assert_uint_eq(codes[0], 200 * 18);
    ck_assert_uint_eq(codes[5], 200 * 16);
    ck_assert_uint_eq(codes[11], 200 * 8);
    ck_assert_uint_eq(codes[3], 200 * 8);
    ck_assert_msg(after == before,
                  "10,000 quotes made %.0f heap allocations", after - before);
    for (i = 0; i < 4; i++)
        folio_client_close(c[i]);
    folio_client_close(a);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

static Suite *
freight_suite(void)
{
    Suite *s = suite_create("e2e_freight");
    TCase *tc = tcase_create("freight");

    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_quotes);
    tcase_add_test(tc, test_malformed);
    tcase_add_test(tc, test_info_and_no_tables);
    tcase_add_test(tc, test_shipped_data);
    tcase_add_test(tc, test_auto_finds_built_data);
    tcase_add_test(tc, test_reload_changed_and_broken);
    tcase_add_test(tc, test_broken_at_start);
    tcase_add_test(tc, test_zero_alloc);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(freight_suite());
}
