/*
 * check_config.c - the option table: defaults, the configuration file
 * (comments, quotes, errors with FILE:LINE), the command line over the
 * file, list options, sizes and durations.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/conf.h"
#include "src/cpus.h"
#include "src/err.h"
#include "src/log.h"
#include "tests/check_run.h"

static char path[64];

static void
write_conf(const char *text)
{
    FILE *f;
    int fd;

    snprintf(path, sizeof(path), "/tmp/folio-conf.XXXXXX");
    fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
}

static void
teardown(void)
{
    if (path[0] != '\0')
        unlink(path);
    path[0] = '\0';
}

static int
load(struct folio_config *cfg, int argc, const char **argv, char *err,
     size_t errlen)
{
    int action;

    return folio_config_load(cfg, argc, (char *const *)argv, &action, err,
                             errlen);
}

START_TEST(test_defaults)
{
    struct folio_config cfg;
    const char *argv[] = {"foliod", "-c", "/dev/null", NULL};
    char err[256];

    ck_assert_int_eq(load(&cfg, 3, argv, err, sizeof(err)), 0);
    ck_assert_int_eq(cfg.nlisten, 1);
    ck_assert_str_eq(cfg.listen[0], FOLIO_DEFAULT_LISTEN);
    ck_assert_int_eq(cfg.workers, 0);
    ck_assert_uint_eq(cfg.max_message_bytes, 4u << 20);
    ck_assert_uint_eq(cfg.max_depth, 32);
    ck_assert_uint_eq(cfg.idle_timeout_ms, 60000);
    /* The output limits, by class, and the admin socket's own limit. */
    ck_assert_uint_eq(cfg.max_connections, 4096);
    ck_assert_uint_eq(cfg.admin_max_connections, 16);
    ck_assert_uint_eq(cfg.max_output_bytes, 1u << 20);
    ck_assert_uint_eq(cfg.max_output_hard_bytes, 8u << 20);
    ck_assert_uint_eq(cfg.max_output_total, 32u << 20);
    ck_assert_uint_eq(cfg.admin_max_output_bytes, 4u << 20);
    ck_assert_uint_eq(cfg.admin_max_output_hard_bytes, 64u << 20);
    ck_assert_uint_eq(cfg.send_timeout_ms, 30000);
    ck_assert_uint_eq(cfg.cubic_threshold_g, 5000);
    ck_assert_uint_eq(cfg.comments_max_size, 1u << 30);
    ck_assert_int_eq(cfg.comments_group_commit, 1);
    ck_assert_int_eq(cfg.comments_backend, FOLIO_COMMENTS_LMDB);
    ck_assert_ptr_null(cfg.comments_dsn);
    ck_assert_uint_eq(cfg.comments_cache_size, 64u << 20);
    ck_assert_uint_eq(cfg.comments_timeout_ms, 5000);
    ck_assert_str_eq(cfg.metrics_listen, FOLIO_DEFAULT_METRICS);
    ck_assert_int_eq(cfg.foreground, 0);
    ck_assert_int_eq(cfg.log_level, FOLIO_LOG_INFO);
    ck_assert_str_eq(cfg.corpus, "auto");
    /* The example freight data (installed, else the build's); "off"
     * turns freight off. */
    ck_assert_str_eq(cfg.freight_dir, "auto");
    ck_assert_str_eq(cfg.catalog, "auto");
    ck_assert_int_eq(folio_config_set(&cfg, "freight_dir", "off", err,
                                      sizeof(err)), 0);
    ck_assert_ptr_null(cfg.freight_dir);
    ck_assert_int_eq(folio_config_set(&cfg, "catalog", "/x.csv", err,
                                      sizeof(err)), 0);
    ck_assert_str_eq(cfg.catalog, "/x.csv");
    folio_config_free(&cfg);
}
END_TEST

