/*
 * fuzz_freight.c - libFuzzer target: the freight service's parameters
 * against the tables shipped in data/, and its parsers.
 *
 * The first byte chooses what the rest is:
 *   0  the params array of freight.quote [cep, items], dispatched like a
 *      request (tests/fuzz_harness.c); a quote that succeeds is checked
 *      against the cart recomputed here from the params and an
 *      independent reading of data/catalog.csv: weight_g, cubic_weight_g
 *      (ceil(volume / 6)), billed_weight_g (PROTOCOL.md section 3), the
 *      options sorted by price then days;
 *   1  a CEP string: folio_freight_cep_parse() against the rule
 *      ("NNNNN-NNN" or "NNNNNNNN", nothing else), and the format back;
 *   2  the params array of freight.info;
 *   3  a carrier's CSV table, and 4 a catalog CSV: the master's parsers
 *      (a reload reads files an operator wrote).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/freight.h"
#include "src/alloc.h"
#include "src/buf.h"
#include "src/conf.h"
#include "src/mp.h"
#include "tests/fuzz_harness.h"
#include "worker/worker_int.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct sku {
    char name[64];
    uint64_t w, l, wd, h, price;
};

static struct sku *skus;
static size_t nskus;
static struct folio_buf out;

static int
cmp_sku(const void *a, const void *b)
{
    return strcmp(((const struct sku *)a)->name, ((const struct sku *)b)->name);
}

/* data/catalog.csv, read with sscanf: not the code under test. */
static void
load_catalog(void)
{
    FILE *f = fopen(FOLIO_SRCDIR "/data/catalog.csv", "r");
    unsigned long long w, l, wd, h, p;
    char line[256], name[64];
    size_t cap = 0;

    if (f == NULL)
        fuzz_fail("cannot read %s/data/catalog.csv", FOLIO_SRCDIR);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "%63[^,],%llu,%llu,%llu,%llu,%llu", name, &w, &l, &wd,
                   &h, &p) != 6)
            continue; /* the header */
        if (nskus == cap) {
            cap = cap ? cap * 2 : 1024;
            if ((skus = realloc(skus, cap * sizeof(*skus))) == NULL)
                fuzz_fail("no memory");
        }
        snprintf(skus[nskus].name, sizeof(skus[nskus].name), "%s", name);
        skus[nskus].w = w;
        skus[nskus].l = l;
        skus[nskus].wd = wd;
        skus[nskus].h = h;
        skus[nskus].price = p;
        nskus++;
    }
    fclose(f);
    qsort(skus, nskus, sizeof(*skus), cmp_sku);
}

static const struct sku *
find_sku(const char *s, uint32_t len)
{
    struct sku key;

    if (len >= sizeof(key.name) || memchr(s, '\0', len) != NULL)
        return NULL;
    memcpy(key.name, s, len);
    key.name[len] = '\0';
    return bsearch(&key, skus, nskus, sizeof(*skus), cmp_sku);
}

/* The cart of a quote that succeeded, recomputed from its params. */
static void
expected_cart(const uint8_t *p, size_t len, unsigned __int128 *weight,
              unsigned __int128 *volume)
{
    struct folio_mp_cur c;
    uint32_t n, items, i, k, klen, slen;
    const char *key, *s;
    uint64_t qty, v, wt, l, wd, h;
    const struct sku *sk;

    *weight = *volume = 0;
    folio_mp_cur_init(&c, p, len);
    folio_mp_read_array(&c, &n);
    folio_mp_skip(&c); /* cep */
    if (folio_mp_read_array(&c, &items) != 0)
        fuzz_fail("a quote succeeded without an items array");
    for (i = 0; i < items; i++) {
        qty = wt = l = wd = h = 0;
        sk = NULL;
        folio_mp_read_map(&c, &n);
        for (k = 0; k < n; k++) {
            folio_mp_read_str(&c, &key, &klen);
            if (folio_mp_str_eq(key, klen, "sku")) {
                folio_mp_read_str(&c, &s, &slen);
                if ((sk = find_sku(s, slen)) == NULL)
                    fuzz_fail("a quote succeeded with an unknown SKU");
                continue;
            }
            if (folio_mp_read_uint(&c, &v) != 0)
                fuzz_fail("a quote succeeded with a non-integer field");
            if (folio_mp_str_eq(key, klen, "qty"))
                qty = v;
            else if (folio_mp_str_eq(key, klen, "weight_g"))
                wt = v;
            else if (folio_mp_str_eq(key, klen, "length_cm"))
                l = v;
            else if (folio_mp_str_eq(key, klen, "width_cm"))
                wd = v;
            else if (folio_mp_str_eq(key, klen, "height_cm"))
                h = v;
        }
        if (sk != NULL) {
            wt = sk->w;
            l = sk->l;
            wd = sk->wd;
            h = sk->h;
        }
        *weight += (unsigned __int128)wt * qty;
        *volume += (unsigned __int128)l * wd * h * qty;
    }
}

static uint64_t
read_field(struct folio_mp_cur *c, const char *name)
{
    const char *k;
    uint32_t kn;
    uint64_t v;

    if (folio_mp_read_str(c, &k, &kn) != 0 || !folio_mp_str_eq(k, kn, name) ||
        folio_mp_read_uint(c, &v) != 0)
        fuzz_fail("quote reply: expected %s", name);
    return v;
}

