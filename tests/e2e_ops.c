/*
 * e2e_ops.c - foliod as an operator runs it: the service manager's notify
 * protocol (READY, RELOADING, STOPPING over NOTIFY_SOCKET, as systemd
 * would see them, without systemd) and privileges (root without --user,
 * dropping to --user after binding, what the user owns afterwards).
 * The privilege tests need root (CI runs as root); they pass with a note
 * otherwise.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "src/client.h"
#include "src/rpc.h"
#include "tests/e2e_util.h"
#include "tests/check_run.h"

static struct e2e_server srv;

static int run_foliod(const char *const *args, char *out, size_t len);

/* ---- the notify socket: what systemd listens on ---- */

struct notify {
    int fd;
    char name[108]; /* as NOTIFY_SOCKET: "@abstract" or a path */
};

static void
notify_open(struct notify *n, int abstract, const char *dir)
{
    static int seq;
    struct sockaddr_un sa;
    socklen_t len;
    int one = 1;

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (abstract)
        snprintf(n->name, sizeof(n->name), "@folio-e2e-notify-%ld-%d",
                 (long)getpid(), seq++);
    else
        snprintf(n->name, sizeof(n->name), "%s/notify.sock", dir);
    memcpy(sa.sun_path, n->name, strlen(n->name));
    if (abstract) {
        sa.sun_path[0] = '\0';
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
                          strlen(n->name));
    } else {
        len = (socklen_t)sizeof(sa);
    }
    n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(n->fd, 0);
    ck_assert_msg(bind(n->fd, (struct sockaddr *)&sa, len) == 0, "bind %s: %s",
                  n->name, strerror(errno));
    /* The sender's credentials, as systemd checks NotifyAccess=main. */
    ck_assert_int_eq(
        setsockopt(n->fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
    ck_assert_int_eq(setenv("NOTIFY_SOCKET", n->name, 1), 0);
}

static void
notify_close(struct notify *n)
{
    unsetenv("NOTIFY_SOCKET");
    close(n->fd);
    if (n->name[0] == '/')
        unlink(n->name);
}

/*
 * The next datagram into `buf`, within timeout_ms; its sender's pid in
 * *from.  0, or -1 on time-out.
 */
static int
notify_next(struct notify *n, char *buf, size_t len, pid_t *from,
            int timeout_ms)
{
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(struct ucred))];
    } ctl;
    struct pollfd p = {n->fd, POLLIN, 0};
    struct msghdr mh;
    struct cmsghdr *c;
    struct iovec iov;
    ssize_t got;

    if (poll(&p, 1, timeout_ms) != 1)
        return -1;
    memset(&mh, 0, sizeof(mh));
    iov.iov_base = buf;
    iov.iov_len = len - 1;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = &ctl;
    mh.msg_controllen = sizeof(ctl);
    if ((got = recvmsg(n->fd, &mh, 0)) < 0)
        return -1;
    buf[got] = '\0';
    *from = -1;
    for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
            struct ucred uc;

            memcpy(&uc, CMSG_DATA(c), sizeof(uc));
            *from = uc.pid;
        }
    return 0;
}

/* Does the message have the line `line` ("KEY=VALUE", or "KEY=" prefix)? */
static int
has_line(const char *msg, const char *line)
{
    size_t n = strlen(line);
    const char *p = msg;

    for (;;) {
        if (strncmp(p, line, n) == 0 &&
            (line[n - 1] == '=' || p[n] == '\n' || p[n] == '\0'))
            return 1;
        if ((p = strchr(p, '\n')) == NULL)
            return 0;
        p++;
    }
}

/* The next message must come from the master and hold `line`. */
static void
expect_notify(struct notify *n, const char *line, char *msg, size_t len)
{
    pid_t from;

    ck_assert_msg(notify_next(n, msg, len, &from, 15000) == 0,
                  "no notification (waiting for %s)", line);
    ck_assert_msg(has_line(msg, line), "expected %s, got '%s'", line, msg);
    ck_assert_msg(from == srv.pid,
                  "notification from pid %ld, not the "
                  "master %ld",
                  (long)from, (long)srv.pid);
}

