/*
 * show.c - the folio client's human output: reading a result with the
 * cursor, and printing counts, search hits, freight quotes, comments and
 * the method table for people (folio(1), OUTPUT).  Scripts use --json.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/cli/cli_int.h"

int
folio_cli_get(struct folio_mp_cur m, const char *key, struct folio_mp_cur *out)
{
    const char *k;
    uint32_t n, klen;

    if (folio_mp_read_map(&m, &n) != 0)
        return -1;
    while (n-- > 0) {
        if (folio_mp_read_str(&m, &k, &klen) == 0) {
            if (folio_mp_str_eq(k, klen, key)) {
                *out = m;
                return 0;
            }
        } else if (folio_mp_skip(&m) != 0) {
            return -1;
        }
        if (folio_mp_skip(&m) != 0)
            return -1;
    }
    return -1;
}

int
folio_cli_num(struct folio_mp_cur *c, double *v)
{
    uint64_t u;
    int64_t i;

    if (folio_mp_read_uint(c, &u) == 0) {
        *v = (double)u;
        return 0;
    }
    if (folio_mp_read_int(c, &i) == 0) {
        *v = (double)i;
        return 0;
    }
    return folio_mp_read_float(c, v);
}

int
folio_cli_get_num(struct folio_mp_cur m, const char *key, double *v)
{
    struct folio_mp_cur c;

    return folio_cli_get(m, key, &c) == 0 ? folio_cli_num(&c, v) : -1;
}

int
folio_cli_get_int(struct folio_mp_cur m, const char *key, int64_t *v)
{
    struct folio_mp_cur c;

    return folio_cli_get(m, key, &c) == 0 ? folio_mp_read_int(&c, v) : -1;
}

int
folio_cli_get_str(struct folio_mp_cur m, const char *key, const char **s,
                  uint32_t *len)
{
    struct folio_mp_cur c;

    return folio_cli_get(m, key, &c) == 0 ? folio_mp_read_str(&c, s, len) : -1;
}

void
folio_cli_put_text(FILE *f, const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];

        fputc((ch < 0x20 && ch != '\t') || ch == 0x7f ? '?' : ch, f);
    }
}

const char *
folio_cli_fmt_money(char *buf, size_t len, int64_t cents)
{
    uint64_t v = cents < 0 ? -(uint64_t)cents : (uint64_t)cents;
    uint64_t reais = v / 100;
    char digits[32], grouped[48];
    size_t n, i, o = 0;

    n = (size_t)snprintf(digits, sizeof(digits), "%" PRIu64, reais);
    for (i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            grouped[o++] = '.';
        grouped[o++] = digits[i];
    }
    grouped[o] = '\0';
    snprintf(buf, len, "%sR$ %s,%02u", cents < 0 ? "-" : "", grouped,
             (unsigned)(v % 100));
    return buf;
}

const char *
folio_cli_fmt_duration(char *buf, size_t len, double seconds)
{
    uint64_t s = seconds > 0 ? (uint64_t)seconds : 0;

    if (s < 60)
        snprintf(buf, len, "%us", (unsigned)s);
    else if (s < 3600)
        snprintf(buf, len, "%um%02us", (unsigned)(s / 60), (unsigned)(s % 60));
    else if (s < 86400)
        snprintf(buf, len, "%uh%02um", (unsigned)(s / 3600),
                 (unsigned)(s % 3600 / 60));
    else
        snprintf(buf, len, "%" PRIu64 "d%02uh", s / 86400,
                 (unsigned)(s % 86400 / 3600));
    return buf;
}

const char *
folio_cli_fmt_bytes(char *buf, size_t len, double bytes)
{
    if (bytes < 1024)
        snprintf(buf, len, "%.0f B", bytes);
    else if (bytes < 1024.0 * 1024)
        snprintf(buf, len, "%.1f KiB", bytes / 1024);
    else if (bytes < 1024.0 * 1024 * 1024)
        snprintf(buf, len, "%.1f MiB", bytes / (1024.0 * 1024));
    else
        snprintf(buf, len, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
    return buf;
}

int
folio_cli_show_count(struct folio_mp_cur res)
{
    uint64_t u;
    int64_t v;

    if (folio_mp_read_uint(&res, &u) == 0)
        printf("%" PRIu64 "\n", u);
    else if (folio_mp_read_int(&res, &v) == 0)
        printf("%" PRId64 "\n", v);
    else
        return -1;
    return 0;
}

/* One line of corpus.search: {"work", "line", "text"}. */
static int
search_line(struct folio_mp_cur *c, int print)
{
    const char *work, *text;
    uint32_t wlen, tlen;
    int64_t line;

    if (folio_cli_get_str(*c, "work", &work, &wlen) != 0 ||
        folio_cli_get_int(*c, "line", &line) != 0 ||
        folio_cli_get_str(*c, "text", &text, &tlen) != 0 ||
        folio_mp_skip(c) != 0)
        return -1;
    if (print) {
        folio_cli_put_text(stdout, work, wlen);
        printf(":%" PRId64 ": ", line);
        folio_cli_put_text(stdout, text, tlen);
        putchar('\n');
    }
    return 0;
}

