/*
 * freight.h - freight tables and the SKU catalog: CSV parsing and
 * validation (VTEX shipping-rate template, PROTOCOL.md section 3), the
 * import into the LMDB environment `freight` (master), and quoting a
 * cart against it (workers: read-only, no allocation per quote).
 *
 * Units, end to end and without floating point:
 *   CEP       uint32 0..99999999 (formatted "NNNNN-NNN")
 *   weight    grams; volume cm^3; time seconds, quoted in whole days
 *   money     centavos (BRL 0.01)
 *   PricePercent        millionths of the cart's value ("1,5" % = 15000)
 *   PriceByExtraWeight  micro-BRL per gram above WeightStart, as in VTEX
 *                       ("0,0025" BRL/g = 2500 = BRL 2.50 per kg)
 * price_cents = AbsoluteMoneyCost
 *             + round_half_up((billed - WeightStart) * PriceByExtraWeight
 *                             + PricePercent of the cart's value)
 * where the rounded sum is exact (computed in 10^-6 centavos).
 */
#ifndef FOLIO_FREIGHT_H
#define FOLIO_FREIGHT_H

#include <stddef.h>
#include <stdint.h>

#define FOLIO_FREIGHT_MAX_CARRIERS 64
#define FOLIO_FREIGHT_NAME_MAX 63   /* carrier, band (PolygonName), SKU */
#define FOLIO_FREIGHT_MAX_ITEMS 1000
#define FOLIO_FREIGHT_MAX_QTY 10000
#define FOLIO_FREIGHT_CEP_MAX 99999999u

/* Bounds of table and catalog values: every quote fits int64 with them. */
#define FOLIO_FREIGHT_MAX_TABLE_G 1000000000u    /* 1000 t */
#define FOLIO_FREIGHT_MAX_MONEY 1000000000000ull /* BRL 10^10 */
#define FOLIO_FREIGHT_MAX_RATE 1000000000ull     /* BRL 1000 per gram */
#define FOLIO_FREIGHT_MAX_PCT 10000000u          /* 1000 % */
#define FOLIO_FREIGHT_MAX_DAYS 3650u
#define FOLIO_FREIGHT_MAX_ITEM_G 100000000u      /* 100 t per unit */
#define FOLIO_FREIGHT_MAX_ITEM_CM 100000u        /* 1 km */
#define FOLIO_FREIGHT_MAX_ITEM_CENTS 10000000000ull /* BRL 10^8 per unit */

/* The environment under the data directory. */
#define FOLIO_FREIGHT_ENV "freight"

/*
 * Validation reports: `report` is called once per problem with the file
 * name, the 1-based line where the record starts, the 1-based column
 * (field number; 0 when the problem is not in one field) and a message.
 * NULL report: problems are only counted.
 */
struct folio_freight_diag {
    void (*fd_report)(void *arg, const char *file, unsigned line,
                      unsigned col, const char *msg);
    void *fd_arg;
    unsigned fd_errors; /* problems found so far */
};

/* One row of a carrier's table, as parsed. */
struct folio_freight_row {
    uint32_t fr_cep_lo, fr_cep_hi; /* inclusive */
    uint32_t fr_w_lo, fr_w_hi;     /* grams, inclusive */
    uint64_t fr_abs_cents;         /* AbsoluteMoneyCost */
    uint64_t fr_rate;              /* PriceByExtraWeight, micro-BRL/g */
    uint32_t fr_pct;               /* PricePercent, millionths */
    uint32_t fr_time_s;            /* TimeCost, seconds (rounded up) */
    uint64_t fr_max_volume;        /* MaxVolume, validated, not applied */
    uint64_t fr_insurance_cents;   /* MinimumValueInsurance, idem */
    uint32_t fr_line;              /* where it was read */
    char fr_band[FOLIO_FREIGHT_NAME_MAX + 1]; /* PolygonName */
};

/* A carrier's table: CARRIER.csv.  Owned; free with folio_freight_table_free. */
struct folio_freight_table {
    char ft_carrier[FOLIO_FREIGHT_NAME_MAX + 1];
    struct folio_freight_row *ft_rows;
    size_t ft_nrows;
};

/* What a cart line contributes per unit. */
struct folio_freight_item {
    uint64_t fi_weight_g;
    uint64_t fi_length_cm, fi_width_cm, fi_height_cm;
    uint64_t fi_price_cents;
};

struct folio_freight_sku {
    char fs_sku[FOLIO_FREIGHT_NAME_MAX + 1];
    uint32_t fs_line;
    struct folio_freight_item fs_item;
};

/* The catalog.  Owned; free with folio_freight_catalog_free. */
struct folio_freight_catalog {
    struct folio_freight_sku *fc_skus; /* sorted by SKU after parsing */
    size_t fc_nskus;
};

