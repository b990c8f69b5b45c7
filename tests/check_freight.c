/*
 * check_freight.c - the freight data layer: CSV as spreadsheets write it
 * (quotes, separators, decimal commas, BOM, CRLF, blank lines), every
 * validation error with its line and column, inclusive range ends, the
 * cubic threshold, rounding of money and days, the import into LMDB
 * (only when a file changed; a bad table keeps the old ones), quotes with
 * no allocation, and a property test against a brute-force scan.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/freight.h"
#include "src/alloc.h"
#include "src/err.h"
#include "tests/check_run.h"

#define HDR_SEMI                                                           \
    "ZipCodeStart;ZipCodeEnd;PolygonName;WeightStart;WeightEnd;"           \
    "AbsoluteMoneyCost;PricePercent;PriceByExtraWeight;MaxVolume;TimeCost;" \
    "Country;MinimumValueInsurance\n"
#define HDR_COMMA                                                          \
    "ZipCodeStart,ZipCodeEnd,PolygonName,WeightStart,WeightEnd,"           \
    "AbsoluteMoneyCost,PricePercent,PriceByExtraWeight,MaxVolume,TimeCost," \
    "Country,MinimumValueInsurance\n"
#define CAT_HDR "sku,weight_g,length_cm,width_cm,height_cm,price_cents\n"

/* ---- collected reports ---- */

#define MAX_REPORTS 64
struct report {
    char file[80];
    unsigned line, col;
    char msg[512];
};
static struct report reports[MAX_REPORTS];
static unsigned nreports;

static void
collect(void *arg, const char *file, unsigned line, unsigned col,
        const char *msg)
{
    if (nreports < MAX_REPORTS) {
        struct report *r = &reports[nreports];

        snprintf(r->file, sizeof(r->file), "%s", file);
        r->line = line;
        r->col = col;
        snprintf(r->msg, sizeof(r->msg), "%s", msg);
    }
    nreports++;
}

static struct folio_freight_diag
diag(void)
{
    struct folio_freight_diag d = {collect, NULL, 0};

    nreports = 0;
    return d;
}

/* Whether a report at line:col mentions `text`. */
static int
reported(unsigned line, unsigned col, const char *text)
{
    unsigned i;

    for (i = 0; i < nreports && i < MAX_REPORTS; i++)
        if (reports[i].line == line && reports[i].col == col &&
            strstr(reports[i].msg, text) != NULL)
            return 1;
    return 0;
}

static void
dump_reports(void)
{
    unsigned i;

    for (i = 0; i < nreports && i < MAX_REPORTS; i++)
        fprintf(stderr, "  %s:%u:%u: %s\n", reports[i].file, reports[i].line,
                reports[i].col, reports[i].msg);
}

#define ck_reported(line, col, text)                                      \
    do {                                                                  \
        if (!reported((line), (col), (text)))                             \
            dump_reports();                                               \
        ck_assert_msg(reported((line), (col), (text)),                    \
                      "no report %u:%u '%s'", (unsigned)(line),           \
                      (unsigned)(col), (text));                           \
    } while (0)

/* ---- helpers ---- */

/* Parse a table from text (copied: parsing works in place). */
static int
table(const char *text, struct folio_freight_diag *d,
      struct folio_freight_table **t)
{
    size_t len = strlen(text);
    char *buf = malloc(len + 1);
    int rc;

    ck_assert_ptr_nonnull(buf);
    memcpy(buf, text, len + 1);
    rc = folio_freight_table_parse("t.csv", "t", buf, len, d, t);
    free(buf);
    return rc;
}

static struct folio_freight_table *
table_ok(const char *text)
{
    struct folio_freight_diag d = diag();
    struct folio_freight_table *t = NULL;
    int rc = table(text, &d, &t);

    if (rc != 0)
        dump_reports();
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(d.fd_errors, 0);
    return t;
}

static int
catalog(const char *text, struct folio_freight_diag *d,
        struct folio_freight_catalog **c)
{
    size_t len = strlen(text);
    char *buf = malloc(len + 1);
    int rc;

    ck_assert_ptr_nonnull(buf);
    memcpy(buf, text, len + 1);
    rc = folio_freight_catalog_parse("c.csv", buf, len, d, c);
    free(buf);
    return rc;
}

/* A compiled image of the given tables (named as given). */
static void *
compile(struct folio_freight_table **t, size_t n, size_t *len)
{
    struct folio_freight_diag d = diag();
    void *img = NULL;
    int rc = folio_freight_compile(t, n, &d, &img, len);

    if (rc != 0)
        dump_reports();
    ck_assert_int_eq(rc, 0);
    return img;
}

static struct folio_freight_cart
cart_of(uint64_t weight_g, uint64_t l, uint64_t w, uint64_t h,
        uint64_t price, uint32_t qty)
{
    struct folio_freight_cart c = {0, 0, 0};
    struct folio_freight_item it = {weight_g, l, w, h, price};

    folio_freight_cart_add(&c, &it, qty);
    return c;
}

/* Quote against one table; q's spans stay valid until the next call. */
static int
quote1(const char *text, uint32_t cep, struct folio_freight_cart cart,
       uint32_t threshold, struct folio_freight_quote *q)
{
    static void *img;
    struct folio_freight_table *t = table_ok(text);
    size_t len;
    int rc;

    folio_free(img);
    img = compile(&t, 1, &len);
    rc = folio_freight_quote_blob(img, len, cep, &cart, threshold, q);
    folio_freight_table_free(t);
    return rc;
}

/* ---- CSV ---- */

START_TEST(test_csv_styles)
{
    struct folio_freight_table *t;
    const struct folio_freight_row *r;

    /* ';' with decimal commas, a BOM, CRLF, blank lines, a line of empty
     * fields, spaces around fields. */
    t = table_ok("\xEF\xBB\xBF" "ZipCodeStart;ZipCodeEnd;PolygonName;"
                 "WeightStart;WeightEnd;AbsoluteMoneyCost;PricePercent;"
                 "PriceByExtraWeight;MaxVolume;TimeCost;Country;"
                 "MinimumValueInsurance\r\n"
                 "\r\n"
                 " 01000000 ; 01999999 ; SP ; 0 ; 1000 ; 10,50 ; 1,5 ; "
                 "0,0025 ; 1000 ; 2.00:00:00 ; BRA ; 3,00 \r\n"
                 ";;;;;;;;;;;\r\n"
                 "\n"
                 "02000-000;02999-999;\"Zona; Sul\";0;1000;\"10.5\";0;0;;"
                 "1.12:00:00;br;\r\n");
    ck_assert_str_eq(t->ft_carrier, "t");
    ck_assert_uint_eq(t->ft_nrows, 2);
    r = &t->ft_rows[0];
    ck_assert_uint_eq(r->fr_line, 3);
    ck_assert_uint_eq(r->fr_cep_lo, 1000000);
    ck_assert_uint_eq(r->fr_cep_hi, 1999999);
    ck_assert_str_eq(r->fr_band, "SP");
    ck_assert_uint_eq(r->fr_abs_cents, 1050);
    ck_assert_uint_eq(r->fr_pct, 15000);
    ck_assert_uint_eq(r->fr_rate, 2500);
    ck_assert_uint_eq(r->fr_insurance_cents, 300);
    ck_assert_uint_eq(r->fr_time_s, 2 * 86400);
    r = &t->ft_rows[1];
    ck_assert_uint_eq(r->fr_line, 6);
    ck_assert_uint_eq(r->fr_cep_lo, 2000000);
    ck_assert_str_eq(r->fr_band, "Zona; Sul");
    ck_assert_uint_eq(r->fr_abs_cents, 1050);
    ck_assert_uint_eq(r->fr_time_s, 86400 + 12 * 3600);
    folio_freight_table_free(t);

    /* ',' with decimal points; quoted decimal commas; "" in quotes; a
     * quoted field across lines; trailing empty fields; no final EOL. */
    t = table_ok(HDR_COMMA
                 "1000000,1999999,\"A \"\"big\"\" zone\",0,500,\"10,50\","
                 "\"0,5\",0.000001,0,05:00:00,Brasil,0,,\n"
                 "2000000,2999999,B,501,900,7,0,0,0,3,BRAZIL,0");
    ck_assert_uint_eq(t->ft_nrows, 2);
    r = &t->ft_rows[0];
    ck_assert_uint_eq(r->fr_line, 2);
    ck_assert_str_eq(r->fr_band, "A \"big\" zone");
    ck_assert_uint_eq(r->fr_abs_cents, 1050);
    ck_assert_uint_eq(r->fr_pct, 5000);
    ck_assert_uint_eq(r->fr_rate, 1);
    ck_assert_uint_eq(r->fr_time_s, 5 * 3600);
    r = &t->ft_rows[1];
    ck_assert_uint_eq(r->fr_line, 3);
    ck_assert_uint_eq(r->fr_abs_cents, 700);
    ck_assert_uint_eq(r->fr_time_s, 3 * 86400);
    folio_freight_table_free(t);
}
END_TEST

