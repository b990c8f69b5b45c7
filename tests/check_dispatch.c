/*
 * check_dispatch.c - worker/dispatch.c on a masterless worker
 * (tests/fuzz_harness.h): what a reply leaves in the connection's output
 * buffer, in particular when packing it makes the buffer move its pending
 * bytes to the front (the client had read only part of the earlier
 * replies).  A reply that is dropped (a notification's, or an error's
 * partial result) must be dropped from where it really starts.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "src/buf.h"
#include "src/err.h"
#include "src/mp.h"
#include "src/rpc.h"
#include "tests/fuzz_harness.h"

#define CAP 16384

/*
 * An output buffer as a slow reader leaves it: `sent` bytes already
 * written (b_off), `pending` bytes of earlier replies waiting, the end
 * `room` bytes short of the capacity.  The pending bytes are a pattern
 * that must come out unchanged.
 */
static void
fill(struct folio_buf *out, size_t sent, size_t room)
{
    size_t i;

    ck_assert_int_eq(folio_buf_init(out, CAP, 0), 0);
    for (i = 0; i < CAP - room; i++)
        out->b_data[i] = (char)(i * 7);
    out->b_off = sent;
    out->b_len = CAP - room;
}

static void
assert_pattern_kept(const struct folio_buf *out, size_t sent, size_t room)
{
    size_t i, n = CAP - room - sent;

    ck_assert_uint_ge(folio_buf_pending(out), n);
    /* One assertion, not one per byte: each is a message to Check. */
    for (i = 0; i < n; i++)
        if (out->b_data[out->b_off + i] != (char)((sent + i) * 7))
            break;
    ck_assert_msg(i == n, "pending byte %zu changed", i);
}

/* The replies after the earlier pending bytes: how many, the first code. */
static size_t
replies_after(const struct folio_buf *out, size_t earlier, int *code)
{
    return fuzz_check_replies(out->b_data + out->b_off + earlier,
                              folio_buf_pending(out) - earlier, code);
}

static const unsigned char no_params[] = {0x90};
static const unsigned char two_params[] = {0x92, 0x01, 0x02};

START_TEST(test_notification_dropped_after_compaction)
{
    struct folio_buf out;
    size_t sent = 8064, room, before;

    /* Every position of the buffer's end relative to the reply's bytes. */
    for (room = 0; room < 800; room++) {
        fill(&out, sent, room);
        before = folio_buf_pending(&out);
        ck_assert_int_eq(fuzz_dispatch("server.methods", no_params,
                                       sizeof(no_params), 1, 0, &out),
                         0);
        ck_assert_msg(folio_buf_pending(&out) == before,
                      "room %zu: a notification left %zu bytes", room,
                      folio_buf_pending(&out) - before);
        assert_pattern_kept(&out, sent, room);
        folio_buf_free(&out);
    }
}
END_TEST

START_TEST(test_error_replaces_result_after_compaction)
{
    struct folio_buf out;
    size_t sent = 8064, room, before;
    int code;

    for (room = 0; room < 64; room++) {
        fill(&out, sent, room);
        before = folio_buf_pending(&out);
        /* Wrong arity: the result's head is packed, then dropped. */
        ck_assert_int_eq(fuzz_dispatch("server.ping", two_params,
                                       sizeof(two_params), 0, 0, &out),
                         0);
        assert_pattern_kept(&out, sent, room);
        ck_assert_uint_eq(replies_after(&out, before, &code), 1);
        ck_assert_int_eq(code, FOLIO_ST_INVALID_ARGUMENT);
        folio_buf_free(&out);
    }
}
END_TEST

START_TEST(test_result_after_compaction)
{
    struct folio_buf out;
    size_t sent = 8064, room, before;
    int code;

    for (room = 0; room < 800; room += 7) {
        fill(&out, sent, room);
        before = folio_buf_pending(&out);
        ck_assert_int_eq(fuzz_dispatch("server.methods", no_params,
                                       sizeof(no_params), 0, 0, &out),
                         0);
        assert_pattern_kept(&out, sent, room);
        ck_assert_uint_eq(replies_after(&out, before, &code), 1);
        ck_assert_int_eq(code, 0);
        folio_buf_free(&out);
    }
}
END_TEST

START_TEST(test_unknown_method_and_admin)
{
    struct folio_buf out;
    int code;

    ck_assert_int_eq(folio_buf_init(&out, 256, 0), 0);
    code = fuzz_call("no.such", no_params, sizeof(no_params), 0, &out);
    ck_assert_int_eq(code, FOLIO_ST_UNIMPLEMENTED);
    code = fuzz_call("server.stats", no_params, sizeof(no_params), 0, &out);
    ck_assert_int_eq(code, FOLIO_ST_PERMISSION_DENIED);
    code = fuzz_call("server.stats", no_params, sizeof(no_params), 1, &out);
    ck_assert_int_eq(code, 0);
    folio_buf_free(&out);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("dispatch");
    TCase *tc = tcase_create("output");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_notification_dropped_after_compaction);
    tcase_add_test(tc, test_error_replaces_result_after_compaction);
    tcase_add_test(tc, test_result_after_compaction);
    tcase_add_test(tc, test_unknown_method_and_admin);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
