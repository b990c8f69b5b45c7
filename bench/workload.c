/*
 * workload.c - folio-bench's workloads: every request a run may send is
 * encoded here, once, before the run, into a pool the engine copies
 * from.  Random workloads are drawn BENCH_POOL_SIZE times (so the pool
 * holds their distribution: Zipf-popular pages, carts, CEPs); fixed lists
 * (the shakesapp mix, --queries) are stored once each and picked
 * uniformly at run time.  Requests whose answer is known carry it, so
 * the engine can check every answer.
 */
#include "config.h"

#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <msgpack.h>

#include "bench/bench.h"
#include "src/mp.h"
#include "src/rpc.h"

#define MAX_QUERY 1024     /* PROTOCOL.md: corpus queries of 1..1024 bytes */
#define CORPUS_QUERIES 256 /* random queries drawn from --corpus, counted */

/* shakesapp's queries and the counts its client expects. */
static const struct {
    const char *q;
    int64_t count;
} shakesapp[] = {
    {"hello", 349},
    {"world", 728},
    {"to be, or not to be", 1},
    {"insolence", 14},
};

struct query {
    char *s;
    uint32_t len;
    int64_t count; /* -1: not known */
};

struct wl {
    const struct bench_opts *o;
    uint64_t rng;
    struct query *queries;
    uint32_t nqueries;
    char **skus;
    uint32_t nskus;
    double *cdf; /* comments: cumulative page popularity */
    uint32_t posts;
    int mixed;
};

