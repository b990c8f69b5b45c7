/*
 * check_cli.c - the folio client's pieces without a server: the msgpack
 * <-> JSON mapping of folio(1), the number formats, and the human
 * printers fed with results shaped as PROTOCOL.md section 3 says.
 */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <msgpack.h>

#include "src/cli/cli_int.h"
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

/* The JSON text of the packed value (indent < 0: compact). */
static char *
emit(int indent)
{
    struct folio_mp_cur c;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    ck_assert_ptr_nonnull(f);
    folio_mp_cur_init(&c, sb.data, sb.size);
    ck_assert_int_eq(folio_cli_json_emit(f, &c, indent), 0);
    ck_assert(c.p == c.end);
    fclose(f);
    return text;
}

static void
expect_emit(int indent, const char *want)
{
    char *got = emit(indent);

    ck_assert_str_eq(got, want);
    free(got);
    msgpack_sbuffer_clear(&sb);
}

START_TEST(test_emit_scalars)
{
    msgpack_pack_array(&pk, 9);
    msgpack_pack_nil(&pk);
    msgpack_pack_true(&pk);
    msgpack_pack_false(&pk);
    msgpack_pack_uint64(&pk, 0);
    msgpack_pack_int64(&pk, -1);
    msgpack_pack_int64(&pk, INT64_MIN);
    msgpack_pack_uint64(&pk, UINT64_MAX);
    msgpack_pack_uint64(&pk, 9007199254740993ull); /* 2^53 + 1 */
    msgpack_pack_int8(&pk, -128);
    expect_emit(-1, "[null,true,false,0,-1,-9223372036854775808,"
                    "18446744073709551615,9007199254740993,-128]");
}
END_TEST

START_TEST(test_emit_floats)
{
    msgpack_pack_array(&pk, 10);
    msgpack_pack_double(&pk, 0.1);
    msgpack_pack_double(&pk, 2.0);
    msgpack_pack_double(&pk, -0.5);
    msgpack_pack_double(&pk, 1e300);
    msgpack_pack_double(&pk, 1.0 / 3);
    msgpack_pack_float(&pk, 0.1f);
    msgpack_pack_float(&pk, 3.0f);
    msgpack_pack_double(&pk, NAN);
    msgpack_pack_double(&pk, INFINITY);
    msgpack_pack_double(&pk, -INFINITY);
    expect_emit(-1, "[0.1,2.0,-0.5,1e+300,0.3333333333333333,0.1,3.0,"
                    "\"NaN\",\"Infinity\",\"-Infinity\"]");
}
END_TEST

