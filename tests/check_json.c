/*
 * check_json.c - JSON <-> msgpack (src/json.c): every msgpack type both
 * ways, exact integers at every boundary, strings and escapes, every way
 * a text can fail to be JSON (with where it fails), limits, and agreement
 * with jansson on random documents and on random mutations of them.
 */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <msgpack.h>

#include "src/buf.h"
#include "src/err.h"
#include "src/json.h"
#include "src/mp.h"
#include "tests/check_run.h"

static struct folio_buf out, text;

static void
setup(void)
{
    ck_assert_int_eq(folio_buf_init(&out, 256, 0), 0);
    ck_assert_int_eq(folio_buf_init(&text, 256, 0), 0);
}

static void
teardown(void)
{
    folio_buf_free(&out);
    folio_buf_free(&text);
}

#define S(lit) lit, sizeof(lit) - 1

/* Transcode s; 0 or the error. */
static int
to_mp(const char *s, size_t n, struct folio_json_err *e)
{
    folio_buf_reset(&out);
    return folio_json_to_mp(s, n, FOLIO_JSON_DEPTH, &out, e);
}

static void
assert_bytes(const char *json, const char *want, size_t wlen)
{
    struct folio_json_err e;
    size_t i;

    ck_assert_msg(to_mp(json, strlen(json), &e) == 0, "%s: %s", json, e.msg);
    if (out.b_len != wlen || memcmp(out.b_data, want, wlen) != 0) {
        for (i = 0; i < out.b_len; i++)
            fprintf(stderr, "%02x ", (unsigned char)out.b_data[i]);
        fputc('\n', stderr);
        ck_abort_msg("%s: wrong msgpack (%zu bytes, want %zu)", json, out.b_len,
                     wlen);
    }
}

START_TEST(test_to_mp_shapes)
{
    assert_bytes("{\"a\": [1, -1, true, false, null, \"x\"]}",
                 S("\xdf\0\0\0\x01\xa1"
                   "a\xdd\0\0\0\x06\x01\xff\xc3\xc2\xc0"
                   "\xa1x"));
    assert_bytes("  []  ", S("\xdd\0\0\0\0"));
    assert_bytes("{}", S("\xdf\0\0\0\0"));
    assert_bytes("\"\"", S("\xa0"));
    assert_bytes("[[[]]]", S("\xdd\0\0\0\x01\xdd\0\0\0\x01\xdd\0\0\0\0"));
    /* Repeated keys stay, in order (the reader decides). */
    assert_bytes("{\"k\":1,\"k\":2}", S("\xdf\0\0\0\x02\xa1k\x01\xa1k\x02"));
}
END_TEST

/* The one integer the text transcodes to. */
static void
assert_int(const char *json, int neg, uint64_t u, int64_t v)
{
    struct folio_json_err e;
    struct folio_mp_cur c;
    uint64_t gu;
    int64_t gv;

    ck_assert_msg(to_mp(json, strlen(json), &e) == 0, "%s: %s", json, e.msg);
    folio_mp_cur_init(&c, out.b_data, out.b_len);
    if (neg) {
        ck_assert_int_eq(folio_mp_type(&c), FOLIO_MP_INT);
        ck_assert_int_eq(folio_mp_read_int(&c, &gv), 0);
        ck_assert_msg(gv == v, "%s", json);
    } else {
        ck_assert_int_eq(folio_mp_type(&c), FOLIO_MP_UINT);
        ck_assert_int_eq(folio_mp_read_uint(&c, &gu), 0);
        ck_assert_msg(gu == u, "%s", json);
    }
    ck_assert(c.p == c.end);
}