START_TEST(test_money_exact)
{
    static const struct {
        const char *text;
        uint64_t cents;
    } ok[] = {{"10,50", 1050}, {"10.50", 1050}, {"10,5", 1050},
              {"10", 1000},    {"0,01", 1},     {"0.10", 10},
              {"10,500", 1050}, {"0", 0},       {"19,99", 1999},
              {"123456789,99", 12345678999ull}};
    static const char *const bad[] = {"10,505", "1.234,56", "-1", "+1",
                                      "10,",    ",5",       "1e3", "R$ 10",
                                      "10 50",  "0x10",     "abc"};
    char text[512];
    size_t i;

    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        struct folio_freight_table *t;

        snprintf(text, sizeof(text),
                 HDR_SEMI "1;2;x;0;1;%s;0;0;0;1;BRA;0\n", ok[i].text);
        t = table_ok(text);
        ck_assert_msg(t->ft_rows[0].fr_abs_cents == ok[i].cents,
                      "%s: %llu", ok[i].text,
                      (unsigned long long)t->ft_rows[0].fr_abs_cents);
        folio_freight_table_free(t);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct folio_freight_diag d = diag();
        struct folio_freight_table *t = NULL;

        snprintf(text, sizeof(text),
                 HDR_SEMI "1;2;x;0;1;\"%s\";0;0;0;1;BRA;0\n", bad[i]);
        ck_assert_int_eq(table(text, &d, &t), FOLIO_EINVAL);
        ck_assert_ptr_null(t);
        ck_assert_msg(reported(2, 6, "AbsoluteMoneyCost"), "%s", bad[i]);
    }
}
END_TEST

START_TEST(test_time_cost)
{
    static const struct {
        const char *text;
        uint32_t secs, days;
    } ok[] = {{"2.00:00:00", 172800, 2},    {"1.12:00:00", 129600, 2},
              {"0.00:00:01", 1, 1},         {"0.00:00:00", 0, 0},
              {"05:00:00", 18000, 1},       {"48:00:00", 172800, 2},
              {"49:00", 176400, 3},         {"3", 259200, 3},
              {"0.00:00:00.5", 1, 1},       {"1.00:00:00.0000000", 86400, 1},
              {"10.23:59:59", 950399, 11}};
    static const char *const bad[] = {"1.24:00:00", "1.00:60:00",
                                      "00:00:60",   "1.5",
                                      "2 days",     "",
                                      "-1",         "3651",
                                      "1:2:3:4"};
    char text[512];
    size_t i;

    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        struct folio_freight_table *t;
        struct folio_freight_quote q;
        struct folio_freight_cart c = cart_of(1, 0, 0, 0, 0, 1);
        size_t len;
        void *img;

        snprintf(text, sizeof(text),
                 HDR_SEMI "1;2;x;0;1;1;0;0;0;%s;BRA;0\n", ok[i].text);
        t = table_ok(text);
        ck_assert_msg(t->ft_rows[0].fr_time_s == ok[i].secs, "%s: %u",
                      ok[i].text, t->ft_rows[0].fr_time_s);
        img = compile(&t, 1, &len);
        ck_assert_int_eq(folio_freight_quote_blob(img, len, 1, &c, 5000, &q),
                         0);
        ck_assert_msg(q.fq_opts[0].fo_days == ok[i].days, "%s: %u days",
                      ok[i].text, q.fq_opts[0].fo_days);
        folio_free(img);
        folio_freight_table_free(t);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct folio_freight_diag d = diag();
        struct folio_freight_table *t = NULL;

        snprintf(text, sizeof(text),
                 HDR_SEMI "1;2;x;0;1;1;0;0;0;%s;BRA;0\n", bad[i]);
        ck_assert_int_eq(table(text, &d, &t), FOLIO_EINVAL);
        ck_assert_msg(reported(2, 10, "TimeCost"), "'%s'", bad[i]);
    }
}
END_TEST

START_TEST(test_validation_errors)
{
    struct folio_freight_diag d = diag();
    struct folio_freight_table *t = NULL;

    /* Every kind of bad row; each reported with its line and column. */
    ck_assert_int_eq(
        table(HDR_SEMI
              "1;2;ok;0;1;1;0;0;0;1;BRA;0\n"              /* 2: good */
              "1;2;x;0;1;1;0;0;0;1;BRA\n"                 /* 3: 11 cols */
              "1;2;x;0;1;1;0;0;0;1;BRA;0;extra\n"         /* 4: 13 cols */
              "1a;2;x;0;1;1;0;0;0;1;BRA;0\n"              /* 5: CEP */
              "1;123456789;x;0;1;1;0;0;0;1;BRA;0\n"       /* 6: CEP */
              "1;2;x;0,5;1;1;0;0;0;1;BRA;0\n"             /* 7: grams */
              "1;2;x;0;heavy;1;0;0;0;1;BRA;0\n"           /* 8: grams */
              "1;2;x;0;1;1;0,00001;0;0;1;BRA;0\n"         /* 9: percent */
              "1;2;x;0;1;1;0;0,0000001;0;1;BRA;0\n"       /* 10: rate */
              "1;2;x;0;1;1;0;0;-5;1;BRA;0\n"              /* 11: volume */
              "1;2;x;0;1;1;0;0;0;1;ARG;0\n"               /* 12: country */
              "1;2;x;0;1;1;0;0;0;1;BRA;x\n"               /* 13: insurance */
              "9;3;x;0;1;1;0;0;0;1;BRA;0\n"               /* 14: CEP order */
              "20;30;x;5;4;1;0;0;0;1;BRA;0\n"             /* 15: weights */
              ";;poly;0;1;1;0;0;0;1;BRA;0\n"              /* 16: polygon */
              "1;2;x\"y\";0;1;1;0;0;0;1;BRA;0\n"          /* 17: ok, " */
              "1;2;\"x\"y;0;1;1;0;0;0;1;BRA;0\n",         /* 18: syntax */
              &d, &t),
        FOLIO_EINVAL);
    ck_assert_ptr_null(t);
    ck_reported(3, 12, "expected 12 columns, got 11");
    ck_reported(4, 13, "expected 12 columns, got 13");
    ck_reported(5, 1, "ZipCodeStart");
    ck_reported(6, 2, "ZipCodeEnd");
    ck_reported(7, 4, "WeightStart");
    ck_reported(8, 5, "WeightEnd");
    ck_reported(9, 7, "PricePercent");
    ck_reported(10, 8, "PriceByExtraWeight");
    ck_reported(11, 9, "MaxVolume");
    ck_reported(12, 11, "unknown country 'ARG'");
    ck_reported(13, 12, "MinimumValueInsurance");
    ck_reported(14, 1, "after ZipCodeEnd");
    ck_reported(15, 4, "above WeightEnd");
    ck_reported(16, 1, "polygon");
    ck_reported(16, 2, "polygon");
    ck_reported(18, 3, "text after a closing quote");
    ck_assert_uint_eq(d.fd_errors, 16);
    ck_assert_uint_eq(nreports, 16);
}
END_TEST

