/*
 * check_comments_cache.c - the PostgreSQL backend's page cache
 * (worker/comments_cache.c): hits and misses, replacement, the byte bound
 * and least-recently-used eviction, invalidation by page and of all, the
 * epoch that keeps a list read before an invalidation out of the cache,
 * the JSON the HTTP face attaches to a page, and no allocation on a hit.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "src/alloc.h"
#include "src/bytes.h"
#include "src/err.h"
#include "tests/check_run.h"
#include "worker/comments_cache.h"

static const void *
get(struct folio_ccache *c, const char *path, size_t *len)
{
    struct folio_bytes *b = folio_ccache_get(c, path, strlen(path));

    if (b == NULL)
        return NULL;
    *len = b->fb_len;
    return b->fb_data;
}

/* Cache a copy of `reply`; the cache keeps the only reference. */
static int
put(struct folio_ccache *c, const char *path, const char *reply)
{
    struct folio_bytes *b;
    int rc;

    ck_assert_int_eq(folio_bytes_copy(reply, strlen(reply), &b), 0);
    rc = folio_ccache_put(c, path, strlen(path), b);
    folio_bytes_unref(b);
    return rc;
}

START_TEST(test_get_put_drop)
{
    struct folio_ccache *c;
    const char *p;
    size_t len;

    ck_assert_int_eq(folio_ccache_new(1u << 20, &c), 0);
    ck_assert_ptr_null(get(c, "/a/", &len));
    ck_assert_int_eq(put(c, "/a/", "\x91reply-a"), 0);
    ck_assert_int_eq(put(c, "/b/", "\x90"), 0);
    p = get(c, "/a/", &len);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(len, 8);
    ck_assert_int_eq(memcmp(p, "\x91reply-a", 8), 0);
    /* a path is its own key: no prefix match */
    ck_assert_ptr_null(get(c, "/a", &len));
    ck_assert_ptr_null(get(c, "/a/x", &len));
    /* replaced */
    ck_assert_int_eq(put(c, "/a/", "\x92new"), 0);
    p = get(c, "/a/", &len);
    ck_assert_uint_eq(len, 4);
    ck_assert_int_eq(memcmp(p, "\x92new", 4), 0);
    folio_ccache_drop(c, "/a/", 3);
    ck_assert_ptr_null(get(c, "/a/", &len));
    ck_assert_ptr_nonnull(get(c, "/b/", &len));
    folio_ccache_clear(c);
    ck_assert_ptr_null(get(c, "/b/", &len));
    folio_ccache_free(c);
    folio_ccache_free(NULL);
}
END_TEST

/* The byte bound holds; the least recently used page goes first. */
START_TEST(test_bound_and_lru)
{
    struct folio_ccache *c;
    struct folio_ccache_info in;
    char path[32], reply[1000];
    size_t len;
    int i, present = 0;

    memset(reply, 'r', sizeof(reply) - 1);
    reply[sizeof(reply) - 1] = '\0';
    ck_assert_int_eq(folio_ccache_new(20000, &c), 0);
    for (i = 0; i < 100; i++) {
        snprintf(path, sizeof(path), "/p%d/", i);
        ck_assert_int_eq(put(c, path, reply), 0);
        /* keep page 0 in use */
        ck_assert_ptr_nonnull(get(c, "/p0/", &len));
        folio_ccache_info(c, &in);
        ck_assert_uint_le(in.bytes, 20000);
    }
    ck_assert_uint_gt(in.evictions, 0);
    ck_assert_ptr_nonnull(get(c, "/p0/", &len));
    ck_assert_ptr_nonnull(get(c, "/p99/", &len));
    ck_assert_ptr_null(get(c, "/p1/", &len));
    for (i = 0; i < 100; i++) {
        snprintf(path, sizeof(path), "/p%d/", i);
        present += get(c, path, &len) != NULL;
    }
    ck_assert_uint_eq((uint64_t)present, in.entries);
    /* larger than a quarter of the cache: not cached */
    {
        static char big[6000];

        memset(big, 'b', sizeof(big) - 1);
        ck_assert_int_eq(put(c, "/big/", big), FOLIO_ETOOBIG);
        ck_assert_ptr_null(get(c, "/big/", &len));
    }
    folio_ccache_free(c);
}
END_TEST