START_TEST(test_to_mp_integers)
{
    static const struct {
        const char *json;
        size_t bytes;
    } sizes[] = {
        {"0", 1},      {"127", 1},         {"128", 2},
        {"255", 2},    {"256", 3},         {"65535", 3},
        {"65536", 5},  {"4294967295", 5},  {"4294967296", 9},
        {"-1", 1},     {"-32", 1},         {"-33", 2},
        {"-128", 2},   {"-129", 3},        {"-32768", 3},
        {"-32769", 5}, {"-2147483648", 5}, {"-2147483649", 9},
        {"-0", 1},
    };
    struct folio_json_err e;
    struct folio_mp_cur c;
    double d;
    size_t i;

    assert_int("18446744073709551615", 0, UINT64_MAX, 0);
    assert_int("9223372036854775807", 0, INT64_MAX, 0);
    assert_int("-9223372036854775808", 1, 0, INT64_MIN);
    assert_int("-9223372036854775807", 1, 0, -INT64_MAX);
    assert_int("1000000", 0, 1000000, 0);
    assert_int("-0", 0, 0, 0);
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        ck_assert_int_eq(to_mp(sizes[i].json, strlen(sizes[i].json), &e), 0);
        ck_assert_msg(out.b_len == sizes[i].bytes, "%s: %zu bytes",
                      sizes[i].json, out.b_len);
    }
    /* Beyond 64 bits: a double, as Go and JavaScript read it. */
    ck_assert_int_eq(to_mp(S("18446744073709551616"), &e), 0);
    folio_mp_cur_init(&c, out.b_data, out.b_len);
    ck_assert_int_eq(folio_mp_read_float(&c, &d), 0);
    ck_assert(d == 18446744073709551616.0);
    ck_assert_int_eq(to_mp(S("-9223372036854775809"), &e), 0);
    folio_mp_cur_init(&c, out.b_data, out.b_len);
    ck_assert_int_eq(folio_mp_read_float(&c, &d), 0);
    ck_assert(d == -9223372036854775808.0);
}
END_TEST

START_TEST(test_to_mp_floats)
{
    static const struct {
        const char *json;
        double d;
    } cases[] = {
        {"1.5", 1.5},     {"-0.25", -0.25}, {"1e10", 1e10}, {"1E-2", 0.01},
        {"2.5e+3", 2500}, {"0.1", 0.1},     {"-0.0", -0.0}, {"1.0", 1.0},
    };
    struct folio_json_err e;
    struct folio_mp_cur c;
    double d;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_int_eq(to_mp(cases[i].json, strlen(cases[i].json), &e), 0);
        folio_mp_cur_init(&c, out.b_data, out.b_len);
        ck_assert_int_eq(folio_mp_read_float(&c, &d), 0);
        ck_assert_msg(d == cases[i].d && signbit(d) == signbit(cases[i].d),
                      "%s: %g", cases[i].json, d);
    }
}
END_TEST

START_TEST(test_to_mp_strings)
{
    static char big[70000 + 3];
    struct folio_json_err e;
    struct folio_mp_cur c;
    const char *s;
    uint32_t len;
    static const size_t lens[] = {31, 32, 255, 256, 65535, 65536};
    size_t i;

    assert_bytes("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", S("\xa8\"\\/\b\f\n\r\t"));
    /* \u escapes to UTF-8, a surrogate pair to one 4-byte character. */
    assert_bytes("\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\\u0000\"",
                 S("\xab"
                   "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\0"));
    /* Raw UTF-8 as it is. */
    assert_bytes("\"caf\xc3\xa9 \xf0\x9f\x98\x80\"",
                 S("\xaa"
                   "caf\xc3\xa9 \xf0\x9f\x98\x80"));
    /* The smallest header at each size. */
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        big[0] = '"';
        memset(big + 1, 'x', lens[i]);
        big[lens[i] + 1] = '"';
        ck_assert_int_eq(to_mp(big, lens[i] + 2, &e), 0);
        ck_assert_uint_eq((unsigned char)out.b_data[0],
                          lens[i] < 32      ? 0xa0 | lens[i]
                          : lens[i] < 256   ? 0xd9
                          : lens[i] < 65536 ? 0xda
                                            : 0xdb);
        folio_mp_cur_init(&c, out.b_data, out.b_len);
        ck_assert_int_eq(folio_mp_read_str(&c, &s, &len), 0);
        ck_assert_uint_eq(len, lens[i]);
        ck_assert(c.p == c.end);
    }
    /* With escapes, the header counts decoded bytes. */
    memcpy(big, "\"\\n", 3);
    memset(big + 3, 'y', 40);
    big[43] = '"';
    ck_assert_int_eq(to_mp(big, 44, &e), 0);
    ck_assert_uint_eq((unsigned char)out.b_data[0], 0xd9);
    ck_assert_uint_eq((unsigned char)out.b_data[1], 41);
}
END_TEST