START_TEST(test_file_and_overrides)
{
    struct folio_config cfg;
    const char *argv[] = {"foliod", "-c", NULL, "--listen", "[::1]:9",
                          "--workers", "3", "-f", NULL};
    char err[256];

    write_conf("# a comment\n"
               "\n"
               "  listen = 127.0.0.1:1   # trailing comment\n"
               "listen=unix:/tmp/x.sock\n"
               "max_connections = 17\n"
               "admin_max_connections = 2\n"
               "max_output_total = 0\n"
               "max_output_hard_bytes = 2m\n"
               "send_timeout = 0\n"
               "idle-timeout = 1500ms\n"
               "max_message_bytes = 64k\n"
               "comments_max_size = 64m\n"
               "corpus = \"/path with # and spaces\"\n"
               "metrics_listen = off\n"
               "workers = 9\n"
               "log_level = warn\n");
    argv[2] = path;
    ck_assert_int_eq(load(&cfg, 8, argv, err, sizeof(err)), 0);
    /* The command line's --listen replaces the file's list. */
    ck_assert_int_eq(cfg.nlisten, 1);
    ck_assert_str_eq(cfg.listen[0], "[::1]:9");
    ck_assert_int_eq(cfg.workers, 3);
    ck_assert_int_eq(cfg.foreground, 1);
    ck_assert_uint_eq(cfg.max_connections, 17);
    ck_assert_uint_eq(cfg.admin_max_connections, 2);
    ck_assert_uint_eq(cfg.max_output_total, 0);
    ck_assert_uint_eq(cfg.max_output_hard_bytes, 2u << 20);
    ck_assert_uint_eq(cfg.send_timeout_ms, 0);
    ck_assert_uint_eq(cfg.idle_timeout_ms, 1500);
    ck_assert_uint_eq(cfg.max_message_bytes, 65536);
    ck_assert_uint_eq(cfg.comments_max_size, 64u << 20);
    ck_assert_str_eq(cfg.corpus, "/path with # and spaces");
    ck_assert_ptr_null(cfg.metrics_listen);
    ck_assert_int_eq(cfg.log_level, FOLIO_LOG_WARN);
    ck_assert_str_eq(cfg.conf_file, path);
    folio_config_free(&cfg);
}
END_TEST

START_TEST(test_file_list)
{
    struct folio_config cfg;
    const char *argv[] = {"foliod", "-c", NULL, NULL};
    char err[256];

    write_conf("listen = 127.0.0.1:1\nlisten = unix:/tmp/y\n");
    argv[2] = path;
    ck_assert_int_eq(load(&cfg, 3, argv, err, sizeof(err)), 0);
    ck_assert_int_eq(cfg.nlisten, 2);
    ck_assert_str_eq(cfg.listen[0], "127.0.0.1:1");
    ck_assert_str_eq(cfg.listen[1], "unix:/tmp/y");
    folio_config_free(&cfg);
}
END_TEST

/* The short forms of addresses: a port alone, a host alone. */
START_TEST(test_addresses)
{
    struct folio_config cfg;
    const char *argv[] = {"foliod", "-c", NULL, "--metrics-listen", "0.0.0.0",
                          NULL};
    char err[256];

    write_conf("listen = 7789\nlisten = 10.1.2.3\nlisten = [::1]\n");
    argv[2] = path;
    ck_assert_int_eq(load(&cfg, 5, argv, err, sizeof(err)), 0);
    ck_assert_int_eq(cfg.nlisten, 3);
    ck_assert_str_eq(cfg.listen[0], "127.0.0.1:7789"); /* loopback */
    ck_assert_str_eq(cfg.listen[1], "10.1.2.3:7788");  /* its default port */
    ck_assert_str_eq(cfg.listen[2], "[::1]:7788");
    ck_assert_str_eq(cfg.metrics_listen, "0.0.0.0:9788");
    folio_config_free(&cfg);
}
END_TEST

/*
 * A user (not root) without --user: the per-user paths of XDG's
 * variables, unless the file or the command line sets them; root, or
 * --user, keeps the system's.  Run as nobody when the suite is root.
 */
