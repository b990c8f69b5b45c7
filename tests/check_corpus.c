/*
 * check_corpus.c - the corpus image (shm/corpus.h): the reference counts
 * on the shared corpus, a property test of counts and searches against a
 * brute-force scan (random substrings of real lines in random case, whole
 * words, absent strings, every single byte, punctuation, tabs), synthetic
 * corpora with the edge cases (empty file, no final newline, CRLF, bytes
 * >= 0x80 and NUL, a 1 MB line, a single line), the cache, errors, zero
 * allocation, and the corpus fetch script's verification.  What needs
 * the shared corpus is check_corpus_shared (this file with
 * CHECK_SHARED_CORPUS), which requires it (e2e_require_corpus).
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/corpus.h"
#include "shm/corpus_int.h"
#include "src/alloc.h"
#include "src/err.h"
#include "tests/e2e_util.h"
#include "tests/check_run.h"

/* ---- a brute-force model: the files, split and lowercased naively ---- */

struct model {
    char *low;        /* every line lowercased, each followed by "\n" */
    size_t n;
    size_t *start;    /* line starts in low; start[lines] = n */
    size_t lines;
    char *orig;       /* the same, original bytes */
};

static void
model_free(struct model *m)
{
    free(m->low);
    free(m->orig);
    free(m->start);
    memset(m, 0, sizeof(*m));
}

/* Build the model from (name-sorted) file contents. */
static void
model_build(struct model *m, char *const *data, const size_t *len, int nfiles)
{
    size_t total = 0, i, k = 0, l = 0;
    int f;

    for (f = 0; f < nfiles; f++)
        total += len[f] + 1;
    m->low = malloc(total + 1);
    m->orig = malloc(total + 1);
    m->start = malloc(sizeof(size_t) * (total + 2));
    ck_assert(m->low != NULL && m->orig != NULL && m->start != NULL);
    m->start[l++] = 0;
    for (f = 0; f < nfiles; f++) {
        for (i = 0; i <= len[f]; i++) {
            char b = i < len[f] ? data[f][i] : '\n';

            m->orig[k] = b;
            m->low[k++] = b >= 'A' && b <= 'Z' ? (char)(b + 32) : b;
            if (b == '\n')
                m->start[l++] = k;
        }
    }
    m->n = k;
    m->lines = l - 1;
}

static void
lower(const char *q, size_t len, char *out)
{
    size_t i;

    for (i = 0; i < len; i++)
        out[i] = q[i] >= 'A' && q[i] <= 'Z' ? (char)(q[i] + 32) : q[i];
}

/* Matching lines, in order, one line at a time (small corpora). */
static size_t
model_match_naive(const struct model *m, const char *q, size_t len,
                  uint32_t *ids, size_t max)
{
    char lq[2048];
    size_t i, n = 0;

    lower(q, len, lq);
    for (i = 0; i < m->lines; i++) {
        size_t ll = m->start[i + 1] - m->start[i] - 1;

        if (memmem(m->low + m->start[i], ll, lq, len) != NULL) {
            if (n < max)
                ids[n] = (uint32_t)i;
            n++;
        }
    }
    return n;
}

/* The same with one memmem over the whole text (the big corpus). */
static size_t
model_match_fast(const struct model *m, const char *q, size_t len,
                 uint32_t *ids, size_t max)
{
    char lq[2048];
    const char *p = m->low, *end = m->low + m->n, *hit;
    size_t n = 0, lo, hi, mid;

    lower(q, len, lq);
    if (memchr(lq, '\n', len) != NULL)
        return 0;
    while (p < end && (hit = memmem(p, (size_t)(end - p), lq, len)) != NULL) {
        size_t off = (size_t)(hit - m->low);

        lo = 0;
        hi = m->lines;
        while (hi - lo > 1) {
            mid = (lo + hi) / 2;
            if (m->start[mid] <= off)
                lo = mid;
            else
                hi = mid;
        }
        if (n < max)
            ids[n] = (uint32_t)lo;
        n++;
        p = m->low + m->start[lo + 1];
    }
    return n;
}

/* ---- temporary corpora ---- */

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    remove(path);
    return 0;
}

