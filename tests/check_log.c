/*
 * check_log.c - the log's rate limit (src/log.c): a line repeated in a
 * burst is written REPEAT_BURST (10) times a second, the rest held back;
 * other lines, and [crit] lines, are never held back by it.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/clock.h"
#include "src/log.h"
#include "tests/check_run.h"

static char path[] = "/tmp/folio-check-log.XXXXXX";

/* Lines of the log holding `needle`. */
static int
count(const char *needle)
{
    char line[4096];
    FILE *f = fopen(path, "r");
    int n = 0;

    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

START_TEST(test_repeats_held)
{
    int fd = mkstemp(path), i, seconds;
    uint64_t t0 = folio_mono_ms();

    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(folio_log_open(path), 0);
    /* 100,000 identical lines within far less than a second, interleaved
     * with lines that differ each time. */
    for (i = 0; i < 100000; i++) {
        folio_log_warnx("accept: Too many open files");
        if (i % 10000 == 0)
            folio_log_warnx("distinct line %d", i);
    }
    folio_log_crit("crit %d", 1);
    folio_log_crit("crit %d", 1);
    ck_assert_int_eq(folio_log_open(NULL), 0);
    /* 10 a second, and a line telling what each second held back. */
    seconds = (int)((folio_mono_ms() - t0) / 1000) + 1;
    ck_assert_int_le(count("accept: Too many open files"), 11 * seconds);
    ck_assert_int_ge(count("accept: Too many open files"), 10);
    ck_assert_int_eq(count("distinct line"), 10);
    ck_assert_int_eq(count("crit 1"), 2);
    unlink(path);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("check_log");
    TCase *tc = tcase_create("log");

    tcase_add_test(tc, test_repeats_held);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