/*
 * A list sent at epoch e may go in the cache only if its page was not
 * invalidated since: the database may have read it before the commit.
 */
START_TEST(test_epoch)
{
    struct folio_ccache *c;
    uint64_t e0, e1;

    ck_assert_int_eq(folio_ccache_new(1u << 20, &c), 0);
    e0 = folio_ccache_epoch(c);
    ck_assert(folio_ccache_fresh(c, "/a/", 3, e0));
    folio_ccache_drop(c, "/b/", 3);
    ck_assert(folio_ccache_fresh(c, "/a/", 3, e0)); /* another page */
    ck_assert(!folio_ccache_fresh(c, "/b/", 3, e0));
    e1 = folio_ccache_epoch(c);
    ck_assert_uint_gt(e1, e0);
    ck_assert(folio_ccache_fresh(c, "/b/", 3, e1));
    folio_ccache_clear(c); /* a reconnect: every page */
    ck_assert(!folio_ccache_fresh(c, "/a/", 3, e1));
    ck_assert(folio_ccache_fresh(c, "/a/", 3, folio_ccache_epoch(c)));
    folio_ccache_free(c);
}
END_TEST

/*
 * A reply handed out and kept (a connection still sending it) outlives
 * its entry: dropped, replaced or cleared, the holder's bytes stay.
 */
START_TEST(test_reply_outlives_entry)
{
    struct folio_ccache *c;
    struct folio_bytes *b;

    ck_assert_int_eq(folio_ccache_new(1u << 20, &c), 0);
    ck_assert_int_eq(put(c, "/a/", "\x91" "first"), 0);
    b = folio_bytes_ref(folio_ccache_get(c, "/a/", 3));
    ck_assert_uint_eq(b->fb_refs, 2);
    ck_assert_int_eq(put(c, "/a/", "\x91" "second"), 0); /* replaced */
    ck_assert_uint_eq(b->fb_refs, 1);
    ck_assert_int_eq(memcmp(b->fb_data, "\x91" "first", 6), 0);
    folio_ccache_clear(c);
    ck_assert_int_eq(memcmp(b->fb_data, "\x91" "first", 6), 0);
    folio_bytes_unref(b);
    folio_ccache_free(c);
}
END_TEST

/* A hit allocates nothing (the normal build counts the malloc family). */
/*
 * The HTTP face's JSON of a page: attached only to the very reply it was
 * made from, and gone with it (replaced, dropped, cleared, evicted).
 */