START_TEST(test_validation_file_level)
{
    struct folio_freight_diag d;
    struct folio_freight_table *t = NULL;

    d = diag();
    ck_assert_int_eq(table("", &d, &t), FOLIO_EINVAL);
    ck_reported(1, 0, "empty");
    d = diag();
    ck_assert_int_eq(table("\n\r\n\n", &d, &t), FOLIO_EINVAL);
    ck_reported(1, 0, "empty");
    d = diag();
    ck_assert_int_eq(table(HDR_SEMI, &d, &t), FOLIO_EINVAL);
    ck_reported(2, 0, "no rows");
    d = diag();
    ck_assert_int_eq(table("ZipCodeStart;ZipCodeEnd;Polygon\n", &d, &t),
                     FOLIO_EINVAL);
    ck_reported(1, 3, "expected 'PolygonName'");
    d = diag();
    ck_assert_int_eq(table("\n\nzipcodestart;zipcodeend;polygonname;"
                           "weightstart;weightend;absolutemoneycost;"
                           "pricepercent;pricebyextraweight;maxvolume;"
                           "timecost;country\n",
                           &d, &t),
                     FOLIO_EINVAL);
    ck_reported(3, 12, "expected 12 columns, got 11");
    d = diag();
    ck_assert_int_eq(table(HDR_SEMI "1;2;\"open;0;1\n", &d, &t),
                     FOLIO_EINVAL);
    ck_reported(2, 3, "unterminated");
    /* A quoted line break: the record keeps its first line, the next
     * record's line counts it; names take no control characters. */
    d = diag();
    ck_assert_int_eq(table(HDR_SEMI "1;2;\"two\nlines\";0;1;1;0;0;0;1;BRA;0\n"
                                    "1;2;x;0;1;1;0;0;0;1;ARG;0\n",
                           &d, &t),
                     FOLIO_EINVAL);
    ck_reported(2, 3, "control characters");
    ck_reported(4, 11, "ARG");
    ck_assert_ptr_null(t);
}
END_TEST

START_TEST(test_overlaps)
{
    struct folio_freight_diag d = diag();
    struct folio_freight_table *t;
    void *img = NULL;
    size_t len;

    /* Rows may share CEPs (other weights) or weights (other CEPs); a CEP
     * and weight in two rows is an error at the later row. */
    t = table_ok(HDR_SEMI
                 "100;199;a;0;1000;1;0;0;0;1;BRA;0\n"      /* 2 */
                 "100;199;b;1001;2000;1;0;0;0;1;BRA;0\n"   /* 3 */
                 "200;299;c;0;2000;1;0;0;0;1;BRA;0\n"      /* 4 */
                 "150;250;d;2001;3000;1;0;0;0;1;BRA;0\n"   /* 5 */
                 "250;260;e;2500;2600;1;0;0;0;1;BRA;0\n"   /* 6: x 5 */
                 "199;200;f;1000;1001;1;0;0;0;1;BRA;0\n"   /* 7: x 2,3,4 */
                 "50;99;g;0;10;1;0;0;0;1;BRA;0\n");        /* 8 */
    ck_assert_int_eq(folio_freight_compile(&t, 1, &d, &img, &len),
                     FOLIO_EINVAL);
    ck_assert_ptr_null(img);
    ck_reported(6, 1, "overlaps line 5");
    ck_reported(7, 1, "overlaps line 2");
    ck_reported(7, 1, "overlaps line 3");
    ck_reported(7, 1, "overlaps line 4");
    ck_assert_uint_eq(nreports, 4); /* each pair once */
    ck_assert_str_eq(reports[0].file, "t.csv");
    folio_freight_table_free(t);

    /* Touching is not overlapping: inclusive ends, next one starts + 1. */
    t = table_ok(HDR_SEMI
                 "100;199;a;0;1000;1;0;0;0;1;BRA;0\n"
                 "100;199;b;1001;2000;1;0;0;0;1;BRA;0\n"
                 "200;299;c;0;2000;1;0;0;0;1;BRA;0\n");
    img = compile(&t, 1, &len);
    folio_free(img);
    folio_freight_table_free(t);
}
END_TEST

START_TEST(test_catalog)
{
    struct folio_freight_catalog *c = NULL;
    struct folio_freight_diag d = diag();

    ck_assert_int_eq(catalog("\xEF\xBB\xBF" CAT_HDR
                             "B-2,100,10,20,30,1999\r\n"
                             "\r\n"
                             "\"A,1\",5,1,1,1,0\r\n",
                             &d, &c),
                     0);
    ck_assert_uint_eq(c->fc_nskus, 2);
    ck_assert_str_eq(c->fc_skus[0].fs_sku, "A,1"); /* sorted */
    ck_assert_uint_eq(c->fc_skus[0].fs_line, 4);
    ck_assert_str_eq(c->fc_skus[1].fs_sku, "B-2");
    ck_assert_uint_eq(c->fc_skus[1].fs_item.fi_weight_g, 100);
    ck_assert_uint_eq(c->fc_skus[1].fs_item.fi_length_cm, 10);
    ck_assert_uint_eq(c->fc_skus[1].fs_item.fi_height_cm, 30);
    ck_assert_uint_eq(c->fc_skus[1].fs_item.fi_price_cents, 1999);
    folio_freight_catalog_free(c);

    d = diag();
    c = NULL;
    ck_assert_int_eq(catalog(CAT_HDR
                             "A,1,1,1,1,1\n"          /* 2 */
                             "B,1.5,1,1,1,1\n"        /* 3: grams */
                             "C,1,1,1,1\n"            /* 4: columns */
                             "A,2,2,2,2,2\n"          /* 5: duplicate */
                             ",1,1,1,1,1\n"           /* 6: empty sku */
                             "D,1,1,1,100001,1\n"     /* 7: too big */
                             "E,1,1,1,1,10,50\n",     /* 8: 7 columns */
                             &d, &c),
                     FOLIO_EINVAL);
    ck_assert_ptr_null(c);
    ck_reported(3, 2, "weight_g");
    ck_reported(4, 6, "expected 6 columns, got 5");
    ck_reported(5, 1, "duplicate 'A' (first at line 2)");
    ck_reported(6, 1, "sku: empty");
    ck_reported(7, 5, "height_cm");
    ck_reported(8, 7, "expected 6 columns, got 7");
    ck_assert_uint_eq(d.fd_errors, 6);

    d = diag();
    ck_assert_int_eq(catalog("sku;weight\n", &d, &c), FOLIO_EINVAL);
    ck_reported(1, 2, "expected 'weight_g'");
}
END_TEST

