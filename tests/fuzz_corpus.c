/*
 * fuzz_corpus.c - libFuzzer target: the corpus service's parameters and
 * its matching rule.
 *
 * The first byte chooses what the rest is:
 *   0  a query, checked differentially: folio_corpus_count() and
 *      folio_corpus_search() against a naive scan of the fixture corpus
 *      (PROTOCOL.md section 3: a line matches when its ASCII-lowercased
 *      bytes contain the ASCII-lowercased query), with limit and offset
 *      from the next two bytes;
 *   1  the params array of corpus.match_count,
 *   2  of corpus.search (query, opts),
 *   3  of corpus.info,
 * each dispatched like a request (tests/fuzz_harness.c), its reply
 * checked.  For 1 and 2, a reply that succeeds must give the naive count.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "shm/corpus.h"
#include "src/buf.h"
#include "src/err.h"
#include "src/mp.h"
#include "src/rpc.h"
#include "tests/fuzz_harness.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct folio_corpus_scratch *scratch;
static uint32_t ids[FOLIO_CORPUS_MAX_LIMIT];
static struct folio_buf out;

static unsigned char
lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* Whether line l[0..n) contains q[0..qn), ASCII case-insensitively. */
static int
contains(const char *l, size_t n, const char *q, size_t qn)
{
    size_t i, j;

    if (qn > n)
        return 0;
    for (i = 0; i + qn <= n; i++) {
        for (j = 0; j < qn; j++)
            if (lower((unsigned char)l[i + j]) != lower((unsigned char)q[j]))
                break;
        if (j == qn)
            return 1;
    }
    return 0;
}

/* The rule, the slow way: every piece of every file split on "\n". */
static uint64_t
naive_count(const char *q, size_t qn)
{
    uint64_t count = 0;
    unsigned f;

    for (f = 0; f < fuzz_ncorpus_files; f++) {
        const char *t = fuzz_corpus_files[f].text;
        const char *end = t + fuzz_corpus_files[f].len, *nl;

        for (;;) {
            nl = memchr(t, '\n', (size_t)(end - t));
            if (contains(t, (size_t)((nl != NULL ? nl : end) - t), q, qn))
                count++;
            if (nl == NULL)
                break;
            t = nl + 1;
        }
    }
    return count;
}

static void
check_query(const char *q, size_t qn, uint64_t offset, uint32_t limit)
{
    const struct folio_corpus *c = fuzz_corpus();
    struct folio_corpus_line ln;
    uint64_t count, scount, want;
    uint32_t n, i;
    int rc;

    rc = folio_corpus_count(c, q, qn, &count);
    if (qn == 0 || qn > FOLIO_CORPUS_MAX_QUERY) {
        if (rc != FOLIO_EINVAL)
            fuzz_fail("count of a %zu-byte query: %d, not EINVAL", qn, rc);
        return;
    }
    if (rc != 0)
        fuzz_fail("count failed: %d", rc);
    want = naive_count(q, qn);
    if (count != want)
        fuzz_fail("count %llu, naive scan %llu", (unsigned long long)count,
                  (unsigned long long)want);
    rc =
        folio_corpus_search(c, scratch, q, qn, offset, limit, &scount, ids, &n);
    if (rc != 0)
        fuzz_fail("search failed: %d", rc);
    if (scount != want)
        fuzz_fail("search count %llu, naive %llu", (unsigned long long)scount,
                  (unsigned long long)want);
    want = offset >= want ? 0 : want - offset;
    if (n != (want < limit ? want : limit))
        fuzz_fail("search gave %u lines: count %llu offset %llu limit %u", n,
                  (unsigned long long)scount, (unsigned long long)offset,
                  limit);
    for (i = 0; i < n; i++) {
        if (i > 0 && ids[i] <= ids[i - 1])
            fuzz_fail("lines out of corpus order");
        folio_corpus_line(c, ids[i], &ln);
        if (!contains(ln.text, ln.len, q, qn))
            fuzz_fail("line %u of %.*s does not contain the query", ln.line,
                      (int)ln.work_len, ln.work);
    }
}

/* corpus.match_count/search through dispatch; on success, the count. */
static void
check_call(const char *method, const uint8_t *p, size_t len)
{
    struct folio_mp_cur c;
    const char *q, *k;
    uint32_t n, qn, kn;
    uint64_t got;
    int code = fuzz_call(method, p, len, 0, &out);

    if (code != 0 || strcmp(method, "corpus.info") == 0)
        return;
    /* The query is the first param (the call succeeded: it is a str). */
    folio_mp_cur_init(&c, p, len);
    if (folio_mp_read_array(&c, &n) != 0 || folio_mp_read_str(&c, &q, &qn) != 0)
        fuzz_fail("%s succeeded without a str query", method);
    /* The reply's result: an int, or a map whose "count" comes first. */
    folio_mp_cur_init(&c, out.b_data, out.b_len);
    folio_mp_read_array(&c, &n);
    folio_mp_skip(&c); /* 1 */
    folio_mp_skip(&c); /* msgid */
    folio_mp_skip(&c); /* nil */
    if (folio_mp_read_map(&c, &n) == 0 &&
        (folio_mp_read_str(&c, &k, &kn) != 0 ||
         !folio_mp_str_eq(k, kn, "count")))
        fuzz_fail("%s: the result does not start with count", method);
    if (folio_mp_read_uint(&c, &got) != 0)
        fuzz_fail("%s: the count is not an int", method);
    if (got != naive_count(q, qn))
        fuzz_fail("%s: %llu, naive scan %llu", method, (unsigned long long)got,
                  (unsigned long long)naive_count(q, qn));
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* Once per process (the replay driver calls it per test case). */
    if (scratch != NULL)
        return 0;
    fuzz_setup();
    if (folio_corpus_scratch_new(&scratch) != 0 ||
        folio_buf_init(&out, 65536, 0) != 0)
        fuzz_fail("no memory");
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const methods[] = {"corpus.match_count", "corpus.search",
                                          "corpus.info"};

    if (scratch == NULL)
        LLVMFuzzerInitialize(NULL, NULL);
    if (size < 1)
        return 0;
    switch (data[0] & 3) {
    case 0:
        if (size < 3)
            return 0;
        check_query((const char *)data + 3, size - 3, data[1],
                    (uint32_t)data[2] * 4 % (FOLIO_CORPUS_MAX_LIMIT + 1));
        break;
    default:
        check_call(methods[(data[0] & 3) - 1], data + 1, size - 1);
        break;
    }
    return 0;
}