START_TEST(test_emit_strings)
{
    static const char ctl[] = "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f";

    folio_pack_str(&pk, ctl, sizeof(ctl) - 1);
    expect_emit(-1, "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\"");
    /* UTF-8 kept; stray bytes, overlong forms, surrogates: U+FFFD each. */
    folio_pack_cstr(&pk, "S\xc3\xa3o \xe2\x82\xac \xf0\x9f\x93\x9a");
    expect_emit(-1, "\"S\xc3\xa3o \xe2\x82\xac \xf0\x9f\x93\x9a\"");
    folio_pack_cstr(&pk, "a\xff"
                         "b");
    expect_emit(-1, "\"a\xef\xbf\xbd"
                    "b\"");
    folio_pack_cstr(&pk, "\xc0\xaf");
    expect_emit(-1, "\"\xef\xbf\xbd\xef\xbf\xbd\"");
    folio_pack_cstr(&pk, "\xed\xa0\x80");
    expect_emit(-1, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
    folio_pack_cstr(&pk, "\xe2\x82"); /* truncated */
    expect_emit(-1, "\"\xef\xbf\xbd\xef\xbf\xbd\"");
    folio_pack_str(&pk, "a\0b", 3);
    expect_emit(-1, "\"a\\u0000b\"");
}
END_TEST

START_TEST(test_emit_bin_ext_keys)
{
    msgpack_pack_array(&pk, 5);
    msgpack_pack_bin_with_body(&pk, "\0\1\2\xff", 4);
    msgpack_pack_bin_with_body(&pk, "", 0);
    msgpack_pack_bin_with_body(&pk, "ab", 2);
    msgpack_pack_ext_with_body(&pk, "hi", 2, -5);
    msgpack_pack_map(&pk, 4);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_str_with_body(&pk, "one", 3);
    msgpack_pack_nil(&pk);
    msgpack_pack_true(&pk);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_str_with_body(&pk, "x", 1);
    msgpack_pack_int(&pk, 2);
    msgpack_pack_str_with_body(&pk, "k", 1);
    msgpack_pack_int(&pk, 3);
    expect_emit(-1, "[{\"$bin\":\"AAEC/w==\"},{\"$bin\":\"\"},"
                    "{\"$bin\":\"YWI=\"},{\"$ext\":[-5,\"aGk=\"]},"
                    "{\"1\":\"one\",\"null\":true,\"[1,\\\"x\\\"]\":2,"
                    "\"k\":3}]");
}
END_TEST

START_TEST(test_emit_pretty)
{
    msgpack_pack_map(&pk, 3);
    msgpack_pack_str_with_body(&pk, "a", 1);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_map(&pk, 0);
    msgpack_pack_str_with_body(&pk, "b", 1);
    msgpack_pack_array(&pk, 0);
    msgpack_pack_str_with_body(&pk, "c", 1);
    msgpack_pack_bin_with_body(&pk, "x", 1);
    expect_emit(2, "{\n"
                   "  \"a\": [\n"
                   "    1,\n"
                   "    {}\n"
                   "  ],\n"
                   "  \"b\": [],\n"
                   "  \"c\": {\"$bin\": \"eA==\"}\n"
                   "}");
}
END_TEST

START_TEST(test_emit_malformed)
{
    static const unsigned char bad[] = {0x92, 0x01}; /* array of 2, 1 given */
    static const unsigned char c1[] = {0xc1};
    struct folio_mp_cur c;
    FILE *f = fopen("/dev/null", "w");

    folio_mp_cur_init(&c, bad, sizeof(bad));
    ck_assert_int_eq(folio_cli_json_emit(f, &c, -1), -1);
    folio_mp_cur_init(&c, c1, sizeof(c1));
    ck_assert_int_eq(folio_cli_json_emit(f, &c, 2), -1);
    fclose(f);
}
END_TEST

/* JSON text -> msgpack -> JSON text. */
static void
round_trip(const char *json, const char *want)
{
    json_error_t jerr;
    json_t *j = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    char why[256], *got;

    ck_assert_msg(j != NULL, "%s: %s", json, jerr.text);
    msgpack_sbuffer_clear(&sb);
    ck_assert_int_eq(folio_cli_json_pack(&pk, j, why, sizeof(why)), 0);
    json_decref(j);
    got = emit(-1);
    ck_assert_str_eq(got, want != NULL ? want : json);
    free(got);
    msgpack_sbuffer_clear(&sb);
}

START_TEST(test_pack_round_trip)
{
    round_trip("[null,true,false,0,-1,127,128,-33,65536]", NULL);
    round_trip("[9223372036854775807,-9223372036854775808]", NULL);
    round_trip("[0.1,2.0,1e+300,-0.0]", NULL);
    round_trip("{\"a\":{\"b\":[1,\"x\"]},\"\":\"\"}", NULL);
    round_trip("\"S\xc3\xa3o Paulo \\u20ac \\u0000\"",
               "\"S\xc3\xa3o Paulo \xe2\x82\xac \\u0000\"");
    round_trip("{\"$bin\":\"AAEC/w==\"}", NULL);
    round_trip("{\"$bin\":\"AAEC/w\"}", "{\"$bin\":\"AAEC/w==\"}");
    round_trip("{\"$ext\":[-5,\"aGk=\"]}", NULL);
    round_trip("{\"$ext\":[127,\"\"]}", NULL);
    /* Only a lone "$bin" key is special. */
    round_trip("{\"$bin\":\"AA==\",\"x\":1}", NULL);
    round_trip("{\"$bins\":5}", NULL);

    /* The types on the wire: int, float 64, str. */
    {
        json_t *j = json_loads("[1, 1.5, \"s\"]", 0, NULL);
        struct folio_mp_cur c;
        uint32_t n;
        char why[64];

        msgpack_sbuffer_clear(&sb);
        ck_assert_int_eq(folio_cli_json_pack(&pk, j, why, sizeof(why)), 0);
        json_decref(j);
        folio_mp_cur_init(&c, sb.data, sb.size);
        ck_assert_int_eq(folio_mp_read_array(&c, &n), 0);
        ck_assert_int_eq(folio_mp_type(&c), FOLIO_MP_UINT);
        folio_mp_skip(&c);
        ck_assert_int_eq((unsigned char)*c.p, 0xcb);
        folio_mp_skip(&c);
        ck_assert_int_eq(folio_mp_type(&c), FOLIO_MP_STR);
    }
}
END_TEST

static void
pack_fails(const char *json, const char *why_part)
{
    json_t *j = json_loads(json, JSON_DECODE_ANY, NULL);
    char why[256] = "";

    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(folio_cli_json_pack(&pk, j, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, why_part) != NULL, "%s: %s", json, why);
    json_decref(j);
}

START_TEST(test_pack_errors)
{
    pack_fails("{\"$bin\": 5}", "base64 string");
    pack_fails("{\"$bin\": \"not base64!\"}", "not base64");
    pack_fails("{\"$bin\": \"A\"}", "not base64");
    pack_fails("{\"$bin\": \"AB=\"}", "not base64");
    pack_fails("{\"$bin\": \"AB==\"}", "not base64"); /* bits left over */
    pack_fails("{\"$ext\": [128, \"AA==\"]}", "TYPE");
    pack_fails("{\"$ext\": [1]}", "TYPE");
    pack_fails("{\"$ext\": [1, 2]}", "base64 string");
    pack_fails("[{\"a\": {\"$bin\": \"=\"}}]", "not base64");
}
END_TEST

START_TEST(test_formats)
{
    char b[64];

    ck_assert_str_eq(folio_cli_fmt_money(b, sizeof(b), 0), "R$ 0,00");
    ck_assert_str_eq(folio_cli_fmt_money(b, sizeof(b), 5), "R$ 0,05");
    ck_assert_str_eq(folio_cli_fmt_money(b, sizeof(b), 1234), "R$ 12,34");
    ck_assert_str_eq(folio_cli_fmt_money(b, sizeof(b), 99999), "R$ 999,99");
    ck_assert_str_eq(folio_cli_fmt_money(b, sizeof(b), 123456), "R$ 1.234,56");
    ck_assert_str_eq(folio_cli_fmt_money(b, sizeof(b), 123456789),
                     "R$ 1.234.567,89");
    ck_assert_str_eq(folio_cli_fmt_money(b, sizeof(b), -1050), "-R$ 10,50");
    ck_assert_str_eq(folio_cli_fmt_money(b, sizeof(b), INT64_MIN),
                     "-R$ 92.233.720.368.547.758,08");
    ck_assert_str_eq(folio_cli_fmt_duration(b, sizeof(b), 0.4), "0s");
    ck_assert_str_eq(folio_cli_fmt_duration(b, sizeof(b), 59.9), "59s");
    ck_assert_str_eq(folio_cli_fmt_duration(b, sizeof(b), 192), "3m12s");
    ck_assert_str_eq(folio_cli_fmt_duration(b, sizeof(b), 7380), "2h03m");
    ck_assert_str_eq(folio_cli_fmt_duration(b, sizeof(b), 273600), "3d04h");
    ck_assert_str_eq(folio_cli_fmt_duration(b, sizeof(b), -5), "0s");
    ck_assert_str_eq(folio_cli_fmt_bytes(b, sizeof(b), 512), "512 B");
    ck_assert_str_eq(folio_cli_fmt_bytes(b, sizeof(b), 12595), "12.3 KiB");
    ck_assert_str_eq(folio_cli_fmt_bytes(b, sizeof(b), 1258291), "1.2 MiB");
    ck_assert_str_eq(folio_cli_fmt_bytes(b, sizeof(b), 3.5 * 1073741824),
                     "3.5 GiB");
}
END_TEST

/* Run a printer on the packed value with stdout captured. */
static char *
capture(int (*show)(struct folio_mp_cur), int *rc)
{
    struct folio_mp_cur c;
    char *text;
    FILE *tmp = tmpfile();
    long len;
    int saved;

    ck_assert_ptr_nonnull(tmp);
    fflush(stdout);
    saved = dup(STDOUT_FILENO);
    dup2(fileno(tmp), STDOUT_FILENO);
    folio_mp_cur_init(&c, sb.data, sb.size);
    *rc = show(c);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    len = ftell(tmp) >= 0 ? lseek(fileno(tmp), 0, SEEK_END) : 0;
    text = calloc(1, (size_t)len + 1);
    ck_assert_int_eq(pread(fileno(tmp), text, (size_t)len, 0), len);
    fclose(tmp);
    msgpack_sbuffer_clear(&sb);
    return text;
}

static void
expect_show(int (*show)(struct folio_mp_cur), int rc, const char *want)
{
    int got_rc;
    char *got = capture(show, &got_rc);

    ck_assert_int_eq(got_rc, rc);
    ck_assert_str_eq(got, want);
    free(got);
}

static void
kv_int(const char *k, int64_t v)
{
    folio_pack_cstr(&pk, k);
    msgpack_pack_int64(&pk, v);
}

static void
kv_str(const char *k, const char *v)
{
    folio_pack_cstr(&pk, k);
    folio_pack_cstr(&pk, v);
}

static uint64_t search_offset;
static int64_t search_limit = -1;

static int
show_search(struct folio_mp_cur c)
{
    return folio_cli_show_search(c, search_offset, search_limit);
}

static void
pack_search(int64_t count, int n)
{
    static const char *const works[] = {"hamlet", "1kinghenryvi", "sonnets"};
    int i;

    msgpack_pack_map(&pk, 2);
    kv_int("count", count);
    folio_pack_cstr(&pk, "lines");
    msgpack_pack_array(&pk, (size_t)n);
    for (i = 0; i < n; i++) {
        msgpack_pack_map(&pk, 3);
        kv_str("work", works[i % 3]);
        kv_int("line", 100 + i);
        kv_str("text", i == 1 ? "\tTo be,\x1b[31m or not" : "to be");
    }
}

START_TEST(test_show_count_search)
{
    msgpack_pack_int(&pk, 349);
    expect_show(folio_cli_show_count, 0, "349\n");
    folio_pack_cstr(&pk, "349");
    expect_show(folio_cli_show_count, -1, "");

    pack_search(3, 3);
    expect_show(show_search, 0,
                "hamlet:100: to be\n"
                "1kinghenryvi:101: \tTo be,?[31m or not\n"
                "sonnets:102: to be\n"
                "-- 3 matching lines\n");
    search_offset = 10;
    pack_search(14, 2);
    expect_show(show_search, 0,
                "hamlet:100: to be\n"
                "1kinghenryvi:101: \tTo be,?[31m or not\n"
                "-- 14 matching lines, 11-12 shown\n");
    search_offset = 20;
    pack_search(14, 0);
    expect_show(show_search, 0,
                "-- 14 matching lines, --offset 20 is past the last\n");
    /* --limit 0: the count alone, and why no line is shown. */
    search_offset = 0;
    search_limit = 0;
    pack_search(14, 0);
    expect_show(show_search, 0,
                "-- 14 matching lines, none shown (--limit 0)\n");
    pack_search(0, 0);
    expect_show(show_search, 0, "-- 0 matching lines\n");
    search_limit = -1;
    pack_search(1, 1);
    expect_show(show_search, 0, "hamlet:100: to be\n-- 1 matching line\n");
    pack_search(0, 0);
    expect_show(show_search, 0, "-- 0 matching lines\n");
    /* A bad line anywhere: nothing printed, the caller prints JSON. */
    msgpack_pack_map(&pk, 2);
    kv_int("count", 2);
    folio_pack_cstr(&pk, "lines");
    msgpack_pack_array(&pk, 2);
    msgpack_pack_map(&pk, 3);
    kv_str("work", "hamlet");
    kv_int("line", 1);
    kv_str("text", "x");
    msgpack_pack_map(&pk, 1);
    kv_str("work", "hamlet");
    expect_show(show_search, -1, "");
}
END_TEST

static void
pack_option(const char *carrier, const char *band, int64_t price, int64_t days)
{
    msgpack_pack_map(&pk, 4);
    kv_str("carrier", carrier);
    kv_str("band", band);
    kv_int("price_cents", price);
    kv_int("days", days);
}

START_TEST(test_show_quote)
{
    msgpack_pack_map(&pk, 5);
    kv_str("cep", "01310-100");
    kv_int("weight_g", 2400);
    kv_int("cubic_weight_g", 1000);
    kv_int("billed_weight_g", 2400);
    folio_pack_cstr(&pk, "options");
    msgpack_pack_array(&pk, 3);
    pack_option("economy", "SP-Capital", 1845, 2);
    pack_option("express", "SP-Capital", 3290, 1);
    pack_option("freight-forwarders-of-brazil", "X", 123456789, 14);
    expect_show(
        folio_cli_show_quote, 0,
        "CEP 01310-100: weight 2400 g, cubic 1000 g, billed 2400 g\n"
        "CARRIER                       BAND                  PRICE  DAYS\n"
        "economy                       SP-Capital         R$ 18,45     2\n"
        "express                       SP-Capital         R$ 32,90     1\n"
        "freight-forwarders-of-brazil  X           R$ 1.234.567,89    14\n");
    msgpack_pack_map(&pk, 5);
    kv_str("cep", "01310-100");
    kv_int("weight_g", 1);
    kv_int("cubic_weight_g", 0);
    kv_int("billed_weight_g", 1);
    folio_pack_cstr(&pk, "options");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 1);
    kv_str("carrier", "economy");
    expect_show(folio_cli_show_quote, -1, "");
}
END_TEST

