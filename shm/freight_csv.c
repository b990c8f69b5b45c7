/*
 * freight_csv.c - reading the freight tables (VTEX shipping-rate
 * template) and the SKU catalog from CSV, with a report of every bad
 * field as file:line:column.  Load time only (master, tests): allocates.
 *
 * CSV as spreadsheets write it: an optional UTF-8 BOM, ',' or ';'
 * between fields (guessed from the header line), fields in double quotes
 * with "" for a quote (separators and line breaks allowed inside), LF or
 * CRLF line ends, blank lines and lines of empty fields skipped, spaces
 * around unquoted fields ignored.  Numbers take '.' or ',' before the
 * decimals and no thousands separator, so "10,50" and "10.50" are both
 * 1050 centavos, parsed exactly.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shm/freight.h"
#include "shm/freight_int.h"
#include "src/alloc.h"
#include "src/err.h"

static const char *const vtex_columns[] = {
    "ZipCodeStart", "ZipCodeEnd",      "PolygonName",        "WeightStart",
    "WeightEnd",    "AbsoluteMoneyCost", "PricePercent",     "PriceByExtraWeight",
    "MaxVolume",    "TimeCost",        "Country",            "MinimumValueInsurance",
};
#define VTEX_NCOLS 12

static const char *const catalog_columns[] = {
    "sku", "weight_g", "length_cm", "width_cm", "height_cm", "price_cents",
};
#define CATALOG_NCOLS 6

/* Spellings of the one country we deliver to. */
static const char *const countries[] = {"BRA", "BR", "Brasil", "Brazil"};