/* Texts that are not JSON: where the error must be, and what it says. */
static const struct {
    const char *text;
    size_t len; /* 0: strlen */
    size_t at;
    const char *msg;
} notjson[] = {
    {"", 0, 0, "expected a value"},
    {"   ", 0, 3, "expected a value"},
    {"{", 0, 1, "expected a string key"},
    {"[", 0, 1, "expected a value"},
    {"[1", 0, 0, "unterminated array"},
    {"[1,]", 0, 3, "unexpected ']'"},
    {"[1 2]", 0, 3, "expected ',' or ']'"},
    {"{\"a\" 1}", 0, 5, "expected ':'"},
    {"{1:2}", 0, 1, "expected a string key"},
    {"{\"a\":1,}", 0, 7, "expected a string key"},
    {"01", 0, 0, "leading zero"},
    {"-01", 0, 0, "leading zero"},
    {"1.", 0, 0, "malformed number"},
    {".5", 0, 0, "unexpected '.'"},
    {"+1", 0, 0, "unexpected '+'"},
    {"-", 0, 0, "malformed number"},
    {"1e", 0, 0, "malformed number"},
    {"1e+", 0, 0, "malformed number"},
    {"tru", 0, 0, "unexpected 't'"},
    {"nul", 0, 0, "unexpected 'n'"},
    {"True", 0, 0, "unexpected 'T'"},
    {"\"abc", 0, 0, "unterminated string"},
    {"\"\\x\"", 0, 1, "unknown escape '\\x'"},
    {"\"\\u12\"", 0, 1, "malformed \\u escape"},
    {"\"\\u12G4\"", 0, 1, "malformed \\u escape"},
    {"\"\\ud800\"", 0, 1, "lone surrogate \\ud800"},
    {"\"\\udc00\"", 0, 1, "lone surrogate \\udc00"},
    {"\"\\ud800\\u0041\"", 0, 1, "lone surrogate"},
    {"\"a\x01\"", 0, 2, "control character 0x01"},
    {"\"a\tb\"", 0, 2, "control character 0x09"},
    {"\"\xff\"", 0, 1, "invalid UTF-8"},
    {"\"\xc0\xaf\"", 0, 1, "invalid UTF-8"},
    {"\"\xed\xa0\x80\"", 0, 1, "invalid UTF-8"},
    {"\"\xe2\x82\"", 0, 1, "invalid UTF-8"},
    {"\xef\xbb\xbf{}", 0, 0, "unexpected byte 0xef"},
    {"1 2", 0, 2, "text after the value"},
    {"[1]x", 0, 3, "text after the value"},
    {"\0", 1, 0, "unexpected byte 0x00"},
    {"[\0]", 3, 1, "unexpected byte 0x00"},
    {"1e400", 0, 0, "number out of range"},
    {"-1e400", 0, 0, "number out of range"},
    {"0.00000000000000000000000000000000000000000000000000000000000000001", 0,
     0, "number longer than 64"},
    {"'a'", 0, 0, "unexpected '''"},
    {"NaN", 0, 0, "unexpected 'N'"},
};

START_TEST(test_not_json)
{
    struct folio_json_err e;
    size_t i, n;
    int rc;

    for (i = 0; i < sizeof(notjson) / sizeof(notjson[0]); i++) {
        n = notjson[i].len ? notjson[i].len : strlen(notjson[i].text);
        folio_buf_reset(&out);
        folio_buf_append(&out, "keep", 4);
        rc = folio_json_to_mp(notjson[i].text, n, FOLIO_JSON_DEPTH, &out, &e);
        ck_assert_msg(rc == FOLIO_EINVAL, "case %zu '%s': rc %d", i,
                      notjson[i].text, rc);
        ck_assert_msg(e.at == notjson[i].at && strstr(e.msg, notjson[i].msg),
                      "case %zu '%s': at %zu '%s'", i, notjson[i].text, e.at,
                      e.msg);
        ck_assert(strncmp(e.msg, "invalid JSON at byte ", 21) == 0);
        /* Nothing written stays. */
        ck_assert_uint_eq(out.b_len, 4);
    }
}
END_TEST

