/*
 * e2e_start.c - a first start, as a new user makes one: foliod run by a
 * user who is not root starts with that user's paths (XDG's), and the
 * folio of the same user finds its admin socket; a start that cannot
 * succeed fails before anything is bound (exit 1) or cleans up after
 * itself (exit 2), and says which option changes what failed; nothing but
 * the data and run directories is made; --check-config fails on a
 * PostgreSQL that refuses, and only warns about one that does not answer.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check_run.h"
#include "tests/e2e_util.h"
#include "tests/pg_util.h"

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

#define NOBODY 65534

/* What a program run by run() printed and returned. */
struct ran {
    int status; /* exit status; 128 + N if killed by signal N */
    char out[16384];
};

/*
 * Run `prog` with `args` (NULL-terminated) and only the variables of
 * `env` (NULL-terminated "NAME=VALUE"), as `uid` (when we are root and
 * uid >= 0), standard output and error together into r->out, until it
 * exits or `until` appears in its output (then the process is left
 * running: its pid is returned and the caller stops it).  Returns 0 when
 * it exited, or the pid; a run over 20 s fails the test.
 */
static pid_t
run(struct ran *r, const char *prog, const char *const *args,
    const char *const *env, int uid, const char *until)
{
    const char *argv[40];
    struct pollfd pfd;
    uint64_t deadline = e2e_now_ms() + (uint64_t)e2e_bound_ms(20000, 60000);
    size_t off = 0;
    int p[2], i, n = 0, st;
    ssize_t got;
    pid_t pid;

    argv[n++] = prog;
    for (i = 0; args[i] != NULL && n < 39; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_ge(pid = fork(), 0);
    if (pid == 0) {
        dup2(p[1], STDOUT_FILENO);
        dup2(p[1], STDERR_FILENO);
        close(p[0]);
        close(p[1]);
        if (uid >= 0 && geteuid() == 0 &&
            (setgroups(0, NULL) != 0 || setresgid(NOBODY, NOBODY, NOBODY) != 0 ||
             setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0))
            _exit(126);
        execve(argv[0], (char *const *)argv, (char *const *)env);
        _exit(127);
    }
    close(p[1]);
    pfd.fd = p[0];
    pfd.events = POLLIN;
    r->out[0] = '\0';
    for (;;) {
        uint64_t now = e2e_now_ms();

        ck_assert_msg(now < deadline, "%s did not end: '%s'", prog, r->out);
        if (poll(&pfd, 1, (int)(deadline - now)) <= 0)
            continue;
        got = read(p[0], r->out + off, sizeof(r->out) - 1 - off);
        if (got <= 0)
            break;
        off += (size_t)got;
        r->out[off] = '\0';
        if (until != NULL && strstr(r->out, until) != NULL) {
            close(p[0]);
            return pid;
        }
    }
    close(p[0]);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return 0;
}

static void
has(const struct ran *r, const char *needle)
{
    ck_assert_msg(strstr(r->out, needle) != NULL, "'%s' lacks '%s'", r->out,
                  needle);
}

static void
lacks(const struct ran *r, const char *needle)
{
    ck_assert_msg(strstr(r->out, needle) == NULL, "'%s' has '%s'", r->out,
                  needle);
}

/* A fresh directory anyone may write (the runs as nobody make theirs). */
static void
scratch(char *dir, size_t len)
{
    snprintf(dir, len, "/tmp/folio-start.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(chmod(dir, 0777), 0);
}

/* The end of a run that was left going: TERM, and its exit status. */
static int
stop(pid_t pid)
{
    int st;

    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * As a user (nobody, when the suite is root): no option, no file, and it
 * starts, with the data under $XDG_STATE_HOME and the admin socket under
 * $XDG_RUNTIME_DIR, said in the log; that user's folio finds the socket.
 */
START_TEST(test_user_defaults)
{
    char dir[64], home[128], state[128], run_dir[128], envs[3][160];
    char sock[200], path[200], folio[512];
    const char *env[5];
    struct ran r, c;
    struct stat st;
    pid_t pid;

    scratch(dir, sizeof(dir));
    snprintf(home, sizeof(home), "%s/home", dir);
    snprintf(state, sizeof(state), "%s/state", dir);
    snprintf(run_dir, sizeof(run_dir), "%s/run", dir);
    ck_assert_int_eq(mkdir(run_dir, 0700), 0);
    if (geteuid() == 0)
        ck_assert_int_eq(chown(run_dir, NOBODY, NOBODY), 0);
    snprintf(envs[0], sizeof(envs[0]), "HOME=%s", home);
    snprintf(envs[1], sizeof(envs[1]), "XDG_STATE_HOME=%s", state);
    snprintf(envs[2], sizeof(envs[2]), "XDG_RUNTIME_DIR=%s", run_dir);
    env[0] = envs[0];
    env[1] = envs[1];
    env[2] = envs[2];
    env[3] = "PATH=/usr/bin:/bin";
    env[4] = NULL;
    /* The one file that is not a default: none of the other ports. */
    pid = run(&r, e2e_foliod(),
              ARGS("-f", "-c", "/dev/null", "--listen", "127.0.0.1:0",
                   "--metrics-listen", "127.0.0.1:0", "--http-listen", "off",
                   "--corpus", "off", "--workers", "1"),
              env, NOBODY, "] ready");
    ck_assert_msg(pid > 0, "foliod exited %d: %s", r.status, r.out);
    has(&r, "not root: per-user paths: data directory ");
    has(&r, "(--data-dir DIR), admin socket ");
    snprintf(path, sizeof(path), "%s/folio", state);
    has(&r, path);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    ck_assert_int_eq(st.st_mode & 0777, 0700);
    snprintf(sock, sizeof(sock), "%s/folio/admin.sock", run_dir);
    ck_assert_int_eq(stat(sock, &st), 0);
    ck_assert(S_ISSOCK(st.st_mode));
    /* The same user's folio: the same admin socket, by default. */
    snprintf(folio, sizeof(folio), "%s/folio", FOLIO_BUILDDIR);
    ck_assert_int_eq(run(&c, folio, ARGS("stats"), env, NOBODY, NULL), 0);
    ck_assert_msg(c.status == 0, "folio stats: %d: %s", c.status, c.out);
    has(&c, "    PID STATE");
    ck_assert_int_eq(stop(pid), 0);
    e2e_rm_rf(dir);
}
END_TEST

/* A TCP port of ours, listening, that a start is told to take. */
static int
busy_port(int *port)
{
    struct sockaddr_in sa = {0};
    socklen_t sl = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 1), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

/*
 * What was wrong, by the option that changes it; 1 before anything is
 * bound (and nothing made, no "listening"), 2 when it could not be done
 * (and nothing left behind: no admin socket's file).
 */
START_TEST(test_failed_starts)
{
    char dir[64], sock[128], conf[128], data[128], metrics[64], listen_a[64];
    char missing[256];
    const char *env[] = {"PATH=/usr/bin:/bin", NULL};
    struct ran r;
    struct stat st;
    int fd, port;

    scratch(dir, sizeof(dir));
    snprintf(sock, sizeof(sock), "%s/run/admin.sock", dir);
    snprintf(data, sizeof(data), "%s/data", dir);
    snprintf(conf, sizeof(conf), "%s/foliod.conf", dir);
#define START(...)                                                             \
    ARGS("-f", "-c", "/dev/null", "--data-dir", data, "--admin-socket", sock,  \
         "--listen", "127.0.0.1:0", "--metrics-listen", "off",                 \
         "--http-listen", "off", __VA_ARGS__)

    /* Told something wrong: 1, before anything is bound. */
    run(&r, e2e_foliod(), START("--workers", "0"), env, -1, NULL);
    ck_assert_int_eq(r.status, 1);
    has(&r, "--workers: expected auto or 1..");
    has(&r, "(see foliod --help)");
    ck_assert_int_eq(e2e_write_file(conf, "wokers = 2\n"), 0);
    run(&r, e2e_foliod(), START("-c", conf), env, -1, NULL);
    ck_assert_int_eq(r.status, 1);
    has(&r, ":1: unknown setting 'wokers', did you mean 'workers'?");
    has(&r, "(see foliod.conf(5))");
    run(&r, e2e_foliod(), START("--corpus", "/nonexistent/corpus"), env, -1,
        NULL);
    ck_assert_int_eq(r.status, 1);
    has(&r, "--corpus /nonexistent/corpus: No such file or directory");
    lacks(&r, "listening");
    lacks(&r, "freight:");
    ck_assert_int_ne(stat(sock, &st), 0);
    ck_assert_int_ne(stat(data, &st), 0);
    /* A Unix socket's directory that is not there is not made. */
    snprintf(missing, sizeof(missing), "unix:%s/no/such/dir/x.sock", dir);
    run(&r, e2e_foliod(), START("--listen", missing), env, -1, NULL);
    ck_assert_int_eq(r.status, 1);
    has(&r, "/no/such/dir does not exist: create it, or set --listen ADDR");
    snprintf(missing, sizeof(missing), "%s/no", dir);
    ck_assert_int_ne(stat(missing, &st), 0);
    /* A bare port is the loopback's; a bad one says what is wrong. */
    run(&r, e2e_foliod(), START("--listen", "127.0.0.1:abc"), env, -1, NULL);
    ck_assert_int_eq(r.status, 1);
    has(&r, "--listen: '127.0.0.1:abc': the port 'abc' is not a number");
    /* Detached too, from the terminal that started it. */
    run(&r, e2e_foliod(),
        ARGS("-c", "/dev/null", "--data-dir", data, "--admin-socket", sock,
             "--listen", "127.0.0.1:0", "--metrics-listen", "off",
             "--http-listen", "off", "--corpus", "/nope"),
        env, -1, NULL);
    ck_assert_int_eq(r.status, 1);
    has(&r, "--corpus /nope:");

    /* Right, but it cannot be done: 2, said with the option to change
     * (the last --data-dir or --admin-socket is the one). */
    ck_assert_int_eq(e2e_write_file(conf, "\n"), 0);
    snprintf(missing, sizeof(missing), "%s/data", conf);
    run(&r, e2e_foliod(), START("--data-dir", missing), env, -1, NULL);
    ck_assert_int_eq(r.status, 2);
    has(&r, "cannot create the data directory ");
    has(&r, "(--data-dir; set --data-dir DIR)");
    snprintf(missing, sizeof(missing), "%s/admin.sock", conf);
    run(&r, e2e_foliod(), START("--admin-socket", missing), env, -1, NULL);
    ck_assert_int_eq(r.status, 2);
    has(&r, "(--admin-socket): ");
    has(&r, "set --admin-socket PATH|off");
    /* What it bound is let go. */
    fd = busy_port(&port);
    snprintf(metrics, sizeof(metrics), "127.0.0.1:%d", port);
    run(&r, e2e_foliod(), START("--metrics-listen", metrics), env, -1, NULL);
    ck_assert_int_eq(r.status, 2);
    has(&r, "(--metrics-listen): address in use: is another foliod running? "
            "Give this one another with --metrics-listen ADDR|off");
    ck_assert_msg(stat(sock, &st) != 0, "the admin socket was left behind");
    snprintf(listen_a, sizeof(listen_a), "127.0.0.1:%d", port);
    run(&r, e2e_foliod(), START("--listen", listen_a), env, -1, NULL);
    ck_assert_int_eq(r.status, 2);
    has(&r, "(--listen): address in use");
    has(&r, "another with --listen ADDR");
    close(fd);
    e2e_rm_rf(dir);
#undef START
}
END_TEST

/* A second foliod on the first's admin socket: named, and the first's kept. */
START_TEST(test_second_instance)
{
    const char *env[] = {"PATH=/usr/bin:/bin", NULL};
    struct e2e_server srv;
    char data[300];
    struct ran r;
    struct stat st;

    ck_assert_int_eq(e2e_start(&srv, "metrics_listen = off\n", NULL), 0);
    snprintf(data, sizeof(data), "%s/data2", srv.dir);
    run(&r, e2e_foliod(),
        ARGS("-f", "-c", "/dev/null", "--data-dir", data, "--admin-socket",
             srv.admin, "--listen", "127.0.0.1:0", "--metrics-listen", "off",
             "--http-listen", "off", "--corpus", "off"),
        env, -1, NULL);
    ck_assert_int_eq(r.status, 2);
    has(&r, "(--admin-socket): a server is listening there: is another foliod "
            "running? Give this one another with --admin-socket PATH|off");
    ck_assert_int_eq(stat(srv.admin, &st), 0);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * --check-config and PostgreSQL: a server that answers no (no such
 * database, no rights) is a configuration error, exit 1; one that does
 * not answer is a warning (the workers keep trying), exit 0.
 */
START_TEST(test_check_config_pg)
{
    const char *env[] = {"PATH=/usr/bin:/bin", NULL};
    struct pg_cluster pg;
    char dsn[512], db[64], line[700];
    struct ran r;

    if (!e2e_want(pg_bindir() != NULL, "postgresql",
                  "no initdb, postgres and pg_ctl (apt-get install "
                  "postgresql)"))
        return;
    ck_assert_int_eq(pg_start(&pg, NULL), 0);
    ck_assert_int_eq(pg_new_db(&pg, db, sizeof(db)), 0);
#define CHECK(d)                                                               \
    ARGS("--check-config", "-c", "/dev/null", "--corpus", "off",              \
         "--comments-backend", "postgres", "--comments-dsn", d)
    pg_dsn(&pg, db, dsn, sizeof(dsn));
    run(&r, e2e_foliod(), CHECK(dsn), env, -1, NULL);
    ck_assert_msg(r.status == 0, "%s", r.out);
    has(&r, "is OK");
    /* No such database: it answered, and no. */
    pg_dsn(&pg, "foilo", dsn, sizeof(dsn));
    run(&r, e2e_foliod(), CHECK(dsn), env, -1, NULL);
    ck_assert_int_eq(r.status, 1);
    has(&r, "PostgreSQL refuses (");
    has(&r, "\"foilo\" does not exist");
    has(&r, "check --comments-dsn");
    lacks(&r, "is OK");
    /* A user without the rights the workers need (PostgreSQL 15 and
     * later: nobody may create in public by default). */
    snprintf(line, sizeof(line),
             "CREATE ROLE reader LOGIN; REVOKE CREATE ON SCHEMA public FROM "
             "PUBLIC");
    ck_assert_int_ge(pg_query(&pg, db, line, NULL, 0), 0);
    snprintf(dsn, sizeof(dsn), "host=%s port=5432 user=reader dbname=%s",
             pg.sock, db);
    run(&r, e2e_foliod(), CHECK(dsn), env, -1, NULL);
    ck_assert_int_eq(r.status, 1);
    has(&r, "user reader in database ");
    has(&r, " lacks CREATE on schema public");
    /* Nothing answers: a warning only. */
    pg_destroy(&pg);
    pg_dsn(&pg, db, dsn, sizeof(dsn));
    run(&r, e2e_foliod(), CHECK(dsn), env, -1, NULL);
    ck_assert_msg(r.status == 0, "%s", r.out);
    has(&r, "warning: PostgreSQL does not answer");
    has(&r, "is OK");
#undef CHECK
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("e2e_start");
    TCase *tc = tcase_create("start");

    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, test_user_defaults);
    tcase_add_test(tc, test_failed_starts);
    tcase_add_test(tc, test_second_instance);
    tcase_add_test(tc, test_check_config_pg);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