int
folio_cli_show_search(struct folio_mp_cur res, uint64_t offset, int64_t limit)
{
    struct folio_mp_cur lines, c;
    int64_t count;
    uint32_t n, i;
    int print;

    if (folio_cli_get_int(res, "count", &count) != 0 ||
        folio_cli_get(res, "lines", &lines) != 0 ||
        folio_mp_read_array(&lines, &n) != 0)
        return -1;
    /* Check every line before printing any. */
    for (print = 0; print <= 1; print++) {
        c = lines;
        for (i = 0; i < n; i++)
            if (search_line(&c, print) != 0)
                return -1;
    }
    printf("-- %" PRId64 " matching line%s", count, count == 1 ? "" : "s");
    if (n == 0 && count > 0 && limit == 0)
        printf(", none shown (--limit 0)");
    else if (n == 0 && count > 0)
        printf(", --offset %" PRIu64 " is past the last", offset);
    else if ((uint64_t)n < (uint64_t)count)
        printf(", %" PRIu64 "-%" PRIu64 " shown", offset + 1, offset + n);
    putchar('\n');
    return 0;
}

struct quote_option {
    const char *carrier, *band;
    uint32_t clen, blen;
    int64_t price, days;
};

int
folio_cli_show_quote(struct folio_mp_cur res)
{
    struct folio_mp_cur opts;
    struct quote_option *o = NULL;
    const char *cep;
    uint32_t ceplen, n, i;
    int64_t weight, cubic, billed;
    int wc = 7, wb = 4, wp = 5, rc = -1;
    char money[48];

    if (folio_cli_get_str(res, "cep", &cep, &ceplen) != 0 ||
        folio_cli_get_int(res, "weight_g", &weight) != 0 ||
        folio_cli_get_int(res, "cubic_weight_g", &cubic) != 0 ||
        folio_cli_get_int(res, "billed_weight_g", &billed) != 0 ||
        folio_cli_get(res, "options", &opts) != 0 ||
        folio_mp_read_array(&opts, &n) != 0)
        return -1;
    if (n > 0 && (o = calloc(n, sizeof(*o))) == NULL)
        return -1;
    for (i = 0; i < n; i++) {
        if (folio_cli_get_str(opts, "carrier", &o[i].carrier, &o[i].clen) !=
                0 ||
            folio_cli_get_str(opts, "band", &o[i].band, &o[i].blen) != 0 ||
            folio_cli_get_int(opts, "price_cents", &o[i].price) != 0 ||
            folio_cli_get_int(opts, "days", &o[i].days) != 0 ||
            folio_mp_skip(&opts) != 0)
            goto done;
        if ((int)o[i].clen > wc)
            wc = (int)o[i].clen;
        if ((int)o[i].blen > wb)
            wb = (int)o[i].blen;
        folio_cli_fmt_money(money, sizeof(money), o[i].price);
        if ((int)strlen(money) > wp)
            wp = (int)strlen(money);
    }
    fputs("CEP ", stdout);
    folio_cli_put_text(stdout, cep, ceplen);
    printf(": weight %" PRId64 " g, cubic %" PRId64 " g, billed %" PRId64
           " g\n",
           weight, cubic, billed);
    if (n == 0) {
        printf("no options\n");
        rc = 0;
        goto done;
    }
    printf("%-*s  %-*s  %*s  %4s\n", wc, "CARRIER", wb, "BAND", wp, "PRICE",
           "DAYS");
    for (i = 0; i < n; i++) {
        folio_cli_put_text(stdout, o[i].carrier, o[i].clen);
        printf("%*s  ", wc - (int)o[i].clen, "");
        folio_cli_put_text(stdout, o[i].band, o[i].blen);
        printf("%*s  %*s  %4" PRId64 "\n", wb - (int)o[i].blen, "", wp,
               folio_cli_fmt_money(money, sizeof(money), o[i].price),
               o[i].days);
    }
    rc = 0;
done:
    free(o);
    return rc;
}

