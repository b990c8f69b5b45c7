/*
 * e2e_util.h - start the real foliod for an end-to-end test and talk to it.
 *
 * e2e_start() writes a configuration into a fresh temporary directory,
 * starts the built foliod in the foreground on a free port (port 0, read
 * back from its ready file), and waits for readiness with a deadline.  The
 * server dies with the test process (PR_SET_PDEATHSIG, and an atexit
 * handler that also runs when a Check assertion fails in fork mode).
 * e2e_stop() stops it, checks its exit status and scans its log for
 * crashes, sanitizer reports and [crit] lines.
 *
 * FOLIO_TEST_SERVER=host:port aims the client helpers at a server you
 * started yourself (under gdb, say); e2e_start() then starts nothing.
 */
#ifndef FOLIO_E2E_UTIL_H
#define FOLIO_E2E_UTIL_H

#include <sys/types.h>

#include <stdint.h>

#include "src/client.h"
#include "src/http.h"

struct e2e_server {
    char dir[256];   /* temporary directory, removed by e2e_stop */
    char conf[320];
    char log[320];
    char ready[320];
    char admin[320]; /* admin socket path */
    char addr[128];  /* "127.0.0.1:PORT" */
    char metrics[128]; /* the metrics endpoint's HOST:PORT, if any */
    char http[128];    /* the first HTTP face's HOST:PORT, if any */
    pid_t pid;       /* master */
    uint64_t generation;
    int external;    /* FOLIO_TEST_SERVER: not ours to stop */
};

/* e2e_foliod - path of the foliod under test ($FOLIOD or the build's). */
const char *e2e_foliod(void);

/* e2e_corpus - the Shakespeare corpus for tests, or NULL if there is none. */
const char *e2e_corpus(void);

/*
 * e2e_start - start foliod with `conf` (extra configuration lines, may be
 * NULL) and extra command-line arguments `args` (NULL-terminated, may be
 * NULL), and wait for it to be ready (E2E_READY_MS: a start may
 * build the corpus index).  Returns 0, or -1 with the reason
 * printed (the log's tail too).
 */
int e2e_start(struct e2e_server *s, const char *conf, const char *const *args);

/*
 * e2e_start_metrics - e2e_start with a metrics listener on a free port
 * and `conf` (may be NULL); a failure fails the test case.
 */
void e2e_start_metrics(struct e2e_server *s, const char *conf);

/*
 * e2e_restart - start foliod again in the same directory, with the same
 * configuration and data, after the previous one died (a crash test
 * kill -9s it and reaps it first: s->pid <= 0).  Returns 0 or -1 as
 * e2e_start does.
 */
int e2e_restart(struct e2e_server *s, const char *const *args);

/*
 * e2e_wait_ready - wait until the ready file names generation >= gen.
 * Returns 0, or -1 on time-out or if the server died.
 */
int e2e_wait_ready(struct e2e_server *s, uint64_t gen, int timeout_ms);

/*
 * e2e_stop - SIGTERM, wait up to 15 s (then SIGKILL).  Returns the exit
 * status (0..255), or -1 if it had to be killed, or -2 if the log shows a
 * crash or sanitizer report (printed).  Removes the temporary directory.
 */
int e2e_stop(struct e2e_server *s);

/* e2e_wait_exit - wait for the master to exit; its status or -1 on time-out. */
int e2e_wait_exit(struct e2e_server *s, int timeout_ms);

/* e2e_log_check - 0 if the log is clean, -1 (and print the line) if not. */
int e2e_log_check(const struct e2e_server *s);

/* e2e_print_log - the last 4000 bytes of the server's log, on stderr. */
void e2e_print_log(const struct e2e_server *s);

/* e2e_log_has - 1 if the log contains `needle`. */
int e2e_log_has(const struct e2e_server *s, const char *needle);

/* e2e_wait_log - wait until the log contains `needle`; 0 or -1. */
int e2e_wait_log(const struct e2e_server *s, const char *needle,
                 int timeout_ms);

/* e2e_connect, e2e_connect_admin - a client, or NULL (reason printed). */
struct folio_client *e2e_connect(const struct e2e_server *s);
struct folio_client *e2e_connect_admin(const struct e2e_server *s);

/* e2e_workers - the master's live children; returns how many (<= max). */
int e2e_workers(const struct e2e_server *s, pid_t *pids, int max);

/* e2e_pid_gone - 1 if process pid is gone (or a zombie nobody reaped). */
int e2e_pid_gone(pid_t pid);

/* e2e_ping - one server.ping on c; 0 if answered "pong". */
int e2e_ping(struct folio_client *c);

/*
 * e2e_stats - call server.stats on `admin` (an admin-socket client).
 * 0, or -1 (reason printed).  *r is valid until the next call on admin.
 */
int e2e_stats(struct folio_client *admin, struct folio_reply *r);

/*
 * e2e_stat_num - the number at a path of keys in a reply's result: map
 * keys, or "#N" for element N of an array; the path ends with NULL.
 * Integers and floats are returned as double; NAN if the path is missing.
 * Example: e2e_stat_num(&r, "totals", "methods", "server.ping", "calls", NULL)
 */
double e2e_stat_num(const struct folio_reply *r, ...);

/* The tests' GETs (folio_http_get, src/http.h) wait this long. */
#define E2E_HTTP_MS 5000

/*
 * e2e_http_status - GET `path` from addr (HOST:PORT) with folio_http_get,
 * within E2E_HTTP_MS: the status code, or -1 when no HTTP answer came;
 * the body's text into body (cut at len; "" when none) unless body is
 * NULL.
 */
int e2e_http_status(const char *addr, const char *path, char *body, size_t len);