static uint64_t
rnd(struct wl *w)
{
    uint64_t x = w->rng;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    w->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [0, n). */
static uint32_t
rnd_below(struct wl *w, uint32_t n)
{
    return n == 0 ? 0 : (uint32_t)(((rnd(w) >> 32) * n) >> 32);
}

/* Uniform in [0, 1). */
static double
rnd_unit(struct wl *w)
{
    return (double)(rnd(w) >> 11) / 9007199254740992.0;
}

/* ------------------------------------------------------------------ */

static msgpack_packer pk;

/* Start a request: [0, msgid (uint32, patched later), method, params... */
static int
req_begin(struct bench_pool *p, enum bench_kind kind, uint32_t nparams)
{
    static const unsigned char head[] = {0x94, 0x00, 0xce, 0, 0, 0, 0};

    msgpack_packer_init(&pk, &p->bytes, folio_buf_pack_write);
    if (folio_buf_append(&p->bytes, head, sizeof(head)) != 0 ||
        folio_pack_cstr(&pk, folio_bench_kind_method[kind]) != 0 ||
        msgpack_pack_array(&pk, nparams) != 0)
        return -1;
    return 0;
}

static int
add_ping(struct bench_pool *p)
{
    uint32_t start = (uint32_t)p->bytes.b_len;

    if (req_begin(p, BENCH_K_PING, 0) != 0)
        return -1;
    return folio_bench_pool_push(p, start, BENCH_K_PING, BENCH_X_STR, 0, "pong", 0);
}

static int
add_query(struct bench_pool *p, const struct query *q)
{
    uint32_t start = (uint32_t)p->bytes.b_len;

    if (req_begin(p, BENCH_K_MATCH_COUNT, 1) != 0 ||
        folio_pack_str(&pk, q->s, q->len) != 0)
        return -1;
    return folio_bench_pool_push(p, start, BENCH_K_MATCH_COUNT,
                   q->count >= 0 ? BENCH_X_INT : BENCH_X_NONE, q->count, NULL,
                   0);
}

#define SEARCH_PAGE 20

/* corpus.search of a query's last page of SEARCH_PAGE lines (when its
 * count is known; else the first): the deepest, dearest page. */
static int
add_search(struct bench_pool *p, const struct query *q)
{
    uint32_t start = (uint32_t)p->bytes.b_len;
    int64_t off = q->count > SEARCH_PAGE ? q->count - SEARCH_PAGE : 0;

    if (req_begin(p, BENCH_K_SEARCH, 2) != 0 ||
        folio_pack_str(&pk, q->s, q->len) != 0 ||
        msgpack_pack_map(&pk, 2) != 0 || folio_pack_cstr(&pk, "offset") != 0 ||
        msgpack_pack_int64(&pk, off) != 0 ||
        folio_pack_cstr(&pk, "limit") != 0 ||
        msgpack_pack_int64(&pk, SEARCH_PAGE) != 0)
        return -1;
    return folio_bench_pool_push(p, start, BENCH_K_SEARCH, BENCH_X_NONE, 0, NULL,
                                 0);
}

static int
pack_kv_str(const char *k, const char *v, size_t len)
{
    return folio_pack_cstr(&pk, k) != 0 || folio_pack_str(&pk, v, len) != 0 ? -1
                                                                            : 0;
}

static int
pack_kv_int(const char *k, int64_t v)
{
    return folio_pack_cstr(&pk, k) != 0 || msgpack_pack_int64(&pk, v) != 0 ? -1
                                                                           : 0;
}

/*
 * A cart of 1-10 items to a CEP drawn across Brazil.  The answers it
 * expects besides a quote: NOT_FOUND for a CEP drawn outside every band,
 * and OUT_OF_RANGE for any cart, since folio-bench does not know the
 * bands: a random cart may be heavier than the heaviest (about 1-2% of
 * them against data/'s tables, whose heaviest band ends at 30 kg).  An
 * unknown SKU (a catalog the server does not have) stays unexpected.
 */
static int
add_quote(struct bench_pool *p, struct wl *w)
{
    uint32_t start = (uint32_t)p->bytes.b_len, n, i, j, k, pick[10];
    char cep[16];
    uint32_t v;
    int uncovered, rc = 0;

    uncovered = rnd_unit(w) * 100.0 < w->o->uncovered;
    v = uncovered ? rnd_below(w, 1000000) : 1000000 + rnd_below(w, 99000000);
    snprintf(cep, sizeof(cep), "%05u-%03u", v / 1000, v % 1000);
    n = 1 + rnd_below(w, 10);
    if (req_begin(p, BENCH_K_QUOTE, 2) != 0 || folio_pack_cstr(&pk, cep) != 0 ||
        msgpack_pack_array(&pk, n) != 0)
        return -1;
    for (i = 0; i < n && rc == 0; i++) {
        if (w->nskus > 0) {
            /* Distinct SKUs while the catalog has enough. */
            for (j = 0; j < 8; j++) {
                pick[i] = rnd_below(w, w->nskus);
                for (k = 0; k < i && pick[k] != pick[i]; k++)
                    ;
                if (k == i)
                    break;
            }
            rc = msgpack_pack_map(&pk, 2) != 0 ||
                 pack_kv_str("sku", w->skus[pick[i]],
                             strlen(w->skus[pick[i]])) != 0 ||
                 pack_kv_int("qty", 1) != 0;
        } else {
            /* No catalog: items by weight and size (PROTOCOL.md 3). */
            rc = msgpack_pack_map(&pk, 6) != 0 ||
                 pack_kv_int("weight_g", 100 + rnd_below(w, 4900)) != 0 ||
                 pack_kv_int("qty", 1) != 0 ||
                 pack_kv_int("length_cm", 5 + rnd_below(w, 55)) != 0 ||
                 pack_kv_int("width_cm", 5 + rnd_below(w, 35)) != 0 ||
                 pack_kv_int("height_cm", 2 + rnd_below(w, 28)) != 0 ||
                 pack_kv_int("price_cents", 500 + rnd_below(w, 49500)) != 0;
        }
    }
    if (rc != 0)
        return -1;
    p->code_why[FOLIO_ST_NOT_FOUND] = "the uncovered CEPs";
    p->code_why[FOLIO_ST_OUT_OF_RANGE] = "carts heavier than every band";
    return folio_bench_pool_push(p, start, BENCH_K_QUOTE, BENCH_X_NONE, 0, NULL,
                   uncovered ? BENCH_CODE(FOLIO_ST_NOT_FOUND)
                             : BENCH_CODE(FOLIO_ST_OUT_OF_RANGE));
}

/* A page drawn by popularity; comments.post with --write-ratio. */
static int
add_comments(struct bench_pool *p, struct wl *w)
{
    uint32_t start = (uint32_t)p->bytes.b_len, lo = 0, hi = w->o->pages - 1,
             mid;
    double u = rnd_unit(w);
    char path[64], body[96];
    int n;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (w->cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    n = snprintf(path, sizeof(path), "/bench/page-%u/", lo + 1);
    if (rnd_unit(w) < w->o->write_ratio) {
        int blen = snprintf(body, sizeof(body),
                            "Comment %u of folio-bench.\nAll's well that "
                            "ends well.",
                            ++w->posts);

        if (req_begin(p, BENCH_K_POST, 1) != 0 ||
            msgpack_pack_map(&pk, 3) != 0 ||
            pack_kv_str("path", path, (size_t)n) != 0 ||
            pack_kv_str("author", "folio-bench", 11) != 0 ||
            pack_kv_str("body", body, (size_t)blen) != 0)
            return -1;
        return folio_bench_pool_push(p, start, BENCH_K_POST, BENCH_X_NONE, 0, NULL, 0);
    }
    if (req_begin(p, BENCH_K_LIST, 1) != 0 ||
        folio_pack_str(&pk, path, (size_t)n) != 0)
        return -1;
    return folio_bench_pool_push(p, start, BENCH_K_LIST, BENCH_X_NONE, 0, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* Loading.                                                            */

static int
read_file(const char *path, char **out, size_t *len, char *err, size_t errlen)
{
    FILE *f;
    char *buf = NULL, *nb;
    size_t cap = 0, n = 0, got;

    if ((f = fopen(path, "rb")) == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return FOLIO_ESYS;
    }
    for (;;) {
        if (cap - n < 65536) {
            cap = cap ? cap * 2 : 65536;
            if ((nb = realloc(buf, cap + 1)) == NULL) {
                free(buf);
                fclose(f);
                snprintf(err, errlen, "%s: out of memory", path);
                return FOLIO_ENOMEM;
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        free(buf);
        fclose(f);
        return FOLIO_ESYS;
    }
    fclose(f);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

static int
push_query(struct wl *w, const char *s, size_t len, int64_t count)
{
    struct query *nq;

    if ((w->nqueries & (w->nqueries - 1)) == 0 || w->nqueries == 0) {
        nq = realloc(w->queries,
                     (w->nqueries ? w->nqueries * 2 : 4) * sizeof(*nq));
        if (nq == NULL)
            return -1;
        w->queries = nq;
    }
    if ((w->queries[w->nqueries].s = strndup(s, len)) == NULL)
        return -1;
    w->queries[w->nqueries].len = (uint32_t)len;
    w->queries[w->nqueries].count = count;
    w->nqueries++;
    return 0;
}

/*
 * --queries FILE: one query a line; a line may end with a tab and the
 * count the answer must be ("hello<TAB>349").
 */
static int
load_queries(struct wl *w, const char *path, char *err, size_t errlen)
{
    char *text, *line, *end, *tab, *e;
    size_t len, n;
    long long count;
    int rc, lineno = 0;

    if ((rc = read_file(path, &text, &len, err, errlen)) != 0)
        return rc;
    for (line = text; line < text + len; line = end + 1) {
        lineno++;
        if ((end = memchr(line, '\n', (size_t)(text + len - line))) == NULL)
            end = text + len;
        n = (size_t)(end - line);
        if (n > 0 && line[n - 1] == '\r')
            n--;
        if (n == 0)
            continue;
        count = -1;
        tab = memrchr(line, '\t', n);
        if (tab != NULL && tab + 1 < line + n &&
            isdigit((unsigned char)tab[1])) {
            errno = 0;
            count = strtoll(tab + 1, &e, 10);
            if (e == line + n && errno == 0)
                n = (size_t)(tab - line);
            else
                count = -1;
        }
        if (n == 0 || n > MAX_QUERY) {
            snprintf(err, errlen, "%s:%d: a query is 1 to %d bytes", path,
                     lineno, MAX_QUERY);
            free(text);
            return FOLIO_EINVAL;
        }
        if (push_query(w, line, n, count) != 0) {
            free(text);
            snprintf(err, errlen, "out of memory");
            return FOLIO_ENOMEM;
        }
    }
    free(text);
    if (w->nqueries == 0) {
        snprintf(err, errlen, "%s: no queries", path);
        return FOLIO_EINVAL;
    }
    return 0;
}

static int
name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lines of `low` (lowercased text) holding lowercased `q`. */
static int64_t
count_lines(const char *low, size_t len, const char *q, size_t qlen)
{
    const char *p = low, *end = low + len, *hit, *nl;
    char lq[MAX_QUERY];
    int64_t n = 0;
    size_t i;

    for (i = 0; i < qlen; i++)
        lq[i] = (char)tolower((unsigned char)q[i]);
    while (p < end && (hit = memmem(p, (size_t)(end - p), lq, qlen)) != NULL) {
        n++;
        if ((nl = memchr(hit, '\n', (size_t)(end - hit))) == NULL)
            break;
        p = nl + 1;
    }
    return n;
}

/*
 * --corpus DIR: queries are substrings of its lines, 3 to 16 bytes, with
 * their counts worked out here by PROTOCOL.md's rule (lines split on
 * "\n", ASCII-lowercased, byte substring), so rounds can check them.
 */
static int
load_corpus(struct wl *w, const char *dir, char *err, size_t errlen)
{
    DIR *d;
    struct dirent *de;
    struct stat st;
    char **names = NULL, **nn, path[4096], *text = NULL, *low = NULL, *nt,
         *data;
    size_t nnames = 0, len = 0, flen, i;
    uint32_t *lines = NULL, nlines = 0, capl = 0, *nl2, li, start, qlen, k;
    int rc = 0;

    if ((d = opendir(dir)) == NULL) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return FOLIO_ESYS;
    }
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if ((nn = realloc(names, (nnames + 1) * sizeof(*nn))) == NULL ||
            (nn[nnames] = strdup(de->d_name)) == NULL) {
            if (nn != NULL)
                names = nn;
            rc = FOLIO_ENOMEM;
            break;
        }
        names = nn;
        nnames++;
    }
    closedir(d);
    if (rc == 0 && nnames == 0) {
        snprintf(err, errlen, "%s: no files", dir);
        rc = FOLIO_EINVAL;
    }
    if (rc != 0)
        goto out;
    qsort(names, nnames, sizeof(*names), name_cmp);
    for (i = 0; i < nnames; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        if ((rc = read_file(path, &data, &flen, err, errlen)) != 0)
            goto out;
        if ((nt = realloc(text, len + flen + 2)) == NULL) {
            free(data);
            rc = FOLIO_ENOMEM;
            goto out;
        }
        text = nt;
        memcpy(text + len, data, flen);
        len += flen;
        text[len++] = '\n'; /* a file's last line ends with the file */
        free(data);
    }
    /* Line starts, and the lowercased copy the counting reads. */
    if ((low = malloc(len + 1)) == NULL) {
        rc = FOLIO_ENOMEM;
        goto out;
    }
    for (i = 0, start = 0; i < len; i++) {
        low[i] = (char)tolower((unsigned char)text[i]);
        if (text[i] != '\n')
            continue;
        if (i - start >= 4) {
            if (nlines == capl) {
                capl = capl ? capl * 2 : 4096;
                if ((nl2 = realloc(lines, capl * sizeof(*nl2))) == NULL) {
                    rc = FOLIO_ENOMEM;
                    goto out;
                }
                lines = nl2;
            }
            lines[nlines++] = start;
        }
        start = (uint32_t)i + 1;
    }
    if (nlines == 0) {
        snprintf(err, errlen, "%s: no lines to draw queries from", dir);
        rc = FOLIO_EINVAL;
        goto out;
    }
    for (k = 0; k < CORPUS_QUERIES; k++) {
        uint32_t llen, off;

        li = lines[rnd_below(w, nlines)];
        llen =
            (uint32_t)((char *)memchr(text + li, '\n', len - li) - (text + li));
        qlen = 3 + rnd_below(w, 14);
        if (qlen > llen)
            qlen = llen;
        off = rnd_below(w, llen - qlen + 1);
        if (push_query(w, text + li + off, qlen,
                       count_lines(low, len, text + li + off, qlen)) != 0) {
            rc = FOLIO_ENOMEM;
            goto out;
        }
    }
out:
    if (rc == FOLIO_ENOMEM)
        snprintf(err, errlen, "%s: out of memory", dir);
    for (i = 0; i < nnames; i++)
        free(names[i]);
    free(names);
    free(text);
    free(low);
    free(lines);
    return rc;
}

/* The catalog's columns (PROTOCOL.md section 3), its header line. */
static const char *const catalog_cols[] = {
    "sku", "weight_g", "length_cm", "width_cm", "height_cm", "price_cents",
};
#define CATALOG_NCOLS 6

/*
 * Split one CSV line in place into at most `max` fields, as spreadsheets
 * write it: `sep` between fields, a field in double quotes with "" for
 * a quote, spaces around unquoted fields ignored.  Returns the number of
 * fields (trailing empty ones dropped), or -1 for an unterminated quote.
 */
static int
csv_fields(char *line, char sep, char **f, int max)
{
    char *p = line, *o;
    int n = 0;

    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (n == max)
            return max + 1;
        f[n] = o = p;
        if (*p == '"') {
            for (p++;; p++) {
                if (*p == '\0')
                    return -1;
                if (*p == '"' && p[1] != '"')
                    break;
                if (*p == '"')
                    p++;
                *o++ = *p;
            }
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
        } else {
            while (*p != '\0' && *p != sep)
                *o++ = *p++;
            while (o > f[n] && (o[-1] == ' ' || o[-1] == '\t'))
                o--;
        }
        n++;
        if (*p != sep) {
            *o = '\0';
            break;
        }
        p++;
        *o = '\0';
    }
    while (n > 0 && f[n - 1][0] == '\0')
        n--;
    return n;
}

/* Digits, with one '.' or ',' before decimals if `frac`. */
static int
is_number(const char *s, int frac)
{
    int digits = 0, dot = 0;

    for (; *s != '\0'; s++) {
        if (isdigit((unsigned char)*s))
            digits++;
        else if ((*s == '.' || *s == ',') && frac && !dot && digits > 0)
            dot = 1;
        else
            return 0;
    }
    return digits > 0;
}

/*
 * --catalog FILE: the header sku,weight_g,length_cm,width_cm,height_cm,
 * price_cents (',' or ';' between fields), then one SKU a row.  Anything
 * else is refused with its line (and column), before the run: a file that
 * is not a catalog would make every quote fail.
 */
static int
load_catalog(struct wl *w, const char *path, char *err, size_t errlen)
{
    char *text, *line, *end, *f[CATALOG_NCOLS + 1], **ns, sep = ',';
    size_t len;
    uint32_t cap = 0;
    int rc = 0, nf, lineno = 0, header = 0, i;

    if ((rc = read_file(path, &text, &len, err, errlen)) != 0)
        return rc;
    line = text;
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        line += 3; /* a UTF-8 BOM */
    for (; line < text + len && rc == 0; line = end + 1) {
        lineno++;
        if ((end = memchr(line, '\n', (size_t)(text + len - line))) == NULL)
            end = text + len;
        *end = '\0';
        if (end > line && end[-1] == '\r')
            end[-1] = '\0';
        if (!header) {
            if (line[strspn(line, " \t")] == '\0')
                continue;
            sep = strchr(line, ';') != NULL && strchr(line, ',') == NULL ? ';'
                                                                         : ',';
        }
        nf = csv_fields(line, sep, f, CATALOG_NCOLS);
        if (nf == 0)
            continue; /* a blank line, or one of empty fields */
        if (!header) {
            header = 1;
            for (i = 0; i < CATALOG_NCOLS && i < nf; i++)
                if (strcasecmp(f[i], catalog_cols[i]) != 0)
                    break;
            if (i < CATALOG_NCOLS || nf != CATALOG_NCOLS) {
                snprintf(err, errlen,
                         "%s:%d: not a SKU catalog: the first line must be "
                         "the header sku,weight_g,length_cm,width_cm,"
                         "height_cm,price_cents",
                         path, lineno);
                rc = FOLIO_EINVAL;
            }
            continue;
        }
        if (nf < 0) {
            snprintf(err, errlen, "%s:%d: a quote that does not end", path,
                     lineno);
            rc = FOLIO_EINVAL;
            break;
        }
        if (nf != CATALOG_NCOLS) {
            if (nf > CATALOG_NCOLS)
                snprintf(err, errlen, "%s:%d: more than %d columns", path,
                         lineno, CATALOG_NCOLS);
            else
                snprintf(err, errlen, "%s:%d: %d columns, not %d", path, lineno,
                         nf, CATALOG_NCOLS);
            rc = FOLIO_EINVAL;
            break;
        }
        for (i = 1; i < CATALOG_NCOLS; i++)
            if (!is_number(f[i], i == CATALOG_NCOLS - 1))
                break;
        if (f[0][0] == '\0' || i < CATALOG_NCOLS) {
            snprintf(err, errlen, "%s:%d:%d: %s: '%.40s' is not %s", path,
                     lineno, f[0][0] == '\0' ? 1 : i + 1,
                     catalog_cols[f[0][0] == '\0' ? 0 : i],
                     f[0][0] == '\0' ? "" : f[i],
                     f[0][0] == '\0' ? "a SKU" : "a number");
            rc = FOLIO_EINVAL;
            break;
        }
        if (w->nskus == cap) {
            cap = cap ? cap * 2 : 256;
            if ((ns = realloc(w->skus, cap * sizeof(*ns))) == NULL) {
                rc = FOLIO_ENOMEM;
                break;
            }
            w->skus = ns;
        }
        if ((w->skus[w->nskus] = strdup(f[0])) == NULL) {
            rc = FOLIO_ENOMEM;
            break;
        }
        w->nskus++;
    }
    free(text);
    if (rc == FOLIO_ENOMEM)
        snprintf(err, errlen, "out of memory");
    if (rc == 0 && w->nskus == 0) {
        snprintf(err, errlen,
                 header ? "%s: no SKUs after the header"
                        : "%s: empty: not a SKU catalog (sku,weight_g,"
                          "length_cm,width_cm,height_cm,price_cents)",
                 path);
        rc = FOLIO_EINVAL;
    }
    return rc;
}

static int
setup_corpus(struct wl *w, char *err, size_t errlen)
{
    size_t i;

    if (w->nqueries > 0)
        return 0;
    if (w->o->queries != NULL)
        return load_queries(w, w->o->queries, err, errlen);
    if (w->o->corpus != NULL)
        return load_corpus(w, w->o->corpus, err, errlen);
    for (i = 0; i < sizeof(shakesapp) / sizeof(shakesapp[0]); i++)
        if (push_query(w, shakesapp[i].q, strlen(shakesapp[i].q),
                       shakesapp[i].count) != 0)
            return FOLIO_ENOMEM;
    return 0;
}

static int
setup_freight(struct wl *w, char *err, size_t errlen)
{
    if (w->o->catalog == NULL || w->nskus > 0)
        return 0;
    return load_catalog(w, w->o->catalog, err, errlen);
}

static int
setup_comments(struct wl *w)
{
    double sum = 0;
    uint32_t i;

    if (w->cdf != NULL)
        return 0;
    if ((w->cdf = malloc(w->o->pages * sizeof(*w->cdf))) == NULL)
        return FOLIO_ENOMEM;
    for (i = 0; i < w->o->pages; i++) {
        sum += 1.0 / pow((double)(i + 1), w->o->zipf);
        w->cdf[i] = sum;
    }
    for (i = 0; i < w->o->pages; i++)
        w->cdf[i] /= sum;
    return 0;
}

static void
wl_free(struct wl *w)
{
    uint32_t i;

    for (i = 0; i < w->nqueries; i++)
        free(w->queries[i].s);
    free(w->queries);
    for (i = 0; i < w->nskus; i++)
        free(w->skus[i]);
    free(w->skus);
    free(w->cdf);
}

enum { W_PING, W_CORPUS, W_FREIGHT, W_COMMENTS, W_SEARCH, W_N };
static const char *const wl_names[W_N] = {"ping", "corpus", "freight",
                                          "comments", "search"};

static int
wl_lookup(const char *s, size_t len)
{
    int i;

    for (i = 0; i < W_N; i++)
        if (strlen(wl_names[i]) == len && strncmp(s, wl_names[i], len) == 0)
            return i;
    return -1;
}

static int
setup(struct wl *w, int which, char *err, size_t errlen)
{
    switch (which) {
    case W_CORPUS:
    case W_SEARCH:
        return setup_corpus(w, err, errlen);
    case W_FREIGHT:
        return setup_freight(w, err, errlen);
    case W_COMMENTS:
        if (setup_comments(w) != 0) {
            snprintf(err, errlen, "out of memory");
            return FOLIO_ENOMEM;
        }
        return 0;
    default:
        return 0;
    }
}

/* One request of workload `which`, drawn at random. */
static int
add_one(struct bench_pool *p, struct wl *w, int which)
{
    switch (which) {
    case W_PING:
        return add_ping(p);
    case W_CORPUS:
        return add_query(p, &w->queries[rnd_below(w, w->nqueries)]);
    case W_FREIGHT:
        return add_quote(p, w);
    case W_SEARCH:
        return add_search(p, &w->queries[rnd_below(w, w->nqueries)]);
    default:
        return add_comments(p, w);
    }
}

/* What workload `which` is, for the report. */
static void
describe(struct wl *w, int which, char *buf, size_t len)
{
    const struct bench_opts *o = w->o;
    uint32_t i, checked = 0;

    switch (which) {
    case W_PING:
        snprintf(buf, len, "server.ping");
        break;
    case W_CORPUS:
        for (i = 0; i < w->nqueries; i++)
            checked += w->queries[i].count >= 0;
        snprintf(buf, len, "corpus.match_count, %s (%u queries, %u checked)",
                 o->queries != NULL  ? o->queries
                 : o->corpus != NULL ? "substrings of the corpus"
                                     : "the shakesapp mix",
                 w->nqueries, checked);
        break;
    case W_SEARCH:
        snprintf(buf, len, "corpus.search, the last page of %d lines of %s "
                 "(%u queries)", SEARCH_PAGE,
                 o->queries != NULL  ? o->queries
                 : o->corpus != NULL ? "substrings of the corpus"
                                     : "the shakesapp mix",
                 w->nqueries);
        break;
    case W_FREIGHT:
        if (w->nskus > 0)
            snprintf(buf, len,
                     "freight.quote, carts of 1-10 of %u SKUs, %.1f%% "
                     "uncovered CEPs",
                     w->nskus, o->uncovered);
        else
            snprintf(buf, len,
                     "freight.quote, carts of 1-10 items by weight, %.1f%% "
                     "uncovered CEPs",
                     o->uncovered);
        break;
    default:
        snprintf(buf, len,
                 "comments.list of %u pages (Zipf %.2f), %.1f%% comments.post",
                 o->pages, o->zipf, o->write_ratio * 100.0);
        break;
    }
}

/* --mix corpus:40,freight:40,comments:20 */
static int
parse_mix(const char *spec, double weight[W_N], char *err, size_t errlen)
{
    const char *p = spec, *sep, *end;
    double v, sum = 0;
    char *e;
    int which;

    memset(weight, 0, W_N * sizeof(*weight));
    while (*p != '\0') {
        end = strchr(p, ',');
        if (end == NULL)
            end = p + strlen(p);
        sep = memchr(p, ':', (size_t)(end - p));
        if (sep == NULL)
            sep = memchr(p, '=', (size_t)(end - p));
        if (sep == NULL || (which = wl_lookup(p, (size_t)(sep - p))) < 0) {
            snprintf(err, errlen,
                     "--mix: '%.*s' is not WORKLOAD:WEIGHT (ping, corpus, "
                     "search, freight, comments)",
                     (int)(end - p), p);
            return FOLIO_EINVAL;
        }
        v = strtod(sep + 1, &e);
        if (e != end || v < 0) {
            snprintf(err, errlen, "--mix: bad weight in '%.*s'", (int)(end - p),
                     p);
            return FOLIO_EINVAL;
        }
        weight[which] += v;
        sum += v;
        p = *end == ',' ? end + 1 : end;
    }
    if (sum <= 0) {
        snprintf(err, errlen, "--mix: no weight");
        return FOLIO_EINVAL;
    }
    return 0;
}

int
folio_bench_pool_build(const struct bench_opts *o, struct bench_pool *p,
                       char *err, size_t errlen)
{
    struct wl w;
    double weight[W_N], sum, u;
    uint32_t i;
    size_t dl;
    int which, rc = 0, k;

    memset(&w, 0, sizeof(w));
    w.o = o;
    w.rng = (o->seed + 1) * 0x9E3779B97F4A7C15ULL;
    if (w.rng == 0)
        w.rng = 1;
    if (folio_buf_init(&p->bytes, 65536, 0) != 0) {
        snprintf(err, errlen, "out of memory");
        return FOLIO_ENOMEM;
    }
    /* --proto http runs the workloads too (-w given), over the face. */
    if (o->proto != BENCH_P_MSGPACK &&
        (o->proto != BENCH_P_HTTP || strcmp(o->workload, "http") == 0)) {
        rc = folio_bench_peer_pool(o, p, err, errlen);
        goto out;
    }
    if (strcmp(o->workload, "mixed") == 0) {
        if ((rc = parse_mix(o->mix != NULL ? o->mix
                                           : "corpus:40,freight:40,comments:20",
                            weight, err, errlen)) != 0)
            goto out;
        for (k = 0, sum = 0; k < W_N; k++) {
            if (weight[k] > 0 && (rc = setup(&w, k, err, errlen)) != 0)
                goto out;
            sum += weight[k];
        }
        for (i = 0; i < BENCH_POOL_SIZE && rc == 0; i++) {
            u = rnd_unit(&w) * sum;
            for (which = 0; which < W_N - 1 && u >= weight[which]; which++)
                u -= weight[which];
            while (weight[which] <= 0)
                which--;
            rc = add_one(p, &w, which);
        }
        dl = (size_t)snprintf(p->desc, sizeof(p->desc), "mixed:");
        for (k = 0; k < W_N && dl < sizeof(p->desc); k++) {
            if (weight[k] <= 0)
                continue;
            dl += (size_t)snprintf(p->desc + dl, sizeof(p->desc) - dl,
                                   "%s %s %.0f%%", k > 0 && dl > 7 ? "," : "",
                                   wl_names[k], 100.0 * weight[k] / sum);
        }
    } else {
        if ((which = wl_lookup(o->workload, strlen(o->workload))) < 0) {
            snprintf(err, errlen,
                     "unknown workload '%s' (ping, corpus, search, freight, "
                     "comments, mixed)",
                     o->workload);
            rc = FOLIO_EINVAL;
            goto out;
        }
        if ((rc = setup(&w, which, err, errlen)) != 0)
            goto out;
        if (which == W_PING) {
            rc = add_ping(p);
        } else if (which == W_CORPUS || which == W_SEARCH) {
            for (i = 0; i < w.nqueries && rc == 0; i++)
                rc = which == W_CORPUS ? add_query(p, &w.queries[i])
                                       : add_search(p, &w.queries[i]);
        } else {
            for (i = 0; i < BENCH_POOL_SIZE && rc == 0; i++)
                rc = add_one(p, &w, which);
        }
        describe(&w, which, p->desc, sizeof(p->desc));
    }
    if (rc != 0) {
        snprintf(err, errlen, "out of memory encoding requests");
        rc = FOLIO_ENOMEM;
    } else if (o->proto == BENCH_P_HTTP) {
        rc = folio_bench_http_of_pool(o, p, err, errlen);
    }
out:
    wl_free(&w);
    if (rc != 0)
        folio_bench_pool_free(p);
    return rc;
}
