/*
 * check_mp.c - the msgpack scanner and cursor: every type, every split of
 * a message across reads, hostile headers, nesting, and agreement with
 * msgpack-c's own decoder on random messages.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "src/mp.h"
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

/* Scan `len` bytes at once and in every split; all must agree. */
static void
assert_frames(const char *p, size_t len, size_t want)
{
    struct folio_mp_scan st;
    size_t cut;
    int r;

    folio_mp_scan_init(&st, 1u << 30, 32);
    ck_assert_int_eq(folio_mp_scan(&st, p, len), FOLIO_MP_DONE);
    ck_assert_uint_eq(st.pos, want);
    /* Fed a byte at a time: MORE until the last byte. */
    folio_mp_scan_init(&st, 1u << 30, 32);
    for (cut = 0; cut < want; cut++) {
        r = folio_mp_scan(&st, p, cut);
        ck_assert_msg(r == FOLIO_MP_MORE, "prefix %zu of %zu: %d", cut, want,
                      r);
    }
    ck_assert_int_eq(folio_mp_scan(&st, p, want), FOLIO_MP_DONE);
    ck_assert_uint_eq(st.pos, want);
}

static void
pack_everything(void)
{
    static char big[70000];

    msgpack_pack_array(&pk, 40);
    msgpack_pack_nil(&pk);
    msgpack_pack_true(&pk);
    msgpack_pack_false(&pk);
    msgpack_pack_uint8(&pk, 5);
    msgpack_pack_uint8(&pk, 200);
    msgpack_pack_uint16(&pk, 60000);
    msgpack_pack_uint32(&pk, 4000000000u);
    msgpack_pack_uint64(&pk, UINT64_MAX);
    msgpack_pack_int8(&pk, -5);
    msgpack_pack_int8(&pk, -100);
    msgpack_pack_int16(&pk, -30000);
    msgpack_pack_int32(&pk, -2000000000);
    msgpack_pack_int64(&pk, INT64_MIN);
    msgpack_pack_float(&pk, 1.5f);
    msgpack_pack_double(&pk, 2.25);
    msgpack_pack_str_with_body(&pk, "", 0);
    msgpack_pack_str_with_body(&pk, "hello", 5);
    msgpack_pack_str_with_body(&pk, big, 40);     /* str 8 */
    msgpack_pack_str_with_body(&pk, big, 300);    /* str 16 */
    msgpack_pack_str_with_body(&pk, big, 70000);  /* str 32 */
    msgpack_pack_bin_with_body(&pk, big, 3);
    msgpack_pack_bin_with_body(&pk, big, 300);
    msgpack_pack_bin_with_body(&pk, big, 70000);
    msgpack_pack_ext_with_body(&pk, big, 1, 7);   /* fixext 1 */
    msgpack_pack_ext_with_body(&pk, big, 2, 7);
    msgpack_pack_ext_with_body(&pk, big, 4, 7);
    msgpack_pack_ext_with_body(&pk, big, 8, 7);
    msgpack_pack_ext_with_body(&pk, big, 16, 7);
    msgpack_pack_ext_with_body(&pk, big, 3, 7);   /* ext 8 */
    msgpack_pack_ext_with_body(&pk, big, 300, 7); /* ext 16 */
    msgpack_pack_ext_with_body(&pk, big, 70000, 7);
    msgpack_pack_array(&pk, 0);
    msgpack_pack_map(&pk, 0);
    msgpack_pack_map(&pk, 1);
    msgpack_pack_str_with_body(&pk, "k", 1);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_nil(&pk);
    msgpack_pack_nil(&pk);
    msgpack_pack_array(&pk, 20); /* array 16 */
    for (int i = 0; i < 20; i++)
        msgpack_pack_int(&pk, i);
    msgpack_pack_map(&pk, 17); /* map 16 */
    for (int i = 0; i < 17; i++) {
        msgpack_pack_int(&pk, i);
        msgpack_pack_int(&pk, -i);
    }
    for (int i = 0; i < 4; i++)
        msgpack_pack_uint8(&pk, 1);
}

START_TEST(test_scan_every_type)
{
    pack_everything();
    assert_frames(sb.data, sb.size, sb.size);
}
END_TEST

