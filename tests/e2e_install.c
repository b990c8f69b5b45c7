/*
 * e2e_install.c - `make install DESTDIR=...' from this build tree, then
 * the installed foliod: every program, man page, the default
 * configuration, the unit and the data where the build says they go;
 * the installed foliod checks its installed configuration and serves
 * from the DESTDIR; a second install keeps an operator's foliod.conf;
 * `make uninstall' leaves nothing but that file.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/stat.h>

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "src/client.h"
#include "src/mp.h"
#include "tests/e2e_util.h"
#include "tests/check_run.h"

static char dest[128]; /* the DESTDIR */
static char makelog[160];

/* DESTDIR + an installation path. */
static const char *
at(const char *dir, const char *file)
{
    static char buf[4][1024];
    static int k;
    char *b = buf[k++ % 4];

    snprintf(b, sizeof(buf[0]), "%s%.600s%s%.256s", dest, dir,
             file != NULL ? "/" : "", file != NULL ? file : "");
    return b;
}

static void
print_file(const char *path)
{
    char line[1024];
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL)
        fprintf(stderr, "  %s", line);
    fclose(f);
}

/* make TARGET DESTDIR=dest in the build tree; 0 or the failure printed. */
static int
make(const char *target)
{
    char cmd[1024];
    int rc;

    /* Not the jobserver of the `make check' that runs us. */
    unsetenv("MAKEFLAGS");
    unsetenv("MFLAGS");
    unsetenv("MAKELEVEL");
    snprintf(cmd, sizeof(cmd), "make -C '%s' %s DESTDIR='%s' >'%s' 2>&1",
             FOLIO_BUILDDIR, target, dest, makelog);
    if ((rc = system(cmd)) != 0) {
        fprintf(stderr, "%s: exit status %d\n", cmd, rc);
        print_file(makelog);
    }
    return rc;
}

static int
is_file(const char *path, int exec)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
           (!exec || (st.st_mode & 0111) != 0);
}

