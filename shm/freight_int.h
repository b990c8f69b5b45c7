/*
 * freight_int.h - the compiled image of the freight tables, shared by the
 * compiler (freight_build.c, master) and the lookup (freight.c, workers),
 * and the CSV reader's pieces.  Included by shm/freight*.c only.
 *
 * The image is one LMDB value, read in place through the map.  LMDB only
 * guarantees 2-byte alignment of small values, so every field is read
 * with memcpy (a plain load on the machines we run on).
 *
 *   header | carriers[ncarriers] | ivs[niv] | bands[nbands] | strings
 *
 * A carrier's CEP intervals are disjoint and sorted by start; each names
 * a run of bands (disjoint, sorted by weight start) that hold for every
 * CEP of the interval.
 */
#ifndef FOLIO_FREIGHT_INT_H
#define FOLIO_FREIGHT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "shm/freight.h"

#define FB_MAGIC 0x31475246u /* "FRG1" little-endian */
#define FB_FORMAT 2u         /* bump when a layout below changes */

struct fb_header {
    uint32_t h_magic;
    uint32_t h_format;
    uint32_t h_size; /* of the whole image */
    uint32_t h_ncarriers;
    uint32_t h_nrows; /* rows of every table, as imported */
    uint32_t h_niv;
    uint32_t h_nbands;
    uint32_t h_carriers_off;
    uint32_t h_ivs_off;
    uint32_t h_bands_off;
    uint32_t h_strings_off;
    uint32_t h_strings_len;
};

struct fb_carrier {
    uint32_t c_name_off; /* into strings */
    uint32_t c_name_len;
    uint32_t c_iv_first; /* into ivs */
    uint32_t c_niv;
    uint32_t c_nrows;
    uint32_t c_pad;
};

struct fb_iv {
    uint32_t v_cep_lo, v_cep_hi; /* inclusive */
    uint32_t v_band_first;       /* into bands */
    uint32_t v_nbands;
};

struct fb_band {
    uint32_t b_w_lo, b_w_hi; /* grams, inclusive */
    uint32_t b_days;
    uint32_t b_pct;          /* millionths of the cart's value */
    uint32_t b_name_off;     /* into strings */
    uint32_t b_name_len;
    uint64_t b_abs_cents;
    uint64_t b_rate;         /* micro-BRL per gram above b_w_lo */
};

/*
 * The catalog image, a second LMDB value: an open-addressing hash table
 * (linear probing, at most half full) of SKUs.
 *
 *   header | slots[nslots] | skus[nskus] | strings
 *
 * A slot holds an index into skus plus one; 0 is empty.
 */
#define FC_MAGIC 0x31544346u /* "FCT1" */

struct fc_header {
    uint32_t h_magic;
    uint32_t h_format; /* FB_FORMAT */
    uint32_t h_size;
    uint32_t h_nskus;
    uint32_t h_nslots; /* a power of two, >= 2 * nskus */
    uint32_t h_slots_off;
    uint32_t h_skus_off;
    uint32_t h_strings_off;
    uint32_t h_strings_len;
    uint32_t h_pad;
};

struct fc_sku {
    uint32_t s_hash;
    uint32_t s_key_off; /* into strings */
    uint32_t s_key_len;
    uint32_t s_weight_g;
    uint32_t s_length_cm, s_width_cm, s_height_cm;
    uint32_t s_pad;
    uint64_t s_price_cents;
};

/* FNV-1a, 32 bits: the catalog's hash. */
static inline uint32_t
fc_hash(const char *s, size_t len)
{
    uint32_t h = 0x811c9dc5u;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x01000193u;
    }
    return h;
}

static inline uint32_t
fb_u32(const unsigned char *p)
{
    uint32_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

/*
 * The integrity record stored beside the images (key "integrity" of the
 * meta database): FNV-1a of each image, written by the import, checked
 * by the master before it trusts an environment and by each worker when
 * it first reads a snapshot.  LMDB checks its pages' types, not what a
 * value holds: a damaged image would be quoted from.
 */
struct fb_integrity {
    uint64_t i_tables;
    uint64_t i_catalog;
};

/*
 * folio_freight_integrity_check - whether the images match the integrity
 * record (tables, catalog, integrity: the three values as stored).
 * Returns 0 or FOLIO_ECORRUPT.
 */
int folio_freight_integrity_check(const void *tables, size_t tlen,
                                  const void *catalog, size_t clen,
                                  const void *integ, size_t ilen);

/* A span of the input: what one CSV field holds. */
struct fcsv_span {
    char *p;
    uint32_t len;
};

/* The CSV reader: one record at a time, in place. */
struct fcsv {
    char *p, *end;
    char sep;
    unsigned line; /* physical line of p, 1-based */
};

#define FCSV_MAX_FIELDS 32

/*
 * fcsv_init - start reading buf[0..len): skips a UTF-8 BOM and picks the
 * separator (',' or ';', whichever the first non-empty line holds more of
 * outside quotes; ',' on a tie).
 */
void folio_fcsv_init(struct fcsv *c, char *buf, size_t len);

/*
 * fcsv_next - read one record into f[] (at most FCSV_MAX_FIELDS; *nf is
 * the number of fields, which may be larger), skipping empty lines and
 * lines whose fields are all empty.  *line is where the record starts.
 * Returns 1 (a record), 0 (end of input), or -1 with *why and *col set
 * (a syntax error; the reader has skipped to the next line, or to the end
 * for an unterminated quote).
 */
int folio_fcsv_next(struct fcsv *c, struct fcsv_span *f, unsigned *nf,
                    unsigned *line, const char **why, unsigned *col);

/* The same report format everywhere: "file:line:col: msg". */
void folio_freight_report(struct folio_freight_diag *d, const char *file,
                          unsigned line, unsigned col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