START_TEST(test_scan_several_messages)
{
    struct folio_mp_scan st;
    size_t first;

    msgpack_pack_array(&pk, 2);
    msgpack_pack_str_with_body(&pk, "ab", 2);
    msgpack_pack_int(&pk, 1);
    first = sb.size;
    msgpack_pack_array(&pk, 1);
    msgpack_pack_nil(&pk);
    folio_mp_scan_init(&st, 1024, 32);
    ck_assert_int_eq(folio_mp_scan(&st, sb.data, sb.size), FOLIO_MP_DONE);
    ck_assert_uint_eq(st.pos, first);
    folio_mp_scan_reset(&st);
    ck_assert_int_eq(folio_mp_scan(&st, sb.data + first, sb.size - first),
                     FOLIO_MP_DONE);
    ck_assert_uint_eq(st.pos, 2);
}
END_TEST

START_TEST(test_scan_invalid_byte)
{
    struct folio_mp_scan st;
    const char bad[] = {(char)0x93, 0x01, (char)0xc1, 0x02};

    folio_mp_scan_init(&st, 1024, 32);
    ck_assert_int_eq(folio_mp_scan(&st, bad, sizeof(bad)), FOLIO_MP_INVALID);
}
END_TEST

/*
 * A value past the size limit is the verdict, whatever follows it: the
 * scanner weighs a scalar's end once, on its way out, and must still
 * answer as if it had stopped at that value.
 */
START_TEST(test_scan_limit_first)
{
    struct folio_mp_scan st;
    /* [ "abcdefgh", 0xc1 ]: the string ends past 6 bytes, then garbage. */
    const char msg[] = {(char)0x92, (char)0xa8, 'a', 'b', 'c',       'd',
                        'e',        'f',        'g', 'h', (char)0xc1};

    folio_mp_scan_init(&st, 6, 8);
    ck_assert_int_eq(folio_mp_scan(&st, msg, sizeof(msg)), FOLIO_MP_TOOBIG);
    /* Byte by byte: MORE until the string's header, then too big. */
    folio_mp_scan_init(&st, 6, 8);
    ck_assert_int_eq(folio_mp_scan(&st, msg, 1), FOLIO_MP_MORE);
    ck_assert_int_eq(folio_mp_scan(&st, msg, 2), FOLIO_MP_TOOBIG);
    /* Under the limit, the garbage is what is found. */
    folio_mp_scan_init(&st, 64, 8);
    ck_assert_int_eq(folio_mp_scan(&st, msg, sizeof(msg)), FOLIO_MP_INVALID);
    /* A whole value over the limit, even with every byte there. */
    folio_mp_scan_init(&st, 6, 8);
    ck_assert_int_eq(folio_mp_scan(&st, msg + 1, 9), FOLIO_MP_TOOBIG);
}
END_TEST

START_TEST(test_scan_depth)
{
    struct folio_mp_scan st;
    char buf[64];
    int i;

    /* 32 nested arrays, the innermost empty: allowed at depth 32. */
    for (i = 0; i < 31; i++)
        buf[i] = (char)0x91;
    buf[31] = (char)0x90;
    folio_mp_scan_init(&st, 1024, 32);
    ck_assert_int_eq(folio_mp_scan(&st, buf, 32), FOLIO_MP_DONE);
    /* 33 levels: refused as soon as the 33rd header is read. */
    buf[31] = (char)0x91;
    buf[32] = (char)0x90;
    folio_mp_scan_init(&st, 1024, 32);
    ck_assert_int_eq(folio_mp_scan(&st, buf, 33), FOLIO_MP_TOODEEP);
    /* 10,000 levels claimed: stops at the limit, never recurses. */
    {
        char *deep = malloc(10000);

        memset(deep, 0x91, 10000);
        folio_mp_scan_init(&st, 1 << 20, 32);
        ck_assert_int_eq(folio_mp_scan(&st, deep, 10000), FOLIO_MP_TOODEEP);
        free(deep);
    }
}
END_TEST