START_TEST(test_user_paths)
{
    struct folio_config cfg;
    const char *plain[] = {"foliod", "-c", "/dev/null", NULL};
    const char *with_user[] = {"foliod", "-c", "/dev/null", "--user",
                               "nobody", NULL};
    const char *set[] = {"foliod", "-c", "/dev/null", "--data-dir", "/srv/d",
                         NULL};
    char err[256];

    if (geteuid() == 0) {
        ck_assert_int_eq(setresgid(65534, 65534, 65534), 0);
        ck_assert_int_eq(setresuid(65534, 65534, 65534), 0);
    }
    setenv("XDG_STATE_HOME", "/tmp/folio-state", 1);
    setenv("XDG_RUNTIME_DIR", "/tmp/folio-run", 1);
    ck_assert_int_eq(load(&cfg, 3, plain, err, sizeof(err)), 0);
    ck_assert_str_eq(cfg.data_dir, "/tmp/folio-state/folio");
    ck_assert_str_eq(cfg.admin_socket, "/tmp/folio-run/folio/admin.sock");
    ck_assert_int_eq(cfg.per_user, 1);
    folio_config_free(&cfg);
    ck_assert_int_eq(load(&cfg, 5, set, err, sizeof(err)), 0);
    ck_assert_str_eq(cfg.data_dir, "/srv/d");
    ck_assert_str_eq(cfg.admin_socket, "/tmp/folio-run/folio/admin.sock");
    folio_config_free(&cfg);
    ck_assert_int_eq(load(&cfg, 5, with_user, err, sizeof(err)), 0);
    ck_assert_str_eq(cfg.data_dir, FOLIO_STATEDIR);
    ck_assert_str_eq(cfg.admin_socket, FOLIO_DEFAULT_ADMIN);
    ck_assert_int_eq(cfg.per_user, 0);
    folio_config_free(&cfg);
}
END_TEST

/* No home to write (nobody's is /nonexistent): $TMPDIR/folio-UID. */
START_TEST(test_user_paths_no_home)
{
    struct folio_config cfg;
    const char *plain[] = {"foliod", "-c", "/dev/null", NULL};
    char err[256], want[64];

    if (geteuid() == 0) {
        ck_assert_int_eq(setresgid(65534, 65534, 65534), 0);
        ck_assert_int_eq(setresuid(65534, 65534, 65534), 0);
    }
    unsetenv("XDG_STATE_HOME");
    unsetenv("XDG_RUNTIME_DIR");
    setenv("HOME", "/nonexistent", 1);
    setenv("TMPDIR", "/var/tmp", 1);
    ck_assert_int_eq(load(&cfg, 3, plain, err, sizeof(err)), 0);
    snprintf(want, sizeof(want), "/var/tmp/folio-%lu",
             (unsigned long)geteuid());
    ck_assert_str_eq(cfg.data_dir, want);
    strcat(want, "/admin.sock"); /* no runtime directory: the data's */
    ck_assert_str_eq(cfg.admin_socket, want);
    folio_config_free(&cfg);
}
END_TEST

/* The HTTP face's options: a list with off, and the CORS origins. */
START_TEST(test_http_options)
{
    struct folio_config cfg, back;
    const char *argv[] = {"foliod", "-c", NULL, NULL, NULL, NULL};
    char err[256], *text = NULL;
    size_t len = 0;
    FILE *f;

    write_conf("");
    argv[2] = path;
    ck_assert_int_eq(load(&cfg, 3, argv, err, sizeof(err)), 0);
    ck_assert_int_eq(cfg.nhttp_listen, 1);
    ck_assert_str_eq(cfg.http_listen[0], FOLIO_DEFAULT_HTTP);
    ck_assert_str_eq(cfg.http_cors_origins, "*");
    folio_config_free(&cfg);
    teardown();
    /* Several, then off on the command line: none, written "off". */
    write_conf("http_listen = 127.0.0.1:1\nhttp_listen = [::1]:2\n"
               "http_cors_origins = https://a.example, http://b.example:81\n");
    argv[2] = path;
    ck_assert_int_eq(load(&cfg, 3, argv, err, sizeof(err)), 0);
    ck_assert_int_eq(cfg.nhttp_listen, 2);
    ck_assert_str_eq(cfg.http_listen[1], "[::1]:2");
    ck_assert_str_eq(cfg.http_cors_origins,
                     "https://a.example, http://b.example:81");
    folio_config_free(&cfg);
    argv[3] = "--http-listen";
    argv[4] = "off";
    ck_assert_int_eq(load(&cfg, 5, argv, err, sizeof(err)), 0);
    ck_assert_int_eq(cfg.nhttp_listen, 0);
    f = open_memstream(&text, &len);
    folio_config_write(&cfg, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "\nhttp_listen = off\n"));
    teardown();
    write_conf(text);
    free(text);
    argv[2] = path;
    ck_assert_int_eq(load(&back, 3, argv, err, sizeof(err)), 0);
    ck_assert_int_eq(back.nhttp_listen, 0);
    folio_config_free(&cfg);
    folio_config_free(&back);
    /* CORS off, and origins that are none. */
    argv[3] = "--http-cors-origins";
    argv[4] = "off";
    ck_assert_int_eq(load(&cfg, 5, argv, err, sizeof(err)), 0);
    ck_assert_ptr_null(cfg.http_cors_origins);
    folio_config_free(&cfg);
    argv[4] = "example.com";
    ck_assert_int_eq(load(&cfg, 5, argv, err, sizeof(err)), FOLIO_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err, "http-cors-origins"));
    folio_config_free(&cfg);
    argv[4] = "* https://a.example";
    ck_assert_int_eq(load(&cfg, 5, argv, err, sizeof(err)), FOLIO_ECONFIG);
    folio_config_free(&cfg);
}
END_TEST