static void
check_quote(const uint8_t *p, size_t len)
{
    const struct folio_config *cfg = fuzz_setup()->cfg;
    struct folio_mp_cur c;
    unsigned __int128 weight, volume, cubic;
    uint64_t wg, cg, bg, want_billed;
    int64_t price, prev_price = INT64_MIN;
    uint64_t days, prev_days = 0;
    uint32_t n, nopts, i, k, kn;
    const char *key;

    if (fuzz_call("freight.quote", p, len, 0, &out) != 0)
        return;
    expected_cart(p, len, &weight, &volume);
    cubic = volume / 6 + (volume % 6 != 0);
    folio_mp_cur_init(&c, out.b_data, out.b_len);
    folio_mp_read_array(&c, &n);
    folio_mp_skip(&c);
    folio_mp_skip(&c);
    folio_mp_skip(&c);
    if (folio_mp_read_map(&c, &n) != 0 || n != 5)
        fuzz_fail("quote reply: not a map of 5");
    folio_mp_skip(&c); /* "cep" */
    folio_mp_skip(&c);
    wg = read_field(&c, "weight_g");
    cg = read_field(&c, "cubic_weight_g");
    bg = read_field(&c, "billed_weight_g");
    if (wg != weight || cg != cubic)
        fuzz_fail("quote: weight %llu cubic %llu, expected %llu %llu",
                  (unsigned long long)wg, (unsigned long long)cg,
                  (unsigned long long)weight, (unsigned long long)cubic);
    want_billed = cg > cfg->cubic_threshold_g && cg > wg ? cg : wg;
    if (bg != want_billed)
        fuzz_fail("quote: billed %llu, expected %llu", (unsigned long long)bg,
                  (unsigned long long)want_billed);
    folio_mp_skip(&c); /* "options" */
    if (folio_mp_read_array(&c, &nopts) != 0 || nopts == 0)
        fuzz_fail("quote: a success without options");
    for (i = 0; i < nopts; i++) {
        price = -1;
        days = 0;
        folio_mp_read_map(&c, &n);
        for (k = 0; k < n; k++) {
            folio_mp_read_str(&c, &key, &kn);
            if (folio_mp_str_eq(key, kn, "price_cents"))
                folio_mp_read_int(&c, &price);
            else if (folio_mp_str_eq(key, kn, "days"))
                folio_mp_read_uint(&c, &days);
            else
                folio_mp_skip(&c);
        }
        if (price < 0)
            fuzz_fail("quote: option %u has price %lld", i, (long long)price);
        if (price < prev_price || (price == prev_price && days < prev_days))
            fuzz_fail("quote: options not sorted by price, days");
        prev_price = price;
        prev_days = days;
    }
}

static void
check_cep(const uint8_t *p, size_t len)
{
    uint32_t cep = 0, want = 0;
    char text[10];
    size_t i;
    int ok = len == 8 || (len == 9 && p[5] == '-');
    int rc = folio_freight_cep_parse((const char *)p, len, &cep);

    for (i = 0; ok && i < len; i++) {
        if (len == 9 && i == 5)
            continue;
        if (p[i] < '0' || p[i] > '9')
            ok = 0;
        else
            want = want * 10 + (uint32_t)(p[i] - '0');
    }
    if (ok != (rc == 0) || (ok && cep != want))
        fuzz_fail("cep_parse of %zu bytes: rc %d value %u, expected %s %u", len,
                  rc, cep, ok ? "ok" : "an error", want);
    if (ok) {
        folio_freight_cep_format(cep, text);
        if (text[5] != '-' || strlen(text) != 9 ||
            folio_freight_cep_parse(text, 9, &want) != 0 || want != cep)
            fuzz_fail("cep_format(%u) = %s", cep, text);
    }
}

static void
check_csv(const uint8_t *p, size_t len, int catalog)
{
    struct folio_freight_diag d = {NULL, NULL, 0};
    struct folio_freight_table *t = NULL;
    struct folio_freight_catalog *cat = NULL;
    void *blob = NULL;
    size_t bloblen;
    unsigned parse_errors;
    char *buf = malloc(len + 1);
    int rc;

    if (buf == NULL)
        return;
    memcpy(buf, p, len);
    if (catalog) {
        rc = folio_freight_catalog_parse("fuzz.csv", buf, len, &d, &cat);
        parse_errors = d.fd_errors;
        if (rc == 0 && folio_freight_catalog_compile(cat, &blob, &bloblen) == 0)
            folio_free(blob);
        folio_freight_catalog_free(cat);
    } else {
        rc = folio_freight_table_parse("fuzz.csv", "fuzz", buf, len, &d, &t);
        parse_errors = d.fd_errors;
        if (rc == 0) {
            struct folio_freight_table *const one[1] = {t};

            if (folio_freight_compile(one, 1, &d, &blob, &bloblen) == 0)
                folio_free(blob);
        }
        folio_freight_table_free(t);
    }
    /* (compiling may report overlaps: those are not the parser's) */
    if ((rc == 0) != (parse_errors == 0))
        fuzz_fail("CSV parse returned %d with %u problems reported", rc,
                  parse_errors);
    free(buf);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* Once per process (the replay driver calls it per test case). */
    if (skus != NULL)
        return 0;
    fuzz_setup();
    load_catalog();
    if (folio_buf_init(&out, 65536, 0) != 0)
        fuzz_fail("no memory");
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (skus == NULL)
        LLVMFuzzerInitialize(NULL, NULL);
    if (size < 1)
        return 0;
    switch (data[0] % 5) {
    case 0:
        check_quote(data + 1, size - 1);
        break;
    case 1:
        check_cep(data + 1, size - 1);
        break;
    case 2:
        fuzz_call("freight.info", data + 1, size - 1, 0, &out);
        break;
    default:
        check_csv(data + 1, size - 1, data[0] % 5 == 4);
        break;
    }
    return 0;
}