static void
pack_comment(int64_t id, const char *author, const char *body, int64_t ms)
{
    msgpack_pack_map(&pk, 5);
    kv_int("id", id);
    kv_str("path", "/blog/hello/");
    kv_str("author", author);
    kv_str("body", body);
    kv_int("created_at", ms);
}

static int
show_comments(struct folio_mp_cur c)
{
    return folio_cli_show_comments(c, "/blog/hello");
}

START_TEST(test_show_comments)
{
    msgpack_pack_array(&pk, 2);
    pack_comment(1, "alice", "Nice post!", 1796054400123);
    pack_comment(7, "bob", "Two lines:\n\tindented\nand a\x07 bell", 0);
    expect_show(show_comments, 0,
                "#1  alice  2026-11-30 16:00:00 UTC\n"
                "    Nice post!\n"
                "\n"
                "#7  bob  1970-01-01 00:00:00 UTC\n"
                "    Two lines:\n"
                "    \tindented\n"
                "    and a? bell\n");
    msgpack_pack_array(&pk, 0);
    expect_show(show_comments, 0, "no comments on /blog/hello\n");
    pack_comment(3, "carol", "hi", 1000);
    expect_show(folio_cli_show_comment_posted, 0,
                "comment #3 posted on /blog/hello/\n");
    msgpack_pack_int(&pk, 3);
    expect_show(show_comments, -1, "");
}
END_TEST