START_TEST(test_catalog_image)
{
    struct folio_freight_catalog *c = NULL;
    struct folio_freight_diag d = diag();
    struct folio_freight_item it;
    char *text, sku[32];
    size_t len, off, i;
    void *img;

    /* 5000 SKUs of similar names: every one found, with its values. */
    text = malloc(5000 * 64 + 100);
    ck_assert_ptr_nonnull(text);
    off = (size_t)sprintf(text, CAT_HDR);
    for (i = 0; i < 5000; i++)
        off += (size_t)sprintf(text + off, "S%zu,%zu,%zu,2,3,%zu\n", i * 7, i,
                               i % 100, i * 10);
    ck_assert_int_eq(catalog(text, &d, &c), 0);
    free(text);
    ck_assert_int_eq(folio_freight_catalog_compile(c, &img, &len), 0);
    for (i = 0; i < 5000; i++) {
        snprintf(sku, sizeof(sku), "S%zu", i * 7);
        ck_assert_int_eq(folio_freight_sku_blob(img, len, sku, strlen(sku),
                                                &it), 0);
        ck_assert_uint_eq(it.fi_weight_g, i);
        ck_assert_uint_eq(it.fi_length_cm, i % 100);
        ck_assert_uint_eq(it.fi_width_cm, 2);
        ck_assert_uint_eq(it.fi_height_cm, 3);
        ck_assert_uint_eq(it.fi_price_cents, i * 10);
        snprintf(sku, sizeof(sku), "S%zu", i * 7 + 1);
        ck_assert_int_eq(folio_freight_sku_blob(img, len, sku, strlen(sku),
                                                &it), FOLIO_ENOTFOUND);
    }
    ck_assert_int_eq(folio_freight_sku_blob(img, len, "S7", 1, &it),
                     FOLIO_ENOTFOUND); /* a prefix */
    ck_assert_int_eq(folio_freight_sku_blob(img, len, "", 0, &it),
                     FOLIO_ENOTFOUND);
    ck_assert_int_eq(folio_freight_sku_blob(img, len - 1, "S7", 2, &it),
                     FOLIO_ECORRUPT);
    ((unsigned char *)img)[0] ^= 1;
    ck_assert_int_eq(folio_freight_sku_blob(img, len, "S7", 2, &it),
                     FOLIO_ECORRUPT);
    folio_free(img);
    folio_freight_catalog_free(c);
    /* No catalog: an empty image, nothing found. */
    ck_assert_int_eq(folio_freight_catalog_compile(NULL, &img, &len), 0);
    ck_assert_int_eq(folio_freight_sku_blob(img, len, "S7", 2, &it),
                     FOLIO_ENOTFOUND);
    folio_free(img);
}
END_TEST

START_TEST(test_cep_parse)
{
    static const char *const bad[] = {"1310-100", "01310-1000", "0131O100",
                                      "01310_100", "0131010", "013101000",
                                      "",          "-1310100", "01310-10"};
    char text[10];
    uint32_t cep;
    size_t i;

    ck_assert_int_eq(folio_freight_cep_parse("01310-100", 9, &cep), 0);
    ck_assert_uint_eq(cep, 1310100);
    ck_assert_int_eq(folio_freight_cep_parse("99999999", 8, &cep), 0);
    ck_assert_uint_eq(cep, 99999999);
    ck_assert_int_eq(folio_freight_cep_parse("00000000", 8, &cep), 0);
    ck_assert_uint_eq(cep, 0);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(folio_freight_cep_parse(bad[i], strlen(bad[i]),
                                              &cep) == FOLIO_EINVAL,
                      "'%s' accepted", bad[i]);
    folio_freight_cep_format(1310100, text);
    ck_assert_str_eq(text, "01310-100");
    folio_freight_cep_format(0, text);
    ck_assert_str_eq(text, "00000-000");
    folio_freight_cep_format(99999999, text);
    ck_assert_str_eq(text, "99999-999");
}
END_TEST

/* ---- quoting ---- */

#define BANDS                                                               \
    HDR_SEMI "01000000;01999999;Capital;0;300;10,00;0;0;0;1;BRA;0\n"        \
             "01000000;01999999;Capital;301;1000;12,00;0;0;0;1;BRA;0\n"     \
             "01000000;01999999;Capital;2000;5000;15,00;0;0,001;0;1;BRA;0\n"

START_TEST(test_range_boundaries)
{
    struct folio_freight_quote q;

    /* CEP ends are inclusive. */
    ck_assert_int_eq(quote1(BANDS, 1000000, cart_of(100, 0, 0, 0, 0, 1),
                            5000, &q), 0);
    ck_assert_int_eq(quote1(BANDS, 1999999, cart_of(100, 0, 0, 0, 0, 1),
                            5000, &q), 0);
    ck_assert_int_eq(quote1(BANDS, 999999, cart_of(100, 0, 0, 0, 0, 1),
                            5000, &q), FOLIO_ENOTFOUND);
    ck_assert_int_eq(quote1(BANDS, 2000000, cart_of(100, 0, 0, 0, 0, 1),
                            5000, &q), FOLIO_ENOTFOUND);
    ck_assert_uint_eq(q.fq_covering, 0);

    /* Weight ends are inclusive. */
    ck_assert_int_eq(quote1(BANDS, 1500000, cart_of(0, 0, 0, 0, 0, 1),
                            5000, &q), 0);
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents, 1000);
    ck_assert_int_eq(quote1(BANDS, 1500000, cart_of(300, 0, 0, 0, 0, 1),
                            5000, &q), 0);
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents, 1000);
    ck_assert_int_eq(quote1(BANDS, 1500000, cart_of(301, 0, 0, 0, 0, 1),
                            5000, &q), 0);
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents, 1200);
    ck_assert_int_eq(quote1(BANDS, 1500000, cart_of(1000, 0, 0, 0, 0, 1),
                            5000, &q), 0);
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents, 1200);
    ck_assert_uint_eq(q.fq_opts[0].fo_band_len, 7);
    ck_assert_int_eq(memcmp(q.fq_opts[0].fo_band, "Capital", 7), 0);
    ck_assert_int_eq(memcmp(q.fq_opts[0].fo_carrier, "t", 1), 0);
    /* Between two bands, and over the last: covered, out of range. */
    ck_assert_int_eq(quote1(BANDS, 1500000, cart_of(1001, 0, 0, 0, 0, 1),
                            5000, &q), FOLIO_ETOOBIG);
    ck_assert_uint_eq(q.fq_covering, 1);
    ck_assert_int_eq(quote1(BANDS, 1500000, cart_of(5000, 0, 0, 0, 0, 1),
                            5000, &q), 0);
    /* 3000 g over 2000 g at BRL 0,001/g = BRL 3 */
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents, 1500 + 300);
    ck_assert_int_eq(quote1(BANDS, 1500000, cart_of(5001, 0, 0, 0, 0, 1),
                            5000, &q), FOLIO_ETOOBIG);
    ck_assert_uint_eq(q.fq_max_g, 5000);
    ck_assert_uint_eq(q.fq_billed_g, 5001);
}
END_TEST

START_TEST(test_cubic_threshold)
{
    struct folio_freight_quote q;
    struct folio_freight_cart c;

    /* 30000 cm3 = 5000 g cubic: not above 5000, the weight is billed. */
    c = cart_of(100, 50, 30, 20, 0, 1);
    ck_assert_int_eq(quote1(BANDS, 1500000, c, 5000, &q), 0);
    ck_assert_uint_eq(q.fq_weight_g, 100);
    ck_assert_uint_eq(q.fq_cubic_g, 5000);
    ck_assert_uint_eq(q.fq_billed_g, 100);
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents, 1000);
    /* One cm3 more: 30001 / 6 rounds up to 5001 g, above: billed. */
    c.fc_volume_cm3++;
    ck_assert_int_eq(quote1(BANDS, 1500000, c, 5000, &q), FOLIO_ETOOBIG);
    ck_assert_uint_eq(q.fq_cubic_g, 5001);
    ck_assert_uint_eq(q.fq_billed_g, 5001);
    /* A lower threshold applies to the same cart. */
    c = cart_of(100, 50, 30, 20, 0, 1);
    ck_assert_int_eq(quote1(BANDS, 1500000, c, 4999, &q), 0);
    ck_assert_uint_eq(q.fq_billed_g, 5000);
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents, 1500 + 300);
    /* Heavier than its cubic weight: the weight. */
    c = cart_of(4000, 10, 10, 10, 0, 1);
    c.fc_volume_cm3 = 6 * 3000; /* 3000 g cubic, threshold 1000 */
    ck_assert_int_eq(quote1(BANDS, 1500000, c, 1000, &q), 0);
    ck_assert_uint_eq(q.fq_billed_g, 4000);
    /* Quantities multiply weight, volume and value. */
    c = cart_of(100, 1, 2, 3, 250, 7);
    ck_assert_uint_eq(c.fc_weight_g, 700);
    ck_assert_uint_eq(c.fc_volume_cm3, 42);
    ck_assert_uint_eq(c.fc_value_cents, 1750);
    ck_assert_int_eq(quote1(BANDS, 1500000, c, 5000, &q), 0);
    ck_assert_uint_eq(q.fq_cubic_g, 7);
}
END_TEST