static void
rm_rf(const char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
make_dir(char *dir, size_t len)
{
    snprintf(dir, len, "%s/folio-corpus.XXXXXX",
             getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

#ifndef CHECK_SHARED_CORPUS
static void
write_bytes(const char *dir, const char *name, const char *data, size_t len)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}
#endif

static struct folio_corpus *
open_ok(const char *dir, const char *cache)
{
    struct folio_corpus *c;
    char err[512];
    int rc = folio_corpus_open(dir, cache, &c, err, sizeof(err));

    ck_assert_msg(rc == 0, "folio_corpus_open(%s): %d %s", dir, rc, err);
    return c;
}

static uint64_t
count(const struct folio_corpus *c, const char *q)
{
    uint64_t n = 0;

    ck_assert_int_eq(folio_corpus_count(c, q, strlen(q), &n), 0);
    return n;
}

/* Every way of listing q's lines agrees with the model, at a few pages. */
static void
check_search(const struct folio_corpus *c, struct folio_corpus_scratch *s,
             const uint32_t *want, size_t nwant, const char *q, size_t len)
{
    static const uint64_t offsets[] = {0, 1, 7, 100};
    static const uint32_t limits[] = {1, 10, 1000};
    uint32_t ids[FOLIO_CORPUS_MAX_LIMIT], n, i;
    uint64_t total, exp;
    int st, o, l;

    for (st = 0; st <= 2; st++) {
        folio_corpus_strategy(st);
        for (o = 0; o < 4; o++) {
            for (l = 0; l < 3; l++) {
                ck_assert_int_eq(folio_corpus_search(c, s, q, len, offsets[o],
                                                     limits[l], &total, ids,
                                                     &n),
                                 0);
                ck_assert_uint_eq(total, nwant);
                exp = offsets[o] >= nwant ? 0 : nwant - offsets[o];
                if (exp > limits[l])
                    exp = limits[l];
                ck_assert_msg(n == exp, "'%.*s' strategy %d offset %llu: %u "
                              "lines, want %llu",
                              (int)len, q, st, (unsigned long long)offsets[o],
                              n, (unsigned long long)exp);
                for (i = 0; i < n; i++)
                    if (offsets[o] + i < 4096)
                        ck_assert_uint_eq(ids[i], want[offsets[o] + i]);
            }
        }
    }
    folio_corpus_strategy(0);
}

/* Compare count (and search, when asked) with the model for one query. */
static void
check_query(const struct folio_corpus *c, struct folio_corpus_scratch *s,
            const struct model *m, const char *q, size_t len, int naive,
            int search)
{
    static uint32_t want[4096];
    uint64_t got;
    size_t exp;

    exp = naive ? model_match_naive(m, q, len, want, 4096)
                : model_match_fast(m, q, len, want, 4096);
    ck_assert_int_eq(folio_corpus_count(c, q, len, &got), 0);
    ck_assert_msg(got == exp, "count '%.*s' (%zu bytes): %llu, brute force %zu",
                  (int)(len > 60 ? 60 : len), q, len,
                  (unsigned long long)got, exp);
    if (search)
        check_search(c, s, want, exp, q, len);
}

static uint64_t rng_state = 0x1234567;

static uint32_t
rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return n ? (uint32_t)(rng_state % n) : 0;
}

/* Random queries drawn from the model's own lines, and fixed ones. */
static void
property(const struct folio_corpus *c, const struct model *m, int nq,
         int naive, int search_every, int byte_step)
{
    static const char *fixed[] = {
        ",", ".", "!", "?", ";", ":", "'", "-", "--", ", ", ". ", "\t", "\tto",
        "\t\t", "  ", "zzzzqqqq", "xylophone", "the the", "e\n", "\nthe",
        "\r", "\r\n", "qq", "é", "\xff", "\x80\x81"};
    struct folio_corpus_scratch *s;
    char q[FOLIO_CORPUS_MAX_QUERY + 8];
    size_t len, i, ll, st;
    uint32_t line;
    int k;

    ck_assert_int_eq(folio_corpus_scratch_new(&s), 0);
    for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        check_query(c, s, m, fixed[i], strlen(fixed[i]), naive, 1);
    /* every single byte but "\n" */
    for (k = 0; k < 256; k++) {
        if (k == '\n' || (k % byte_step != 0 && k != ' ' && k != 'e'))
            continue;
        q[0] = (char)k;
        check_query(c, s, m, q, 1, naive, k % 16 == 0 || k == ' ' || k == 'e');
    }
    for (k = 0; k < nq; k++) {
        line = rnd((uint32_t)m->lines);
        st = m->start[line];
        ll = m->start[line + 1] - st - 1;
        switch (rnd(4)) {
        case 0: /* a substring of a real line, in random case */
            if (ll == 0)
                continue;
            len = 1 + rnd((uint32_t)(ll < 40 ? ll : 40));
            st += rnd((uint32_t)(ll - len + 1));
            memcpy(q, m->orig + st, len);
            for (i = 0; i < len; i++)
                if (rnd(3) == 0 && ((q[i] | 32) >= 'a' && (q[i] | 32) <= 'z'))
                    q[i] ^= 32;
            break;
        case 1: { /* a whole word */
            size_t a = rnd((uint32_t)(ll + 1)), b;

            while (a > 0 && ((m->low[st + a - 1] >= 'a' &&
                              m->low[st + a - 1] <= 'z')))
                a--;
            for (b = a; b < ll && m->low[st + b] >= 'a' && m->low[st + b] <= 'z';
                 b++)
                ;
            if (b == a || b - a > FOLIO_CORPUS_MAX_QUERY)
                continue;
            len = b - a;
            memcpy(q, m->orig + st + a, len);
            break;
        }
        case 2: /* most likely absent: random letters */
            len = 3 + rnd(8);
            for (i = 0; i < len; i++)
                q[i] = (char)('a' + rnd(26));
            break;
        default: /* a whole line, or one running into the next */
            len = ll + (rnd(2) ? 1 + rnd(4) : 0);
            if (len == 0 || len > FOLIO_CORPUS_MAX_QUERY ||
                st + len > m->n)
                continue;
            memcpy(q, m->orig + st, len);
            break;
        }
        check_query(c, s, m, q, len, naive,
                    search_every > 0 && k % search_every == 0);
    }
    folio_corpus_scratch_free(s);
}

/* Read a directory's corpus files, sorted, into memory for the model. */
static int
read_dir(const char *dir, char ***data, size_t **len)
{
    struct dirent **ents;
    int n, i, k = 0;

    n = scandir(dir, &ents, NULL, NULL);
    ck_assert_int_ge(n, 0);
    /* byte order of the names */
    for (i = 1; i < n; i++) {
        struct dirent *e = ents[i];
        int j = i;

        while (j > 0 && strcmp(ents[j - 1]->d_name, e->d_name) > 0) {
            ents[j] = ents[j - 1];
            j--;
        }
        ents[j] = e;
    }
    *data = calloc((size_t)n + 1, sizeof(char *));
    *len = calloc((size_t)n + 1, sizeof(size_t));
    for (i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
        if (ents[i]->d_name[0] != '.' && stat(path, &st) == 0 &&
            S_ISREG(st.st_mode)) {
            (*data)[k] = malloc((size_t)st.st_size + 1);
            f = fopen(path, "rb");
            ck_assert_ptr_nonnull(f);
            ck_assert_uint_eq(fread((*data)[k], 1, (size_t)st.st_size, f),
                              (size_t)st.st_size);
            fclose(f);
            (*len)[k++] = (size_t)st.st_size;
        }
        free(ents[i]);
    }
    free(ents);
    return k;
}

static void
model_from_dir(struct model *m, const char *dir)
{
    char **data;
    size_t *len;
    int n = read_dir(dir, &data, &len), i;

    model_build(m, data, len, n);
    for (i = 0; i < n; i++)
        free(data[i]);
    free(data);
    free(len);
}

/* ---- the shared corpus ---- */

/* Its index is built once per run and mapped from this cache after. */
static char shared_cache[256];

#ifdef CHECK_SHARED_CORPUS
START_TEST(test_reference_counts)
{
    const char *dir = e2e_corpus();
    struct folio_corpus_info in;
    struct folio_corpus *c;
    uint32_t wl;
    const char *w;

    ck_assert_ptr_nonnull(dir);
    c = open_ok(dir, shared_cache);
    ck_assert_uint_eq(count(c, "hello"), 349);
    ck_assert_uint_eq(count(c, "world"), 728);
    ck_assert_uint_eq(count(c, "to be, or not to be"), 1);
    ck_assert_uint_eq(count(c, "insolence"), 14);
    ck_assert_uint_eq(count(c, "HeLLo"), 349);
    folio_corpus_info(c, &in);
    ck_assert_uint_eq(in.files, 42);
    ck_assert_uint_eq(in.lines, 172990);
    ck_assert_uint_eq(in.bytes, 5283795);
    w = folio_corpus_work(c, 0, &wl);
    ck_assert_int_eq(wl, 12);
    ck_assert(memcmp(w, "1kinghenryiv", 12) == 0);
    w = folio_corpus_work(c, 41, &wl);
    ck_assert(wl == 11 && memcmp(w, "winterstale", 11) == 0);
    folio_corpus_free(c);
}
END_TEST

START_TEST(test_property_shared_corpus)
{
    const char *dir = e2e_corpus();
    struct folio_corpus *c;
    struct model m;

    ck_assert_ptr_nonnull(dir);
    c = open_ok(dir, shared_cache);
    model_from_dir(&m, dir);
    ck_assert_uint_eq(m.lines, 172990);
    rng_state = 0x5eed;
#ifdef FOLIO_SANITIZED
    /* ASan checks memmem's whole haystack per call: the brute force
     * becomes quadratic, so the sanitized run samples less */
    property(c, &m, 100, 0, 50, 32);
#else
    property(c, &m, 1500, 0, 50, 1);
#endif
    model_free(&m);
    folio_corpus_free(c);
}
END_TEST

START_TEST(test_search_lines)
{
    const char *dir = e2e_corpus();
    struct folio_corpus_scratch *s;
    struct folio_corpus_line ln;
    struct folio_corpus *c;
    uint32_t ids[FOLIO_CORPUS_MAX_LIMIT], n;
    uint64_t total;

    ck_assert_ptr_nonnull(dir);
    c = open_ok(dir, shared_cache);
    ck_assert_int_eq(folio_corpus_scratch_new(&s), 0);
    ck_assert_int_eq(folio_corpus_search(c, s, "To be, or not to be", 19, 0,
                                         10, &total, ids, &n),
                     0);
    ck_assert_uint_eq(total, 1);
    ck_assert_uint_eq(n, 1);
    folio_corpus_line(c, ids[0], &ln);
    ck_assert(ln.work_len == 6 && memcmp(ln.work, "hamlet", 6) == 0);
    ck_assert(ln.len == 49 &&
              memcmp(ln.text, "HAMLET\tTo be, or not to be: that is the "
                              "question:", 49) == 0);
    ck_assert_uint_gt(ln.line, 1);
    /* limit over the maximum is refused */
    ck_assert_int_eq(folio_corpus_search(c, s, "e", 1, 0, 1001, &total, ids,
                                         &n),
                     FOLIO_EINVAL);
    /* offset past the end: no lines, the count all the same */
    ck_assert_int_eq(folio_corpus_search(c, s, "insolence", 9, 14, 10, &total,
                                         ids, &n),
                     0);
    ck_assert_uint_eq(total, 14);
    ck_assert_uint_eq(n, 0);
    folio_corpus_scratch_free(s);
    folio_corpus_free(c);
}
END_TEST

/*
 * The broadest queries are listed from their line bitmaps: each bitmap
 * holds exactly the lines of its suffix-array range, and every page of
 * the broad queries, deep ones too, equals what the scan lists.
 */
START_TEST(test_search_bitmaps)
{
    static const char *queries[] = {"e",    "a", " ",  "t",   "th",
                                    "e ",   "E", "TH", " th", "the",
                                    " the", ",", "zq", "x"};
    static uint32_t got[FOLIO_CORPUS_MAX_LIMIT], want[FOLIO_CORPUS_MAX_LIMIT];
    const char *dir = e2e_corpus();
    struct folio_corpus_scratch *s;
    struct folio_corpus *c;
    uint64_t offsets[8], total, total2, *lines;
    uint32_t n, n2, i, k, w, line;
    const uint64_t *bits;
    size_t q, len;

    ck_assert_ptr_nonnull(dir);
    c = open_ok(dir, shared_cache);
    ck_assert_uint_ge(c->nq, 6); /* e, a, " ", t, th, " th" at least */
    lines = calloc(c->qwords, 8);
    ck_assert_ptr_nonnull(lines);
    for (k = 0; k < c->nq; k++) {
        memset(lines, 0, 8 * (size_t)c->qwords);
        for (i = c->qkeys[k].q_l; i < c->qkeys[k].q_r; i++) {
            line = corpus_line_of(c, c->sa[i]);
            lines[line >> 6] |= (uint64_t)1 << (line & 63);
        }
        bits = c->qbits + (uint64_t)k * c->qwords;
        for (w = 0; w < c->qwords; w++)
            ck_assert_msg(bits[w] == lines[w], "range %u word %u", k, w);
    }
    free(lines);
    ck_assert_int_eq(folio_corpus_scratch_new(&s), 0);
    for (q = 0; q < sizeof(queries) / sizeof(queries[0]); q++) {
        len = strlen(queries[q]);
        ck_assert_int_eq(
            folio_corpus_search(c, s, queries[q], len, 0, 1, &total, got, &n),
            0);
        offsets[0] = 0;
        offsets[1] = 1;
        offsets[2] = 63;
        offsets[3] = 64;
        offsets[4] = total / 2;
        offsets[5] = total > 1000 ? total - 1000 : 0;
        offsets[6] = total > 0 ? total - 1 : 0;
        offsets[7] = total;
        for (k = 0; k < 8; k++) {
            ck_assert_int_eq(folio_corpus_search(c, s, queries[q], len,
                                                 offsets[k], 1000, &total, got,
                                                 &n),
                             0);
            folio_corpus_strategy(2); /* scan */
            ck_assert_int_eq(folio_corpus_search(c, s, queries[q], len,
                                                 offsets[k], 1000, &total2,
                                                 want, &n2),
                             0);
            folio_corpus_strategy(0);
            ck_assert_uint_eq(total, total2);
            ck_assert_msg(n == n2, "'%s' offset %llu: %u lines, scan %u",
                          queries[q], (unsigned long long)offsets[k], n, n2);
            for (i = 0; i < n; i++)
                ck_assert_msg(got[i] == want[i], "'%s' offset %llu line %u",
                              queries[q], (unsigned long long)offsets[k], i);
        }
    }
    folio_corpus_scratch_free(s);
    folio_corpus_free(c);
}
END_TEST

START_TEST(test_no_allocation)
{
    const char *dir = e2e_corpus();
    static const char *qs[] = {"hello", "world", "to be, or not to be",
                               "insolence", "e", "the", " ", "zzzz"};
    struct folio_corpus_scratch *s;
    struct folio_corpus *c;
    uint32_t ids[FOLIO_CORPUS_MAX_LIMIT], n;
    uint64_t total, before, after, i;
    int bad = 0;

    ck_assert_ptr_nonnull(dir);
    c = open_ok(dir, shared_cache);
    ck_assert_int_eq(folio_corpus_scratch_new(&s), 0);
    /* no ck_assert inside the loop: Check allocates to record progress */
    before = atomic_load(&folio_alloc_current()->ac_calls);
    for (i = 0; i < 2000; i++) {
        const char *q = qs[i % 8];

        bad |= folio_corpus_count(c, q, strlen(q), &total) != 0;
        bad |= folio_corpus_search(c, s, q, strlen(q), i % 50,
                                   (uint32_t)(i % 7) * 100, &total, ids,
                                   &n) != 0;
    }
    after = atomic_load(&folio_alloc_current()->ac_calls);
    ck_assert_int_eq(bad, 0);
    ck_assert_uint_eq(after, before);
    folio_corpus_scratch_free(s);
    folio_corpus_free(c);
}
END_TEST

#else
/* ---- synthetic corpora ---- */

struct file_spec {
    const char *name;
    const char *data;
    size_t len;
};

/* Write the files, open the corpus, and run the property test on it. */
static void
synthetic(const struct file_spec *fs, int nf, int nq)
{
    struct folio_corpus *c;
    struct model m;
    char dir[256];
    int i;

    make_dir(dir, sizeof(dir));
    for (i = 0; i < nf; i++)
        write_bytes(dir, fs[i].name, fs[i].data, fs[i].len);
    c = open_ok(dir, shared_cache);
    model_from_dir(&m, dir);
    property(c, &m, nq, 1, 3, 1);
    {
        struct folio_corpus_info in;

        folio_corpus_info(c, &in);
        ck_assert_uint_eq(in.lines, m.lines);
        ck_assert_uint_eq(in.bytes, m.n - in.files);
    }
    model_free(&m);
    folio_corpus_free(c);
    rm_rf(dir);
}

START_TEST(test_edge_cases)
{
    static const char bin[] = "Caf\xc3\xa9 \xff\xfe ABC\0def\0\nNUL\0\0 and "
                              "\x80\x81 HIGH\n\xc3\x89T\xc3\x89\n";
    const struct file_spec fs[] = {
        {"a-empty.txt", "", 0},
        {"b-nofinal.txt", "no final newline\nlast LINE", 26},
        {"c-crlf.txt", "Line one\r\nline TWO\r\n\r\nthree\r\n", 30},
        {"d-bin.txt", bin, sizeof(bin) - 1},
        {"e-newlines.txt", "\n\n\n", 3},
        {"f-tabs.txt", "HAMLET\tTo be, or not to be\n\tindented\t\n", 38},
    };

    synthetic(fs, 6, 400);
}
END_TEST

START_TEST(test_single_line)
{
    const struct file_spec one[] = {{"one.txt", "To be, or not to be", 19}};
    const struct file_spec empty[] = {{"e.txt", "", 0}};
    struct folio_corpus *c;
    char dir[256];

    synthetic(one, 1, 200);
    synthetic(empty, 1, 10);
    /* the counts by hand */
    make_dir(dir, sizeof(dir));
    write_bytes(dir, "one.txt", "To be, or not to be", 19);
    c = open_ok(dir, NULL);
    ck_assert_uint_eq(count(c, "to be"), 1);
    ck_assert_uint_eq(count(c, "TO BE, OR NOT TO BE"), 1);
    ck_assert_uint_eq(count(c, "to be, or not to be!"), 0);
    ck_assert_uint_eq(count(c, "e"), 1);
    folio_corpus_free(c);
    rm_rf(dir);
}
END_TEST

START_TEST(test_megabyte_line)
{
    size_t big = 1 << 20, i;
    char *data = malloc(big + 64);
    struct file_spec fs[2];

    ck_assert_ptr_nonnull(data);
    /* a 1 MB line over a two-letter alphabet (long repeats: deep LCPs),
     * then short lines */
    rng_state = 99;
    for (i = 0; i < big; i++)
        data[i] = rnd(8) == 0 ? 'B' : 'a';
    memcpy(data + big, "\naab\nba\nab\n", 11);
    fs[0] = (struct file_spec){"big.txt", data, big + 11};
    fs[1] = (struct file_spec){"small.txt", "abba\nBAAB\n", 10};
    synthetic(fs, 2, 300);
    /* one long run of one letter */
    memset(data, 'z', big);
    fs[0] = (struct file_spec){"run.txt", data, big};
    synthetic(fs, 2, 100);
    free(data);
}
END_TEST

START_TEST(test_random_bytes)
{
    char *data[3];
    struct file_spec fs[3];
    size_t len[3] = {5000, 20000, 1};
    int f;
    size_t i;

    rng_state = 7;
    for (f = 0; f < 3; f++) {
        data[f] = malloc(len[f]);
        for (i = 0; i < len[f]; i++)
            data[f][i] = (char)(rnd(5) == 0 ? '\n' : rnd(256));
    }
    fs[0] = (struct file_spec){"x1", data[0], len[0]};
    fs[1] = (struct file_spec){"x2.txt", data[1], len[1]};
    fs[2] = (struct file_spec){"x3", data[2], len[2]};
    synthetic(fs, 3, 1500);
    /* a small alphabet: many repeats and many lines */
    for (f = 0; f < 3; f++)
        for (i = 0; i < len[f]; i++)
            data[f][i] = "abAB \n"[rnd(6)];
    synthetic(fs, 3, 1500);
    for (f = 0; f < 3; f++)
        free(data[f]);
}
END_TEST

START_TEST(test_file_order_and_names)
{
    struct folio_corpus_scratch *s;
    struct folio_corpus_line ln;
    struct folio_corpus_info in;
    struct folio_corpus *c;
    uint32_t ids[16], n, wl;
    uint64_t total;
    char dir[256], path[300];
    const char *w;

    make_dir(dir, sizeof(dir));
    write_bytes(dir, "b.txt", "x in b\nsecond x\n", 16);
    write_bytes(dir, "B.txt", "x in B\n", 7);
    write_bytes(dir, "_u", "x in _u", 7);
    write_bytes(dir, ".hidden.txt", "x hidden\n", 9);
    snprintf(path, sizeof(path), "%s/subdir", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    write_bytes(path, "inner.txt", "x inner\n", 8);
    c = open_ok(dir, NULL);
    folio_corpus_info(c, &in);
    ck_assert_uint_eq(in.files, 3);
    ck_assert_uint_eq(in.lines, 2 + 1 + 3);
    ck_assert_uint_eq(in.bytes, 30);
    w = folio_corpus_work(c, 0, &wl);
    ck_assert(wl == 1 && w[0] == 'B');
    w = folio_corpus_work(c, 1, &wl);
    ck_assert(wl == 2 && memcmp(w, "_u", 2) == 0);
    w = folio_corpus_work(c, 2, &wl);
    ck_assert(wl == 1 && w[0] == 'b');
    ck_assert_int_eq(folio_corpus_scratch_new(&s), 0);
    ck_assert_int_eq(folio_corpus_search(c, s, "X", 1, 0, 16, &total, ids, &n),
                     0);
    ck_assert_uint_eq(total, 4);
    ck_assert_uint_eq(n, 4);
    folio_corpus_line(c, ids[0], &ln);
    ck_assert(ln.work_len == 1 && ln.work[0] == 'B' && ln.line == 1);
    folio_corpus_line(c, ids[1], &ln);
    ck_assert(ln.work_len == 2 && ln.line == 1 && ln.len == 7);
    folio_corpus_line(c, ids[3], &ln);
    ck_assert(ln.work_len == 1 && ln.work[0] == 'b' && ln.line == 2);
    ck_assert(ln.len == 8 && memcmp(ln.text, "second x", 8) == 0);
    folio_corpus_scratch_free(s);
    folio_corpus_free(c);
    rm_rf(dir);
}
END_TEST

START_TEST(test_bad_queries)
{
    struct folio_corpus *c;
    char dir[256], q[FOLIO_CORPUS_MAX_QUERY + 1];
    uint64_t n = 99;

    make_dir(dir, sizeof(dir));
    write_bytes(dir, "a.txt", "abc\n", 4);
    c = open_ok(dir, NULL);
    ck_assert_int_eq(folio_corpus_count(c, "", 0, &n), FOLIO_EINVAL);
    memset(q, 'a', sizeof(q));
    ck_assert_int_eq(folio_corpus_count(c, q, sizeof(q), &n), FOLIO_EINVAL);
    ck_assert_int_eq(folio_corpus_count(c, q, sizeof(q) - 1, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(folio_corpus_count(c, "c\n", 2, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(folio_corpus_count(c, "\n", 1, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(count(c, "ABC"), 1);
    folio_corpus_free(c);
    rm_rf(dir);
}
END_TEST

/* ---- the cache ---- */

static int
count_idx(const char *dir)
{
    struct dirent *de;
    DIR *d = opendir(dir);
    int n = 0;

    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d)) != NULL)
        n += strstr(de->d_name, ".idx") != NULL;
    closedir(d);
    return n;
}

START_TEST(test_cache)
{
    struct folio_corpus_info in;
    struct folio_corpus *c, *c2;
    char dir[256], cache[256], path[600];
    struct dirent *de;
    DIR *d;
    FILE *f;

    make_dir(dir, sizeof(dir));
    make_dir(cache, sizeof(cache));
    write_bytes(dir, "a.txt", "Hello world\nhello\n", 18);
    c = open_ok(dir, cache);
    folio_corpus_info(c, &in);
    ck_assert_int_eq(in.from_cache, 0);
    ck_assert_int_eq(count_idx(cache), 1);
    c2 = open_ok(dir, cache);
    folio_corpus_info(c2, &in);
    ck_assert_int_eq(in.from_cache, 1);
    ck_assert_uint_eq(count(c2, "hello"), 2);
    ck_assert_uint_eq(count(c2, "world"), 1);
    folio_corpus_free(c2);
    /* a changed corpus: new cache, the old one removed */
    write_bytes(dir, "a.txt", "Hello world\nhellO\nhello again\n", 30);
    c2 = open_ok(dir, cache);
    folio_corpus_info(c2, &in);
    ck_assert_int_eq(in.from_cache, 0);
    ck_assert_uint_eq(count(c2, "hello"), 3);
    ck_assert_int_eq(count_idx(cache), 1);
    /* the first image still answers from its own mapping */
    ck_assert_uint_eq(count(c, "hello"), 2);
    folio_corpus_free(c);
    folio_corpus_free(c2);
    /* a damaged cache file is rebuilt, not trusted */
    d = opendir(cache);
    while ((de = readdir(d)) != NULL)
        if (strstr(de->d_name, ".idx") != NULL)
            snprintf(path, sizeof(path), "%s/%s", cache, de->d_name);
    closedir(d);
    ck_assert_int_eq(truncate(path, 100), 0);
    c = open_ok(dir, cache);
    folio_corpus_info(c, &in);
    ck_assert_int_eq(in.from_cache, 0);
    ck_assert_uint_eq(count(c, "hello"), 3);
    folio_corpus_free(c);
    /* same size, one text byte changed: still not trusted */
    {
        char img[4096], *hit;
        size_t got;

        f = fopen(path, "r+b");
        ck_assert_ptr_nonnull(f);
        got = fread(img, 1, sizeof(img), f);
        hit = memmem(img, got, "hellO\nhello again", 17);
        ck_assert_ptr_nonnull(hit); /* the text section */
        ck_assert_int_eq(fseek(f, (long)(hit - img), SEEK_SET), 0);
        fputc('J', f);
        fclose(f);
    }
    c = open_ok(dir, cache);
    folio_corpus_info(c, &in);
    ck_assert_int_eq(in.from_cache, 0);
    folio_corpus_free(c);
    /*
     * Same size, the text intact, the index damaged (the suffix array, the
     * line table): queries would read out of bounds.  Rebuilt.
     */
    {
        static const char *const what[] = {"suffix array", "line starts",
                                           "rank"};
        struct corpus_hdr h;
        uint64_t off[3];
        unsigned k;

        for (k = 0; k < 3; k++) {
            f = fopen(path, "r+b");
            ck_assert_ptr_nonnull(f);
            ck_assert_uint_eq(fread(&h, sizeof(h), 1, f), 1);
            off[0] = h.h_off_sa;
            off[1] = h.h_off_lstart + 4;
            off[2] = h.h_off_nlrank;
            ck_assert_int_eq(fseek(f, (long)off[k], SEEK_SET), 0);
            fputc(0xff, f);
            fputc(0xff, f);
            fclose(f);
            c = open_ok(dir, cache);
            folio_corpus_info(c, &in);
            ck_assert_msg(in.from_cache == 0, "a damaged %s was trusted",
                          what[k]);
            ck_assert_uint_eq(count(c, "hello"), 3);
            folio_corpus_free(c);
        }
    }
    /* an unwritable cache directory: built in memory all the same */
    snprintf(path, sizeof(path), "%s/missing", cache);
    c = open_ok(dir, path);
    ck_assert_uint_eq(count(c, "hello"), 3);
    folio_corpus_free(c);
    rm_rf(dir);
    rm_rf(cache);
}
END_TEST

START_TEST(test_open_errors)
{
    struct folio_corpus *c = NULL;
    char dir[256], path[400], err[512];

    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/nope", dir);
    ck_assert_int_eq(folio_corpus_open(path, NULL, &c, err, sizeof(err)),
                     FOLIO_ENOTFOUND);
    ck_assert_ptr_null(c);
    ck_assert_ptr_nonnull(strstr(err, "nope"));
    /* a directory without files */
    ck_assert_int_eq(folio_corpus_open(dir, NULL, &c, err, sizeof(err)),
                     FOLIO_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err, "no files"));
    /* a file that cannot be read (a dangling symlink) */
    write_bytes(dir, "a.txt", "abc\n", 4);
    snprintf(path, sizeof(path), "%s/b.txt", dir);
    ck_assert_int_eq(symlink("/nonexistent/folio", path), 0);
    ck_assert_int_eq(folio_corpus_open(dir, NULL, &c, err, sizeof(err)),
                     FOLIO_ESYS);
    ck_assert_ptr_nonnull(strstr(err, "b.txt"));
    /* a plain file is not a directory */
    snprintf(path, sizeof(path), "%s/a.txt", dir);
    ck_assert_int_eq(folio_corpus_open(path, NULL, &c, err, sizeof(err)),
                     FOLIO_ENOTFOUND);
    folio_corpus_free(NULL);
    rm_rf(dir);
}
END_TEST

#endif

/* ---- dist/fetch-corpus.sh: the verification path ---- */

static int
run_sh(const char *cmd)
{
    int st = system(cmd);

    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#ifdef CHECK_SHARED_CORPUS
START_TEST(test_fetch_script_verifies)
{
    const char *src = e2e_corpus();
    char dir[256], cmd[2048], out[300], log[300];
    int st;

    ck_assert_ptr_nonnull(src);
    make_dir(dir, sizeof(dir));
    snprintf(log, sizeof(log), "%s/log", dir);
    snprintf(out, sizeof(out), "%s/copy", dir);
    /* the good copy verifies */
    snprintf(cmd, sizeof(cmd),
             "sh %s/dist/fetch-corpus.sh --verify %s %s/data/shakespeare.SHA256SUMS "
             ">%s 2>&1",
             FOLIO_SRCDIR, src, FOLIO_SRCDIR, log);
    ck_assert_int_eq(run_sh(cmd), 0);
    /* a "download" (from a local URL) of the good files succeeds */
    snprintf(cmd, sizeof(cmd),
             "FOLIO_CORPUS_URL=file://%s sh %s/dist/fetch-corpus.sh %s "
             ">%s 2>&1",
             src, FOLIO_SRCDIR, out, log);
    ck_assert_int_eq(run_sh(cmd), 0);
    /* one changed byte fails loudly */
    snprintf(cmd, sizeof(cmd), "printf x >> %s/hamlet.txt", out);
    ck_assert_int_eq(run_sh(cmd), 0);
    snprintf(cmd, sizeof(cmd),
             "sh %s/dist/fetch-corpus.sh --verify %s >%s 2>&1; st=$?; "
             "grep -q 'hamlet.txt: FAILED' %s && grep -q 'checksum mismatch' %s "
             "&& exit $st",
             FOLIO_SRCDIR, out, log, log, log);
    st = run_sh(cmd);
    ck_assert_int_eq(st, 1);
    /* and a download of a bad copy leaves nothing behind */
    snprintf(cmd, sizeof(cmd),
             "FOLIO_CORPUS_URL=file://%s sh %s/dist/fetch-corpus.sh %s/new "
             ">%s 2>&1",
             out, FOLIO_SRCDIR, dir, log);
    ck_assert_int_eq(run_sh(cmd), 1);
    snprintf(cmd, sizeof(cmd), "test ! -e %s/new && ! ls -a %s | grep -q fetch",
             dir, dir);
    ck_assert_int_eq(run_sh(cmd), 0);
    /* an extra file in the directory is refused too */
    snprintf(cmd, sizeof(cmd),
             "cp %s/hamlet.txt %s/hamlet.txt && echo hi > %s/README && "
             "sh %s/dist/fetch-corpus.sh --verify %s >%s 2>&1",
             src, out, out, FOLIO_SRCDIR, out, log);
    ck_assert_int_eq(run_sh(cmd), 1);
    rm_rf(dir);
}
END_TEST

#else
/* Offline: the download fails, and says how to use a local copy. */
START_TEST(test_fetch_script_offline_hint)
{
    char dir[256], cmd[2048], log[300];

    make_dir(dir, sizeof(dir));
    snprintf(log, sizeof(log), "%s/log", dir);
    snprintf(cmd, sizeof(cmd),
             "FOLIO_CORPUS_URL=file:///nonexistent/folio sh "
             "%s/dist/fetch-corpus.sh %s/copy >%s 2>&1",
             FOLIO_SRCDIR, dir, log);
    ck_assert_int_eq(run_sh(cmd), 1);
    snprintf(cmd, sizeof(cmd),
             "grep -q 'cannot download file:///nonexistent/folio/' %s && "
             "grep -q 'make corpus FOLIO_CORPUS_URL=file:///' %s && "
             "grep -q 'configure --with-corpus=DIR' %s",
             log, log, log);
    ck_assert_int_eq(run_sh(cmd), 0);
    snprintf(cmd, sizeof(cmd), "test ! -e %s/copy", dir);
    ck_assert_int_eq(run_sh(cmd), 0);
    rm_rf(dir);
}
END_TEST

#endif

static Suite *
corpus_suite(void)
{
#ifdef CHECK_SHARED_CORPUS
    Suite *s = suite_create("corpus_shared");
    TCase *tc = tcase_create("shared");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_reference_counts);
    tcase_add_test(tc, test_property_shared_corpus);
    tcase_add_test(tc, test_search_lines);
    tcase_add_test(tc, test_search_bitmaps);
    tcase_add_test(tc, test_no_allocation);
    tcase_add_test(tc, test_fetch_script_verifies);
#else
    Suite *s = suite_create("corpus");
    TCase *tc = tcase_create("synthetic");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_edge_cases);
    tcase_add_test(tc, test_single_line);
    tcase_add_test(tc, test_megabyte_line);
    tcase_add_test(tc, test_random_bytes);
    tcase_add_test(tc, test_file_order_and_names);
    tcase_add_test(tc, test_bad_queries);
    tcase_add_test(tc, test_cache);
    tcase_add_test(tc, test_open_errors);
    tcase_add_test(tc, test_fetch_script_offline_hint);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    int rc;

#ifdef CHECK_SHARED_CORPUS
    e2e_require_corpus();
#endif
    snprintf(shared_cache, sizeof(shared_cache), "%s/folio-corpus.XXXXXX",
             getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(shared_cache) == NULL) {
        perror("mkdtemp");
        return EXIT_FAILURE;
    }
    rc = folio_check_run(corpus_suite());
    rm_rf(shared_cache);
    return rc;
}