START_TEST(test_show_methods)
{
    msgpack_pack_map(&pk, 3);
    kv_str("server.ping", "-> \"pong\"");
    kv_str("corpus.match_count", "query:str -> int");
    kv_str("comments.list", "path:str -> [comment]");
    expect_show(folio_cli_show_methods, 0,
                "comments.list       path:str -> [comment]\n"
                "corpus.match_count  query:str -> int\n"
                "server.ping         -> \"pong\"\n");
    msgpack_pack_map(&pk, 1);
    kv_int("server.ping", 1);
    expect_show(folio_cli_show_methods, -1, "");
}
END_TEST

/* The words of a line of the interactive mode, joined by '|'. */
static void
expect_words(const char *line, int rc, const char *want)
{
    char **w, got[256] = "";
    int n, i, r = folio_cli_words(line, &w, &n);

    ck_assert_int_eq(r, rc);
    if (rc != 0)
        return;
    for (i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s",
                 i > 0 ? "|" : "", w[i]);
    ck_assert_str_eq(got, want);
    ck_assert(n == 0 ? w == NULL : w[n] == NULL);
    folio_cli_words_free(w);
}

START_TEST(test_words)
{
    expect_words("", 0, "");
    expect_words("  \t ", 0, "");
    expect_words("ping", 0, "ping");
    expect_words("  count  hello\tworld \n", 0, "count|hello|world");
    expect_words("count 'to be, or not'", 0, "count|to be, or not");
    expect_words("post /p ann \"a \\\"b\\\" \\$c \\d\"", 0,
                 "post|/p|ann|a \"b\" $c \\d");
    expect_words("a\\ b c\\'d", 0, "a b|c'd");
    expect_words("it''s ''", 0, "its|");
    expect_words("x 'y", -2, "");
    expect_words("x \"y", -2, "");
    expect_words("trailing\\", 0, "trailing\\");
}
END_TEST