START_TEST(test_scan_hostile_claims)
{
    struct folio_mp_scan st;
    const unsigned char str4g[] = {0xdb, 0xff, 0xff, 0xff, 0xff};
    const unsigned char arr4g[] = {0xdd, 0xff, 0xff, 0xff, 0xff};
    const unsigned char map2g[] = {0xdf, 0x80, 0x00, 0x00, 0x00};
    const unsigned char bin1m[] = {0xc6, 0x00, 0x10, 0x00, 0x00};

    folio_mp_scan_init(&st, 4u << 20, 32);
    ck_assert_int_eq(folio_mp_scan(&st, str4g, sizeof(str4g)),
                     FOLIO_MP_TOOBIG);
    folio_mp_scan_init(&st, 4u << 20, 32);
    ck_assert_int_eq(folio_mp_scan(&st, arr4g, sizeof(arr4g)),
                     FOLIO_MP_TOOBIG);
    folio_mp_scan_init(&st, 4u << 20, 32);
    ck_assert_int_eq(folio_mp_scan(&st, map2g, sizeof(map2g)),
                     FOLIO_MP_TOOBIG);
    /* Within the limit, a large payload is just awaited: pos tells how much. */
    folio_mp_scan_init(&st, 4u << 20, 32);
    ck_assert_int_eq(folio_mp_scan(&st, bin1m, sizeof(bin1m)), FOLIO_MP_MORE);
    ck_assert_uint_eq(st.pos, 5 + 0x100000);
    /* Header split before its length bytes. */
    folio_mp_scan_init(&st, 4u << 20, 32);
    ck_assert_int_eq(folio_mp_scan(&st, str4g, 3), FOLIO_MP_MORE);
    ck_assert_int_eq(folio_mp_scan(&st, str4g, 5), FOLIO_MP_TOOBIG);
}
END_TEST