START_TEST(test_limits)
{
    struct folio_buf small;
    struct folio_json_err e;
    char deep[200];
    int i;

    /* max_depth levels of containers, and one more. */
    for (i = 0; i < 32; i++)
        deep[i] = '[';
    for (i = 0; i < 32; i++)
        deep[32 + i] = ']';
    folio_buf_reset(&out);
    ck_assert_int_eq(folio_json_to_mp(deep, 64, 32, &out, &e), 0);
    folio_buf_reset(&out);
    ck_assert_int_eq(folio_json_to_mp(deep, 64, 31, &out, &e), FOLIO_EINVAL);
    ck_assert(strstr(e.msg, "nested deeper than 31 levels") != NULL);
    ck_assert_uint_eq(e.at, 31);
    /* Past FOLIO_MP_MAX_DEPTH whatever is asked. */
    for (i = 0; i < 100; i++) {
        deep[i] = '[';
        deep[100 + i] = ']';
    }
    folio_buf_reset(&out);
    ck_assert_int_eq(folio_json_to_mp(deep, 200, 1000, &out, &e), FOLIO_EINVAL);
    /* The output's own bound. */
    ck_assert_int_eq(folio_buf_init(&small, 16, 16), 0);
    ck_assert_int_eq(
        folio_json_to_mp(S("[\"0123456789abcdef\"]"), 32, &small, &e),
        FOLIO_ETOOBIG);
    ck_assert_uint_eq(small.b_len, 0);
    ck_assert(strstr(e.msg, "too large") != NULL);
    folio_buf_free(&small);
}
END_TEST

/* The JSON text folio_json_put_mp writes for msgpack packed by `pack`. */
static msgpack_sbuffer sb;
static msgpack_packer pk;

static const char *
json_of(int indent, unsigned flags)
{
    struct folio_mp_cur c;

    folio_buf_reset(&text);
    folio_mp_cur_init(&c, sb.data, sb.size);
    ck_assert_int_eq(folio_json_put_mp(&text, &c, indent, flags), 0);
    ck_assert(c.p == c.end);
    folio_buf_append(&text, "", 1);
    msgpack_sbuffer_clear(&sb);
    return text.b_data;
}

START_TEST(test_put_mp)
{
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);

    msgpack_pack_array(&pk, 9);
    msgpack_pack_nil(&pk);
    msgpack_pack_true(&pk);
    msgpack_pack_false(&pk);
    msgpack_pack_uint64(&pk, UINT64_MAX);
    msgpack_pack_int64(&pk, INT64_MIN);
    msgpack_pack_double(&pk, 2);
    msgpack_pack_double(&pk, 0.1);
    msgpack_pack_float(&pk, 0.1f);
    msgpack_pack_double(&pk, 1e300);
    ck_assert_str_eq(json_of(-1, 0),
                     "[null,true,false,18446744073709551615,"
                     "-9223372036854775808,2.0,0.1,0.1,1e+300]");
    msgpack_pack_array(&pk, 3);
    msgpack_pack_double(&pk, NAN);
    msgpack_pack_double(&pk, INFINITY);
    msgpack_pack_double(&pk, -INFINITY);
    ck_assert_str_eq(json_of(-1, 0), "[\"NaN\",\"Infinity\",\"-Infinity\"]");
    /* bin and ext as folio(1) shows them. */
    msgpack_pack_array(&pk, 3);
    msgpack_pack_bin_with_body(&pk, "\x00\xff\x10", 3);
    msgpack_pack_bin_with_body(&pk, "ab", 2);
    msgpack_pack_ext_with_body(&pk, "x", 1, -5);
    ck_assert_str_eq(json_of(-1, 0), "[{\"$bin\":\"AP8Q\"},{\"$bin\":\"YWI=\"},"
                                     "{\"$ext\":[-5,\"eA==\"]}]");
    /* Keys that are not str: their JSON text, quoted. */
    msgpack_pack_map(&pk, 3);
    msgpack_pack_int(&pk, 7);
    msgpack_pack_str_with_body(&pk, "seven", 5);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_str_with_body(&pk, "q\"\\", 3);
    msgpack_pack_nil(&pk);
    msgpack_pack_nil(&pk);
    msgpack_pack_true(&pk);
    ck_assert_str_eq(json_of(-1, 0),
                     "{\"7\":\"seven\",\"[\\\"q\\\\\\\"\\\\\\\\\\\"]\":null,"
                     "\"null\":true}");
    /* Strings: escapes, stray bytes, control characters. */
    msgpack_pack_str_with_body(&pk, "a\"\\\b\f\n\r\t\x01\x1f\x7f\xff\xc3\xa9z",
                               15);
    ck_assert_str_eq(json_of(-1, 0), "\"a\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f"
                                     "\x7f\xef\xbf\xbd\xc3\xa9z\"");
    /* Indented as folio(1) prints. */
    msgpack_pack_map(&pk, 2);
    msgpack_pack_str_with_body(&pk, "a", 1);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_map(&pk, 0);
    msgpack_pack_str_with_body(&pk, "b", 1);
    msgpack_pack_array(&pk, 0);
    ck_assert_str_eq(json_of(2, 0),
                     "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}");
    msgpack_pack_bin_with_body(&pk, "ab", 2);
    ck_assert_str_eq(json_of(2, 0), "{\"$bin\": \"YWI=\"}");
    msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_put_html)
{
    static const char body[] = "<script>alert('x')</script>"
                               "<img src=x onerror=\"alert(1)\">&amp;";

    folio_buf_reset(&text);
    ck_assert_int_eq(folio_json_put_str(&text, S(body), FOLIO_JSON_HTML), 0);
    folio_buf_append(&text, "", 1);
    ck_assert_str_eq(text.b_data,
                     "\"&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"
                     "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"
                     "&amp;amp;\"");
    /* Whatever the bytes, no '<' and no quote survive. */
    ck_assert(strchr(text.b_data + 1, '<') == NULL);
    ck_assert(strchr(text.b_data + 1, '\'') == NULL);
    folio_buf_reset(&text);
    ck_assert_int_eq(folio_json_put_str(&text, S("a<b"), 0), 0);
    ck_assert(text.b_len == 5 && memcmp(text.b_data, "\"a<b\"", 5) == 0);
}
END_TEST