static void
expect_file_error(const char *text, const char *needle)
{
    struct folio_config cfg;
    const char *argv[] = {"foliod", "-c", NULL, NULL};
    char err[512];

    write_conf(text);
    argv[2] = path;
    ck_assert_int_eq(load(&cfg, 3, argv, err, sizeof(err)), FOLIO_ECONFIG);
    ck_assert_msg(strstr(err, needle) != NULL, "'%s' lacks '%s'", err, needle);
    folio_config_free(&cfg);
    teardown();
}

/* One grammar of durations for the file, the options and the clients. */
START_TEST(test_durations)
{
    static const struct {
        const char *s;
        int ok;
        uint64_t ms;
    } cases[] = {
        {"60", 1, 60000},     {"1.5s", 1, 1500},   {"500ms", 1, 500},
        {"2m", 1, 120000},    {"2min", 1, 120000}, {"1h", 1, 3600000},
        {"0", 1, 0},          {"1000us", 1, 1},    {"100us", 0, 0},
        {"0.0005s", 0, 0},    {"-1s", 0, 0},       {" 1s", 0, 0},
        {"1 s", 0, 0},        {"inf", 0, 0},       {"1d", 0, 0},
        {"", 0, 0},
    };
    uint64_t ms;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ms = 12345;
        ck_assert_msg((folio_conf_duration_ms(cases[i].s, &ms) == 0) ==
                          cases[i].ok,
                      "'%s': %s", cases[i].s,
                      cases[i].ok ? "refused" : "taken");
        if (cases[i].ok)
            ck_assert_uint_eq(ms, cases[i].ms);
    }
}
END_TEST

START_TEST(test_file_errors)
{
    expect_file_error("workers = 2\nbogus = 1\n", ":2: unknown setting 'bogus'");
    expect_file_error("no equals sign\n", ":1: expected 'key = value'");
    expect_file_error("workers = many\n", "workers");
    expect_file_error("workers = 0\n", "workers");
    /* In a file, a setting is named as the file writes it. */
    expect_file_error("max_message_bytes = 12q\n", ":1: max_message_bytes: "
                                                   "'12q' is not a size");
    expect_file_error("idle_timeout = 5 years\n",
                      "idle_timeout: '5 years' is not a duration (ms, s, m, "
                      "h) in 0..24h");
    expect_file_error("idle-timeout = 5 years\n", "idle_timeout: ");
    expect_file_error("max_connections = -1\n", "max_connections");
    expect_file_error("admin_max_connections = 0\n", "admin_max_connections");
    expect_file_error("max_output_hard_bytes = 1k\n", "max_output_hard_bytes");
    expect_file_error("send_timeout = soon\n", "send_timeout");
    expect_file_error("corpus = \"unterminated\n", "quote");
    expect_file_error("log_level = loud\n", "log_level");
    expect_file_error("stats = maybe\n", "stats");
    expect_file_error("config = /etc/x\n", "unknown setting 'config'");
    expect_file_error("comments_backend = sqlite\n",
                      "comments_backend: expected lmdb|postgres, got 'sqlite'");
    expect_file_error("comments_backend = postgresql\n", "lmdb|postgres");
    expect_file_error("comments_timeout = 0\n", "comments_timeout");
    /* A slip: the key it is near; and where the syntax is explained. */
    expect_file_error("wokers = 2\n",
                      "unknown setting 'wokers', did you mean 'workers'?");
    expect_file_error("idle_timout = 2s\n", "did you mean 'idle_timeout'?");
    expect_file_error("workers = many\n", "(see foliod.conf(5))");
    expect_file_error("listen = 127.0.0.1:abc\n",
                      "listen: '127.0.0.1:abc': the port 'abc' is not a "
                      "number");
    expect_file_error("metrics_listen = [::1\n", "metrics_listen: ");
}
END_TEST

