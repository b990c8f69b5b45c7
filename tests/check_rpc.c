/*
 * check_rpc.c - msgpack-RPC message parsing and packing: requests,
 * notifications, responses, and every malformed shape with whether its
 * msgid can still be answered.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "src/buf.h"
#include "src/err.h"
#include "src/mp.h"
#include "src/rpc.h"
#include "tests/check_run.h"

static msgpack_sbuffer sb;
static msgpack_packer pk;

static void
setup(void)
{
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
}

static void
teardown(void)
{
    msgpack_sbuffer_destroy(&sb);
}

START_TEST(test_request)
{
    struct folio_rpc_msg m;
    const char *why, *s;
    uint32_t len;

    folio_rpc_pack_request_head(&pk, 0, 77, "corpus.match_count", 1);
    folio_pack_cstr(&pk, "hello");
    ck_assert_int_eq(folio_rpc_parse(sb.data, sb.size, &m, &why), 0);
    ck_assert_int_eq(m.type, FOLIO_RPC_REQUEST);
    ck_assert(m.has_msgid);
    ck_assert_uint_eq(m.msgid, 77);
    ck_assert(folio_mp_str_eq(m.method, m.method_len, "corpus.match_count"));
    ck_assert_uint_eq(m.nparams, 1);
    ck_assert_int_eq(folio_mp_read_str(&m.params, &s, &len), 0);
    ck_assert(folio_mp_str_eq(s, len, "hello"));
}
END_TEST

START_TEST(test_notification)
{
    struct folio_rpc_msg m;
    const char *why;

    folio_rpc_pack_request_head(&pk, 1, 0, "server.ping", 0);
    ck_assert_int_eq(folio_rpc_parse(sb.data, sb.size, &m, &why), 0);
    ck_assert_int_eq(m.type, FOLIO_RPC_NOTIFY);
    ck_assert(!m.has_msgid);
    ck_assert_uint_eq(m.nparams, 0);
}
END_TEST

/*
 * A method name sent as bin (msgpack-RPC clients from before the str/bin
 * split, Neovim's among them) is read exactly like a str: requests and
 * notifications, every bin width.
 */
START_TEST(test_bin_method)
{
    static const char name[] = "server.ping";
    char long_name[300];
    struct folio_rpc_msg m;
    const char *why;
    int notify;

    for (notify = 0; notify <= 1; notify++) {
        msgpack_sbuffer_clear(&sb);
        msgpack_pack_array(&pk, notify ? 3 : 4);
        msgpack_pack_int(&pk, notify ? 2 : 0);
        if (!notify)
            msgpack_pack_uint32(&pk, 9);
        msgpack_pack_bin_with_body(&pk, name, sizeof(name) - 1);
        msgpack_pack_array(&pk, 1);
        msgpack_pack_int(&pk, 1);
        ck_assert_int_eq(folio_rpc_parse(sb.data, sb.size, &m, &why), 0);
        ck_assert_int_eq(m.type, notify ? FOLIO_RPC_NOTIFY : FOLIO_RPC_REQUEST);
        ck_assert(folio_mp_str_eq(m.method, m.method_len, name));
        ck_assert_uint_eq(m.nparams, 1);
        ck_assert_uint_eq(m.msgid, notify ? 0 : 9);
    }
    /* bin 16: a name longer than 255 bytes (unknown, but read). */
    memset(long_name, 'x', sizeof(long_name));
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_int(&pk, 0);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_bin_with_body(&pk, long_name, sizeof(long_name));
    msgpack_pack_array(&pk, 0);
    ck_assert_int_eq(folio_rpc_parse(sb.data, sb.size, &m, &why), 0);
    ck_assert_uint_eq(m.method_len, sizeof(long_name));
    /* A truncated bin is not a method. */
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_int(&pk, 0);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_bin(&pk, 20);
    msgpack_pack_bin_body(&pk, "server", 6);
    ck_assert_int_eq(folio_rpc_parse(sb.data, sb.size, &m, &why), FOLIO_EPROTO);
    ck_assert(m.has_msgid);
}
END_TEST

