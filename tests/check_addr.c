/*
 * check_addr.c - listen and connect addresses: every accepted form, the
 * errors, formatting, and binding a Unix socket over a stale file.
 */
#include "config.h"

#include <sys/socket.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/addr.h"
#include "src/err.h"
#include "tests/check_run.h"

static void
roundtrip(const char *in, const char *want)
{
    struct folio_addr a;
    char why[256], out[FOLIO_ADDR_TEXT];

    ck_assert_msg(folio_addr_parse(in, &a, why, sizeof(why)) == 0, "%s: %s",
                  in, why);
    folio_addr_format((struct sockaddr *)&a.sa, a.salen, out, sizeof(out));
    ck_assert_str_eq(out, want);
}

START_TEST(test_forms)
{
    struct folio_addr a;
    char why[256];

    roundtrip("127.0.0.1:7788", "127.0.0.1:7788");
    roundtrip("[::1]:80", "[::1]:80");
    roundtrip("*:9", "0.0.0.0:9");
    roundtrip("localhost:1", "127.0.0.1:1");
    roundtrip("unix:/run/folio/admin.sock", "unix:/run/folio/admin.sock");
    roundtrip("7788", "127.0.0.1:7788"); /* a bare port: the loopback's */
    ck_assert_int_eq(folio_addr_parse("[::1]:80", &a, why, sizeof(why)), 0);
    ck_assert_int_eq(a.family, AF_INET6);
    ck_assert_int_eq(folio_addr_port(&a), 80);
}
END_TEST

/* The short forms people type, and what each error says. */
START_TEST(test_expand)
{
    static const char *const good[][3] = {
        {"7788", "-1", "127.0.0.1:7788"},
        {"0", "-1", "127.0.0.1:0"},
        {"127.0.0.1", "7788", "127.0.0.1:7788"},
        {"localhost", "9788", "localhost:9788"},
        {"*", "7788", "*:7788"},
        {"[::1]", "7788", "[::1]:7788"},
        {"[::1]:80", "7788", "[::1]:80"},
        {"10.0.0.5:7789", "7788", "10.0.0.5:7789"},
        {"unix:/tmp/x.sock", "7788", "unix:/tmp/x.sock"},
    };
    static const char *const bad[][3] = {
        {"127.0.0.1:abc", "7788", "the port 'abc' is not a number"},
        {"127.0.0.1:", "7788", "no port after ':'"},
        {"127.0.0.1:65536", "7788", "the port 65536 is over 65535"},
        {"99999", "7788", "the port 99999 is over 65535"},
        {"127.0.0.1:-1", "7788", "the port '-1' is not a number"},
        {"127.0.0.1", "-1", "expected HOST:PORT, [V6ADDR]:PORT, PORT or"},
        {"[::1]", "-1", "no port"},
        {"::1", "7788", "write IPv6 addresses as [V6ADDR]:PORT"},
        {"unix:", "7788", "Unix socket path empty"},
    };
    char out[FOLIO_ADDR_TEXT + 8], why[256];
    size_t i;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        ck_assert_msg(folio_addr_expand(good[i][0], atoi(good[i][1]), out,
                                        sizeof(out), why, sizeof(why)) == 0,
                      "%s: %s", good[i][0], why);
        ck_assert_str_eq(out, good[i][2]);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(folio_addr_expand(bad[i][0], atoi(bad[i][1]), out,
                                        sizeof(out), why,
                                        sizeof(why)) == FOLIO_EINVAL,
                      "%s accepted", bad[i][0]);
        ck_assert_msg(strstr(why, bad[i][2]) != NULL, "%s: '%s' lacks '%s'",
                      bad[i][0], why, bad[i][2]);
    }
}
END_TEST

START_TEST(test_errors)
{
    static const char *const bad[] = {
        "127.0.0.1",     "127.0.0.1:",   "127.0.0.1:65536", "127.0.0.1:-1",
        "::1:80",        "[::1]80",      "unix:",           "1.2.3.4:x",
    };
    struct folio_addr a;
    char why[256];
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        ck_assert_msg(folio_addr_parse(bad[i], &a, why, sizeof(why)) ==
                          FOLIO_EINVAL,
                      "%s accepted", bad[i]);
        ck_assert_msg(why[0] != '\0', "%s: no reason", bad[i]);
    }
}
END_TEST

START_TEST(test_unix_stale_and_live)
{
    struct folio_addr a;
    char path[64], spec[80], why[256];
    int fd, fd2;

    snprintf(path, sizeof(path), "/tmp/folio-addr-%ld.sock", (long)getpid());
    snprintf(spec, sizeof(spec), "unix:%s", path);
    ck_assert_int_eq(folio_addr_parse(spec, &a, why, sizeof(why)), 0);
    fd = folio_addr_listen(&a, 16, 0600, why, sizeof(why));
    ck_assert_int_ge(fd, 0);
    /* A live socket is not taken over. */
    ck_assert_int_eq(folio_addr_listen(&a, 16, 0600, why, sizeof(why)), -1);
    close(fd);
    /* A stale file (nobody listening) is replaced. */
    fd2 = folio_addr_listen(&a, 16, 0600, why, sizeof(why));
    ck_assert_int_ge(fd2, 0);
    fd = folio_addr_connect(&a, 1000);
    ck_assert_int_ge(fd, 0);
    close(fd);
    close(fd2);
    unlink(path);
}
END_TEST

static Suite *
addr_suite(void)
{
    Suite *s = suite_create("addr");
    TCase *tc = tcase_create("addr");

    tcase_add_test(tc, test_forms);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_expand);
    tcase_add_test(tc, test_unix_stale_and_live);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(addr_suite());
}