/* The postgres backend's settings, and the backend's name read back. */
START_TEST(test_comments_backend)
{
    struct folio_config a, b;
    const char *argv[] = {"foliod", "-c", NULL, "--comments-backend",
                          "lmdb",   NULL};
    char err[256], *text = NULL;
    size_t len = 0;
    FILE *f;

    write_conf("comments_backend = postgres\n"
               "comments_dsn = \"host=/run/pg dbname=folio\"\n"
               "comments_cache_size = 0\n"
               "comments_timeout = 250ms\n");
    argv[2] = path;
    ck_assert_int_eq(load(&a, 3, argv, err, sizeof(err)), 0);
    ck_assert_int_eq(a.comments_backend, FOLIO_COMMENTS_POSTGRES);
    ck_assert_str_eq(a.comments_dsn, "host=/run/pg dbname=folio");
    ck_assert_uint_eq(a.comments_cache_size, 0);
    ck_assert_uint_eq(a.comments_timeout_ms, 250);
    f = open_memstream(&text, &len);
    folio_config_write(&a, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "comments_backend = postgres\n"));
    write_conf(text);
    free(text);
    ck_assert_int_eq(load(&b, 3, argv, err, sizeof(err)), 0);
    ck_assert_int_eq(b.comments_backend, FOLIO_COMMENTS_POSTGRES);
    ck_assert_str_eq(b.comments_dsn, "host=/run/pg dbname=folio");
    folio_config_free(&b);
    /* the command line over the file */
    ck_assert_int_eq(load(&b, 5, argv, err, sizeof(err)), 0);
    ck_assert_int_eq(b.comments_backend, FOLIO_COMMENTS_LMDB);
    folio_config_free(&a);
    folio_config_free(&b);
}
END_TEST

START_TEST(test_cli_errors)
{
    struct folio_config cfg;
    const char *a1[] = {"foliod", "--no-such-option", NULL};
    const char *a2[] = {"foliod", "--workers", NULL};
    const char *a3[] = {"foliod", "-c", "/nonexistent/foliod.conf", NULL};
    const char *a4[] = {"foliod", "stray", NULL};
    char err[512];

    const char *a5[] = {"foliod", "--wokers", "2", NULL};
    const char *a6[] = {"foliod", "--idle-timeout", "5years", NULL};

    ck_assert_int_eq(load(&cfg, 2, a1, err, sizeof(err)), FOLIO_ECONFIG);
    ck_assert(strstr(err, "--no-such-option") != NULL);
    ck_assert_msg(strstr(err, "(see foliod --help)") != NULL, "%s", err);
    folio_config_free(&cfg);
    /* On the command line, options are named as it writes them. */
    ck_assert_int_eq(load(&cfg, 3, a5, err, sizeof(err)), FOLIO_ECONFIG);
    ck_assert_msg(strstr(err, "unknown option '--wokers', did you mean "
                              "'--workers'?") != NULL,
                  "%s", err);
    folio_config_free(&cfg);
    ck_assert_int_eq(load(&cfg, 3, a6, err, sizeof(err)), FOLIO_ECONFIG);
    ck_assert_msg(strncmp(err, "--idle-timeout: '5years' is not a duration",
                          41) == 0,
                  "%s", err);
    folio_config_free(&cfg);
    ck_assert_int_eq(load(&cfg, 2, a2, err, sizeof(err)), FOLIO_ECONFIG);
    ck_assert(strstr(err, "needs a value") != NULL);
    folio_config_free(&cfg);
    ck_assert_int_eq(load(&cfg, 3, a3, err, sizeof(err)), FOLIO_ECONFIG);
    ck_assert(strstr(err, "/nonexistent/foliod.conf") != NULL);
    folio_config_free(&cfg);
    ck_assert_int_eq(load(&cfg, 2, a4, err, sizeof(err)), FOLIO_ECONFIG);
    folio_config_free(&cfg);
}
END_TEST