static int
is_dir(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int
same_file(const char *a, const char *b)
{
    char cmd[2200];

    snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

static int
file_has(const char *path, const char *needle)
{
    char *text = e2e_read_file(path);
    int has = text != NULL && strstr(text, needle) != NULL;

    free(text);
    return has;
}

static int files_left;

static int
count_file(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (flag == FTW_F || flag == FTW_SL) {
        fprintf(stderr, "left after uninstall: %s\n", path);
        files_left++;
    }
    return 0;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    remove(path);
    return 0;
}

static void
teardown(void)
{
    if (dest[0] != '\0')
        nftw(dest, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    if (makelog[0] != '\0')
        unlink(makelog);
}

START_TEST(test_install_run_uninstall)
{
    struct e2e_server srv;
    struct folio_client *c, *a;
    struct folio_reply r;
    const char *argv[8];
    char text[700], extra[3000], cmd[2048];
    char conf[1024], dflt[1024];
    struct dirent *e;
    size_t n = 0;
    int mans = 0;
    DIR *d;
    FILE *f;

    snprintf(dest, sizeof(dest), "/tmp/folio-destdir.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dest));
    snprintf(makelog, sizeof(makelog), "%s.make.log", dest);
    snprintf(conf, sizeof(conf), "%s", at(FOLIO_SYSCONFDIR, "foliod.conf"));
    snprintf(dflt, sizeof(dflt), "%s", at(FOLIO_PKGDATADIR, "foliod.conf"));
    ck_assert_int_eq(make("install"), 0);

    /* The programs, the man pages, the configuration, the unit. */
    ck_assert_msg(is_file(at(FOLIO_SBINDIR, "foliod"), 1), "no foliod");
    ck_assert_msg(is_file(at(FOLIO_BINDIR, "folio-bench"), 1),
                  "no folio-bench");
    if (is_file(FOLIO_BUILDDIR "/folio", 1))
        ck_assert_msg(is_file(at(FOLIO_BINDIR, "folio"), 1), "no folio");
    ck_assert_ptr_nonnull(d = opendir(FOLIO_BUILDDIR "/man"));
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        char sect[16];

        if (len < 3 || e->d_name[len - 2] != '.' || e->d_name[len - 1] < '1' ||
            e->d_name[len - 1] > '8')
            continue;
        snprintf(sect, sizeof(sect), "/man%c", e->d_name[len - 1]);
        snprintf(text, sizeof(text), "%s%s", FOLIO_MANDIR, sect);
        ck_assert_msg(is_file(at(text, e->d_name), 0), "man page %s missing",
                      e->d_name);
        mans++;
    }
    closedir(d);
    ck_assert_int_ge(mans, 3);
    /* The pages say this build's paths (each page.in, filled in by make). */
    snprintf(text, sizeof(text), "%s/man8", FOLIO_MANDIR);
    ck_assert(file_has(at(text, "foliod.8"), "\n.It Pa " FOLIO_SYSCONFDIR
                                             "/foliod.conf\n"));
    ck_assert(!file_has(at(text, "foliod.8"), "@sysconfdir@"));
    snprintf(text, sizeof(text), "%s/man1", FOLIO_MANDIR);
    ck_assert(file_has(at(text, "folio.1"), FOLIO_RUNDIR "/admin.sock"));
    ck_assert_msg(is_file(conf, 0), "no %s", conf);
    ck_assert_msg(is_file(dflt, 0), "no %s", dflt);
    ck_assert(same_file(conf, dflt));
    ck_assert(file_has(conf, "\n#listen = 127.0.0.1:7788\n"));
    /* The dashboard and the Prometheus rules (foliod(8), METRICS). */
    snprintf(text, sizeof(text), "%s/grafana", FOLIO_PKGDATADIR);
    ck_assert_msg(is_file(at(text, "folio.json"), 0), "no %s/folio.json", text);
    ck_assert(file_has(at(text, "folio.json"), "\"uid\": \"folio\""));
    snprintf(text, sizeof(text), "%s/prometheus", FOLIO_PKGDATADIR);
    ck_assert_msg(is_file(at(text, "folio-rules.yml"), 0),
                  "no %s/folio-rules.yml", text);
    ck_assert(is_file(at(text, "folio-rules.test.yml"), 0));
    if (FOLIO_UNITDIR[0] != '\0') {
        const char *unit = at(FOLIO_UNITDIR, "foliod.service");

        ck_assert_msg(is_file(unit, 0), "no %s", unit);
        ck_assert(file_has(unit, "\nExecStart=" FOLIO_SBINDIR "/foliod -f "));
        ck_assert(file_has(unit, "\nType=notify\n"));
        ck_assert(!file_has(unit, "@sbindir@"));
        ck_assert(is_file(at(FOLIO_UNITDIR, "foliod.socket"), 0));
    }

    /*
     * The installed foliod on the installed configuration, with the
     * paths moved into the DESTDIR, and the installed data when there is.
     */
    memset(&srv, 0, sizeof(srv));
    snprintf(srv.dir, sizeof(srv.dir), "%s", at("/run-test", NULL));
    ck_assert_int_eq(mkdir(srv.dir, 0755), 0);
    snprintf(srv.conf, sizeof(srv.conf), "%.300s", conf);
    snprintf(srv.log, sizeof(srv.log), "%s", at("/run-test", "foliod.log"));
    snprintf(srv.ready, sizeof(srv.ready), "%s", at("/run-test", "ready"));
    snprintf(srv.admin, sizeof(srv.admin), "%s",
             at("/run/folio", "admin.sock"));
    n = (size_t)snprintf(extra, sizeof(extra),
                         "\n# added by e2e_install\nlisten = 127.0.0.1:0\n"
                         "http_listen = 127.0.0.1:0\n"
                         "admin_socket = %s\ndata_dir = %s\n"
                         "ready_file = %s\nmetrics_listen = off\n"
                         "workers = 2\nshutdown_timeout = 5s\n%s",
                         srv.admin, at("/var/lib", "folio"), srv.ready,
                         geteuid() == 0 ? "user = root\n" : "");
    if (is_dir(at(FOLIO_PKGDATADIR, "shakespeare")))
        n += (size_t)snprintf(extra + n, sizeof(extra) - n, "corpus = %s\n",
                              at(FOLIO_PKGDATADIR, "shakespeare"));
    if (is_dir(at(FOLIO_PKGDATADIR, "freight")))
        n +=
            (size_t)snprintf(extra + n, sizeof(extra) - n, "freight_dir = %s\n",
                             at(FOLIO_PKGDATADIR, "freight"));
    if (is_file(at(FOLIO_PKGDATADIR, "catalog.csv"), 0))
        snprintf(extra + n, sizeof(extra) - n, "catalog = %s\n",
                 at(FOLIO_PKGDATADIR, "catalog.csv"));
    ck_assert_ptr_nonnull(f = fopen(conf, "a"));
    fputs(extra, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "'%s' --check-config -c '%s' >'%s' 2>&1",
             at(FOLIO_SBINDIR, "foliod"), conf, makelog);
    if (system(cmd) != 0) {
        print_file(makelog);
        ck_abort_msg("the installed configuration does not check");
    }
    ck_assert(file_has(makelog, "is OK"));
    snprintf(cmd, sizeof(cmd), "'%s' --version >'%s' 2>&1",
             at(FOLIO_SBINDIR, "foliod"), makelog);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert(file_has(makelog, PACKAGE_VERSION));

    argv[0] = at(FOLIO_SBINDIR, "foliod");
    argv[1] = "-f";
    argv[2] = "-c";
    argv[3] = conf;
    argv[4] = NULL;
    srv.pid = fork();
    ck_assert_int_ge(srv.pid, 0);
    if (srv.pid == 0) {
        int fd = open(srv.log, O_WRONLY | O_CREAT | O_APPEND, 0644);

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    ck_assert_msg(e2e_wait_ready(&srv, 1, E2E_READY_MS) == 0,
                  "the installed foliod did not start");
    if (is_dir(at(FOLIO_PKGDATADIR, "shakespeare")))
        ck_assert(e2e_log_has(&srv, "shakespeare: 42 files"));
    c = e2e_connect(&srv);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(e2e_ping(c), 0);
    if (is_dir(at(FOLIO_PKGDATADIR, "shakespeare"))) {
        /* The installed corpus, a reference count of PROTOCOL.md. */
        msgpack_packer *pk;
        uint64_t v;
        uint32_t id;

        pk = folio_client_request(c, 0, "corpus.match_count", 1, &id);
        msgpack_pack_str_with_body(pk, "hello", 5);
        ck_assert_int_eq(folio_client_flush(c), 0);
        ck_assert_int_eq(folio_client_reply(c, &r), 1);
        ck_assert_int_eq(r.code, 0);
        ck_assert_int_eq(folio_mp_read_uint(&r.result, &v), 0);
        ck_assert_uint_eq(v, 349);
    }
    if (is_dir(at(FOLIO_PKGDATADIR, "freight"))) {
        /* The installed example tables and catalog. */
        ck_assert_int_eq(folio_client_call0(c, "freight.info", &r), 1);
        ck_assert_int_eq(r.code, 0);
        ck_assert(e2e_stat_num(&r, "carriers", NULL) >= 2);
        ck_assert(e2e_stat_num(&r, "skus", NULL) >= 100);
    }
    a = e2e_connect_admin(&srv);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    folio_client_close(c);
    folio_client_close(a);
    ck_assert(is_dir(at("/var/lib", "folio")));
    ck_assert_int_eq(e2e_stop(&srv), 0);
    rmdir(at("/run/folio", NULL));
    rmdir(at("/run", NULL));

    /* An operator's change survives a second install... */
    ck_assert_int_eq(make("install"), 0);
    ck_assert(file_has(conf, "# added by e2e_install"));
    ck_assert(file_has(makelog, "keeping"));
    ck_assert(!same_file(conf, dflt));

    /* ...and uninstall, which removes everything else. */
    ck_assert_int_eq(make("uninstall"), 0);
    ck_assert(file_has(conf, "# added by e2e_install"));
    ck_assert_int_eq(unlink(conf), 0);
    nftw(at("/var", NULL), rm_one, 16, FTW_DEPTH | FTW_PHYS);
    files_left = 0;
    nftw(dest, count_file, 16, FTW_PHYS);
    ck_assert_int_eq(files_left, 0);

    /* An unchanged configuration is removed by uninstall. */
    ck_assert_int_eq(make("install"), 0);
    ck_assert_int_eq(make("uninstall"), 0);
    ck_assert(!is_file(conf, 0));
}
END_TEST

static Suite *
install_suite(void)
{
    Suite *s = suite_create("e2e_install");
    TCase *tc = tcase_create("install");

    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_install_run_uninstall);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(install_suite());
}