void
folio_freight_report(struct folio_freight_diag *d, const char *file,
                     unsigned line, unsigned col, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    d->fd_errors++;
    if (d->fd_report == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    d->fd_report(d->fd_arg, file, line, col, msg);
}

/* ---- the CSV reader ---- */

static int
is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

static int
is_eol(char ch)
{
    return ch == '\n' || ch == '\r';
}

/* Past the end of the current line (LF, CRLF or a lone CR). */
static void
end_line(struct fcsv *c)
{
    if (c->p >= c->end)
        return;
    if (*c->p == '\r') {
        c->p++;
        if (c->p < c->end && *c->p == '\n')
            c->p++;
    } else if (*c->p == '\n') {
        c->p++;
    }
    c->line++;
}

static void
skip_line(struct fcsv *c)
{
    while (c->p < c->end && !is_eol(*c->p))
        c->p++;
    end_line(c);
}

void
folio_fcsv_init(struct fcsv *c, char *buf, size_t len)
{
    size_t commas = 0, semis = 0;
    int quoted = 0;
    char *p;

    c->p = buf;
    c->end = buf + len;
    c->line = 1;
    c->sep = ',';
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        c->p += 3;
    for (p = c->p; p < c->end; p++) {
        if (*p == '"')
            quoted = !quoted;
        else if (!quoted && is_eol(*p) && commas + semis > 0)
            break;
        else if (!quoted && *p == ',')
            commas++;
        else if (!quoted && *p == ';')
            semis++;
    }
    if (semis > commas)
        c->sep = ';';
}

int
folio_fcsv_next(struct fcsv *c, struct fcsv_span *f, unsigned *nf,
                unsigned *line, const char **why, unsigned *col)
{
    for (;;) {
        unsigned n = 0, nonempty = 0;

        if (c->p >= c->end)
            return 0;
        *line = c->line;
        for (;;) {
            char *s, *w;

            while (c->p < c->end && is_blank(*c->p))
                c->p++;
            if (c->p < c->end && *c->p == '"') {
                s = w = ++c->p;
                for (;;) {
                    if (c->p >= c->end) {
                        *why = "unterminated quoted field";
                        *col = n + 1;
                        return -1;
                    }
                    if (*c->p == '"') {
                        if (c->p + 1 < c->end && c->p[1] == '"') {
                            *w++ = '"';
                            c->p += 2;
                            continue;
                        }
                        c->p++;
                        break;
                    }
                    if (*c->p == '\n')
                        c->line++;
                    *w++ = *c->p++;
                }
                while (c->p < c->end && is_blank(*c->p))
                    c->p++;
                if (c->p < c->end && *c->p != c->sep && !is_eol(*c->p)) {
                    *why = "text after a closing quote";
                    *col = n + 1;
                    skip_line(c);
                    return -1;
                }
            } else {
                s = c->p;
                while (c->p < c->end && *c->p != c->sep && !is_eol(*c->p))
                    c->p++;
                w = c->p;
                while (w > s && is_blank(w[-1]))
                    w--;
            }
            if (n < FCSV_MAX_FIELDS) {
                f[n].p = s;
                f[n].len = (uint32_t)(w - s);
            }
            if (w > s)
                nonempty++;
            n++;
            if (c->p < c->end && *c->p == c->sep) {
                c->p++;
                continue;
            }
            break;
        }
        end_line(c);
        if (nonempty > 0) {
            *nf = n;
            return 1;
        }
    }
}

/* ---- fields ---- */

static int
is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* A field for messages: at most 40 bytes, control bytes as '?'. */
static const char *
shown(const struct fcsv_span *s, char *buf, size_t len)
{
    size_t i, n = s->len < len - 1 ? s->len : len - 1;

    if (n > 40)
        n = 40;
    for (i = 0; i < n; i++)
        buf[i] = (unsigned char)s->p[i] < 0x20 || s->p[i] == 0x7f ? '?'
                                                                   : s->p[i];
    buf[i] = '\0';
    return buf;
}

/*
 * A decimal number "D[.|,D]" times 10^scale, exactly.  Decimals past
 * `scale` must be zeros.  Returns 0, or -1 with *why.
 */
static int
parse_fixed(const struct fcsv_span *s, unsigned scale, uint64_t max,
            uint64_t *out, const char **why)
{
    uint64_t v = 0, frac = 0;
    unsigned nd = 0, fd = 0, k;
    uint32_t i = 0;

    *why = "not a number";
    while (i < s->len && is_digit(s->p[i])) {
        if (v > (UINT64_MAX - 9) / 10) {
            *why = "too large";
            return -1;
        }
        v = v * 10 + (uint64_t)(s->p[i] - '0');
        nd++;
        i++;
    }
    if (nd == 0)
        return -1;
    if (i < s->len && (s->p[i] == '.' || s->p[i] == ',')) {
        i++;
        while (i < s->len && is_digit(s->p[i])) {
            if (fd < scale)
                frac = frac * 10 + (uint64_t)(s->p[i] - '0');
            else if (s->p[i] != '0') {
                *why = scale == 0 ? "not a whole number"
                                  : "too many decimals";
                return -1;
            }
            fd++;
            i++;
        }
        if (fd == 0)
            return -1;
    }
    if (i != s->len)
        return -1;
    for (k = fd < scale ? fd : scale; k < scale; k++)
        frac *= 10;
    for (k = 0; k < scale; k++) {
        if (v > UINT64_MAX / 10) {
            *why = "too large";
            return -1;
        }
        v *= 10;
    }
    if (v > UINT64_MAX - frac || v + frac > max) {
        *why = "too large";
        return -1;
    }
    *out = v + frac;
    return 0;
}

/* 1..8 digits (spreadsheets drop leading zeros) or NNNNN-NNN. */
static int
parse_cep_field(const struct fcsv_span *s, uint32_t *cep)
{
    uint32_t v = 0, i;

    if (s->len == 9 && s->p[5] == '-') {
        for (i = 0; i < 9; i++) {
            if (i == 5)
                continue;
            if (!is_digit(s->p[i]))
                return -1;
            v = v * 10 + (uint32_t)(s->p[i] - '0');
        }
        *cep = v;
        return 0;
    }
    if (s->len < 1 || s->len > 8)
        return -1;
    for (i = 0; i < s->len; i++) {
        if (!is_digit(s->p[i]))
            return -1;
        v = v * 10 + (uint32_t)(s->p[i] - '0');
    }
    *cep = v;
    return 0;
}

/* n digits (1..max_digits) at s->p[*i]; -1 if none. */
static int
digits(const struct fcsv_span *s, uint32_t *i, unsigned max_digits,
       uint64_t *v)
{
    unsigned n = 0;

    *v = 0;
    while (*i < s->len && is_digit(s->p[*i]) && n < max_digits) {
        *v = *v * 10 + (uint64_t)(s->p[*i] - '0');
        (*i)++;
        n++;
    }
    return n == 0 || (*i < s->len && is_digit(s->p[*i])) ? -1 : 0;
}

/*
 * TimeCost, as .NET writes a TimeSpan: "D.HH:MM:SS[.fffffff]",
 * "HH:MM[:SS[.f]]" (hours may pass 23 without days) or whole days "D".
 * Seconds, rounded up over any fraction.
 */
static int
parse_time(const struct fcsv_span *s, uint32_t *out, const char **why)
{
    uint64_t days = 0, h, m, sec = 0, a, frac = 0, total;
    uint32_t i = 0;
    int has_days = 0;

    *why = "expected D.HH:MM:SS, HH:MM:SS or whole days";
    if (digits(s, &i, 6, &a) != 0)
        return -1;
    if (i == s->len) {
        days = a;
        h = m = 0;
        goto done;
    }
    if (s->p[i] == '.') {
        has_days = 1;
        days = a;
        i++;
        if (digits(s, &i, 2, &h) != 0)
            return -1;
    } else {
        h = a;
    }
    if (i >= s->len || s->p[i] != ':')
        return -1;
    i++;
    if (digits(s, &i, 2, &m) != 0 || m > 59)
        return -1;
    if (i < s->len && s->p[i] == ':') {
        i++;
        if (digits(s, &i, 2, &sec) != 0 || sec > 59)
            return -1;
        if (i < s->len && s->p[i] == '.') {
            i++;
            if (digits(s, &i, 7, &frac) != 0)
                return -1;
            if (frac > 0)
                sec++;
        }
    }
    if (i != s->len || (has_days && h > 23))
        return -1;
done:
    total = days * 86400 + h * 3600 + m * 60 + sec;
    if (days > FOLIO_FREIGHT_MAX_DAYS ||
        total > (uint64_t)FOLIO_FREIGHT_MAX_DAYS * 86400) {
        *why = "more than 3650 days";
        return -1;
    }
    *out = (uint32_t)total;
    return 0;
}

/* Valid UTF-8 without control characters. */
static int
valid_text(const char *p, size_t len)
{
    const unsigned char *s = (const unsigned char *)p, *e = s + len;

    while (s < e) {
        unsigned c = *s, n, i;
        uint32_t cp;

        if (c < 0x20 || c == 0x7f)
            return 0;
        if (c < 0x80) {
            s++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            n = 1, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
            n = 2, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
            n = 3, cp = c & 0x07;
        else
            return 0;
        if ((size_t)(e - s) <= n)
            return 0;
        for (i = 1; i <= n; i++) {
            if ((s[i] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        s += n + 1;
    }
    return 1;
}

static int
parse_name(const struct fcsv_span *s, char *out, const char **why)
{
    if (s->len > FOLIO_FREIGHT_NAME_MAX) {
        *why = "longer than 63 bytes";
        return -1;
    }
    if (!valid_text(s->p, s->len)) {
        *why = "not UTF-8 text without control characters";
        return -1;
    }
    memcpy(out, s->p, s->len);
    out[s->len] = '\0';
    return 0;
}

static int
span_ieq(const struct fcsv_span *s, const char *lit)
{
    size_t n = strlen(lit);

    return s->len == n && strncasecmp(s->p, lit, n) == 0;
}

/*
 * The number of real columns: fields past `want` that are empty are
 * dropped (spreadsheets pad rows with separators).
 */
static unsigned
columns(const struct fcsv_span *f, unsigned nf, unsigned want)
{
    while (nf > want && nf <= FCSV_MAX_FIELDS && f[nf - 1].len == 0)
        nf--;
    return nf;
}

/* The header row; 0 if it is the expected one, else reports and -1. */
static int
check_header(const char *file, struct folio_freight_diag *d, unsigned line,
             const struct fcsv_span *f, unsigned nf,
             const char *const *names, unsigned want)
{
    char b[64];
    unsigned i, n = columns(f, nf, want);

    for (i = 0; i < want && i < n; i++) {
        if (!span_ieq(&f[i], names[i])) {
            folio_freight_report(d, file, line, i + 1,
                                 "header: expected '%s', got '%s'", names[i],
                                 shown(&f[i], b, sizeof(b)));
            return -1;
        }
    }
    if (n != want) {
        folio_freight_report(d, file, line, n < want ? n + 1 : want + 1,
                             "header: expected %u columns, got %u", want, n);
        return -1;
    }
    return 0;
}

static int
grow(void **arr, size_t *cap, size_t n, size_t size)
{
    size_t ncap;
    void *p;

    if (n < *cap)
        return 0;
    ncap = *cap == 0 ? 256 : *cap * 2;
    if ((p = folio_realloc(*arr, ncap * size)) == NULL)
        return FOLIO_ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

/* ---- carrier tables ---- */

/* Parse one data row; reports every bad field.  0 if the row is good. */
static int
parse_row(const char *file, struct folio_freight_diag *d, unsigned line,
          const struct fcsv_span *f, struct folio_freight_row *r)
{
    char b[64];
    const char *why;
    uint64_t v;
    unsigned bad = 0, k;

#define BAD(col, ...)                                                   \
    do {                                                                \
        folio_freight_report(d, file, line, (col), __VA_ARGS__);        \
        bad++;                                                          \
    } while (0)

    memset(r, 0, sizeof(*r));
    r->fr_line = line;
    for (k = 0; k < 2; k++) {
        uint32_t *cep = k == 0 ? &r->fr_cep_lo : &r->fr_cep_hi;

        if (f[k].len == 0)
            BAD(k + 1, "%s: empty (polygon rows without ZIP codes are "
                       "not supported)", vtex_columns[k]);
        else if (parse_cep_field(&f[k], cep) != 0)
            BAD(k + 1, "%s: expected a CEP of 8 digits, got '%s'",
                vtex_columns[k], shown(&f[k], b, sizeof(b)));
    }
    if (parse_name(&f[2], r->fr_band, &why) != 0)
        BAD(3, "PolygonName: %s", why);
    for (k = 3; k < 5; k++) {
        uint32_t *w = k == 3 ? &r->fr_w_lo : &r->fr_w_hi;

        if (parse_fixed(&f[k], 0, FOLIO_FREIGHT_MAX_TABLE_G, &v, &why) != 0)
            BAD(k + 1, "%s: expected whole grams (0..%u), got '%s' (%s)",
                vtex_columns[k], FOLIO_FREIGHT_MAX_TABLE_G,
                shown(&f[k], b, sizeof(b)), why);
        else
            *w = (uint32_t)v;
    }
    if (parse_fixed(&f[5], 2, FOLIO_FREIGHT_MAX_MONEY, &r->fr_abs_cents,
                    &why) != 0)
        BAD(6, "AbsoluteMoneyCost: expected an amount like 10,50, got "
               "'%s' (%s)", shown(&f[5], b, sizeof(b)), why);
    if (parse_fixed(&f[6], 4, FOLIO_FREIGHT_MAX_PCT, &v, &why) != 0)
        BAD(7, "PricePercent: expected a percentage like 1,5 (at most 4 "
               "decimals, 0..1000), got '%s' (%s)",
            shown(&f[6], b, sizeof(b)), why);
    else
        r->fr_pct = (uint32_t)v;
    if (parse_fixed(&f[7], 6, FOLIO_FREIGHT_MAX_RATE, &r->fr_rate, &why) != 0)
        BAD(8, "PriceByExtraWeight: expected BRL per gram like 0,0025 (at "
               "most 6 decimals), got '%s' (%s)",
            shown(&f[7], b, sizeof(b)), why);
    if (f[8].len == 0)
        r->fr_max_volume = 0;
    else if (parse_fixed(&f[8], 0, UINT64_MAX, &r->fr_max_volume, &why) != 0)
        BAD(9, "MaxVolume: expected a whole number, got '%s' (%s)",
            shown(&f[8], b, sizeof(b)), why);
    if (parse_time(&f[9], &r->fr_time_s, &why) != 0)
        BAD(10, "TimeCost: %s, got '%s'", why, shown(&f[9], b, sizeof(b)));
    for (k = 0; k < sizeof(countries) / sizeof(countries[0]); k++)
        if (span_ieq(&f[10], countries[k]))
            break;
    if (k == sizeof(countries) / sizeof(countries[0]))
        BAD(11, "Country: unknown country '%s' (accepted: BRA, BR, Brasil, "
                "Brazil)", shown(&f[10], b, sizeof(b)));
    if (f[11].len == 0)
        r->fr_insurance_cents = 0;
    else if (parse_fixed(&f[11], 2, FOLIO_FREIGHT_MAX_MONEY,
                         &r->fr_insurance_cents, &why) != 0)
        BAD(12, "MinimumValueInsurance: expected an amount like 10,50, got "
                "'%s' (%s)", shown(&f[11], b, sizeof(b)), why);
    if (bad == 0 && r->fr_cep_lo > r->fr_cep_hi)
        BAD(1, "ZipCodeStart %08u is after ZipCodeEnd %08u", r->fr_cep_lo,
            r->fr_cep_hi);
    if (bad == 0 && r->fr_w_lo > r->fr_w_hi)
        BAD(4, "WeightStart %u is above WeightEnd %u", r->fr_w_lo,
            r->fr_w_hi);
#undef BAD
    return bad == 0 ? 0 : -1;
}

int
folio_freight_table_parse(const char *file, const char *carrier, char *buf,
                          size_t len, struct folio_freight_diag *d,
                          struct folio_freight_table **out)
{
    struct fcsv_span f[FCSV_MAX_FIELDS];
    struct folio_freight_table *t;
    struct fcsv c;
    size_t cap = 0;
    unsigned errors = d->fd_errors, nf, line, col, n;
    const char *why;
    int rc, header = 0;

    *out = NULL;
    if ((t = folio_calloc(1, sizeof(*t))) == NULL)
        return FOLIO_ENOMEM;
    if (strlen(carrier) == 0 || strlen(carrier) > FOLIO_FREIGHT_NAME_MAX ||
        !valid_text(carrier, strlen(carrier)))
        folio_freight_report(d, file, 0, 0,
                             "the carrier's name (the file's name without "
                             ".csv) must be 1..63 bytes of UTF-8 text");
    else
        memcpy(t->ft_carrier, carrier, strlen(carrier) + 1);
    folio_fcsv_init(&c, buf, len);
    while ((rc = folio_fcsv_next(&c, f, &nf, &line, &why, &col)) != 0) {
        if (rc < 0) {
            folio_freight_report(d, file, line, col, "%s", why);
            continue;
        }
        if (!header) {
            header = 1;
            if (check_header(file, d, line, f, nf, vtex_columns,
                             VTEX_NCOLS) != 0)
                break; /* not this template: one report is enough */
            continue;
        }
        if ((n = columns(f, nf, VTEX_NCOLS)) != VTEX_NCOLS) {
            folio_freight_report(d, file, line,
                                 n < VTEX_NCOLS ? n + 1 : VTEX_NCOLS + 1,
                                 "expected %u columns, got %u", VTEX_NCOLS,
                                 n);
            continue;
        }
        if (grow((void **)&t->ft_rows, &cap, t->ft_nrows,
                 sizeof(t->ft_rows[0])) != 0) {
            folio_freight_table_free(t);
            return FOLIO_ENOMEM;
        }
        if (parse_row(file, d, line, f, &t->ft_rows[t->ft_nrows]) == 0)
            t->ft_nrows++;
    }
    if (!header)
        folio_freight_report(d, file, 1, 0,
                             "empty: expected the header ZipCodeStart,"
                             "ZipCodeEnd,PolygonName,...");
    else if (t->ft_nrows == 0 && d->fd_errors == errors)
        folio_freight_report(d, file, c.line, 0, "no rows after the header");
    if (d->fd_errors != errors) {
        folio_freight_table_free(t);
        return FOLIO_EINVAL;
    }
    *out = t;
    return 0;
}

void
folio_freight_table_free(struct folio_freight_table *t)
{
    if (t == NULL)
        return;
    folio_free(t->ft_rows);
    folio_free(t);
}

/* ---- the catalog ---- */

static int
sku_cmp(const void *a, const void *b)
{
    const struct folio_freight_sku *x = a, *y = b;
    int c = strcmp(x->fs_sku, y->fs_sku);

    return c != 0 ? c : (x->fs_line > y->fs_line) - (x->fs_line < y->fs_line);
}

static int
parse_sku(const char *file, struct folio_freight_diag *d, unsigned line,
          const struct fcsv_span *f, struct folio_freight_sku *s)
{
    static const uint64_t max[CATALOG_NCOLS] = {
        0, FOLIO_FREIGHT_MAX_ITEM_G, FOLIO_FREIGHT_MAX_ITEM_CM,
        FOLIO_FREIGHT_MAX_ITEM_CM, FOLIO_FREIGHT_MAX_ITEM_CM,
        FOLIO_FREIGHT_MAX_ITEM_CENTS};
    uint64_t *dst[CATALOG_NCOLS] = {
        NULL, &s->fs_item.fi_weight_g, &s->fs_item.fi_length_cm,
        &s->fs_item.fi_width_cm, &s->fs_item.fi_height_cm,
        &s->fs_item.fi_price_cents};
    const char *why;
    char b[64];
    unsigned k, bad = 0;

    memset(s, 0, sizeof(*s));
    s->fs_line = line;
    if (f[0].len == 0) {
        folio_freight_report(d, file, line, 1, "sku: empty");
        bad++;
    } else if (parse_name(&f[0], s->fs_sku, &why) != 0) {
        folio_freight_report(d, file, line, 1, "sku: %s", why);
        bad++;
    }
    for (k = 1; k < CATALOG_NCOLS; k++) {
        if (parse_fixed(&f[k], 0, max[k], dst[k], &why) != 0) {
            folio_freight_report(d, file, line, k + 1,
                                 "%s: expected a whole number 0..%llu, got "
                                 "'%s' (%s)", catalog_columns[k],
                                 (unsigned long long)max[k],
                                 shown(&f[k], b, sizeof(b)), why);
            bad++;
        }
    }
    return bad == 0 ? 0 : -1;
}

int
folio_freight_catalog_parse(const char *file, char *buf, size_t len,
                            struct folio_freight_diag *d,
                            struct folio_freight_catalog **out)
{
    struct fcsv_span f[FCSV_MAX_FIELDS];
    struct folio_freight_catalog *cat;
    struct fcsv c;
    size_t cap = 0, i;
    unsigned errors = d->fd_errors, nf, line, col, n;
    const char *why;
    int rc, header = 0;

    *out = NULL;
    if ((cat = folio_calloc(1, sizeof(*cat))) == NULL)
        return FOLIO_ENOMEM;
    folio_fcsv_init(&c, buf, len);
    while ((rc = folio_fcsv_next(&c, f, &nf, &line, &why, &col)) != 0) {
        if (rc < 0) {
            folio_freight_report(d, file, line, col, "%s", why);
            continue;
        }
        if (!header) {
            header = 1;
            if (check_header(file, d, line, f, nf, catalog_columns,
                             CATALOG_NCOLS) != 0)
                break;
            continue;
        }
        if ((n = columns(f, nf, CATALOG_NCOLS)) != CATALOG_NCOLS) {
            folio_freight_report(d, file, line,
                                 n < CATALOG_NCOLS ? n + 1
                                                   : CATALOG_NCOLS + 1,
                                 "expected %u columns, got %u",
                                 CATALOG_NCOLS, n);
            continue;
        }
        if (grow((void **)&cat->fc_skus, &cap, cat->fc_nskus,
                 sizeof(cat->fc_skus[0])) != 0) {
            folio_freight_catalog_free(cat);
            return FOLIO_ENOMEM;
        }
        if (parse_sku(file, d, line, f, &cat->fc_skus[cat->fc_nskus]) == 0)
            cat->fc_nskus++;
    }
    if (!header)
        folio_freight_report(d, file, 1, 0,
                             "empty: expected the header sku,weight_g,"
                             "length_cm,width_cm,height_cm,price_cents");
    if (cat->fc_nskus > 1)
        qsort(cat->fc_skus, cat->fc_nskus, sizeof(cat->fc_skus[0]), sku_cmp);
    for (i = 1; i < cat->fc_nskus; i++) {
        const struct folio_freight_sku *a = &cat->fc_skus[i - 1];
        const struct folio_freight_sku *b = &cat->fc_skus[i];

        if (strcmp(a->fs_sku, b->fs_sku) == 0)
            folio_freight_report(d, file, b->fs_line, 1,
                                 "sku: duplicate '%s' (first at line %u)",
                                 b->fs_sku, a->fs_line);
    }
    if (d->fd_errors != errors) {
        folio_freight_catalog_free(cat);
        return FOLIO_EINVAL;
    }
    *out = cat;
    return 0;
}

void
folio_freight_catalog_free(struct folio_freight_catalog *c)
{
    if (c == NULL)
        return;
    folio_free(c->fc_skus);
    folio_free(c);
}

/* ---- CEPs ---- */

int
folio_freight_cep_parse(const char *s, size_t len, uint32_t *cep)
{
    uint32_t v = 0;
    size_t i;

    if (len != 8 && !(len == 9 && s[5] == '-'))
        return FOLIO_EINVAL;
    for (i = 0; i < len; i++) {
        if (len == 9 && i == 5)
            continue;
        if (!is_digit(s[i]))
            return FOLIO_EINVAL;
        v = v * 10 + (uint32_t)(s[i] - '0');
    }
    *cep = v;
    return 0;
}

void
folio_freight_cep_format(uint32_t cep, char out[10])
{
    int i;

    if (cep > FOLIO_FREIGHT_CEP_MAX)
        cep = FOLIO_FREIGHT_CEP_MAX;
    out[9] = '\0';
    for (i = 8; i >= 0; i--) {
        if (i == 5) {
            out[i] = '-';
            continue;
        }
        out[i] = (char)('0' + cep % 10);
        cep /= 10;
    }
}