START_TEST(test_response_heads)
{
    static const uint32_t ids[] = {0, 1, 127, 128, 255, 256, 65535, 65536,
                                   UINT32_MAX};
    struct folio_rpc_msg m;
    struct folio_buf b;
    msgpack_packer bp;
    const char *why;
    int64_t v;
    size_t i;

    ck_assert_int_eq(folio_buf_init(&b, 16, 0), 0);
    msgpack_packer_init(&bp, &b, folio_buf_pack_write);
    for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        folio_buf_reset(&b);
        ck_assert_int_eq(folio_rpc_pack_result_head(&bp, ids[i]), 0);
        msgpack_pack_int(&bp, 42);
        ck_assert_int_eq(folio_rpc_parse(b.b_data, b.b_len, &m, &why), 0);
        ck_assert_int_eq(m.type, FOLIO_RPC_RESPONSE);
        ck_assert_uint_eq(m.msgid, ids[i]);
        ck_assert_int_eq(folio_mp_read_nil(&m.error), 0);
        ck_assert_int_eq(folio_mp_read_int(&m.result, &v), 0);
        ck_assert_int_eq(v, 42);
    }
    folio_buf_reset(&b);
    folio_rpc_pack_error(&bp, 9, 5, "not here", 8);
    ck_assert_int_eq(folio_rpc_parse(b.b_data, b.b_len, &m, &why), 0);
    ck_assert_uint_eq(m.msgid, 9);
    ck_assert_int_eq(folio_mp_type(&m.error), FOLIO_MP_ARRAY);
    ck_assert_int_eq(folio_mp_read_nil(&m.result), 0);
    folio_buf_free(&b);
}
END_TEST

/* Each malformed message: parse fails, and has_msgid says if it can be answered. */
static void
expect_bad(int has_msgid)
{
    struct folio_rpc_msg m;
    const char *why = NULL;

    ck_assert_int_eq(folio_rpc_parse(sb.data, sb.size, &m, &why), FOLIO_EPROTO);
    ck_assert_ptr_nonnull(why);
    ck_assert_int_eq(m.has_msgid, has_msgid);
    msgpack_sbuffer_clear(&sb);
}

/*
 * A request whose msgid is the integer neg (if < 0) or pos: parse fails,
 * but it can be answered, and the error reply echoes that very integer.
 */
static void
expect_bad_id(int64_t neg, uint64_t pos)
{
    struct folio_rpc_msg m;
    msgpack_sbuffer rb;
    msgpack_packer rpk;
    msgpack_unpacked u;
    const char *why = NULL;

    msgpack_pack_array(&pk, 4);
    msgpack_pack_int(&pk, 0);
    if (neg < 0)
        msgpack_pack_int64(&pk, neg);
    else
        msgpack_pack_uint64(&pk, pos);
    msgpack_pack_str_with_body(&pk, "m", 1);
    msgpack_pack_array(&pk, 0);
    ck_assert_int_eq(folio_rpc_parse(sb.data, sb.size, &m, &why), FOLIO_EPROTO);
    ck_assert_str_eq(why, "msgid must be an unsigned 32-bit integer");
    ck_assert_int_eq(m.has_msgid, 1);
    msgpack_sbuffer_init(&rb);
    msgpack_packer_init(&rpk, &rb, msgpack_sbuffer_write);
    ck_assert_int_eq(folio_rpc_pack_error_id(&rpk, &m.id, 3, why, strlen(why)),
                     0);
    msgpack_unpacked_init(&u);
    ck_assert_int_eq(msgpack_unpack_next(&u, rb.data, rb.size, NULL),
                     MSGPACK_UNPACK_SUCCESS);
    ck_assert_int_eq(u.data.type, MSGPACK_OBJECT_ARRAY);
    ck_assert_uint_eq(u.data.via.array.size, 4);
    ck_assert_uint_eq(u.data.via.array.ptr[0].via.u64, 1);
    if (neg < 0) {
        ck_assert_int_eq(u.data.via.array.ptr[1].type,
                         MSGPACK_OBJECT_NEGATIVE_INTEGER);
        ck_assert_int_eq(u.data.via.array.ptr[1].via.i64, neg);
    } else {
        ck_assert_int_eq(u.data.via.array.ptr[1].type,
                         MSGPACK_OBJECT_POSITIVE_INTEGER);
        ck_assert_uint_eq(u.data.via.array.ptr[1].via.u64, pos);
    }
    ck_assert_uint_eq(u.data.via.array.ptr[2].via.array.ptr[0].via.u64, 3);
    ck_assert_int_eq(u.data.via.array.ptr[3].type, MSGPACK_OBJECT_NIL);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&rb);
    msgpack_sbuffer_clear(&sb);
}

