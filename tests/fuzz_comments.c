/*
 * fuzz_comments.c - libFuzzer target: the comments service's validation,
 * path normalization and store.
 *
 * The first byte chooses what the rest is:
 *   0, 1  text: folio_comments_text_check() (1: as a body, where '\n' and
 *         '\t' are allowed) against an independent UTF-8 decoder written
 *         here from RFC 3629 and PROTOCOL.md's rule: the same verdict and
 *         the same offset;
 *   2     a path: folio_comments_normalize() against the rule (prepend
 *         '/' if missing; append '/' if there is no '.' and it does not
 *         end with one);
 *   3     the params array of comments.post, dispatched like a request
 *         (tests/fuzz_harness.c): it must be accepted exactly when the
 *         fields pass the reference rules, the stored comment must be what
 *         was posted (normalized path, ids increasing), and comments.list
 *         of its page must end with it;
 *   4     the params of comments.list, and 5 of comments.delete (admin).
 * A full store (error 8) is emptied and the service restarted.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/comments.h"
#include "src/buf.h"
#include "src/err.h"
#include "src/mp.h"
#include "src/rpc.h"
#include "tests/fuzz_harness.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct folio_buf out, out2;
static uint64_t last_id;

static void
check_text(const uint8_t *p, size_t n, int body)
{
    size_t at = (size_t)-1, want_at = (size_t)-1;
    int st = folio_comments_text_check((const char *)p, n, body, &at);
    int want = fuzz_ref_text(p, n, body, &want_at);

    if (st != want || (want != FOLIO_TEXT_OK && at != want_at))
        fuzz_fail("text_check(%zu bytes, body %d): %d at %zu, reference %d "
                  "at %zu",
                  n, body, st, at, want, want_at);
}

static size_t
ref_normalize(const uint8_t *p, size_t n, char *o)
{
    size_t k = 0;

    if (n == 0 || p[0] != '/')
        o[k++] = '/';
    memcpy(o + k, p, n);
    k += n;
    if (memchr(p, '.', n) == NULL && o[k - 1] != '/')
        o[k++] = '/';
    return k;
}

static void
check_normalize(const uint8_t *p, size_t n)
{
    static char got[FOLIO_COMMENTS_NPATH_MAX + 64], want[sizeof(got)];
    size_t g, w;

    if (n > FOLIO_COMMENTS_PATH_MAX + 32)
        n = FOLIO_COMMENTS_PATH_MAX + 32;
    g = folio_comments_normalize((const char *)p, n, got);
    w = ref_normalize(p, n, want);
    if (g != w || memcmp(got, want, g) != 0)
        fuzz_fail("normalize of %zu bytes: %zu bytes, reference %zu", n, g, w);
}

struct post {
    const char *f[3]; /* path, author, body */
    uint32_t len[3];
    int seen[3], dup, bad_key_type, bad_value;
};

/* The post's fields as the params give them, read with the reference rules. */
static void
read_post(const uint8_t *p, size_t len, struct post *po)
{
    static const char *const names[3] = {"path", "author", "body"};
    struct folio_mp_cur c;
    uint32_t n, i, kl;
    const char *k;
    int f;

    memset(po, 0, sizeof(*po));
    folio_mp_cur_init(&c, p, len);
    /* comments.post takes exactly one param. */
    if (folio_mp_read_array(&c, &n) != 0 || n != 1 ||
        folio_mp_read_map(&c, &n) != 0) {
        po->bad_value = 1;
        return;
    }
    for (i = 0; i < n; i++) {
        if (folio_mp_read_str(&c, &k, &kl) != 0) {
            po->bad_key_type = 1;
            return;
        }
        for (f = 0; f < 3; f++)
            if (folio_mp_str_eq(k, kl, names[f]))
                break;
        if (f == 3) {
            folio_mp_skip(&c);
            continue;
        }
        if (po->seen[f]) {
            po->dup = 1;
            return;
        }
        po->seen[f] = 1;
        if (folio_mp_read_str(&c, &po->f[f], &po->len[f]) != 0) {
            po->bad_value = 1;
            return;
        }
    }
}

static int
post_valid(const struct post *po)
{
    static const size_t max[3] = {FOLIO_COMMENTS_PATH_MAX,
                                  FOLIO_COMMENTS_AUTHOR_MAX,
                                  FOLIO_COMMENTS_BODY_MAX};
    size_t at;
    int f;

    if (po->bad_key_type || po->bad_value || po->dup)
        return 0;
    for (f = 0; f < 3; f++)
        if (!po->seen[f] || po->len[f] < 1 || po->len[f] > max[f] ||
            fuzz_ref_text((const uint8_t *)po->f[f], po->len[f], f == 2, &at) !=
                FOLIO_TEXT_OK)
            return 0;
    return 1;
}