START_TEST(test_money_rounding)
{
    struct folio_freight_quote q;

    /* 1 centavo at 50% is half a centavo: rounds up. */
    ck_assert_int_eq(quote1(HDR_SEMI "1;1;x;0;10;1;50;0;0;1;BRA;0\n", 1,
                            cart_of(1, 0, 0, 0, 1, 1), 5000, &q), 0);
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents, 1 * 100 + 1);
    /* 1 centavo at 49,9999%: just under half, rounds down. */
    ck_assert_int_eq(quote1(HDR_SEMI "1;1;x;0;10;1;49,9999;0;0;1;BRA;0\n",
                            1, cart_of(1, 0, 0, 0, 1, 1), 5000, &q), 0);
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents, 100);
    /* 1,5% of BRL 33,33 = 49,995 centavos: 50.  BRL 0,000123 per gram
     * above 0 for 40 g = 0,492 centavos: together 50,487 -> 50. */
    ck_assert_int_eq(quote1(HDR_SEMI
                            "1;1;x;0;100;2,00;1,5;0,000123;0;1;BRA;0\n",
                            1, cart_of(40, 0, 0, 0, 3333, 1), 5000, &q), 0);
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents, 200 + 50);
    /* 2,5 centavos per kg... over 20 g: 0,05 centavo, rounds to 0; at
     * 200 g 0,5: rounds up to 1. */
    ck_assert_int_eq(quote1(HDR_SEMI "1;1;x;0;1000;0;0;0,000025;0;1;BRA;0\n",
                            1, cart_of(20, 0, 0, 0, 0, 1), 5000, &q), 0);
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents, 0);
    ck_assert_int_eq(quote1(HDR_SEMI "1;1;x;0;1000;0;0;0,000025;0;1;BRA;0\n",
                            1, cart_of(200, 0, 0, 0, 0, 1), 5000, &q), 0);
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents, 1);
    /* The extra weight counts from the band's WeightStart. */
    ck_assert_int_eq(quote1(HDR_SEMI "1;1;x;1000;3000;5;0;0,01;0;1;BRA;0\n",
                            1, cart_of(1500, 0, 0, 0, 0, 1), 5000, &q), 0);
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents, 500 + 500);
}
END_TEST

START_TEST(test_sorting_and_carriers)
{
    struct folio_freight_table *t[3];
    struct folio_freight_quote q;
    struct folio_freight_cart c = cart_of(500, 0, 0, 0, 0, 1);
    struct folio_freight_diag d = diag();
    size_t len;
    void *img;
    char *b;

    /* Same price: fewer days first; same price and days: by name. */
    t[0] = table_ok(HDR_SEMI "1;9;z1;0;1000;10;0;0;0;3;BRA;0\n");
    t[1] = table_ok(HDR_SEMI "1;9;z2;0;1000;9;0;0;0;5;BRA;0\n");
    t[2] = table_ok(HDR_SEMI "1;9;z3;0;1000;10;0;0;0;2.00:00:01;BRA;0\n"
                             "10;19;z3;0;1000;10;0;0;0;1;BRA;0\n");
    snprintf(t[0]->ft_carrier, sizeof(t[0]->ft_carrier), "zeta");
    snprintf(t[1]->ft_carrier, sizeof(t[1]->ft_carrier), "beta");
    snprintf(t[2]->ft_carrier, sizeof(t[2]->ft_carrier), "alpha");
    img = compile(t, 3, &len);
    ck_assert_int_eq(folio_freight_quote_blob(img, len, 5, &c, 5000, &q), 0);
    ck_assert_uint_eq(q.fq_nopts, 3);
    ck_assert_uint_eq(q.fq_covering, 3);
    ck_assert_int_eq(memcmp(q.fq_opts[0].fo_carrier, "beta", 4), 0);
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents, 900);
    ck_assert_int_eq(memcmp(q.fq_opts[1].fo_carrier, "alpha", 5), 0);
    ck_assert_uint_eq(q.fq_opts[1].fo_days, 3);
    ck_assert_int_eq(memcmp(q.fq_opts[2].fo_carrier, "zeta", 4), 0);
    ck_assert_uint_eq(q.fq_opts[2].fo_days, 3);
    /* Only alpha covers 10..19. */
    ck_assert_int_eq(folio_freight_quote_blob(img, len, 15, &c, 5000, &q), 0);
    ck_assert_uint_eq(q.fq_nopts, 1);
    ck_assert_uint_eq(q.fq_opts[0].fo_carrier_len, 5);
    /* A damaged image is refused, never read past its end. */
    b = (char *)img;
    ck_assert_int_eq(folio_freight_quote_blob(img, len - 1, 5, &c, 5000, &q),
                     FOLIO_ECORRUPT);
    b[0] ^= 1;
    ck_assert_int_eq(folio_freight_quote_blob(img, len, 5, &c, 5000, &q),
                     FOLIO_ECORRUPT);
    folio_free(img);
    /* Two tables for one carrier. */
    snprintf(t[1]->ft_carrier, sizeof(t[1]->ft_carrier), "zeta");
    ck_assert_int_eq(folio_freight_compile(t, 3, &d, &img, &len),
                     FOLIO_EINVAL);
    ck_reported(0, 0, "two tables for carrier 'zeta'");
    folio_freight_table_free(t[0]);
    folio_freight_table_free(t[1]);
    folio_freight_table_free(t[2]);
}
END_TEST

START_TEST(test_overflow)
{
    struct folio_freight_item big = {FOLIO_FREIGHT_MAX_ITEM_G,
                                     FOLIO_FREIGHT_MAX_ITEM_CM,
                                     FOLIO_FREIGHT_MAX_ITEM_CM,
                                     FOLIO_FREIGHT_MAX_ITEM_CM,
                                     FOLIO_FREIGHT_MAX_ITEM_CENTS};
    struct folio_freight_cart c = {0, 0, 0};
    struct folio_freight_quote q;
    int i;

    /* 1000 lines of 10000 of the largest item: sums saturate. */
    for (i = 0; i < FOLIO_FREIGHT_MAX_ITEMS; i++)
        folio_freight_cart_add(&c, &big, FOLIO_FREIGHT_MAX_QTY);
    ck_assert_uint_eq(c.fc_weight_g, 1000000000000000ull);
    ck_assert_uint_eq(c.fc_volume_cm3, UINT64_MAX);
    ck_assert_uint_eq(c.fc_value_cents, 100000000000000000ull);
    ck_assert_int_eq(quote1(HDR_SEMI "1;1;x;0;1000000000;10000000000;1000;"
                                     "1000;0;1;BRA;0\n",
                            1, c, 5000, &q),
                     FOLIO_ETOOBIG);
    /* The largest price the bounds allow still fits. */
    c.fc_weight_g = FOLIO_FREIGHT_MAX_TABLE_G;
    c.fc_volume_cm3 = 0;
    ck_assert_int_eq(quote1(HDR_SEMI "1;1;x;0;1000000000;10000000000;1000;"
                                     "1000;0;1;BRA;0\n",
                            1, c, 5000, &q),
                     0);
    /* 10^12 c + 10^9 g * BRL 1000/g (10^14 c) + 1000% of 10^17 c */
    ck_assert_int_eq(q.fq_opts[0].fo_price_cents,
                     1000000000000ll + 100000000000000ll +
                         1000000000000000000ll);
}
END_TEST

