/*
 * check_datafiles.c - the manifest of shipped data files
 * (shm/datafiles.c): written in sha256sum's format, verified file by
 * file; a changed, missing or truncated file, a malformed line, or a path
 * out of the directory is refused; no manifest means "not shipped".
 */
#include "config.h"

#include <sys/stat.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/datafiles.h"
#include "src/err.h"
#include "tests/check_run.h"

static char dir[64];

static void
put(const char *name, const char *text)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    fputs(text, f);
    fclose(f);
}

static void
setup(void)
{
    char sub[128];

    snprintf(dir, sizeof(dir), "/tmp/folio-sums.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sub, sizeof(sub), "%s/freight", dir);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    put("corpus-1.idx", "an index");
    put("freight/data.mdb", "");
}

static void
teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_write_verify)
{
    static const char *const names[] = {"corpus-1.idx", "freight/data.mdb"};
    char err[512], path[256], line[256];
    unsigned n;
    FILE *f;

    ck_assert_int_eq(folio_datafiles_verify(dir, &n, err, sizeof(err)), 0);
    ck_assert_int_eq(folio_datafiles_write(dir, names, 2, err, sizeof(err)), 0);
    ck_assert_int_eq(folio_datafiles_verify(dir, &n, err, sizeof(err)), 1);
    ck_assert_uint_eq(n, 2);
    /* sha256sum's format: the empty file's well-known digest */
    snprintf(path, sizeof(path), "%s/" FOLIO_DATA_SUMS, dir);
    ck_assert_ptr_nonnull(f = fopen(path, "r"));
    ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
    ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
    fclose(f);
    ck_assert_str_eq(line, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934c"
                           "a495991b7852b855  freight/data.mdb\n");
    /* one byte more */
    put("freight/data.mdb", "x");
    ck_assert_int_eq(folio_datafiles_verify(dir, &n, err, sizeof(err)),
                     FOLIO_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(err, "freight/data.mdb does not match"));
    /* missing */
    put("freight/data.mdb", "");
    snprintf(path, sizeof(path), "%s/corpus-1.idx", dir);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(folio_datafiles_verify(dir, &n, err, sizeof(err)),
                     FOLIO_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(err, "corpus-1.idx"));
    ck_assert_ptr_nonnull(strstr(err, "copy the data again"));
    /* a file to hash that is not there */
    ck_assert_int_ne(folio_datafiles_write(dir, names, 2, err, sizeof(err)), 0);
}
END_TEST

START_TEST(test_bad_manifest)
{
    char err[512];

    put(FOLIO_DATA_SUMS, "not a checksum  corpus-1.idx\n");
    ck_assert_int_eq(folio_datafiles_verify(dir, NULL, err, sizeof(err)),
                     FOLIO_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(err, ":1: not a line of sha256sum"));
    /* names out of the directory are refused */
    put(FOLIO_DATA_SUMS, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca4"
                         "95991b7852b855  ../etc/passwd\n");
    ck_assert_int_eq(folio_datafiles_verify(dir, NULL, err, sizeof(err)),
                     FOLIO_ECORRUPT);
    put(FOLIO_DATA_SUMS, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca4"
                         "95991b7852b855  /etc/passwd\n");
    ck_assert_int_eq(folio_datafiles_verify(dir, NULL, err, sizeof(err)),
                     FOLIO_ECORRUPT);
    /* sha256sum's binary marker is read too */
    put(FOLIO_DATA_SUMS, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca4"
                         "95991b7852b855 *freight/data.mdb\n");
    ck_assert_int_eq(folio_datafiles_verify(dir, NULL, err, sizeof(err)), 1);
}
END_TEST

static Suite *
datafiles_suite(void)
{
    Suite *s = suite_create("datafiles");
    TCase *tc = tcase_create("datafiles");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_write_verify);
    tcase_add_test(tc, test_bad_manifest);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(datafiles_suite());
}