/* Skip a reply's [1, msgid, nil, and return a cursor on its result. */
static struct folio_mp_cur
result_of(const struct folio_buf *b)
{
    struct folio_mp_cur c;
    uint32_t n;

    folio_mp_cur_init(&c, b->b_data, b->b_len);
    folio_mp_read_array(&c, &n);
    folio_mp_skip(&c);
    folio_mp_skip(&c);
    folio_mp_skip(&c);
    return c;
}

static void
expect_str(struct folio_mp_cur *c, const char *key, const char *v, size_t n)
{
    const char *k, *s;
    uint32_t kl, sl;

    if (folio_mp_read_str(c, &k, &kl) != 0 || !folio_mp_str_eq(k, kl, key) ||
        folio_mp_read_str(c, &s, &sl) != 0 || sl != n || memcmp(s, v, n) != 0)
        fuzz_fail("stored comment: %s differs from what was posted", key);
}

static void
check_post(const uint8_t *p, size_t len)
{
    char np[FOLIO_COMMENTS_NPATH_MAX];
    struct folio_mp_cur c;
    struct post po;
    const char *k, *first;
    uint32_t n, kl, i;
    uint64_t id;
    size_t npl;
    int code = fuzz_call("comments.post", p, len, 0, &out), valid;

    if (code < 0)
        return;
    read_post(p, len, &po);
    valid = post_valid(&po);
    if (code == FOLIO_ST_RESOURCE_EXHAUSTED && valid) {
        fuzz_service_restart("comments", "comments");
        last_id = 0;
        return;
    }
    if ((code == 0) != valid)
        fuzz_fail("comments.post answered %d for a post the rules find %s",
                  code, valid ? "valid" : "invalid");
    if (code != 0)
        return;
    /* {"id", "path", "author", "body", "created_at"} */
    c = result_of(&out);
    if (folio_mp_read_map(&c, &n) != 0 || n != 5 ||
        folio_mp_read_str(&c, &k, &kl) != 0 || !folio_mp_str_eq(k, kl, "id") ||
        folio_mp_read_uint(&c, &id) != 0)
        fuzz_fail("stored comment: not a map starting with id");
    if (id <= last_id)
        fuzz_fail("comment id %llu after %llu", (unsigned long long)id,
                  (unsigned long long)last_id);
    last_id = id;
    npl = folio_comments_normalize(po.f[0], po.len[0], np);
    expect_str(&c, "path", np, npl);
    expect_str(&c, "author", po.f[1], po.len[1]);
    expect_str(&c, "body", po.f[2], po.len[2]);
    /* The page lists it last. */
    {
        static uint8_t params[FOLIO_COMMENTS_NPATH_MAX + 8];
        size_t pl = 0;
        struct folio_mp_cur l;

        params[pl++] = 0x91;
        params[pl++] = 0xdb;
        params[pl++] = (uint8_t)(po.len[0] >> 24);
        params[pl++] = (uint8_t)(po.len[0] >> 16);
        params[pl++] = (uint8_t)(po.len[0] >> 8);
        params[pl++] = (uint8_t)po.len[0];
        memcpy(params + pl, po.f[0], po.len[0]);
        pl += po.len[0];
        code = fuzz_call("comments.list", params, pl, 0, &out2);
        if (code == FOLIO_ST_RESOURCE_EXHAUSTED)
            return; /* the page is over max_message_bytes: a case too */
        if (code != 0)
            fuzz_fail("comments.list of a page just posted to: %d", code);
        l = result_of(&out2);
        if (folio_mp_read_array(&l, &n) != 0 || n == 0)
            fuzz_fail("comments.list: the page is empty after a post");
        for (i = 0; i + 1 < n; i++)
            folio_mp_skip(&l);
        first = (const char *)l.p;
        if (folio_mp_skip(&l) != 0)
            fuzz_fail("comments.list: a malformed comment");
        c = result_of(&out);
        if ((size_t)((const char *)l.p - first) != (size_t)(c.end - c.p) ||
            memcmp(first, c.p, (size_t)(c.end - c.p)) != 0)
            fuzz_fail("comments.list: the last comment is not the one posted");
    }
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* Once per process (the replay driver calls it per test case). */
    if (out.b_data != NULL)
        return 0;
    fuzz_setup();
    if (folio_buf_init(&out, 65536, 0) != 0 ||
        folio_buf_init(&out2, 65536, 0) != 0)
        fuzz_fail("no memory");
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (out.b_data == NULL)
        LLVMFuzzerInitialize(NULL, NULL);
    if (size < 1)
        return 0;
    switch (data[0] % 6) {
    case 0:
    case 1:
        check_text(data + 1, size - 1, data[0] % 6);
        break;
    case 2:
        check_normalize(data + 1, size - 1);
        break;
    case 3:
        check_post(data + 1, size - 1);
        break;
    case 4:
        fuzz_call("comments.list", data + 1, size - 1, 0, &out);
        break;
    default:
        fuzz_call("comments.delete", data + 1, size - 1, 1, &out);
        break;
    }
    return 0;
}
