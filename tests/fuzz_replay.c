/*
 * fuzz_replay.c - run a fuzz target's entry point over its inputs with
 * the normal compiler: the seed corpus tests/fuzz/TARGET/ and every input
 * that once made it fail, tests/fuzz/regressions/TARGET/.  Linked with one
 * tests/fuzz_TARGET.c (FUZZ_TARGET names it).  A Check suite, so make
 * check reads it like the others; with arguments (files or directories)
 * it replays those instead, without forking: for gdb and valgrind.
 */
#include "config.h"
#include "tests/check_run.h"

#include <sys/stat.h>

#include <check.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_DIR FOLIO_SRCDIR "/tests/fuzz/"

static int
replay_file(const char *path)
{
    struct stat st;
    uint8_t *buf;
    size_t n;
    FILE *f;

    if ((f = fopen(path, "rb")) == NULL || fstat(fileno(f), &st) != 0) {
        perror(path);
        if (f != NULL)
            fclose(f);
        return -1;
    }
    /* A copy of exactly the file's size: ASan sees reads past its end. */
    buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
    n = fread(buf, 1, (size_t)st.st_size, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

/* Replay every regular file of dir (or dir itself if it is a file). */
static int
replay(const char *dir)
{
    char path[1024];
    struct dirent *e;
    struct stat st;
    DIR *d;
    int n = 0;

    if (stat(dir, &st) != 0)
        return 0;
    if (S_ISREG(st.st_mode))
        return replay_file(dir) == 0;
    if ((d = opendir(dir)) == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (replay_file(path) == 0)
            n++;
    }
    closedir(d);
    return n;
}

START_TEST(test_seeds)
{
    int n;

    LLVMFuzzerInitialize(NULL, NULL);
    n = replay(FUZZ_DIR FUZZ_TARGET);
    printf("fuzz_%s: %d seed inputs replayed\n", FUZZ_TARGET, n);
    ck_assert_msg(n > 0, "no seeds in %s", FUZZ_DIR FUZZ_TARGET);
}
END_TEST

START_TEST(test_regressions)
{
    int n;

    LLVMFuzzerInitialize(NULL, NULL);
    n = replay(FUZZ_DIR "regressions/" FUZZ_TARGET);
    printf("fuzz_%s: %d regression inputs replayed\n", FUZZ_TARGET, n);
}
END_TEST

int
main(int argc, char **argv)
{
    Suite *s;
    TCase *tc;
    int i;

    if (argc > 1) {
        LLVMFuzzerInitialize(&argc, &argv);
        for (i = 1; i < argc; i++)
            printf("%s: %d inputs\n", argv[i], replay(argv[i]));
        return 0;
    }
    s = suite_create("fuzz_replay_" FUZZ_TARGET);
    tc = tcase_create("replay");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_seeds);
    tcase_add_test(tc, test_regressions);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