/* ---- LMDB: import and the workers' view ---- */

static char tmp[256];

static void
tmp_setup(void)
{
    snprintf(tmp, sizeof(tmp), "%s/folio-freight.XXXXXX",
             getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void
tmp_teardown(void)
{
    char cmd[300];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    if (tmp[0] != '\0' && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tmp);
}

static void
write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/*
 * Import as the master does: in another process (LMDB: one environment
 * handle per process; closing one drops the process's reader slots).
 */
static int
import(int check_only, int *present, int *changed, char *err, size_t len)
{
    struct {
        int rc, present, changed;
        char err[1024];
    } res;
    int fds[2], st;
    pid_t pid;

    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_int_ge(pid = fork(), 0);
    if (pid == 0) {
        struct folio_freight_summary sum;
        struct folio_freight_diag d = diag();
        char env[300], dir[300], cat[300];

        memset(&res, 0, sizeof(res));
        snprintf(env, sizeof(env), "%s/data/freight", tmp);
        snprintf(dir, sizeof(dir), "%s/tables", tmp);
        snprintf(cat, sizeof(cat), "%s/catalog.csv", tmp);
        res.rc = folio_freight_import(env, dir, cat, check_only, &d, &sum,
                                      &res.present, &res.changed, res.err,
                                      sizeof(res.err));
        _exit(write(fds[1], &res, sizeof(res)) == sizeof(res) ? 0 : 1);
    }
    close(fds[1]);
    ck_assert_int_eq(read(fds[0], &res, sizeof(res)), sizeof(res));
    close(fds[0]);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    *present = res.present;
    *changed = res.changed;
    snprintf(err, len, "%s", res.err);
    return res.rc;
}

static struct folio_freight *
open_env(void)
{
    struct folio_freight *fr = NULL;
    char env[300];

    snprintf(env, sizeof(env), "%s/data/freight", tmp);
    ck_assert_int_eq(folio_freight_open(env, &fr), 0);
    return fr;
}

static int64_t
price_of(struct folio_freight *fr, const char *sku)
{
    struct folio_freight_cart c = {0, 0, 0};
    struct folio_freight_item it;
    struct folio_freight_quote q;
    int64_t price;

    ck_assert_int_eq(folio_freight_begin(fr), 0);
    ck_assert_int_eq(folio_freight_sku_get(fr, sku, strlen(sku), &it), 0);
    folio_freight_cart_add(&c, &it, 1);
    ck_assert_int_eq(folio_freight_quote(fr, 1500000, &c, 5000, &q), 0);
    price = q.fq_opts[0].fo_price_cents;
    folio_freight_end(fr);
    return price;
}

START_TEST(test_import)
{
    struct folio_freight_summary sum;
    struct folio_freight *fr, *old;
    struct folio_freight_item it;
    char dir[300], err[1024], env[300];
    const char *name;
    uint32_t len;
    int present, changed;
    struct stat st;

    snprintf(dir, sizeof(dir), "%s/tables", tmp);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    /* No table: nothing to serve, nothing written. */
    ck_assert_int_eq(import(0, &present, &changed, err, sizeof(err)), 0);
    ck_assert_int_eq(present, 0);
    snprintf(env, sizeof(env), "%s/data", tmp);
    ck_assert_int_ne(stat(env, &st), 0);

    write_file(dir, "eco.csv", BANDS);
    write_file(dir, "fast.CSV",
               HDR_COMMA "1500000,1500099,Paulista,0,300,20,0,0,0,0.12:00:00,"
                         "BR,0\n");
    write_file(dir, "notes.txt", "not a table");
    write_file(tmp, "catalog.csv", CAT_HDR "PEN,20,1,1,15,350\n");
    /* --check-config: validates, writes nothing. */
    ck_assert_int_eq(import(1, &present, &changed, err, sizeof(err)), 0);
    ck_assert_int_eq(present, 1);
    ck_assert_int_eq(changed, 0);
    ck_assert_int_ne(stat(env, &st), 0);
    ck_assert_int_eq(import(0, &present, &changed, err, sizeof(err)), 0);
    ck_assert_int_eq(present, 1);
    ck_assert_int_eq(changed, 1);
    /* Same files: no write. */
    ck_assert_int_eq(import(0, &present, &changed, err, sizeof(err)), 0);
    ck_assert_int_eq(changed, 0);

    fr = open_env();
    old = open_env(); /* a worker of the old generation */
    ck_assert_int_eq(price_of(fr, "PEN"), 1000);
    ck_assert_int_eq(folio_freight_begin(fr), 0);
    ck_assert_int_eq(folio_freight_info(fr, &sum), 0);
    ck_assert_uint_eq(sum.fm_carriers, 2);
    ck_assert_uint_eq(sum.fm_rows, 4);
    ck_assert_uint_eq(sum.fm_skus, 1);
    ck_assert_int_eq(folio_freight_carrier(fr, 0, &name, &len), 0);
    ck_assert_int_eq(memcmp(name, "eco", len), 0);
    ck_assert_int_eq(folio_freight_carrier(fr, 1, &name, &len), 0);
    ck_assert_int_eq(memcmp(name, "fast", len), 0);
    ck_assert_int_eq(folio_freight_carrier(fr, 2, &name, &len),
                     FOLIO_ENOTFOUND);
    ck_assert_int_eq(folio_freight_sku_get(fr, "PENCIL", 6, &it),
                     FOLIO_ENOTFOUND);
    ck_assert_int_eq(folio_freight_sku_get(fr, "", 0, &it), FOLIO_ENOTFOUND);
    folio_freight_end(fr);

    /* A changed table: imported; open views see it at their next begin. */
    write_file(dir, "eco.csv",
               HDR_SEMI "01000000;01999999;Capital;0;300;11,00;0;0;0;1;BRA;0\n");
    ck_assert_int_eq(import(0, &present, &changed, err, sizeof(err)), 0);
    ck_assert_int_eq(changed, 1);
    ck_assert_int_eq(price_of(fr, "PEN"), 1100);
    ck_assert_int_eq(price_of(old, "PEN"), 1100);

    /* A broken table: refused with file:line:col, the old one stays. */
    write_file(dir, "eco.csv",
               HDR_SEMI "01000000;01999999;Capital;0;300;12,00;0;0;0;1;BRA;0\n"
                        "01000000;01999999;Capital;200;400;1;0;0;0;1;BRA;0\n");
    ck_assert_int_eq(import(0, &present, &changed, err, sizeof(err)),
                     FOLIO_EINVAL);
    ck_assert_msg(strstr(err, "eco.csv:3:1: overlaps line 2") != NULL, "%s",
                  err);
    ck_assert_int_eq(changed, 0);
    ck_assert_int_eq(price_of(fr, "PEN"), 1100);
    write_file(tmp, "catalog.csv", CAT_HDR "PEN,20,1,1,15\n");
    write_file(dir, "eco.csv", BANDS);
    ck_assert_int_eq(import(0, &present, &changed, err, sizeof(err)),
                     FOLIO_EINVAL);
    ck_assert_msg(strstr(err, "catalog.csv:2:6: expected 6 columns") != NULL,
                  "%s", err);
    ck_assert_int_eq(price_of(fr, "PEN"), 1100);
    folio_freight_close(old);
    folio_freight_close(fr);

    /* A configured directory that does not exist is an error. */
    snprintf(env, sizeof(env), "%s/env2", tmp);
    ck_assert_int_eq(folio_freight_import(env, "/nonexistent/folio", NULL, 0,
                                          NULL, &sum, &present, &changed,
                                          err, sizeof(err)),
                     FOLIO_ESYS);
    ck_assert_msg(strstr(err, "/nonexistent/folio") != NULL, "%s", err);
    /* The installed default may be missing: no tables. */
    ck_assert_int_eq(folio_freight_import(env, FOLIO_FREIGHT_DEFAULT_DIR,
                                          NULL, 0, NULL, &sum, &present,
                                          &changed, err, sizeof(err)) == 0 ||
                         access(FOLIO_FREIGHT_DEFAULT_DIR, F_OK) == 0,
                     1);
    /* An environment with nothing imported. */
    ck_assert_int_eq(folio_freight_open(env, &fr), FOLIO_ENOTFOUND);
}
END_TEST

/* Overwrite len bytes of path at off (negative: from the end) with byte b. */
static void
damage(const char *path, long off, size_t len, int b)
{
    FILE *f = fopen(path, "r+b");
    size_t i;

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, off, off < 0 ? SEEK_END : SEEK_SET), 0);
    for (i = 0; i < len; i++)
        fputc(b, f);
    ck_assert_int_eq(fclose(f), 0);
}