/* Random valid messages: the scanner agrees with msgpack-c. */
static void
pack_random(int depth)
{
    static const char text[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    int kind = rand() % (depth > 4 ? 7 : 9), n, i;

    switch (kind) {
    case 0:
        msgpack_pack_nil(&pk);
        break;
    case 1:
        msgpack_pack_int64(&pk, (int64_t)rand() - RAND_MAX / 2);
        break;
    case 2:
        msgpack_pack_uint64(&pk, (uint64_t)rand() << (rand() % 33));
        break;
    case 3:
        msgpack_pack_double(&pk, rand() / 3.0);
        break;
    case 4:
        n = rand() % 36;
        msgpack_pack_str_with_body(&pk, text, (size_t)n);
        break;
    case 5:
        n = rand() % 300;
        msgpack_pack_bin(&pk, (size_t)n);
        for (i = 0; i < n; i++)
            msgpack_pack_bin_body(&pk, "x", 1);
        break;
    case 6:
        msgpack_pack_true(&pk);
        break;
    case 7:
        n = rand() % 20;
        msgpack_pack_array(&pk, (size_t)n);
        for (i = 0; i < n; i++)
            pack_random(depth + 1);
        break;
    default:
        n = rand() % 20;
        msgpack_pack_map(&pk, (size_t)n);
        for (i = 0; i < 2 * n; i++)
            pack_random(depth + 1);
        break;
    }
}

START_TEST(test_scan_agrees_with_msgpack_c)
{
    struct folio_mp_scan st;
    struct folio_mp_cur cur;
    msgpack_zone zone;
    msgpack_object obj;
    size_t off;
    int i, r;

    srand(1234);
    msgpack_zone_init(&zone, 4096);
    for (i = 0; i < 2000; i++) {
        msgpack_sbuffer_clear(&sb);
        pack_random(0);
        off = 0;
        r = msgpack_unpack(sb.data, sb.size, &off, &zone, &obj);
        ck_assert_int_eq(r, MSGPACK_UNPACK_SUCCESS);
        folio_mp_scan_init(&st, 1u << 30, 64);
        ck_assert_int_eq(folio_mp_scan(&st, sb.data, sb.size), FOLIO_MP_DONE);
        ck_assert_uint_eq(st.pos, off);
        /* A split at a random point changes nothing. */
        folio_mp_scan_init(&st, 1u << 30, 64);
        r = folio_mp_scan(&st, sb.data, (size_t)rand() % sb.size);
        ck_assert_int_eq(r, FOLIO_MP_MORE);
        ck_assert_int_eq(folio_mp_scan(&st, sb.data, sb.size), FOLIO_MP_DONE);
        ck_assert_uint_eq(st.pos, off);
        /* skip() walks the same bytes. */
        folio_mp_cur_init(&cur, sb.data, sb.size);
        ck_assert_int_eq(folio_mp_skip(&cur), 0);
        ck_assert_ptr_eq(cur.p, (const unsigned char *)sb.data + off);
        msgpack_zone_clear(&zone);
    }
    msgpack_zone_destroy(&zone);
}
END_TEST

START_TEST(test_scan_random_garbage)
{
    struct folio_mp_scan st;
    struct folio_mp_cur cur;
    unsigned char buf[256];
    int i, j, r;

    srand(99);
    for (i = 0; i < 20000; i++) {
        size_t len = (size_t)(rand() % (int)sizeof(buf)) + 1;

        for (j = 0; j < (int)len; j++)
            buf[j] = (unsigned char)rand();
        folio_mp_scan_init(&st, 1u << 16, 8);
        r = folio_mp_scan(&st, buf, len);
        if (r == FOLIO_MP_DONE) {
            ck_assert_uint_le(st.pos, len);
            folio_mp_cur_init(&cur, buf, (size_t)st.pos);
            ck_assert_int_eq(folio_mp_skip(&cur), 0);
        }
        /* The cursor never reads past the end, whatever the bytes. */
        folio_mp_cur_init(&cur, buf, len);
        (void)folio_mp_skip(&cur);
        ck_assert(cur.p <= cur.end);
    }
}
END_TEST

START_TEST(test_cursor_reads)
{
    struct folio_mp_cur c;
    const char *s;
    uint32_t n, len;
    int64_t i;
    uint64_t u;
    double d;
    int b;

    msgpack_pack_array(&pk, 9);
    msgpack_pack_int(&pk, -3);
    msgpack_pack_uint64(&pk, UINT64_MAX);
    msgpack_pack_uint32(&pk, 70000);
    msgpack_pack_str_with_body(&pk, "folio", 5);
    msgpack_pack_true(&pk);
    msgpack_pack_nil(&pk);
    msgpack_pack_double(&pk, 0.5);
    msgpack_pack_map(&pk, 1);
    msgpack_pack_str_with_body(&pk, "a", 1);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_bin_with_body(&pk, "\0\1", 2);

    folio_mp_cur_init(&c, sb.data, sb.size);
    ck_assert_int_eq(folio_mp_type(&c), FOLIO_MP_ARRAY);
    ck_assert_int_eq(folio_mp_read_array(&c, &n), 0);
    ck_assert_uint_eq(n, 9);
    /* A wrong type leaves the cursor where it was. */
    ck_assert_int_eq(folio_mp_read_str(&c, &s, &len), -1);
    ck_assert_int_eq(folio_mp_read_uint(&c, &u), -1);
    ck_assert_int_eq(folio_mp_read_int(&c, &i), 0);
    ck_assert_int_eq(i, -3);
    ck_assert_int_eq(folio_mp_read_int(&c, &i), -1); /* > INT64_MAX */
    ck_assert_int_eq(folio_mp_read_uint(&c, &u), 0);
    ck_assert(u == UINT64_MAX);
    ck_assert_int_eq(folio_mp_read_uint(&c, &u), 0);
    ck_assert_uint_eq(u, 70000);
    ck_assert_int_eq(folio_mp_read_str(&c, &s, &len), 0);
    ck_assert(folio_mp_str_eq(s, len, "folio"));
    ck_assert(!folio_mp_str_eq(s, len, "foli"));
    ck_assert(!folio_mp_str_eq(s, len, "folios"));
    ck_assert_int_eq(folio_mp_read_bool(&c, &b), 0);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(folio_mp_read_nil(&c), 0);
    ck_assert_int_eq(folio_mp_read_float(&c, &d), 0);
    ck_assert(d == 0.5);
    ck_assert_int_eq(folio_mp_type(&c), FOLIO_MP_MAP);
    ck_assert_int_eq(folio_mp_skip(&c), 0);
    ck_assert_int_eq(folio_mp_read_bin(&c, &s, &len), 0);
    ck_assert_uint_eq(len, 2);
    ck_assert_int_eq(folio_mp_type(&c), FOLIO_MP_NONE);
    ck_assert_int_eq(folio_mp_skip(&c), -1);
}
END_TEST

START_TEST(test_cursor_truncated)
{
    struct folio_mp_cur c;
    const char *s;
    uint32_t len;
    size_t cut;

    msgpack_pack_str_with_body(&pk, "truncated string", 16);
    for (cut = 0; cut < sb.size; cut++) {
        folio_mp_cur_init(&c, sb.data, cut);
        ck_assert_int_eq(folio_mp_read_str(&c, &s, &len), -1);
        ck_assert_ptr_eq(c.p, (const unsigned char *)sb.data);
    }
}
END_TEST

START_TEST(test_cursor_ext)
{
    static const unsigned char fix[] = {0xd5, 0x07, 'h', 'i'};
    static const unsigned char e8[] = {0xc7, 0x03, 0xff, 'a', 'b', 'c'};
    static const unsigned char e16[] = {0xc8, 0x00, 0x01, 0x05, 'z'};
    static const unsigned char e32[] = {0xc9, 0, 0, 0, 0, 0x02};
    static const unsigned char e8short[] = {0xc7, 0x04, 0x01, 'a'};
    struct folio_mp_cur c;
    const char *s;
    uint32_t len;
    int8_t type;

    folio_mp_cur_init(&c, fix, sizeof(fix));
    ck_assert_int_eq(folio_mp_type(&c), FOLIO_MP_EXT);
    ck_assert_int_eq(folio_mp_read_ext(&c, &type, &s, &len), 0);
    ck_assert_int_eq(type, 7);
    ck_assert_uint_eq(len, 2);
    ck_assert(memcmp(s, "hi", 2) == 0);
    ck_assert(c.p == c.end);
    folio_mp_cur_init(&c, e8, sizeof(e8));
    ck_assert_int_eq(folio_mp_read_ext(&c, &type, &s, &len), 0);
    ck_assert_int_eq(type, -1);
    ck_assert_uint_eq(len, 3);
    ck_assert(memcmp(s, "abc", 3) == 0);
    folio_mp_cur_init(&c, e16, sizeof(e16));
    ck_assert_int_eq(folio_mp_read_ext(&c, &type, &s, &len), 0);
    ck_assert_int_eq(type, 5);
    ck_assert_uint_eq(len, 1);
    folio_mp_cur_init(&c, e32, sizeof(e32));
    ck_assert_int_eq(folio_mp_read_ext(&c, &type, &s, &len), 0);
    ck_assert_int_eq(type, 2);
    ck_assert_uint_eq(len, 0);
    /* Truncated, or not an ext: the cursor stays. */
    folio_mp_cur_init(&c, e8short, sizeof(e8short));
    ck_assert_int_eq(folio_mp_read_ext(&c, &type, &s, &len), -1);
    ck_assert(c.p == e8short);
    folio_mp_cur_init(&c, fix, 3);
    ck_assert_int_eq(folio_mp_read_ext(&c, &type, &s, &len), -1);
    folio_mp_cur_init(&c, e8 + 1, sizeof(e8) - 1);
    ck_assert_int_eq(folio_mp_read_ext(&c, &type, &s, &len), -1);
}
END_TEST

static Suite *
mp_suite(void)
{
    Suite *s = suite_create("mp");
    TCase *tc = tcase_create("scan");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_scan_every_type);
    tcase_add_test(tc, test_scan_several_messages);
    tcase_add_test(tc, test_scan_invalid_byte);
    tcase_add_test(tc, test_scan_limit_first);
    tcase_add_test(tc, test_scan_depth);
    tcase_add_test(tc, test_scan_hostile_claims);
    tcase_add_test(tc, test_scan_agrees_with_msgpack_c);
    tcase_add_test(tc, test_scan_random_garbage);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tc = tcase_create("cursor");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_cursor_reads);
    tcase_add_test(tc, test_cursor_truncated);
    tcase_add_test(tc, test_cursor_ext);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(mp_suite());
}