/*
 * folio_freight_table_parse - parse and validate one carrier's CSV in
 * buf[0..len) (modified in place: quotes are undone there).  `file` names
 * it in reports; `carrier` is the carrier's name.  Checks every field,
 * start <= end, the country, and that no two rows of the carrier overlap
 * in both CEP and weight.  Returns 0 with *out set (owned by the caller),
 * FOLIO_EINVAL when any problem was reported to d, FOLIO_ENOMEM.
 * Any process; allocates.
 */
int folio_freight_table_parse(const char *file, const char *carrier,
                              char *buf, size_t len,
                              struct folio_freight_diag *d,
                              struct folio_freight_table **out);

/* folio_freight_table_free - release a table; NULL is fine. */
void folio_freight_table_free(struct folio_freight_table *t);

/*
 * folio_freight_catalog_parse - parse and validate the catalog CSV
 * `sku,weight_g,length_cm,width_cm,height_cm,price_cents` in buf[0..len)
 * (modified in place).  Duplicate SKUs are errors.  Returns 0 with *out
 * set, FOLIO_EINVAL when a problem was reported to d, FOLIO_ENOMEM.
 */
int folio_freight_catalog_parse(const char *file, char *buf, size_t len,
                                struct folio_freight_diag *d,
                                struct folio_freight_catalog **out);

/* folio_freight_catalog_free - release a catalog; NULL is fine. */
void folio_freight_catalog_free(struct folio_freight_catalog *c);

/*
 * folio_freight_compile - build the lookup image of `n` validated tables:
 * per carrier, CEP intervals sorted by start, each with its weight bands
 * sorted by start, so that a lookup is two binary searches.  Reports
 * overlapping rows to d.  Returns 0 with *blob (owned, folio_free) and
 * *len, FOLIO_EINVAL (overlaps; reported), FOLIO_ETOOBIG, FOLIO_ENOMEM.
 */
int folio_freight_compile(struct folio_freight_table *const *tables,
                          size_t n, struct folio_freight_diag *d,
                          void **blob, size_t *len);

/*
 * folio_freight_catalog_compile - the lookup image of a parsed catalog
 * (NULL: an empty one): a hash table of SKUs, read in place.  Returns 0
 * with *blob (owned, folio_free) and *len, FOLIO_ETOOBIG, FOLIO_ENOMEM.
 */
int folio_freight_catalog_compile(const struct folio_freight_catalog *c,
                                  void **blob, size_t *len);

/*
 * folio_freight_sku_blob - find `sku` in a catalog image.  Returns 0 with
 * *it, FOLIO_ENOTFOUND, or FOLIO_ECORRUPT.  No allocation.
 */
int folio_freight_sku_blob(const void *blob, size_t len, const char *sku,
                           size_t skulen, struct folio_freight_item *it);

/*
 * folio_freight_cep_parse - "NNNNN-NNN" or "NNNNNNNN" (exactly) into
 * *cep.  Returns 0 or FOLIO_EINVAL.
 */
int folio_freight_cep_parse(const char *s, size_t len, uint32_t *cep);

/* folio_freight_cep_format - "NNNNN-NNN" and a NUL into out[10]. */
void folio_freight_cep_format(uint32_t cep, char out[10]);

/* A cart: sums with saturation (a saturated cart fits no band). */
struct folio_freight_cart {
    uint64_t fc_weight_g;
    uint64_t fc_volume_cm3;
    uint64_t fc_value_cents;
};

/* folio_freight_cart_add - add qty units of `it`.  Never overflows. */
void folio_freight_cart_add(struct folio_freight_cart *c,
                            const struct folio_freight_item *it,
                            uint32_t qty);

struct folio_freight_option {
    const char *fo_carrier; /* span into the tables; valid until end() */
    uint32_t fo_carrier_len;
    uint32_t fo_band_len;
    const char *fo_band;
    int64_t fo_price_cents;
    uint32_t fo_days;
};

struct folio_freight_quote {
    uint64_t fq_weight_g;
    uint64_t fq_cubic_g;  /* ceil(volume / 6) */
    uint64_t fq_billed_g; /* max(weight, cubic) if cubic > threshold */
    unsigned fq_covering; /* carriers whose ranges hold the CEP */
    uint32_t fq_max_g;    /* heaviest WeightEnd among the covering rows */
    unsigned fq_nopts;    /* sorted by price, days, carrier */
    struct folio_freight_option fq_opts[FOLIO_FREIGHT_MAX_CARRIERS];
};