/*
 * A damaged environment (truncated, its header or its pages overwritten,
 * a stored image changed) is never trusted: the import rebuilds it from
 * the CSV files, and a worker that opens a damaged one gets
 * FOLIO_ECORRUPT, not a SIGBUS or a quote from garbage.
 */
START_TEST(test_damaged_env)
{
    struct folio_freight *fr;
    struct stat st;
    char dir[300], env[300], mdb[320], err[1024];
    int present, changed, round;

    snprintf(dir, sizeof(dir), "%s/tables", tmp);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    write_file(dir, "eco.csv", BANDS);
    write_file(tmp, "catalog.csv", CAT_HDR "PEN,20,1,1,15,350\n");
    snprintf(env, sizeof(env), "%s/data/freight", tmp);
    snprintf(mdb, sizeof(mdb), "%s/data.mdb", env);
    for (round = 0; round < 4; round++) {
        ck_assert_int_eq(import(0, &present, &changed, err, sizeof(err)), 0);
        ck_assert_int_eq(present, 1);
        ck_assert_int_eq(stat(mdb, &st), 0);
        switch (round) {
        case 0: /* truncated: pages past the end would be SIGBUS */
            ck_assert_int_eq(truncate(mdb, st.st_size / 2), 0);
            ck_assert_int_eq(folio_freight_open(env, &fr), FOLIO_ECORRUPT);
            break;
        case 1: /* both meta pages overwritten */
            damage(mdb, 0, 8192, 0x5a);
            break;
        case 2: /* every data page zeroed */
            damage(mdb, 8192, (size_t)st.st_size - 8192, 0);
            break;
        case 3: /* a stored image changed: LMDB cannot tell */
            {
                char img[1 << 16], *hit;
                FILE *f = fopen(mdb, "rb");
                size_t got;

                ck_assert_ptr_nonnull(f);
                got = fread(img, 1, sizeof(img), f);
                fclose(f);
                /* The band's name, inside the tables image. */
                hit = memmem(img, got, "Capital", 7);
                ck_assert_ptr_nonnull(hit);
                damage(mdb, (long)(hit - img), 1, 'K');
                ck_assert_int_eq(folio_freight_open(env, &fr), 0);
                ck_assert_int_eq(folio_freight_begin(fr), FOLIO_ECORRUPT);
                folio_freight_end(fr);
                folio_freight_close(fr);
            }
            break;
        }
        /* The next import notices and writes it again. */
        ck_assert_int_eq(import(0, &present, &changed, err, sizeof(err)), 0);
        ck_assert_msg(changed == 1, "round %d: the damage was trusted", round);
        fr = open_env();
        ck_assert_int_eq(price_of(fr, "PEN"), 1000);
        folio_freight_close(fr);
    }
}
END_TEST

START_TEST(test_quote_allocates_nothing)
{
    struct folio_freight *fr;
    struct folio_alloc_counters *ac = folio_alloc_current();
    char dir[300], err[1024];
    static const char *const skus[] = {"PEN", "BOOK", "NOPE"};
    uint64_t calls = 0;
    int present, changed, i, bad = 0;

    snprintf(dir, sizeof(dir), "%s/tables", tmp);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    write_file(dir, "eco.csv", BANDS);
    write_file(tmp, "catalog.csv",
               CAT_HDR "PEN,20,1,1,15,350\nBOOK,400,20,14,3,4990\n");
    ck_assert_int_eq(import(0, &present, &changed, err, sizeof(err)), 0);
    fr = open_env();
    for (i = 0; i < 10000; i++) {
        struct folio_freight_cart c = {0, 0, 0};
        struct folio_freight_item it;
        struct folio_freight_quote q;
        const char *s = skus[i % 3];

        /* No ck_assert in the loop: Check allocates to mark each one. */
        if (i == 100)
            calls = atomic_load(&ac->ac_calls); /* warmed up */
        bad += folio_freight_begin(fr) != 0;
        if (folio_freight_sku_get(fr, s, strlen(s), &it) == 0) {
            folio_freight_cart_add(&c, &it, 2);
            bad += folio_freight_quote(fr, 1000000 + (uint32_t)i * 97, &c,
                                       5000, &q) != 0;
        }
        folio_freight_end(fr);
    }
    calls = atomic_load(&ac->ac_calls) - calls;
    ck_assert_int_eq(bad, 0);
    if (folio_alloc_interposed())
        ck_assert_uint_eq(calls, 0);
    else
        fprintf(stderr, "malloc is not interposed: allocations unchecked\n");
    folio_freight_close(fr);
}
END_TEST

/* ---- the property test ---- */

static uint64_t rng_state;

static uint32_t
rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return n == 0 ? 0 : (uint32_t)((rng_state >> 33) % n);
}

struct row {
    uint32_t cep_lo, cep_hi, w_lo, w_hi;
    uint64_t abs, rate;
    uint32_t pct, secs;
};

/* Random non-overlapping rows over a small universe, so they meet. */
static size_t
random_rows(struct row *rows, size_t max)
{
    size_t n = 0, tries, i;

    for (tries = 0; tries < max * 4 && n < max; tries++) {
        struct row r;

        r.cep_lo = rnd(1000);
        r.cep_hi = r.cep_lo + rnd(rnd(2) ? 20 : 300);
        r.w_lo = rnd(5000);
        r.w_hi = r.w_lo + rnd(rnd(2) ? 100 : 3000);
        r.abs = rnd(100000);
        r.rate = rnd(3) == 0 ? 0 : rnd(20000);
        r.pct = rnd(2) == 0 ? 0 : rnd(200000);
        r.secs = rnd(10) * 86400 + rnd(3) * rnd(86400);
        for (i = 0; i < n; i++)
            if (r.cep_lo <= rows[i].cep_hi && rows[i].cep_lo <= r.cep_hi &&
                r.w_lo <= rows[i].w_hi && rows[i].w_lo <= r.w_hi)
                break;
        if (i == n)
            rows[n++] = r;
    }
    return n;
}