START_TEST(test_malformed)
{
    msgpack_pack_int(&pk, 1); /* not an array */
    expect_bad(0);
    msgpack_pack_array(&pk, 5); /* wrong arity */
    for (int i = 0; i < 5; i++)
        msgpack_pack_int(&pk, 0);
    expect_bad(0);
    msgpack_pack_array(&pk, 4); /* type not an int */
    msgpack_pack_str_with_body(&pk, "x", 1);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_str_with_body(&pk, "m", 1);
    msgpack_pack_array(&pk, 0);
    expect_bad(0);
    msgpack_pack_array(&pk, 4); /* unknown type */
    msgpack_pack_int(&pk, 7);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_str_with_body(&pk, "m", 1);
    msgpack_pack_array(&pk, 0);
    expect_bad(0);
    /* msgids out of range: answerable, with the msgid as sent */
    expect_bad_id(-1, 0);
    expect_bad_id(INT64_MIN, 0);
    expect_bad_id(0, 1ull << 32);
    expect_bad_id(0, UINT64_MAX);
    msgpack_pack_array(&pk, 4); /* msgid not an integer */
    msgpack_pack_int(&pk, 0);
    msgpack_pack_str_with_body(&pk, "1", 1);
    msgpack_pack_str_with_body(&pk, "m", 1);
    msgpack_pack_array(&pk, 0);
    expect_bad(0);
    msgpack_pack_array(&pk, 4); /* msgid a float */
    msgpack_pack_int(&pk, 0);
    msgpack_pack_double(&pk, 1.0);
    msgpack_pack_str_with_body(&pk, "m", 1);
    msgpack_pack_array(&pk, 0);
    expect_bad(0);
    msgpack_pack_array(&pk, 4); /* method not a string */
    msgpack_pack_int(&pk, 0);
    msgpack_pack_int(&pk, 5);
    msgpack_pack_int(&pk, 3);
    msgpack_pack_array(&pk, 0);
    expect_bad(1);
    msgpack_pack_array(&pk, 4); /* method an ext, not str or bin */
    msgpack_pack_int(&pk, 0);
    msgpack_pack_int(&pk, 5);
    msgpack_pack_ext_with_body(&pk, "m", 1, 1);
    msgpack_pack_array(&pk, 0);
    expect_bad(1);
    msgpack_pack_array(&pk, 4); /* params not an array */
    msgpack_pack_int(&pk, 0);
    msgpack_pack_int(&pk, 5);
    msgpack_pack_str_with_body(&pk, "m", 1);
    msgpack_pack_map(&pk, 0);
    expect_bad(1);
    msgpack_pack_array(&pk, 3); /* request with 3 elements */
    msgpack_pack_int(&pk, 0);
    msgpack_pack_int(&pk, 5);
    msgpack_pack_str_with_body(&pk, "m", 1);
    expect_bad(1);
    msgpack_pack_array(&pk, 4); /* notification with 4 */
    msgpack_pack_int(&pk, 2);
    msgpack_pack_str_with_body(&pk, "m", 1);
    msgpack_pack_array(&pk, 0);
    msgpack_pack_nil(&pk);
    expect_bad(0);
}
END_TEST