/*
 * e2e_metric - the value of one series of s's /metrics, named with its
 * labels as the page writes it ("folio_workers{state=\"down\"}"); NAN if
 * absent or the page cannot be had.
 */
double e2e_metric(const struct e2e_server *s, const char *series);

/*
 * e2e_server_stat - a number of server.stats over s's admin socket, at a
 * path of keys ending with NULL (as e2e_stat_num); NAN if it cannot be had.
 */
double e2e_server_stat(const struct e2e_server *s, ...);

/*
 * e2e_wait_tick - wait until every worker of s has had two turns of its
 * timer since the call (their heartbeats say so): the figures a worker
 * refreshes on it (cpu_user_s, heap_inuse, maxrss_kb) are then as fresh
 * as the call.  0, or -1 after timeout_ms or if server.stats fails.
 */
int e2e_wait_tick(const struct e2e_server *s, int timeout_ms);

/* e2e_log_count - how many lines of s's log hold `needle`. */
int e2e_log_count(const struct e2e_server *s, const char *needle);

/* e2e_pid_in - whether pid is among the n of set. */
int e2e_pid_in(pid_t pid, const pid_t *set, int n);

/* e2e_holds_inode - whether process pid has a descriptor of socket ino. */
int e2e_holds_inode(pid_t pid, unsigned long ino);

/*
 * e2e_bound_ms - a time bound for this build: plain_ms, sanitized_ms
 * under ASan/UBSan, 20 s under Valgrind (E2E_VALGRIND set).
 */
int e2e_bound_ms(int plain_ms, int sanitized_ms);

/*
 * E2E_READY_MS - the bound of every wait for a start or a reload to be
 * ready: either may build the corpus index (3 s on a quiet machine, many
 * times that on a loaded one, and under sanitizers).  A bound to end a
 * hang, not a figure.
 */
#define E2E_READY_MS e2e_bound_ms(60000, 120000)

/* e2e_deadline - the time (e2e_now_ms) `ms` from now, for e2e_wait_more. */
uint64_t e2e_deadline(int ms);

/*
 * e2e_wait_more - the pause of a loop that polls a state the server
 * reports (a counter of server.stats, a log line, a process gone): returns
 * 1 after a few milliseconds while `deadline` is ahead, 0 at once when it
 * has passed.  With e2e_pace_ms, the only place tests/ sleeps (make
 * lint-tests):
 *
 *     uint64_t d = e2e_deadline(e2e_bound_ms(5000, 15000));
 *     while (!done())
 *         ck_assert_msg(e2e_wait_more(d), "not done in time");
 */
int e2e_wait_more(uint64_t deadline);

/*
 * e2e_pace_ms - a delay that is part of what a test does, never a wait
 * for the server: a slow reader's pace, a client's think time, a signal
 * a moment after another, a load kept on for a while.
 */
void e2e_pace_ms(int ms);

/* e2e_read_file - a whole file, NUL-terminated (malloc'd), or NULL. */
char *e2e_read_file(const char *path);

/* e2e_now_ms - monotonic milliseconds. */
uint64_t e2e_now_ms(void);

/* e2e_rm_rf - remove a directory tree (best effort). */
void e2e_rm_rf(const char *dir);

/*
 * e2e_spawn - run argv (argv[0] looked up on PATH) in a child that dies
 * with the test (PR_SET_PDEATHSIG), its stdout and stderr appended to
 * `log` (NULL: /dev/null).  Returns the pid, or -1.  The caller reaps it.
 */
pid_t e2e_spawn(const char *const argv[], const char *log);

/* ---- what a suite needs (make check's table of components) ---- */

/*
 * e2e_require - in main(), before the suite runs: the program `prog`,
 * looked for on PATH, that Debian package `package` installs.  Found: it
 * is recorded as used (a line "e2e-component: SUITE PROG used PATH" in
 * the suite's log, which tests/components.sh gathers into the table that
 * ends make check) and its path returned (static storage).  Missing: the
 * program says so and exits, 77 ("skipped") or, when CI is set, 1: CI
 * installs every component (dist/install-deps.sh), so there a missing one
 * is a failure, never a skip.
 */
const char *e2e_require(const char *prog, const char *package);

/*
 * e2e_require_at - e2e_require for a component found another way: `path`
 * where it is, NULL if it is not there; `what` names it and `how` says
 * how to get it ("apt-get install postgresql").  Returns path.
 */
const char *e2e_require_at(const char *what, const char *path,
                           const char *how);

/* e2e_require_corpus - the corpus (e2e_corpus()), or exit as above. */
const char *e2e_require_corpus(void);

/*
 * e2e_want - inside a test case, for what only that case needs and a
 * machine may refuse (a mount, a cgroup): 1 if `have`; `what` names it in
 * one word (the table's: "tmpfs-mount").  Otherwise, when
 * CI is set, the case fails naming `what` and `why`; elsewhere it prints
 * that the case is skipped and why, records it for the table, and
 * returns 0: the caller returns (Check cannot skip one case).
 */
int e2e_want(int have, const char *what, const char *why);

/* e2e_which - the path of `prog` on PATH (static storage), or NULL. */
const char *e2e_which(const char *prog);

/*
 * e2e_sockaddr - the TCP address addr (HOST:PORT, IPv4) in *sin.
 * e2e_tcp_connect - a blocking TCP connection to it, its receive buffer
 * set first if rcvbuf > 0.  Both fail the test if they cannot.
 */
struct sockaddr_in;
void e2e_sockaddr(const char *addr, struct sockaddr_in *sin);
int e2e_tcp_connect(const char *addr, int rcvbuf);

/* e2e_free_port - a loopback TCP port nobody listens on now, or -1. */
int e2e_free_port(void);

/* e2e_write_file - write a file (0 or -1). */
int e2e_write_file(const char *path, const char *text);

#endif
