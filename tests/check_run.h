/*
 * check_run.h - the end of every test program's main(): run the suite
 * (forking per test, Check's default), and exit 0 when nothing failed.
 */
#ifndef FOLIO_TESTS_CHECK_RUN_H
#define FOLIO_TESTS_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>

static inline int
folio_check_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