START_TEST(test_attach)
{
    struct folio_ccache *c;
    struct folio_ccache_info info;
    struct folio_bytes *x;
    const char *p;
    size_t len;
    char big[2100];

    ck_assert_int_eq(folio_ccache_new(4096, &c), 0);
    ck_assert_int_eq(folio_ccache_attach(c, "/a/", 3, "\x91x", 2, "[1]", 3),
                     FOLIO_ENOTFOUND);
    ck_assert_int_eq(put(c, "/a/", "\x91x"), 0);
    ck_assert_ptr_null(folio_ccache_get_extra(c, "/a/", 3));
    /* Made from another reply (the page moved on): refused. */
    ck_assert_int_eq(folio_ccache_attach(c, "/a/", 3, "\x91y", 2, "[2]", 3),
                     FOLIO_ENOTFOUND);
    ck_assert_int_eq(folio_ccache_attach(c, "/a/", 3, "\x91x", 2, "[1]", 3), 0);
    ck_assert_ptr_nonnull(x = folio_ccache_get_extra(c, "/a/", 3));
    ck_assert(x->fb_len == 3 && memcmp(x->fb_data, "[1]", 3) == 0);
    /* The reply is as it was, and counted with the JSON. */
    ck_assert_ptr_nonnull(p = get(c, "/a/", &len));
    ck_assert(len == 2 && memcmp(p, "\x91x", 2) == 0);
    folio_ccache_info(c, &info);
    ck_assert_uint_eq(info.entries, 1);
    /* Replaced: a new reply has no JSON. */
    ck_assert_int_eq(put(c, "/a/", "\x91z"), 0);
    ck_assert_ptr_null(folio_ccache_get_extra(c, "/a/", 3));
    ck_assert_int_eq(folio_ccache_attach(c, "/a/", 3, "\x91z", 2, "[3]", 3), 0);
    folio_ccache_drop(c, "/a/", 3);
    ck_assert_ptr_null(folio_ccache_get_extra(c, "/a/", 3));
    ck_assert_int_eq(put(c, "/b/", "\x90"), 0);
    ck_assert_int_eq(folio_ccache_attach(c, "/b/", 3, "\x90", 1, "[]", 2), 0);
    folio_ccache_clear(c);
    ck_assert_ptr_null(folio_ccache_get_extra(c, "/b/", 3));
    /* The bound holds with the JSON: older pages go to make room. */
    folio_ccache_free(c);
    ck_assert_int_eq(folio_ccache_new(8192, &c), 0);
    memset(big, 'j', sizeof(big));
    for (len = 0; len < 5; len++) {
        char path[8];

        snprintf(path, sizeof(path), "/p%zu/", len);
        ck_assert_int_eq(put(c, path, "\x90"), 0);
        ck_assert_int_eq(folio_ccache_attach(c, path, 4, "\x90", 1, big, 1900),
                         0);
    }
    folio_ccache_info(c, &info);
    ck_assert_uint_le(info.bytes, info.max_bytes);
    ck_assert_uint_gt(info.evictions, 0);
    ck_assert_ptr_null(folio_ccache_get_extra(c, "/p0/", 4));
    ck_assert_ptr_nonnull(folio_ccache_get_extra(c, "/p4/", 4));
    /* More than a quarter of the cache: not kept. */
    ck_assert_int_eq(
        folio_ccache_attach(c, "/p4/", 4, "\x90", 1, big, sizeof(big)),
        FOLIO_ETOOBIG);
    folio_ccache_free(c);
}
END_TEST

START_TEST(test_hit_allocates_nothing)
{
    struct folio_ccache *c;
    struct folio_alloc_counters *ac = folio_alloc_current();
    uint64_t before, after;
    size_t len;
    int i, misses = 0;

    ck_assert_int_eq(folio_ccache_new(1u << 20, &c), 0);
    ck_assert_int_eq(put(c, "/a/", "\x91x"), 0);
    ck_assert_int_eq(put(c, "/b/", "\x91y"), 0);
    /* no Check assertion inside: they allocate */
    before = atomic_load(&ac->ac_calls);
    for (i = 0; i < 10000; i++)
        misses += get(c, i % 2 ? "/a/" : "/b/", &len) == NULL;
    after = atomic_load(&ac->ac_calls);
    ck_assert_int_eq(misses, 0);
    if (folio_alloc_interposed())
        ck_assert_uint_eq(after, before);
    folio_ccache_free(c);
}
END_TEST

static Suite *
cache_suite(void)
{
    Suite *s = suite_create("comments_cache");
    TCase *tc = tcase_create("cache");

    tcase_add_test(tc, test_get_put_drop);
    tcase_add_test(tc, test_bound_and_lru);
    tcase_add_test(tc, test_epoch);
    tcase_add_test(tc, test_attach);
    tcase_add_test(tc, test_reply_outlives_entry);
    tcase_add_test(tc, test_hit_allocates_nothing);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(cache_suite());
}
