/*
 * e2e_datafiles.c - data shipped as files (foliod(8)): foliod
 * --build-data builds the corpus index and the freight environment with
 * their SHA-256 manifest; a host whose data directory holds the copied
 * files verifies them at start and serves them as they are; a changed or
 * missing file, or other inputs than those the data was built from, stop
 * the start with a message that says which and what to do.
 */
#include "config.h"

#include <sys/wait.h>

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/client.h"
#include "tests/check_run.h"
#include "tests/e2e_util.h"

static struct e2e_server srv;
static char tmp[256];
static const char *corpus; /* the corpus the hosts are given (required) */

/* system() of a formatted command; its exit status. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    int st;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void
setup(void)
{
    snprintf(tmp, sizeof(tmp), "/tmp/folio-ship.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    corpus = e2e_corpus();
}

static void
teardown(void)
{
    e2e_rm_rf(tmp);
}

/* What the build and every host are given: tables/freight/, catalog. */
static void
inputs(char *buf, size_t len, const char *tables)
{
    snprintf(buf, len,
             "--corpus %s --freight-dir %s/freight --catalog %s/catalog.csv",
             corpus, tables, tables);
}

static void
conf_of(char *buf, size_t len, const char *tables)
{
    snprintf(buf, len,
             "data_dir = %s/host\ncorpus = %s\nfreight_dir = %s/freight\n"
             "catalog = %s/catalog.csv\n",
             tmp, corpus, tables, tables);
}

/* foliod --check-config with the host's data: its status; output in err.txt */
static int
check_host(const char *tables)
{
    char conf[1024], path[320];

    conf_of(conf, sizeof(conf), tables);
    snprintf(path, sizeof(path), "%s/host.conf", tmp);
    ck_assert_int_eq(e2e_write_file(path, conf), 0);
    return sh("%s --check-config -c %s --metrics-listen off --admin-socket "
              "off >%s/err.txt 2>&1",
              e2e_foliod(), path, tmp);
}

static int
err_has(const char *needle)
{
    return sh("grep -qF '%s' %s/err.txt", needle, tmp) == 0;
}

static void
ship(void)
{
    ck_assert_int_eq(sh("rm -rf %s/host && mkdir -p %s/host/freight && "
                        "cp %s/built/folio-data.sha256 %s/host/ && "
                        "cp %s/built/freight/data.mdb %s/host/freight/ && "
                        "{ cp %s/built/corpus-*.idx %s/host/ 2>/dev/null || "
                        "true; }",
                        tmp, tmp, tmp, tmp, tmp, tmp, tmp, tmp),
                     0);
}

START_TEST(test_build_ship_verify)
{
    char args[1024], conf[1024], tables[320];
    struct folio_client *c;
    struct folio_reply r;
    int64_t n;

    snprintf(tables, sizeof(tables), "%s/data", FOLIO_SRCDIR);
    inputs(args, sizeof(args), tables);
    ck_assert_int_eq(sh("%s --build-data %s/built %s >%s/build.txt 2>&1",
                        e2e_foliod(), tmp, args, tmp),
                     0);
    ck_assert_int_eq(sh("grep -q 'folio-data.sha256' %s/build.txt", tmp), 0);
    /* the manifest is sha256sum's: the operator can check a copy */
    if (sh("command -v sha256sum >/dev/null") == 0)
        ck_assert_int_eq(
            sh("cd %s/built && sha256sum --quiet -c folio-data.sha256", tmp),
            0);

    /* a host with the copied files serves them, rebuilding nothing */
    ship();
    ck_assert_int_eq(check_host(tables), 0);
    conf_of(conf, sizeof(conf), tables);
    ck_assert_int_eq(e2e_start(&srv, conf, NULL), 0);
    ck_assert(e2e_log_has(&srv, "shipped files match folio-data.sha256"));
    ck_assert(e2e_log_has(&srv, "(shipped)"));
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    ck_assert_int_eq(folio_client_call0(c, "freight.info", &r), 1);
    ck_assert_int_eq(r.code, 0);
    ck_assert(e2e_log_has(&srv, "mapped from the cache"));
    ck_assert_int_eq(folio_client_call_str(c, "corpus.match_count", "hello", &r),
                     1);
    ck_assert_int_eq(folio_mp_read_int(&r.result, &n), 0);
    ck_assert_int_eq(n, 349);
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);
    /* and left them as they came */
    if (sh("command -v sha256sum >/dev/null") == 0)
        ck_assert_int_eq(
            sh("cd %s/host && sha256sum --quiet -c folio-data.sha256", tmp), 0);

    /* one byte changed: no start, and the file named */
    ck_assert_int_eq(sh("printf x | dd of=%s/host/freight/data.mdb bs=1 "
                        "seek=4100 conv=notrunc 2>/dev/null",
                        tmp),
                     0);
    ck_assert_int_ne(check_host(tables), 0);
    ck_assert(err_has("freight/data.mdb does not match its checksum"));
    ck_assert(err_has("copy the data again"));
    ck_assert_int_ne(e2e_start(&srv, conf, NULL), 0);
    e2e_stop(&srv);

    /* a file missing */
    ship();
    ck_assert_int_eq(sh("rm %s/host/freight/data.mdb", tmp), 0);
    ck_assert_int_ne(check_host(tables), 0);
    ck_assert(err_has("data.mdb"));

    /* other freight tables here than at the build */
    ship();
    ck_assert_int_eq(sh("mkdir -p %s/tables/freight && "
                        "cp %s/data/freight/*.csv %s/tables/freight/ && "
                        "cp %s/data/catalog.csv %s/tables/ && "
                        "chmod -R u+w %s/tables && "
                        "echo >> %s/tables/freight/economy.csv",
                        tmp, FOLIO_SRCDIR, tmp, FOLIO_SRCDIR, tmp, tmp, tmp),
                     0);
    snprintf(tables, sizeof(tables), "%s/tables", tmp);
    ck_assert_int_ne(check_host(tables), 0);
    ck_assert(err_has("not the ones the shipped environment"));

    /* another corpus */
    {
        static char other[320];

        snprintf(tables, sizeof(tables), "%s/data", FOLIO_SRCDIR);
        snprintf(other, sizeof(other), "%s/corpus", tmp);
        ck_assert_int_eq(sh("mkdir %s && cp %s/* %s/ && chmod -R u+w %s && "
                            "echo 'one more line' >> %s/hamlet.txt",
                            other, corpus, other, other, other),
                         0);
        corpus = other;
        ck_assert_int_ne(check_host(tables), 0);
        ck_assert(err_has("is not the one the shipped index was built from"));
        /* and the shipped index is still there, untouched */
        ck_assert_int_eq(
            sh("cd %s/host && sha256sum --quiet -c folio-data.sha256", tmp), 0);
    }
}
END_TEST

static Suite *
datafiles_suite(void)
{
    Suite *s = suite_create("e2e_datafiles");
    TCase *tc = tcase_create("datafiles");

    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_build_ship_verify);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    e2e_require_corpus(); /* the index it ships */
    return folio_check_run(datafiles_suite());
}