/* A comment: {"id", "path", "author", "body", "created_at"}. */
static int
comment(struct folio_mp_cur *c, int print)
{
    const char *author, *body, *nl;
    uint32_t alen, blen;
    int64_t id, ms;
    time_t t;
    struct tm tm;
    char when[64];

    if (folio_cli_get_int(*c, "id", &id) != 0 ||
        folio_cli_get_str(*c, "author", &author, &alen) != 0 ||
        folio_cli_get_str(*c, "body", &body, &blen) != 0 ||
        folio_cli_get_int(*c, "created_at", &ms) != 0 || folio_mp_skip(c) != 0)
        return -1;
    if (!print)
        return 0;
    t = (time_t)(ms / 1000);
    if (gmtime_r(&t, &tm) == NULL ||
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
        snprintf(when, sizeof(when), "%" PRId64 " ms", ms);
    printf("#%" PRId64 "  ", id);
    folio_cli_put_text(stdout, author, alen);
    printf("  %s\n", when);
    /* The body, each line indented. */
    while (blen > 0) {
        nl = memchr(body, '\n', blen);
        fputs("    ", stdout);
        folio_cli_put_text(stdout, body, nl ? (size_t)(nl - body) : blen);
        putchar('\n');
        if (nl == NULL)
            break;
        blen -= (uint32_t)(nl + 1 - body);
        body = nl + 1;
    }
    return 0;
}

int
folio_cli_show_comments(struct folio_mp_cur res, const char *path)
{
    struct folio_mp_cur c;
    uint32_t n, i;
    int print;

    if (folio_mp_read_array(&res, &n) != 0)
        return -1;
    for (print = 0; print <= 1; print++) {
        c = res;
        for (i = 0; i < n; i++) {
            if (print && i > 0)
                putchar('\n');
            if (comment(&c, print) != 0)
                return -1;
        }
    }
    if (n == 0) {
        fputs("no comments on ", stdout);
        folio_cli_put_text(stdout, path, strlen(path));
        putchar('\n');
    }
    return 0;
}

int
folio_cli_show_comment_posted(struct folio_mp_cur res)
{
    const char *path;
    uint32_t plen;
    int64_t id;

    if (folio_cli_get_int(res, "id", &id) != 0 ||
        folio_cli_get_str(res, "path", &path, &plen) != 0)
        return -1;
    printf("comment #%" PRId64 " posted on ", id);
    folio_cli_put_text(stdout, path, plen);
    putchar('\n');
    return 0;
}

struct method_row {
    const char *name, *sig;
    uint32_t nlen, slen;
};

static int
method_cmp(const void *a, const void *b)
{
    const struct method_row *x = a, *y = b;
    uint32_t n = x->nlen < y->nlen ? x->nlen : y->nlen;
    int r = memcmp(x->name, y->name, n);

    return r != 0 ? r : (x->nlen > y->nlen) - (x->nlen < y->nlen);
}

int
folio_cli_show_methods(struct folio_mp_cur res)
{
    struct method_row *rows;
    uint32_t n, i, w = 6;

    if (folio_mp_read_map(&res, &n) != 0)
        return -1;
    if ((rows = calloc(n + 1, sizeof(*rows))) == NULL)
        return -1;
    for (i = 0; i < n; i++) {
        if (folio_mp_read_str(&res, &rows[i].name, &rows[i].nlen) != 0 ||
            folio_mp_read_str(&res, &rows[i].sig, &rows[i].slen) != 0) {
            free(rows);
            return -1;
        }
        if (rows[i].nlen > w)
            w = rows[i].nlen;
    }
    qsort(rows, n, sizeof(*rows), method_cmp);
    for (i = 0; i < n; i++) {
        folio_cli_put_text(stdout, rows[i].name, rows[i].nlen);
        printf("%*s  ", (int)(w - rows[i].nlen), "");
        folio_cli_put_text(stdout, rows[i].sig, rows[i].slen);
        putchar('\n');
    }
    free(rows);
    return 0;
}