/* The rows as CSV, in a random style: ';' + ',' decimals or ',' + '.'. */
static char *
rows_csv(const struct row *rows, size_t n)
{
    size_t cap = 256 + n * 160, len = 0, i;
    char *s = malloc(cap);
    int semi = rnd(2), crlf = rnd(2);
    char sep = semi ? ';' : ',', dec = semi ? ',' : '.';
    const char *eol = crlf ? "\r\n" : "\n";

    ck_assert_ptr_nonnull(s);
    len += (size_t)snprintf(s + len, cap - len, "%s%s",
                            semi ? "\xEF\xBB\xBF" : "",
                            semi ? HDR_SEMI : HDR_COMMA);
    for (i = 0; i < n; i++) {
        const struct row *r = &rows[i];

        len += (size_t)snprintf(
            s + len, cap - len,
            "%08u%c%u%cb%zu%c%u%c%u%c\"%llu%c%02llu\"%c\"%u%c%04u\"%c"
            "\"%llu%c%06llu\"%c0%c%u.%02u:%02u:%02u%cBRA%c0%s%s",
            r->cep_lo, sep, r->cep_hi, sep, i, sep, r->w_lo, sep, r->w_hi,
            sep, (unsigned long long)(r->abs / 100), dec,
            (unsigned long long)(r->abs % 100), sep, r->pct / 10000, dec,
            r->pct % 10000, sep, (unsigned long long)(r->rate / 1000000),
            dec, (unsigned long long)(r->rate % 1000000), sep, sep,
            r->secs / 86400, r->secs % 86400 / 3600, r->secs % 3600 / 60,
            r->secs % 60, sep, sep, eol, rnd(4) == 0 ? eol : "");
    }
    return s;
}

START_TEST(test_property_brute_force)
{
    enum { NCARRIERS = 3, MAXROWS = 120, TABLES = 60, CARTS = 300 };
    static struct row rows[NCARRIERS][MAXROWS];
    size_t nrows[NCARRIERS];
    int round;

    rng_state = 0x5eed ^ (uint64_t)_i;
    for (round = 0; round < TABLES; round++) {
        struct folio_freight_table *t[NCARRIERS];
        struct folio_freight_diag d = diag();
        size_t len, c, i;
        void *img;
        int k;

        for (c = 0; c < NCARRIERS; c++) {
            char *csv, name[8];

            nrows[c] = random_rows(rows[c], 1 + rnd(MAXROWS));
            csv = rows_csv(rows[c], nrows[c]);
            snprintf(name, sizeof(name), "c%zu", c);
            ck_assert_int_eq(folio_freight_table_parse(name, name, csv,
                                                       strlen(csv), &d,
                                                       &t[c]),
                             0);
            ck_assert_uint_eq(t[c]->ft_nrows, nrows[c]);
            free(csv);
        }
        img = compile(t, NCARRIERS, &len);
        for (k = 0; k < CARTS; k++) {
            struct folio_freight_cart cart = {0, 0, 0};
            struct folio_freight_quote q;
            uint32_t cep = rnd(1400), threshold = rnd(4000);
            int64_t want_price[NCARRIERS];
            uint32_t want_days[NCARRIERS];
            uint64_t cubic, billed;
            unsigned covering = 0, nopts = 0, items = 1 + rnd(5), m;
            int rc, want_rc;

            for (m = 0; m < items; m++) {
                struct folio_freight_item it = {rnd(800), rnd(30), rnd(30),
                                                rnd(30), rnd(20000)};

                folio_freight_cart_add(&cart, &it, 1 + rnd(4));
            }
            /* Brute force: every row of every carrier. */
            cubic = (cart.fc_volume_cm3 + 5) / 6;
            billed = cubic > threshold && cubic > cart.fc_weight_g
                         ? cubic
                         : cart.fc_weight_g;
            for (c = 0; c < NCARRIERS; c++) {
                int cov = 0;

                want_price[c] = -1;
                for (i = 0; i < nrows[c]; i++) {
                    const struct row *r = &rows[c][i];

                    if (cep < r->cep_lo || cep > r->cep_hi)
                        continue;
                    cov = 1;
                    if (billed < r->w_lo || billed > r->w_hi)
                        continue;
                    want_price[c] =
                        (int64_t)(r->abs +
                                  ((billed - r->w_lo) * r->rate * 100 +
                                   cart.fc_value_cents * r->pct + 500000) /
                                      1000000);
                    want_days[c] = (r->secs + 86399) / 86400;
                    nopts++;
                }
                covering += (unsigned)cov;
            }
            want_rc = covering == 0 ? FOLIO_ENOTFOUND
                      : nopts == 0  ? FOLIO_ETOOBIG
                                    : 0;
            rc = folio_freight_quote_blob(img, len, cep, &cart, threshold,
                                          &q);
            ck_assert_int_eq(rc, want_rc);
            ck_assert_uint_eq(q.fq_covering, covering);
            ck_assert_uint_eq(q.fq_billed_g, billed);
            ck_assert_uint_eq(q.fq_cubic_g, cubic);
            if (rc != 0)
                continue;
            ck_assert_uint_eq(q.fq_nopts, nopts);
            for (m = 0; m < q.fq_nopts; m++) {
                const struct folio_freight_option *o = &q.fq_opts[m];

                c = (size_t)(o->fo_carrier[1] - '0');
                ck_assert_int_eq(o->fo_price_cents, want_price[c]);
                ck_assert_uint_eq(o->fo_days, want_days[c]);
                if (m > 0) {
                    const struct folio_freight_option *p = &q.fq_opts[m - 1];

                    ck_assert(p->fo_price_cents < o->fo_price_cents ||
                              (p->fo_price_cents == o->fo_price_cents &&
                               p->fo_days <= o->fo_days));
                }
            }
        }
        folio_free(img);
        for (c = 0; c < NCARRIERS; c++)
            folio_freight_table_free(t[c]);
    }
}
END_TEST

/* The shipped example data must load: what `make install` installs. */
START_TEST(test_shipped_data)
{
    struct folio_freight_summary sum;
    struct folio_freight_diag d = diag();
    char env[300], err[1024];
    int present, changed;

    snprintf(env, sizeof(env), "%s/env", tmp);
    if (folio_freight_import(env, FOLIO_SRCDIR "/data/freight",
                             FOLIO_SRCDIR "/data/catalog.csv", 0, &d, &sum,
                             &present, &changed, err, sizeof(err)) != 0)
        dump_reports();
    ck_assert_msg(present && changed, "%s", err);
    ck_assert_uint_eq(sum.fm_carriers, 2);
    ck_assert_uint_eq(sum.fm_skus, 1000);
    ck_assert_uint_ge(sum.fm_rows, 400);
}
END_TEST

static Suite *
freight_suite(void)
{
    Suite *s = suite_create("freight");
    TCase *csv = tcase_create("csv");
    TCase *quote = tcase_create("quote");
    TCase *env = tcase_create("lmdb");
    TCase *prop = tcase_create("property");

    tcase_add_test(csv, test_csv_styles);
    tcase_add_test(csv, test_money_exact);
    tcase_add_test(csv, test_time_cost);
    tcase_add_test(csv, test_validation_errors);
    tcase_add_test(csv, test_validation_file_level);
    tcase_add_test(csv, test_overlaps);
    tcase_add_test(csv, test_catalog);
    tcase_add_test(csv, test_catalog_image);
    tcase_add_test(csv, test_cep_parse);
    suite_add_tcase(s, csv);

    tcase_add_test(quote, test_range_boundaries);
    tcase_add_test(quote, test_cubic_threshold);
    tcase_add_test(quote, test_money_rounding);
    tcase_add_test(quote, test_sorting_and_carriers);
    tcase_add_test(quote, test_overflow);
    suite_add_tcase(s, quote);

    tcase_add_checked_fixture(env, tmp_setup, tmp_teardown);
    tcase_add_test(env, test_import);
    tcase_add_test(env, test_damaged_env);
    tcase_add_test(env, test_quote_allocates_nothing);
    tcase_add_test(env, test_shipped_data);
    suite_add_tcase(s, env);

    tcase_set_timeout(prop, 60);
    tcase_add_loop_test(prop, test_property_brute_force, 0, 4);
    suite_add_tcase(s, prop);
    return s;
}

int
main(void)
{
    return folio_check_run(freight_suite());
}