START_TEST(test_put_errors)
{
    static const char bad[] = "\x92\x01"; /* an array short of an element */
    struct folio_mp_cur c;

    folio_buf_reset(&text);
    folio_buf_append(&text, "x", 1);
    folio_mp_cur_init(&c, bad, 2);
    ck_assert_int_eq(folio_json_put_mp(&text, &c, -1, 0), FOLIO_EPROTO);
    ck_assert_uint_eq(text.b_len, 1);
    ck_assert(c.p == (const unsigned char *)bad);
    folio_mp_cur_init(&c, "\xc1", 1);
    ck_assert_int_eq(folio_json_put_mp(&text, &c, -1, 0), FOLIO_EPROTO);
}
END_TEST

START_TEST(test_time)
{
    static const struct {
        int64_t ms;
        const char *want;
    } cases[] = {
        {0, "\"1970-01-01T00:00:00Z\""},
        {1700000000123, "\"2023-11-14T22:13:20.123Z\""},
        {1700000000120, "\"2023-11-14T22:13:20.12Z\""},
        {1700000000100, "\"2023-11-14T22:13:20.1Z\""},
        {951782400000, "\"2000-02-29T00:00:00Z\""},
        {4102444799999, "\"2099-12-31T23:59:59.999Z\""},
    };
    struct tm tm;
    time_t t;
    char want[64];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        folio_buf_reset(&text);
        ck_assert_int_eq(folio_json_put_time_ms(&text, cases[i].ms), 0);
        folio_buf_append(&text, "", 1);
        ck_assert_str_eq(text.b_data, cases[i].want);
    }
    /* Against the C library, over many days. */
    srand(7);
    for (i = 0; i < 20000; i++) {
        t = (time_t)(((uint64_t)rand() << 16 ^ (uint64_t)rand()) % 7258118400u);
        gmtime_r(&t, &tm);
        strftime(want, sizeof(want), "\"%Y-%m-%dT%H:%M:%SZ\"", &tm);
        folio_buf_reset(&text);
        folio_json_put_time_ms(&text, (int64_t)t * 1000);
        folio_buf_append(&text, "", 1);
        ck_assert_str_eq(text.b_data, want);
    }
}
END_TEST

