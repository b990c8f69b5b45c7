/*
 * check_run.h - the end of every test program's main(): run the suite
 * (forking per test, Check's default), and exit 0 when nothing failed.
 * On a terminal (descriptor 9, the console the harness passes:
 * AM_TESTS_FD_REDIRECT in tests/include.am), each test case's result is
 * also shown as it ends, so that a long suite is seen to move; the .log
 * files, and output that is not a terminal (CI), are as they were.
 */
#ifndef FOLIO_TESTS_CHECK_RUN_H
#define FOLIO_TESTS_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>
#include <unistd.h>

/* The console: tests/include.am's AM_TESTS_FD_REDIRECT = 9>&2. */
#define FOLIO_CHECK_CONSOLE 9
#define FOLIO_CHECK_CONSOLE_PATH "/dev/fd/9"

static inline int
folio_check_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    if (isatty(FOLIO_CHECK_CONSOLE))
        srunner_set_log(sr, FOLIO_CHECK_CONSOLE_PATH);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