/*
 * folio_freight_quote_blob - quote `cart` to `cep` against a compiled
 * image (blob, len).  threshold_g: cubic weight applies above it.
 * Returns 0 (q->fq_nopts >= 1), FOLIO_ENOTFOUND (no carrier covers the
 * CEP), FOLIO_ETOOBIG (covered, but no covering band holds the billed
 * weight), FOLIO_ECORRUPT (the image fails its checks).  No allocation.
 */
int folio_freight_quote_blob(const void *blob, size_t len, uint32_t cep,
                             const struct folio_freight_cart *cart,
                             uint32_t threshold_g,
                             struct folio_freight_quote *q);

/* Counts of an import, kept in the environment. */
struct folio_freight_summary {
    uint32_t fm_carriers;
    uint32_t fm_rows;     /* bands: rows of every table */
    uint32_t fm_skus;
    uint32_t fm_pad;
    uint64_t fm_imported_ms; /* Unix ms of the import */
};

/*
 * The installed example tables and catalog: what freight_dir = auto and
 * catalog = auto (the defaults) load when they exist (master/data.c).
 */
#define FOLIO_FREIGHT_DEFAULT_DIR FOLIO_PKGDATADIR "/freight"
#define FOLIO_FREIGHT_DEFAULT_CATALOG FOLIO_PKGDATADIR "/catalog.csv"

/*
 * folio_freight_import - master only (never in a worker, never with an
 * environment open across fork: it opens and closes its own).  Reads the
 * tables of `freight_dir` (every *.csv, carrier = name without .csv; NULL:
 * none) and the `catalog` (NULL: none), and when their checksums differ
 * from those kept in `envdir` (created if missing) validates them and
 * replaces the environment's content in one write transaction.  `flags`:
 * FOLIO_FREIGHT_CHECK_ONLY validates and writes nothing;
 * FOLIO_FREIGHT_SHIPPED (a data directory of shipped files,
 * shm/datafiles.h) writes nothing either and requires the environment to
 * hold exactly these tables (else FOLIO_ECORRUPT).  Every problem is
 * reported to d (file:line:col).  *present: 1 if there are tables to
 * serve, 0 if none exist; *changed: 1 if it wrote.  Returns 0, or
 * FOLIO_EINVAL / FOLIO_ESYS / FOLIO_ESTORE / FOLIO_ENOMEM with a one-line
 * reason in err.
 */
#define FOLIO_FREIGHT_CHECK_ONLY 0x1
#define FOLIO_FREIGHT_SHIPPED 0x2
int folio_freight_import(const char *envdir, const char *freight_dir,
                         const char *catalog, unsigned flags,
                         struct folio_freight_diag *d,
                         struct folio_freight_summary *sum, int *present,
                         int *changed, char *err, size_t errlen);

/* The worker's read-only view of the environment. */
struct folio_freight;

/*
 * folio_freight_open - open `envdir` read-only (worker, after fork).
 * Returns 0 with *out, FOLIO_ENOTFOUND (no import there), FOLIO_ESTORE
 * (logged), FOLIO_ENOMEM.  Allocates once; a quote then allocates nothing.
 */
int folio_freight_open(const char *envdir, struct folio_freight **out);

/* folio_freight_close - release; NULL is fine. */
void folio_freight_close(struct folio_freight *fr);

/*
 * folio_freight_begin - renew the read transaction for one request.
 * Returns 0, FOLIO_ENOTFOUND (the environment holds no tables),
 * FOLIO_ECORRUPT or FOLIO_ESTORE (logged).  Pair with folio_freight_end,
 * whatever it returned.
 */
int folio_freight_begin(struct folio_freight *fr);

/* folio_freight_end - reset the transaction: spans become invalid. */
void folio_freight_end(struct folio_freight *fr);

/*
 * folio_freight_sku_get - the catalog's item `sku` (between begin and
 * end).  Returns 0, FOLIO_ENOTFOUND or FOLIO_ECORRUPT.
 */
int folio_freight_sku_get(struct folio_freight *fr, const char *sku,
                          size_t len, struct folio_freight_item *it);

/* folio_freight_quote - folio_freight_quote_blob on the current tables. */
int folio_freight_quote(struct folio_freight *fr, uint32_t cep,
                        const struct folio_freight_cart *cart,
                        uint32_t threshold_g, struct folio_freight_quote *q);

/*
 * folio_freight_info - the import's summary (between begin and end).
 * Returns 0, FOLIO_ECORRUPT or FOLIO_ESTORE.
 */
int folio_freight_info(struct folio_freight *fr,
                       struct folio_freight_summary *sum);

/*
 * folio_freight_carrier - the name of carrier i (0..fm_carriers-1, in
 * name order), a span valid until end.  Returns 0 or FOLIO_ENOTFOUND.
 */
int folio_freight_carrier(struct folio_freight *fr, unsigned i,
                          const char **name, uint32_t *len);

#endif