/* Pack one random value, nested up to `depth` more levels. */
static void
pack_value(int depth)
{
    int i, n;

    switch (rand() % (depth > 0 ? 8 : 6)) {
    case 0:
        msgpack_pack_int(&pk, rand() % 200 - 100);
        break;
    case 1:
        msgpack_pack_uint64(&pk, (uint64_t)rand() << (rand() % 33));
        break;
    case 2:
        n = rand() % 40;
        msgpack_pack_str(&pk, (size_t)n);
        for (i = 0; i < n; i++)
            msgpack_pack_str_body(&pk, "s", 1);
        break;
    case 3:
        msgpack_pack_nil(&pk);
        break;
    case 4:
        msgpack_pack_double(&pk, 0.5);
        break;
    case 5:
        msgpack_pack_bin_with_body(&pk, "bb", 2);
        break;
    case 6:
        n = rand() % 20;
        msgpack_pack_array(&pk, (size_t)n);
        for (i = 0; i < n; i++)
            pack_value(depth - 1);
        break;
    default:
        n = rand() % 4;
        msgpack_pack_map(&pk, (size_t)n);
        for (i = 0; i < 2 * n; i++)
            pack_value(depth - 1);
        break;
    }
}

/*
 * folio_rpc_frame takes a request's envelope in one step: on every
 * message, whole or cut anywhere, under any limits, it answers what the
 * scanner answers, with the same position.
 */
START_TEST(test_frame_agrees_with_scan)
{
    static const uint32_t msgids[] = {0,   5,     127,   128,        255,
                                      256, 65535, 65536, 0xffffffffu};
    struct folio_mp_scan a, b;
    size_t cut, max_bytes;
    uint32_t max_depth;
    int i, j, n, ra, rb;

    srand(4321);
    for (i = 0; i < 20000; i++) {
        msgpack_sbuffer_clear(&sb);
        n = rand() % 10;
        if (n < 7) { /* a request, the envelope's forms or others */
            msgpack_pack_array(&pk, rand() % 8 ? 4 : 3);
            msgpack_pack_int(&pk, rand() % 8 ? 0 : rand() % 3);
            if (rand() % 10)
                msgpack_pack_uint32(&pk, msgids[rand() % 9]);
            else
                msgpack_pack_int(&pk, -1);
            n = rand() % 3 ? rand() % 32 : rand() % 300;
            if (rand() % 10) {
                msgpack_pack_str(&pk, (size_t)n);
            } else {
                msgpack_pack_bin(&pk, (size_t)n);
            }
            for (j = 0; j < n; j++)
                msgpack_pack_str_body(&pk, "m", 1);
            n = rand() % 20;
            msgpack_pack_array(&pk, (size_t)n);
            for (j = 0; j < n; j++)
                pack_value(rand() % 3);
        } else {
            pack_value(3);
        }
        if (rand() % 4 == 0)
            pack_value(1); /* the next message's start */
        max_bytes = rand() % 3 ? 1u << 20 : (size_t)(rand() % 64);
        max_depth = rand() % 3 ? 64 : (uint32_t)(rand() % 4);
        folio_mp_scan_init(&a, max_bytes, max_depth);
        folio_mp_scan_init(&b, max_bytes, max_depth);
        cut = 0;
        do {
            cut += 1 + (size_t)rand() % (rand() % 2 ? 4 : 64);
            if (cut > sb.size)
                cut = sb.size;
            ra = folio_mp_scan(&a, sb.data, cut);
            rb = folio_rpc_frame(&b, sb.data, cut);
            ck_assert_int_eq(rb, ra);
            if (ra >= 0)
                ck_assert_uint_eq(b.pos, a.pos);
        } while (ra == FOLIO_MP_MORE && cut < sb.size);
    }
}
END_TEST

static Suite *
rpc_suite(void)
{
    Suite *s = suite_create("rpc");
    TCase *tc = tcase_create("messages");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_request);
    tcase_add_test(tc, test_notification);
    tcase_add_test(tc, test_bin_method);
    tcase_add_test(tc, test_response_heads);
    tcase_add_test(tc, test_malformed);
    tcase_add_test(tc, test_frame_agrees_with_scan);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(rpc_suite());
}