START_TEST(test_key_eq)
{
    ck_assert(folio_json_key_eq(S("body"), "body"));
    ck_assert(folio_json_key_eq(S("Body"), "body"));
    ck_assert(folio_json_key_eq(S("BODY"), "body"));
    ck_assert(folio_json_key_eq(S("replyto"), "replyTo"));
    ck_assert(folio_json_key_eq(S("ReplyTo"), "replyTo"));
    ck_assert(!folio_json_key_eq(S("bod"), "body"));
    ck_assert(!folio_json_key_eq(S("bodyx"), "body"));
    ck_assert(!folio_json_key_eq(S("b\xc3\xb6"
                                   "dy"),
                                 "body"));
    ck_assert(!folio_json_key_eq(S(""), "body"));
    ck_assert(folio_json_key_eq(S(""), ""));
    /* Go's folding beyond ASCII: U+212A is k, U+017F is s. */
    ck_assert(folio_json_key_eq(S("\xe2\x84\xaa"
                                  "ey"),
                                "key"));
    ck_assert(folio_json_key_eq(S("\xc5\xbf"
                                  "ku"),
                                "sku"));
    ck_assert(!folio_json_key_eq(S("\xe2\x84\xaa"
                                   "ey"),
                                 "hey"));
    ck_assert(!folio_json_key_eq(S("\xe2\x84"), "k"));
}
END_TEST

/* ---- against jansson ---- */

static unsigned rnd_state = 1;

static unsigned
rnd(unsigned n)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (rnd_state >> 8) % n;
}

/* A random string; a key has no NUL (jansson cannot hold one). */
static void
gen_string(struct folio_buf *b, int key)
{
    static const char *const pieces[] = {
        "a",
        "Z",
        " ",
        "\\\"",
        "\\\\",
        "\\/",
        "\\n",
        "\\t",
        "\\u0000",
        "\\u00e9",
        "\\uD83D\\uDE00",
        "\xc3\xa9",
        "\xe2\x82\xac",
        "\xf0\x9f\x98\x80",
        "<",
        "&",
        "'",
        "\\u2028",
        "\x7f",
    };
    unsigned i, n = rnd(8);

    folio_buf_append(b, "\"", 1);
    for (i = 0; i < n; i++) {
        const char *p = pieces[rnd(sizeof(pieces) / sizeof(pieces[0]))];

        if (key && strcmp(p, "\\u0000") == 0)
            p = "k";
        folio_buf_append(b, p, strlen(p));
    }
    folio_buf_append(b, "\"", 1);
}

static void
gen_value(struct folio_buf *b, int depth)
{
    static const char *const nums[] = {
        "0",
        "-0",
        "1",
        "-1",
        "127",
        "128",
        "-33",
        "65536",
        "4294967296",
        "9223372036854775807",
        "-9223372036854775808",
        "1.5",
        "-2.25e-3",
        "1e10",
        "0.1",
        "3.141592653589793",
        "1E2",
        "123456789012345678",
    };
    unsigned k = depth > 6 ? rnd(6) : rnd(8), i, n;

    switch (k) {
    case 0:
        folio_buf_append(b, "null", 4);
        break;
    case 1:
        if (rnd(2))
            folio_buf_append(b, "true", 4);
        else
            folio_buf_append(b, "false", 5);
        break;
    case 2:
    case 3: {
        const char *p = nums[rnd(sizeof(nums) / sizeof(nums[0]))];

        folio_buf_append(b, p, strlen(p));
        break;
    }
    case 4:
    case 5:
        gen_string(b, 0);
        break;
    case 6:
        folio_buf_append(b, "[ ", rnd(2) + 1);
        for (i = 0, n = rnd(5); i < n; i++) {
            if (i > 0)
                folio_buf_append(b, ",", 1);
            gen_value(b, depth + 1);
        }
        folio_buf_append(b, "]", 1);
        break;
    default:
        folio_buf_append(b, "{", 1);
        for (i = 0, n = rnd(5); i < n; i++) {
            if (i > 0)
                folio_buf_append(b, ", ", 2);
            gen_string(b, 1);
            folio_buf_append(b, ":\n", rnd(2) + 1);
            gen_value(b, depth + 1);
        }
        folio_buf_append(b, "}", 1);
    }
}

