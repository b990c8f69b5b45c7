/*
 * check_buf.c - connection buffers: compaction before growth, the growth
 * limit, shrinking back, and the packer callback.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "src/buf.h"
#include "src/err.h"
#include "tests/check_run.h"

START_TEST(test_compact_before_grow)
{
    struct folio_buf b;
    char data[100];

    memset(data, 'x', sizeof(data));
    ck_assert_int_eq(folio_buf_init(&b, 128, 1024), 0);
    ck_assert_int_eq(folio_buf_append(&b, data, 100), 0);
    folio_buf_consume(&b, 90);
    /* 10 pending at offset 90: 100 more fit after moving them forward. */
    ck_assert_int_eq(folio_buf_append(&b, data, 100), 0);
    ck_assert_uint_eq(b.b_cap, 128);
    ck_assert_uint_eq(b.b_off, 0);
    ck_assert_uint_eq(folio_buf_pending(&b), 110);
    folio_buf_free(&b);
}
END_TEST

START_TEST(test_grow_limit_shrink)
{
    struct folio_buf b;
    char *big = calloc(1, 2048);

    ck_assert_int_eq(folio_buf_init(&b, 128, 1024), 0);
    ck_assert_int_eq(folio_buf_append(&b, big, 1000), 0);
    ck_assert_uint_ge(b.b_cap, 1000);
    ck_assert_uint_le(b.b_cap, 1024);
    ck_assert_int_eq(folio_buf_append(&b, big, 100), FOLIO_ETOOBIG);
    ck_assert_uint_eq(folio_buf_pending(&b), 1000);
    folio_buf_shrink(&b); /* not empty: keeps its size */
    ck_assert_uint_ge(b.b_cap, 1000);
    folio_buf_consume(&b, 1000);
    folio_buf_shrink(&b);
    ck_assert_uint_eq(b.b_cap, 128);
    folio_buf_free(&b);
    free(big);
}
END_TEST

START_TEST(test_pack_write_and_truncate)
{
    struct folio_buf b;

    ck_assert_int_eq(folio_buf_init(&b, 4, 8), 0);
    ck_assert_int_eq(folio_buf_pack_write(&b, "abcdef", 6), 0);
    ck_assert_int_eq(b.b_failed, 0);
    ck_assert_int_eq(folio_buf_pack_write(&b, "ghi", 3), -1);
    ck_assert_int_eq(b.b_failed, FOLIO_ETOOBIG);
    folio_buf_truncate(&b, 2);
    ck_assert_uint_eq(folio_buf_pending(&b), 2);
    ck_assert_int_eq(memcmp(b.b_data, "ab", 2), 0);
    folio_buf_free(&b);
}
END_TEST

static Suite *
buf_suite(void)
{
    Suite *s = suite_create("buf");
    TCase *tc = tcase_create("buf");

    tcase_add_test(tc, test_compact_before_grow);
    tcase_add_test(tc, test_grow_limit_shrink);
    tcase_add_test(tc, test_pack_write_and_truncate);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(buf_suite());
}