/* Start, reload, fail a reload, stop: the messages systemd would get. */
static void
notify_lifecycle(int abstract)
{
    struct notify n;
    struct folio_client *c;
    char msg[1024], dir[64];
    pid_t from;
    FILE *f;

    snprintf(dir, sizeof(dir), "/tmp/folio-notify.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    notify_open(&n, abstract, dir);
    ck_assert(e2e_start(&srv, NULL, NULL) == 0);
    expect_notify(&n, "READY=1", msg, sizeof(msg));
    ck_assert(has_line(msg, "STATUS=serving generation 1 with 2 workers"));
    ck_assert(!has_line(msg, "MAINPID=")); /* -f: the master is main */

    /* HUP: RELOADING=1 (with the time), then READY=1 once it is done. */
    c = e2e_connect(&srv);
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    expect_notify(&n, "RELOADING=1", msg, sizeof(msg));
    ck_assert(has_line(msg, "MONOTONIC_USEC="));
    expect_notify(&n, "READY=1", msg, sizeof(msg));
    ck_assert(has_line(msg, "STATUS=serving generation 2 with 2 workers"));
    ck_assert_int_eq(e2e_wait_ready(&srv, 2, E2E_READY_MS), 0);
    ck_assert_int_eq(e2e_ping(c), 0);

    /* A broken configuration: reloading, then ready again on the old one. */
    ck_assert_ptr_nonnull(f = fopen(srv.conf, "a"));
    fputs("workers = many\n", f);
    fclose(f);
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    expect_notify(&n, "RELOADING=1", msg, sizeof(msg));
    expect_notify(&n, "READY=1", msg, sizeof(msg));
    ck_assert_msg(strstr(msg, "STATUS=reload failed: ") != NULL &&
                      strstr(msg, "serving generation 2") != NULL,
                  "status: %s", msg);
    ck_assert_int_eq(e2e_ping(c), 0);
    folio_client_close(c);

    /* TERM: STOPPING=1, and nothing after it. */
    ck_assert_int_eq(kill(srv.pid, SIGTERM), 0);
    expect_notify(&n, "STOPPING=1", msg, sizeof(msg));
    ck_assert_int_eq(e2e_wait_exit(&srv, 10000), 0);
    ck_assert_msg(notify_next(&n, msg, sizeof(msg), &from, 0) != 0,
                  "a notification after STOPPING: %s", msg);
    ck_assert_int_eq(e2e_stop(&srv), 0);
    notify_close(&n);
    rmdir(dir);
}

START_TEST(test_notify_abstract_socket)
{
    notify_lifecycle(1);
}
END_TEST

START_TEST(test_notify_path_socket)
{
    notify_lifecycle(0);
}
END_TEST

START_TEST(test_notify_daemon)
{
    /* Detached, the master is not the process started: it says MAINPID. */
    struct notify n;
    char dir[64], conf[256], text[1024], msg[1024], pidtext[32], want[64];
    const char *args[] = {"-c", conf, NULL};
    pid_t from;
    long pid;
    FILE *f;

    snprintf(dir, sizeof(dir), "/tmp/folio-daemon.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(conf, sizeof(conf), "%s/foliod.conf", dir);
    snprintf(text, sizeof(text),
             "listen = 127.0.0.1:0\nadmin_socket = off\nmetrics_listen = off\n"
             "http_listen = off\n"
             "data_dir = %s/data\nlog_file = %s/foliod.log\n"
             "pid_file = %s/foliod.pid\nworkers = 1\n%s",
             dir, dir, dir, geteuid() == 0 ? "user = root\n" : "");
    ck_assert_int_eq(e2e_write_file(conf, text), 0);
    notify_open(&n, 1, dir);
    /* The command exits 0 once the daemon is ready. */
    ck_assert_int_eq(run_foliod(args, msg, sizeof(msg)), 0);
    snprintf(text, sizeof(text), "%s/foliod.pid", dir);
    ck_assert_ptr_nonnull(f = fopen(text, "r"));
    ck_assert_ptr_nonnull(fgets(pidtext, sizeof(pidtext), f));
    fclose(f);
    pid = strtol(pidtext, NULL, 10);
    ck_assert_int_gt(pid, 0);
    ck_assert_int_eq(notify_next(&n, msg, sizeof(msg), &from, 10000), 0);
    ck_assert_msg(has_line(msg, "READY=1"), "%s", msg);
    snprintf(want, sizeof(want), "MAINPID=%ld", pid);
    ck_assert_msg(has_line(msg, want), "want %s in '%s'", want, msg);
    ck_assert_int_eq((long)from, pid);
    ck_assert_int_eq(kill((pid_t)pid, SIGTERM), 0);
    ck_assert_int_eq(notify_next(&n, msg, sizeof(msg), &from, 10000), 0);
    ck_assert(has_line(msg, "STOPPING=1"));
    notify_close(&n);
    /* Gone, and its pid file with it. */
    {
        uint64_t deadline = e2e_deadline(10000);

        while (kill((pid_t)pid, 0) == 0 && e2e_wait_more(deadline))
            ;
    }
    ck_assert_int_ne(kill((pid_t)pid, 0), 0);
    ck_assert_int_eq(access(text, F_OK), -1);
    snprintf(text, sizeof(text), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(text), 0);
}
END_TEST

START_TEST(test_notify_absent_or_broken)
{
    /* Nobody listening on NOTIFY_SOCKET: foliod serves regardless. */
    struct folio_client *c;

    setenv("NOTIFY_SOCKET", "/nonexistent/notify.sock", 1);
    ck_assert(e2e_start(&srv, NULL, NULL) == 0);
    unsetenv("NOTIFY_SOCKET");
    c = e2e_connect(&srv);
    ck_assert_int_eq(e2e_ping(c), 0);
    folio_client_close(c);
    ck_assert(e2e_log_has(&srv, "notifying the service manager"));
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * CYCLES times: start, HUP, 0-50 ms, TERM.  Every stop ends, its workers
 * gone by themselves (none killed at shutdown_timeout), and nothing says
 * READY=1 after STOPPING=1 (a new generation's READY arriving after the
 * TERM once cancelled the stop's deadline and did).  How long the stops
 * took is printed, not asserted.  200 in the plain build, which hunts
 * the race; 50 under sanitizers, which look at the memory of the same
 * paths (200 made e2e_ops 93 s of the sanitized run, 3 times plain).
 */
#ifdef FOLIO_SANITIZED
#define CYCLES 50
#else
#define CYCLES 200
#endif

START_TEST(test_hup_then_term_cycles)
{
    struct notify n;
    char msg[1024], dir[64];
    unsigned seed = (unsigned)getpid();
    uint64_t t0, took, worst = 0, total = 0;
    pid_t from;
    int k, rc, stopping, delay;

    snprintf(dir, sizeof(dir), "/tmp/folio-cycles.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    notify_open(&n, 1, dir);
    ck_assert(e2e_start(&srv, "workers = 1\nshutdown_timeout = 2s\n",
                        NULL) == 0);
    for (k = 0; k < CYCLES; k++) {
        if (k > 0)
            ck_assert_msg(e2e_restart(&srv, NULL) == 0, "start %d", k);
        delay = (int)(rand_r(&seed) % 51);
        ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
        e2e_pace_ms(delay); /* the TERM, 0-50 ms after the HUP */
        ck_assert_int_eq(kill(srv.pid, SIGTERM), 0);
        t0 = e2e_now_ms();
        rc = e2e_wait_exit(&srv, 15000);
        took = e2e_now_ms() - t0;
        ck_assert_msg(rc == 0, "cycle %d (HUP, %d ms, TERM): exit %d", k,
                      delay, rc);
        ck_assert_msg(!e2e_log_has(&srv, "still draining after "
                                         "shutdown_timeout"),
                      "cycle %d: a worker was killed at shutdown_timeout "
                      "(the stop took %llu ms)",
                      k, (unsigned long long)took);
        if (took > worst)
            worst = took;
        total += took;
        /* Everything this master said, in order. */
        stopping = 0;
        while (notify_next(&n, msg, sizeof(msg), &from, 0) == 0) {
            if (has_line(msg, "STOPPING=1"))
                stopping = 1;
            else
                ck_assert_msg(!stopping || !has_line(msg, "READY=1"),
                              "cycle %d (HUP, %d ms, TERM): READY=1 after "
                              "STOPPING=1: '%s'",
                              k, delay, msg);
        }
        ck_assert_msg(stopping, "cycle %d: no STOPPING=1", k);
    }
    fprintf(stderr, "%d HUP-then-TERM cycles: stops took %.1f ms on "
                    "average, %llu ms at worst (shutdown_timeout 2 s)\n",
            CYCLES, (double)total / CYCLES, (unsigned long long)worst);
    ck_assert_int_eq(e2e_stop(&srv), 0);
    notify_close(&n);
    rmdir(dir);
}
END_TEST

static double
served_workers(void)
{
    double v = e2e_server_stat(&srv, "server", "serving", NULL);

    ck_assert(!isnan(v));
    return v;
}

/* `folio stats`'s first line. */
static void
folio_stats_line(char *out, size_t len)
{
    char cmd[600];
    FILE *p;

    snprintf(cmd, sizeof(cmd), "%s/folio -U %s stats", FOLIO_BUILDDIR,
             srv.admin);
    ck_assert_ptr_nonnull(p = popen(cmd, "r"));
    if (fgets(out, (int)len, p) == NULL)
        out[0] = '\0';
    while (fgetc(p) != EOF)
        ;
    pclose(p);
}

/* The next notification holding `needle`, within timeout_ms. */
static int
notify_find(struct notify *n, const char *needle, int timeout_ms)
{
    uint64_t deadline = e2e_now_ms() + (uint64_t)timeout_ms;
    char msg[1024];
    pid_t from;

    while (e2e_now_ms() < deadline)
        if (notify_next(n, msg, sizeof(msg), &from,
                        (int)(deadline - e2e_now_ms())) == 0 &&
            strstr(msg, needle) != NULL)
            return 0;
    return -1;
}

/*
 * A worker that cannot start (exit status 2: here its comments store is
 * not a directory) is retried with a backoff, logged each time, and the
 * shortfall shows in server.stats, `folio stats`, the metrics, the health
 * endpoints and systemd's status; once the store is back, it serves again.
 */
START_TEST(test_fatal_exit_retried)
{
    char store[400], away[420], line[512], body[256];
    pid_t pids[4];
    struct notify n;
    uint64_t deadline;
    char dir[64];

    snprintf(dir, sizeof(dir), "/tmp/folio-fatal.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    notify_open(&n, 1, dir);
    ck_assert(e2e_start(&srv, "workers = 2\nmetrics_listen = 127.0.0.1:0\n",
                        NULL) == 0);
    ck_assert_int_eq(notify_find(&n, "READY=1", 10000), 0);
    snprintf(store, sizeof(store), "%s/data/comments", srv.dir);
    snprintf(away, sizeof(away), "%s.away", store);
    ck_assert_int_eq(rename(store, away), 0);
    ck_assert_int_eq(e2e_write_file(store, "not a directory\n"), 0);
    ck_assert_int_eq(e2e_workers(&srv, pids, 4), 2);
    ck_assert_int_eq(kill(pids[0], SIGKILL), 0);

    ck_assert_int_eq(e2e_wait_log(&srv, "cannot start (exited with status 2): "
                                        "retrying in 1 s; 1 of 2 workers "
                                        "serving",
                                  5000),
                     0);
    ck_assert_int_eq(notify_find(&n, "STATUS=serving generation 1 with 1 of "
                                     "2 workers (worker ",
                                 5000),
                     0);
    ck_assert(served_workers() == 1);
    folio_stats_line(line, sizeof(line));
    ck_assert_msg(strstr(line, "1 of 2 workers serving") != NULL,
                  "folio stats: %s", line);
    ck_assert(e2e_metric(&srv, "folio_workers{state=\"serving\"}") == 1);
    ck_assert(e2e_metric(&srv, "folio_workers_configured") == 2);
    ck_assert_int_eq(e2e_http_status(srv.metrics, "/healthz", NULL, 0), 200);
    ck_assert_int_eq(
        e2e_http_status(srv.metrics, "/readyz", body, sizeof(body)), 503);
    ck_assert_str_eq(body, "1 of 2 workers serving\n");
    /* Retried, and said so, each time, waiting longer. */
    ck_assert_int_eq(e2e_wait_log(&srv, "retrying in 2 s", 5000), 0);
    /* The store comes back: the next try serves. */
    ck_assert_int_eq(unlink(store), 0);
    ck_assert_int_eq(rename(away, store), 0);
    deadline = e2e_deadline(15000);
    while (served_workers() != 2)
        ck_assert_msg(e2e_wait_more(deadline), "still short 15 s after the "
                                               "store came back");
    ck_assert_int_eq(notify_find(&n, "STATUS=serving generation 1 with 2 "
                                     "workers",
                                 5000),
                     0);
    ck_assert_int_eq(e2e_http_status(srv.metrics, "/readyz", NULL, 0), 200);
    folio_stats_line(line, sizeof(line));
    ck_assert_msg(strstr(line, "2 of 2 workers serving") != NULL,
                  "folio stats: %s", line);
    /* The refusals are [crit] lines: the log check would fail on them. */
    ck_assert_int_eq(kill(srv.pid, SIGTERM), 0);
    ck_assert_int_eq(e2e_wait_exit(&srv, 10000), 0);
    ck_assert(!e2e_log_has(&srv, "Sanitizer"));
    ck_assert(!e2e_log_has(&srv, "runtime error"));
    e2e_stop(&srv);
    notify_close(&n);
    rmdir(dir);
}
END_TEST

/* ---- privileges ---- */

/* Run foliod with `argv` to completion; its exit status, output in out. */
static int
run_foliod(const char *const *args, char *out, size_t len)
{
    const char *argv[16];
    int p[2], st, i, n = 0;
    ssize_t got;
    size_t off = 0;
    pid_t pid;

    argv[n++] = e2e_foliod();
    for (i = 0; args[i] != NULL && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    ck_assert_int_eq(pipe(p), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(p[1], STDOUT_FILENO);
        dup2(p[1], STDERR_FILENO);
        close(p[0]);
        close(p[1]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    while (off < len - 1 && (got = read(p[0], out + off, len - 1 - off)) > 0)
        off += (size_t)got;
    out[off] = '\0';
    close(p[0]);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

START_TEST(test_root_without_user)
{
    const char *nosuch[] = {"-f",
                            "-c",
                            "/dev/null",
                            "--user",
                            "no-such-user-folio",
                            "--listen",
                            "127.0.0.1:0",
                            "--metrics-listen",
                            "off",
                            "--http-listen",
                            "off",
                            NULL};
    struct folio_client *c;
    char out[2048], path[64], line[256];
    long uid = -1;
    FILE *f;

    /* An unknown user is a configuration error (--check-config: e2e_server). */
    ck_assert_int_eq(run_foliod(nosuch, out, sizeof(out)), 1);
    ck_assert_msg(strstr(out, "no-such-user-folio") != NULL, "%s", out);
    if (!e2e_want(geteuid() == 0, "root", "this case runs foliod as root"))
        return;
    /*
     * Root without --user (e2e_start writes no user): it serves, as root,
     * and says so (PROTOCOL.md: defaults work with no option).
     */
    ck_assert_int_eq(e2e_start(&srv, NULL, NULL), 0);
    ck_assert(e2e_log_has(&srv, "serving as root"));
    ck_assert(e2e_log_has(&srv, "set --user USER"));
    snprintf(path, sizeof(path), "/proc/%ld/status", (long)srv.pid);
    ck_assert_ptr_nonnull(f = fopen(path, "r"));
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "Uid: %ld", &uid) == 1)
            break;
    fclose(f);
    ck_assert_int_eq(uid, 0);
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    ck_assert_int_eq(e2e_ping(c), 0);
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * A detached start that fails after it dropped privileges (the data
 * directory is not the user's): the terminal is told why, and the
 * status is the daemon's (2: foliod(8) EXIT STATUS).
 */
START_TEST(test_detached_start_error_shown)
{
    char dir[64], data[128], out[4096], cmd[160];
    const char *args[] = {"-c",         "/dev/null", "--user",
                          "nobody",     "--data-dir", data,
                          "--listen",   "127.0.0.1:0", "--metrics-listen",
                          "off",        "--admin-socket", "off",
                          "--http-listen", "off", NULL};

    if (!e2e_want(geteuid() == 0, "root", "this case drops to nobody") ||
        !e2e_want(getpwnam("nobody") != NULL, "user-nobody",
                  "no user nobody to drop to"))
        return;
    snprintf(dir, sizeof(dir), "/tmp/folio-detach.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(data, sizeof(data), "%s/data", dir);
    ck_assert_int_eq(mkdir(data, 0700), 0);
    ck_assert_int_eq(run_foliod(args, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "is not writable by user nobody") != NULL,
                  "the terminal saw: '%s'", out);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* "Uid:\tR\tE\tS\tF" of /proc/PID/status, as four numbers; same for Gid. */
static void
proc_ids(pid_t pid, const char *key, long ids[4])
{
    char path[64], line[512];
    size_t klen = strlen(key);
    FILE *f;
    int found = 0;

    snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
    if ((f = fopen(path, "r")) == NULL) {
        e2e_print_log(&srv); /* why did it go? */
        ck_abort_msg("%s: %s", path, strerror(errno));
    }
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, key, klen) == 0) {
            found = sscanf(line + klen, "%ld %ld %ld %ld", &ids[0], &ids[1],
                           &ids[2], &ids[3]) == 4;
            break;
        }
    fclose(f);
    ck_assert_msg(found, "%s of %ld", key, (long)pid);
}

/* A line of /proc/PID/status, after its key, without the newline. */
static void
proc_field(pid_t pid, const char *key, char *out, size_t len)
{
    char path[64], line[512];
    size_t klen = strlen(key);
    FILE *f;

    out[0] = '\0';
    snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
    ck_assert_ptr_nonnull(f = fopen(path, "r"));
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, key, klen) == 0) {
            size_t e = strlen(line);

            while (e > klen && strchr(" \t\n", line[e - 1]) != NULL)
                line[--e] = '\0';
            snprintf(out, len, "%s", line + klen + strspn(line + klen, " \t"));
            break;
        }
    fclose(f);
}

/* Every id of `pid` is the user's, no capability is left. */
static void
assert_dropped(pid_t pid, const struct passwd *pw)
{
    long ids[4];
    char v[256], want[64];
    int i;

    proc_ids(pid, "Uid:", ids);
    for (i = 0; i < 4; i++)
        ck_assert_msg(ids[i] == (long)pw->pw_uid, "pid %ld uid[%d] %ld",
                      (long)pid, i, ids[i]);
    proc_ids(pid, "Gid:", ids);
    for (i = 0; i < 4; i++)
        ck_assert_msg(ids[i] == (long)pw->pw_gid, "pid %ld gid[%d] %ld",
                      (long)pid, i, ids[i]);
    /* initgroups: root's supplementary groups are gone. */
    proc_field(pid, "Groups:", v, sizeof(v));
    snprintf(want, sizeof(want), "%ld", (long)pw->pw_gid);
    ck_assert_msg(strcmp(v, want) == 0 || strcmp(v, "") == 0,
                  "pid %ld groups '%s'", (long)pid, v);
    proc_field(pid, "CapPrm:", v, sizeof(v));
    ck_assert_msg(strcmp(v, "0000000000000000") == 0, "CapPrm %s", v);
    proc_field(pid, "CapEff:", v, sizeof(v));
    ck_assert_msg(strcmp(v, "0000000000000000") == 0, "CapEff %s", v);
}

START_TEST(test_drop_to_user)
{
    struct e2e_server *s = &srv;
    struct folio_client *c, *a;
    struct folio_reply r;
    struct passwd *pw;
    struct stat st;
    const char *argv[8];
    char text[2048], path[400];
    pid_t workers[8], old[8];
    uint64_t deadline;
    int i, n, fd;

    if (!e2e_want(geteuid() == 0, "root", "this case drops to nobody") ||
        !e2e_want((pw = getpwnam("nobody")) != NULL, "user-nobody",
                  "no user nobody to drop to"))
        return;
    /*
     * Started by hand, not by e2e_start.  The directory stays root's
     * (0755: nobody may not write it): the ready file, opened before the
     * drop, is written at every ready all the same.
     */
    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "/tmp/folio-priv.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(s->dir));
    ck_assert_int_eq(chmod(s->dir, 0755), 0);
    snprintf(s->conf, sizeof(s->conf), "%.200s/foliod.conf", s->dir);
    snprintf(s->log, sizeof(s->log), "%.200s/foliod.log", s->dir);
    snprintf(s->ready, sizeof(s->ready), "%.200s/ready", s->dir);
    /* Both made by root, then given to nobody. */
    snprintf(s->admin, sizeof(s->admin), "%.200s/run/admin.sock", s->dir);
    snprintf(text, sizeof(text),
             "listen = 127.0.0.1:0\nadmin_socket = %.300s\n"
             "http_listen = 127.0.0.1:0\n"
             "data_dir = %.200s/state/folio\nmetrics_listen = 127.0.0.1:0\n"
             "workers = 2\nready_file = %.300s\npid_file = %.200s/foliod.pid\n"
             "user = nobody\nshutdown_timeout = 5s\n",
             s->admin, s->dir, s->ready, s->dir);
    ck_assert_int_eq(e2e_write_file(s->conf, text), 0);
    argv[0] = e2e_foliod();
    argv[1] = "-f";
    argv[2] = "-c";
    argv[3] = s->conf;
    argv[4] = NULL;
    s->pid = fork();
    ck_assert_int_ge(s->pid, 0);
    if (s->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    ck_assert_int_eq(e2e_wait_ready(s, 1, E2E_READY_MS), 0);
    ck_assert(e2e_log_has(s, "running as user nobody"));

    /* The master and every worker: nobody's ids, no capabilities. */
    assert_dropped(s->pid, pw);
    n = e2e_workers(s, workers, 8);
    ck_assert_int_eq(n, 2);
    for (i = 0; i < n; i++)
        assert_dropped(workers[i], pw);

    /* What root made for nobody. */
    snprintf(path, sizeof(path), "%.200s/state/folio", s->dir);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_uid, pw->pw_uid);
    ck_assert_int_eq(st.st_mode & 0777, 0750);
    snprintf(path, sizeof(path), "%.200s/state", s->dir);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_uid, pw->pw_uid);
    ck_assert_int_eq(stat(s->admin, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0660);
    ck_assert_int_eq(st.st_gid, pw->pw_gid);
    snprintf(path, sizeof(path), "%.200s/foliod.pid", s->dir);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_uid, 0); /* written before the drop */

    /* It serves, its admin socket answers, and it reloads as nobody. */
    c = e2e_connect(s);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(e2e_ping(c), 0);
    a = e2e_connect_admin(s);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    /* The store its master created as nobody takes a post from a worker. */
    snprintf(path, sizeof(path), "%.200s/state/folio/comments", s->dir);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_uid, pw->pw_uid);
    {
        msgpack_packer *pk;
        uint32_t id;

        pk = folio_client_request(c, 0, "comments.post", 1, &id);
        msgpack_pack_map(pk, 3);
        folio_pack_cstr(pk, "path");
        folio_pack_cstr(pk, "/privileges/");
        folio_pack_cstr(pk, "author");
        folio_pack_cstr(pk, "nobody");
        folio_pack_cstr(pk, "body");
        folio_pack_cstr(pk, "written without root");
        ck_assert_int_eq(folio_client_flush(c), 0);
        ck_assert_int_eq(folio_client_reply(c, &r), 1);
        ck_assert_uint_eq(r.msgid, id);
        ck_assert_msg(r.code == 0, "comments.post: %d %.*s", r.code,
                      (int)r.message_len, r.message);
    }
    ck_assert_int_eq(kill(s->pid, SIGHUP), 0);
    ck_assert_int_eq(e2e_wait_ready(s, 2, E2E_READY_MS), 0);
    ck_assert_int_eq(e2e_ping(c), 0);
    ck_assert(!e2e_log_has(s, "cannot write ready file"));
    /*
     * The new generation's workers, once the old one has drained: a
     * retiring worker listed now may be gone when its status is read.
     */
    memcpy(old, workers, sizeof(old));
    deadline = e2e_deadline(10000);
    for (;;) {
        n = e2e_workers(s, workers, 8);
        if (n == 2 && !e2e_pid_in(workers[0], old, 2) &&
            !e2e_pid_in(workers[1], old, 2))
            break;
        ck_assert_msg(e2e_wait_more(deadline),
                      "generation 1 still there 10 s after the reload");
    }
    for (i = 0; i < n; i++)
        assert_dropped(workers[i], pw);
    folio_client_close(c);
    folio_client_close(a);

    /* It stops cleanly, and removes what it may. */
    ck_assert_int_eq(e2e_stop(s), 0);
}
END_TEST

/* ---- socket activation ---- */

/* A listening TCP socket on 127.0.0.1, its port in *port. */
static int
listen_tcp(int *port)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    ck_assert_int_ge(fd, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 64), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

/*
 * Start foliod as systemd would with a socket unit: the sockets `fds` as
 * descriptors 3, 4, ..., LISTEN_FDS and LISTEN_PID set; listening on
 * 127.0.0.1:port (one of them, not bound by foliod).
 */
static void
start_activated(struct e2e_server *s, const int *fds, int nfds, int port)
{
    const char *argv[] = {e2e_foliod(), "-f", "-c", s->conf, NULL};
    char text[2048], num[32];
    int i, fd, high[8];

    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "/tmp/folio-activate.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(s->dir));
    snprintf(s->conf, sizeof(s->conf), "%.200s/foliod.conf", s->dir);
    snprintf(s->log, sizeof(s->log), "%.200s/foliod.log", s->dir);
    snprintf(s->ready, sizeof(s->ready), "%.200s/ready", s->dir);
    snprintf(s->admin, sizeof(s->admin), "%.200s/admin.sock", s->dir);
    snprintf(text, sizeof(text),
             "listen = 127.0.0.1:%d\nadmin_socket = %.300s\n"
             "http_listen = off\n"
             "data_dir = %.200s/data\nmetrics_listen = off\nworkers = 2\n"
             "ready_file = %.300s\nshutdown_timeout = 5s\n%s",
             port, s->admin, s->dir, s->ready,
             geteuid() == 0 ? "user = root\n" : "");
    ck_assert_int_eq(e2e_write_file(s->conf, text), 0);
    argv[3] = s->conf;
    s->pid = fork();
    ck_assert_int_ge(s->pid, 0);
    if (s->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        /* Out of the way first, then into place from 3, inheritable. */
        for (i = 0; i < nfds; i++)
            high[i] = fcntl(fds[i], F_DUPFD, 100);
        for (i = 0; i < nfds; i++)
            dup2(high[i], 3 + i);
        for (i = 0; i < nfds; i++)
            close(high[i]); /* only 3, 4, ... are foliod's */
        snprintf(num, sizeof(num), "%d", nfds);
        setenv("LISTEN_FDS", num, 1);
        snprintf(num, sizeof(num), "%ld", (long)getpid());
        setenv("LISTEN_PID", num, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    ck_assert_int_eq(e2e_wait_ready(s, 1, E2E_READY_MS), 0);
}

/* Whether process pid holds the socket that descriptor fd (ours) is. */
static int
holds_socket(pid_t pid, int fd)
{
    struct stat st;

    ck_assert_int_eq(fstat(fd, &st), 0);
    return e2e_holds_inode(pid, (unsigned long)st.st_ino);
}

/* 1 if a connection to 127.0.0.1:port is refused. */
static int
connect_refused(int port)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    close(fd);
    return rc == -1 && errno == ECONNREFUSED;
}

START_TEST(test_socket_activation)
{
    struct folio_client *c, *q;
    struct folio_reply r;
    char addr[64];
    int fds[2], port, other;
    uint32_t id;

    fds[0] = listen_tcp(&port);
    fds[1] = listen_tcp(&other);
    start_activated(&srv, fds, 2, port);
    /* Bound by the test, not by foliod (which would fail: in use). */
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    ck_assert_str_eq(srv.addr, addr);
    ck_assert(e2e_log_has(&srv, "the socket systemd passed"));
    ck_assert(e2e_log_has(&srv, "matches no listen address or admin socket: "
                                "closed"));
    /*
     * The one no address took is closed, not held: once systemd (here the
     * test) lets go too, a client is refused instead of left hanging.
     */
    ck_assert(!holds_socket(srv.pid, fds[1]));
    close(fds[1]);
    fds[1] = -1;
    ck_assert_int_eq(connect_refused(other), 1);
    c = e2e_connect(&srv);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(e2e_ping(c), 0);
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    ck_assert_int_eq(e2e_wait_ready(&srv, 2, E2E_READY_MS), 0);
    ck_assert_int_eq(e2e_ping(c), 0);
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);

    /*
     * Between two foliods the socket stays open (the test holds it, as
     * systemd does): a client that connects then is answered by the next.
     */
    ck_assert_int_eq(folio_client_open(addr, 5000, &q, addr, sizeof(addr)), 0);
    folio_client_request(q, 0, "server.ping", 0, &id);
    ck_assert_int_eq(folio_client_flush(q), 0);
    start_activated(&srv, fds, 1, port);
    ck_assert_int_eq(folio_client_reply(q, &r), 1);
    ck_assert_uint_eq(r.msgid, id);
    ck_assert_int_eq(r.code, 0);
    folio_client_close(q);
    ck_assert_int_eq(e2e_stop(&srv), 0);
    close(fds[0]);
}
END_TEST

static Suite *
ops_suite(void)
{
    Suite *s = suite_create("e2e_ops");
    TCase *tc = tcase_create("notify");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_notify_abstract_socket);
    tcase_add_test(tc, test_notify_path_socket);
    tcase_add_test(tc, test_notify_daemon);
    tcase_add_test(tc, test_notify_absent_or_broken);
    tcase_add_test(tc, test_fatal_exit_retried);
    suite_add_tcase(s, tc);
    tc = tcase_create("cycles");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_hup_then_term_cycles);
    suite_add_tcase(s, tc);
    tc = tcase_create("privileges");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_root_without_user);
    tcase_add_test(tc, test_drop_to_user);
    tcase_add_test(tc, test_detached_start_error_shown);
    suite_add_tcase(s, tc);
    tc = tcase_create("activation");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_socket_activation);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(ops_suite());
}