/*
 * What jansson reads the text as (any value, NUL allowed); NULL: not
 * JSON, or (*big set) JSON jansson cannot hold: an integer past int64,
 * which we read as a double, or a NUL in a key.
 */
static json_t *
jansson(const char *s, size_t n, int *big)
{
    json_error_t je;
    json_t *j = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);

    *big = j == NULL && (strstr(je.text, "too big") != NULL ||
                         strstr(je.text, "NUL byte in object key") != NULL);
    return j;
}

START_TEST(test_jansson_roundtrip)
{
    struct folio_buf doc;
    struct folio_json_err e;
    struct folio_mp_cur c;
    json_t *a, *b;
    int i, big;

    ck_assert_int_eq(folio_buf_init(&doc, 4096, 0), 0);
    for (i = 0; i < 3000; i++) {
        folio_buf_reset(&doc);
        gen_value(&doc, 0);
        ck_assert_msg(to_mp(doc.b_data, doc.b_len, &e) == 0, "%.*s: %s",
                      (int)doc.b_len, doc.b_data, e.msg);
        /* Back to text: the same document for jansson. */
        folio_buf_reset(&text);
        folio_mp_cur_init(&c, out.b_data, out.b_len);
        ck_assert_int_eq(folio_json_put_mp(&text, &c, i % 3 - 1, 0), 0);
        a = jansson(doc.b_data, doc.b_len, &big);
        b = jansson(text.b_data, text.b_len, &big);
        ck_assert_msg(a != NULL && b != NULL && json_equal(a, b),
                      "%.*s -> %.*s", (int)doc.b_len, doc.b_data,
                      (int)text.b_len, text.b_data);
        json_decref(a);
        json_decref(b);
    }
    folio_buf_free(&doc);
}
END_TEST

START_TEST(test_jansson_mutations)
{
    static const char bytes[] = "{}[]\",:\\ 0-1e.+tnfu\x01\xc3\xff\xed\xa0";
    struct folio_buf doc;
    struct folio_json_err e;
    json_t *j;
    int i, k, ours, big;

    ck_assert_int_eq(folio_buf_init(&doc, 4096, 0), 0);
    for (i = 0; i < 20000; i++) {
        folio_buf_reset(&doc);
        gen_value(&doc, 3);
        for (k = rnd(3) + 1; k > 0 && doc.b_len > 0; k--) {
            size_t at = rnd((unsigned)doc.b_len);

            switch (rnd(3)) {
            case 0: /* change a byte */
                doc.b_data[at] = bytes[rnd(sizeof(bytes) - 1)];
                break;
            case 1: /* drop one */
                memmove(doc.b_data + at, doc.b_data + at + 1,
                        doc.b_len - at - 1);
                doc.b_len--;
                break;
            default: /* cut short */
                doc.b_len = at;
            }
        }
        ours = to_mp(doc.b_data, doc.b_len, &e) == 0;
        j = jansson(doc.b_data, doc.b_len, &big);
        if (big && ours)
            continue;
        if (ours != (j != NULL)) {
            size_t q;

            for (q = 0; q < doc.b_len; q++)
                fprintf(stderr, "%02x ", (unsigned char)doc.b_data[q]);
            fputc('\n', stderr);
        }
        ck_assert_msg(ours == (j != NULL), "'%.*s': ours %d (%s), jansson %d",
                      (int)doc.b_len, doc.b_data, ours, e.msg, j != NULL);
        json_decref(j);
    }
    folio_buf_free(&doc);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("json");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_to_mp_shapes);
    tcase_add_test(tc, test_to_mp_integers);
    tcase_add_test(tc, test_to_mp_floats);
    tcase_add_test(tc, test_to_mp_strings);
    tcase_add_test(tc, test_not_json);
    tcase_add_test(tc, test_limits);
    tcase_add_test(tc, test_put_mp);
    tcase_add_test(tc, test_put_html);
    tcase_add_test(tc, test_put_errors);
    tcase_add_test(tc, test_time);
    tcase_add_test(tc, test_key_eq);
    tcase_add_test(tc, test_jansson_roundtrip);
    tcase_add_test(tc, test_jansson_mutations);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