/* What `print` wrote, NUL-terminated (free it). */
static char *
printed(void (*print)(FILE *f, const struct folio_cli_lat *l),
        const struct folio_cli_lat *l)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    ck_assert_ptr_nonnull(f);
    print(f, l);
    fclose(f);
    return text;
}

START_TEST(test_latency)
{
    struct folio_cli_lat l;
    char *t;
    int i;

    memset(&l, 0, sizeof(l));
    t = printed(folio_cli_lat_line, &l);
    ck_assert_str_eq(t, "no samples");
    free(t);
    t = printed(folio_cli_lat_histogram, &l);
    ck_assert_str_eq(t, "");
    free(t);
    t = printed(folio_cli_lat_json, &l);
    ck_assert_str_eq(t, "{\"samples\": 0, \"histogram\": []}\n");
    free(t);
    /* 30 us x3, 100 us, 2 ms: buckets 32 us, 128 us, 2048 us. */
    for (i = 0; i < 3; i++)
        folio_cli_lat_add(&l, 30000);
    folio_cli_lat_add(&l, 100000);
    folio_cli_lat_add(&l, 2000000);
    ck_assert_uint_eq(l.n, 5);
    t = printed(folio_cli_lat_line, &l);
    ck_assert_str_eq(t, "min 0.030 ms, avg 0.438 ms, max 2.000 ms, 5 samples");
    free(t);
    t = printed(folio_cli_lat_histogram, &l);
    ck_assert_str_eq(t, "  latency (ms)    samples      %\n"
                        "  <=      0.032          3  60.00 "
                        "########################################\n"
                        "  <=      0.064          0   0.00 \n"
                        "  <=      0.128          1  20.00 ##############\n"
                        "  <=      0.256          0   0.00 \n"
                        "  <=      0.512          0   0.00 \n"
                        "  <=      1.024          0   0.00 \n"
                        "  <=      2.048          1  20.00 ##############\n");
    free(t);
    t = printed(folio_cli_lat_json, &l);
    ck_assert_ptr_nonnull(strstr(t, "\"samples\": 5, \"min_ms\": 0.030000, "
                                    "\"avg_ms\": 0.438000, \"max_ms\": "
                                    "2.000000, \"histogram\": [{\"le_ms\": "
                                    "0.032, \"samples\": 3}, "));
    ck_assert_ptr_nonnull(strstr(t, "{\"le_ms\": 2.048, \"samples\": 1}]}\n"));
    free(t);
    /* Sub-microsecond: the first bucket; one sample is "1 sample". */
    memset(&l, 0, sizeof(l));
    folio_cli_lat_add(&l, 400);
    ck_assert_uint_eq(l.bucket[0], 1);
    t = printed(folio_cli_lat_line, &l);
    ck_assert_str_eq(t, "min 0.000 ms, avg 0.000 ms, max 0.000 ms, 1 sample");
    free(t);
}
END_TEST

static Suite *
cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("json");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_emit_scalars);
    tcase_add_test(tc, test_emit_floats);
    tcase_add_test(tc, test_emit_strings);
    tcase_add_test(tc, test_emit_bin_ext_keys);
    tcase_add_test(tc, test_emit_pretty);
    tcase_add_test(tc, test_emit_malformed);
    tcase_add_test(tc, test_pack_round_trip);
    tcase_add_test(tc, test_pack_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("show");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_formats);
    tcase_add_test(tc, test_show_count_search);
    tcase_add_test(tc, test_show_quote);
    tcase_add_test(tc, test_show_comments);
    tcase_add_test(tc, test_show_methods);
    suite_add_tcase(s, tc);
    tc = tcase_create("session");
    tcase_add_test(tc, test_words);
    tcase_add_test(tc, test_latency);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(cli_suite());
}