START_TEST(test_actions)
{
    struct folio_config cfg;
    const char *a1[] = {"foliod", "--help", NULL};
    const char *a2[] = {"foliod", "-V", NULL};
    char err[256];
    int action;

    ck_assert_int_eq(
        folio_config_load(&cfg, 2, (char *const *)a1, &action, err, 256), 0);
    ck_assert_int_eq(action, FOLIO_CONFIG_HELP);
    folio_config_free(&cfg);
    ck_assert_int_eq(
        folio_config_load(&cfg, 2, (char *const *)a2, &action, err, 256), 0);
    ck_assert_int_eq(action, FOLIO_CONFIG_VERSION);
    folio_config_free(&cfg);
}
END_TEST

START_TEST(test_write_round_trip)
{
    struct folio_config a, b;
    const char *argv[] = {"foliod", "-c", "/dev/null", "--workers", "5",
                          "--idle-timeout", "2m", NULL};
    char err[256], *text = NULL;
    size_t len = 0;
    FILE *f;

    ck_assert_int_eq(load(&a, 7, argv, err, sizeof(err)), 0);
    f = open_memstream(&text, &len);
    folio_config_write(&a, f);
    fclose(f);
    write_conf(text);
    free(text);
    argv[2] = path;
    ck_assert_int_eq(load(&b, 3, argv, err, sizeof(err)), 0);
    ck_assert_int_eq(b.workers, 5);
    ck_assert_uint_eq(b.idle_timeout_ms, 120000);
    ck_assert_str_eq(b.admin_socket, a.admin_socket);
    folio_config_free(&a);
    folio_config_free(&b);
}
END_TEST

START_TEST(test_default_file)
{
    /*
     * The installed foliod.conf: every setting once, commented out; with
     * every '#' of a setting removed it loads to the built-in defaults.
     */
    struct folio_config a, b;
    const char *argv[] = {"foliod", "-c", "/dev/null", NULL};
    char err[256], *text = NULL, *p, *q, *wa = NULL, *wb = NULL;
    size_t len = 0, la = 0, lb = 0;
    int settings = 0;
    FILE *f;

    f = open_memstream(&text, &len);
    folio_config_write_defaults(f, "test");
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "(folio test)"));
    ck_assert_ptr_nonnull(strstr(text, "\n#listen = " FOLIO_DEFAULT_LISTEN
                                       "\n"));
    ck_assert_ptr_nonnull(strstr(text, "\n#max_requests_per_worker = 0\n"));
    ck_assert_ptr_null(strstr(text, "check_config"));
    ck_assert_ptr_null(strstr(text, "#config ="));
    /* Uncomment: "#key = value" lines lose their '#'. */
    for (p = text; (q = strstr(p, "\n#")) != NULL; p = q + 1)
        if (q[2] != ' ') {
            memmove(q + 1, q + 2, strlen(q + 2) + 1);
            settings++;
        }
    ck_assert_int_ge(settings, 25);
    write_conf(text);
    free(text);
    ck_assert_int_eq(load(&a, 3, argv, err, sizeof(err)), 0);
    argv[2] = path;
    ck_assert_msg(load(&b, 3, argv, err, sizeof(err)) == 0, "%s", err);
    f = open_memstream(&wa, &la);
    folio_config_write(&a, f);
    fclose(f);
    f = open_memstream(&wb, &lb);
    folio_config_write(&b, f);
    fclose(f);
    ck_assert_str_eq(wa, wb);
    free(wa);
    free(wb);
    folio_config_free(&a);
    folio_config_free(&b);
}
END_TEST

START_TEST(test_cpu_count)
{
    int n = folio_cpu_count();

    ck_assert_int_ge(n, 1);
    ck_assert_int_le(n, (int)sysconf(_SC_NPROCESSORS_ONLN));
}
END_TEST

static Suite *
config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");

    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_file_and_overrides);
    tcase_add_test(tc, test_file_list);
    tcase_add_test(tc, test_addresses);
    tcase_add_test(tc, test_user_paths);
    tcase_add_test(tc, test_user_paths_no_home);
    tcase_add_test(tc, test_http_options);
    tcase_add_test(tc, test_durations);
    tcase_add_test(tc, test_file_errors);
    tcase_add_test(tc, test_comments_backend);
    tcase_add_test(tc, test_cli_errors);
    tcase_add_test(tc, test_actions);
    tcase_add_test(tc, test_write_round_trip);
    tcase_add_test(tc, test_default_file);
    tcase_add_test(tc, test_cpu_count);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(config_suite());
}
