/*
 * e2e_util.c - starting, watching and stopping the real foliod in tests
 * (see e2e_util.h).  Readiness is a file the server writes, waited for
 * with a deadline: no sleep stands in for synchronization.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/addr.h"
#include "src/clock.h"
#include "src/rpc.h"
#include "tests/e2e_util.h"

#define MAX_SERVERS 8

static struct e2e_server *live[MAX_SERVERS];

uint64_t
e2e_now_ms(void)
{
    return folio_mono_ms();
}

int
e2e_bound_ms(int plain_ms, int sanitized_ms)
{
    if (getenv("E2E_VALGRIND") != NULL)
        return 20000;
#ifdef FOLIO_SANITIZED
    return sanitized_ms;
#else
    (void)sanitized_ms;
    return plain_ms;
#endif
}

/* Wait a little for an event we cannot poll for (a file, a process). */
static void
pause_ms(int ms)
{
    poll(NULL, 0, ms);
}

uint64_t
e2e_deadline(int ms)
{
    return e2e_now_ms() + (uint64_t)(ms > 0 ? ms : 0);
}

int
e2e_wait_more(uint64_t deadline)
{
    uint64_t now = e2e_now_ms();

    if (now >= deadline)
        return 0;
    pause_ms(deadline - now < 5 ? (int)(deadline - now) : 5);
    return 1;
}

void
e2e_pace_ms(int ms)
{
    if (ms > 0)
        pause_ms(ms);
}

const char *
e2e_foliod(void)
{
    const char *p = getenv("FOLIOD");

    return p != NULL && *p != '\0' ? p : FOLIO_BUILDDIR "/foliod";
}

const char *
e2e_corpus(void)
{
    const char *p = getenv("FOLIO_TEST_CORPUS");
    struct stat st;

    if (p == NULL || *p == '\0')
        p = FOLIO_TEST_CORPUS_DEFAULT;
    if (*p == '\0' || stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
        return NULL;
    return p;
}

char *
e2e_read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf;
    long len;

    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (len < 0 || (buf = malloc((size_t)len + 1)) == NULL ||
        fread(buf, 1, (size_t)len, f) != (size_t)len) {
        if (len >= 0)
            free(buf);
        fclose(f);
        return NULL;
    }
    buf[len] = '\0';
    fclose(f);
    return buf;
}

int
e2e_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    int ok;

    if (f == NULL)
        return -1;
    ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    remove(path);
    return 0;
}

void
e2e_rm_rf(const char *dir)
{
    if (dir[0] != '\0')
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
forget(struct e2e_server *s)
{
    int i;

    for (i = 0; i < MAX_SERVERS; i++)
        if (live[i] == s)
            live[i] = NULL;
}

/* Runs at exit, also when a Check assertion failed in this process. */
static void
kill_all(void)
{
    int i;

    for (i = 0; i < MAX_SERVERS; i++) {
        if (live[i] == NULL)
            continue;
        if (live[i]->pid > 0) {
            kill(live[i]->pid, SIGKILL);
            waitpid(live[i]->pid, NULL, 0);
        }
        e2e_rm_rf(live[i]->dir);
        live[i] = NULL;
    }
}

void
e2e_print_log(const struct e2e_server *s)
{
    char line[1024];
    FILE *f = fopen(s->log, "r");
    long size;

    if (f == NULL)
        return;
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, size > 4000 ? size - 4000 : 0, SEEK_SET);
    fprintf(stderr, "---- %s (tail) ----\n", s->log);
    while (fgets(line, sizeof(line), f) != NULL)
        fputs(line, stderr);
    fprintf(stderr, "----\n");
    fclose(f);
}

/*
 * Parse the ready file: "pid N", "generation N", "listen ADDR", "http
 * ADDR", "metrics ADDR".
 */
static int
read_ready(struct e2e_server *s)
{
    char line[512], addr[128];
    unsigned long long gen = 0;
    FILE *f = fopen(s->ready, "r");
    int have_listen = 0, have_http = 0;

    if (f == NULL)
        return -1;
    s->http[0] = '\0';
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "generation %llu", &gen) == 1)
            continue;
        if (sscanf(line, "metrics %127s", addr) == 1) {
            snprintf(s->metrics, sizeof(s->metrics), "%s", addr);
            continue;
        }
        if (!have_http && sscanf(line, "http %127s", addr) == 1) {
            snprintf(s->http, sizeof(s->http), "%s", addr);
            have_http = 1;
            continue;
        }
        if (!have_listen && sscanf(line, "listen %127s", addr) == 1 &&
            strncmp(addr, "unix:", 5) != 0) {
            snprintf(s->addr, sizeof(s->addr), "%s", addr);
            have_listen = 1;
        }
    }
    fclose(f);
    s->generation = gen;
    return gen > 0 ? 0 : -1;
}

int
e2e_wait_ready(struct e2e_server *s, uint64_t gen, int timeout_ms)
{
    uint64_t deadline = e2e_now_ms() + (uint64_t)timeout_ms;
    int st;

    for (;;) {
        if (read_ready(s) == 0 && s->generation >= gen)
            return 0;
        if (!s->external && waitpid(s->pid, &st, WNOHANG) == s->pid) {
            fprintf(stderr, "foliod exited during start-up (status 0x%x)\n",
                    st);
            s->pid = -1;
            e2e_print_log(s);
            return -1;
        }
        if (e2e_now_ms() >= deadline) {
            if (timeout_ms > 0) {
                fprintf(stderr, "foliod not ready (generation %llu) in %d ms\n",
                        (unsigned long long)gen, timeout_ms);
                e2e_print_log(s);
            }
            return -1;
        }
        pause_ms(10);
    }
}

/* Start foliod on s->conf, log appended to s->log; wait until ready. */
static int
spawn(struct e2e_server *s, const char *const *args)
{
    static int registered;
    const char *argv[64];
    int i, n = 0;

    if (!registered) {
        atexit(kill_all);
        registered = 1;
    }
    argv[n++] = e2e_foliod();
    argv[n++] = "-f";
    argv[n++] = "-c";
    argv[n++] = s->conf;
    for (i = 0; args != NULL && args[i] != NULL && n < 62; i++)
        argv[n++] = args[i];
    argv[n] = NULL;

    if ((s->pid = e2e_spawn(argv, s->log)) == -1) {
        perror("fork");
        return -1;
    }
    forget(s); /* a restart: listed once */
    for (i = 0; i < MAX_SERVERS; i++) {
        if (live[i] == NULL) {
            live[i] = s;
            break;
        }
    }
    return e2e_wait_ready(s, 1, E2E_READY_MS);
}

int
e2e_restart(struct e2e_server *s, const char *const *args)
{
    if (s->external || s->pid > 0 || s->dir[0] == '\0') {
        fprintf(stderr, "e2e_restart: the server is running or was removed\n");
        return -1;
    }
    unlink(s->ready); /* the dead server's: wait for the new one's */
    s->generation = 0;
    return spawn(s, args);
}

int
e2e_start(struct e2e_server *s, const char *conf, const char *const *args)
{
    const char *ext = getenv("FOLIO_TEST_SERVER");
    char text[8192], extra[4096];
    const char *p, *q;
    size_t len = 0;

    memset(s, 0, sizeof(*s));
    if (ext != NULL && *ext != '\0') {
        s->external = 1;
        snprintf(s->addr, sizeof(s->addr), "%s", ext);
        return 0;
    }
    snprintf(s->dir, sizeof(s->dir), "%s/folio-e2e.XXXXXX",
             getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(s->dir) == NULL) {
        perror("mkdtemp");
        return -1;
    }
    snprintf(s->conf, sizeof(s->conf), "%s/foliod.conf", s->dir);
    snprintf(s->log, sizeof(s->log), "%s/foliod.log", s->dir);
    snprintf(s->ready, sizeof(s->ready), "%s/ready", s->dir);
    snprintf(s->admin, sizeof(s->admin), "%s/admin.sock", s->dir);
    /* ${DIR} in the extra lines stands for the temporary directory. */
    for (p = conf != NULL ? conf : ""; *p != '\0' && len < sizeof(extra) - 1;) {
        if ((q = strstr(p, "${DIR}")) == NULL)
            q = p + strlen(p);
        len += (size_t)snprintf(extra + len, sizeof(extra) - len, "%.*s%s",
                                (int)(q - p), p, *q != '\0' ? s->dir : "");
        p = *q != '\0' ? q + 6 : q;
    }
    extra[len < sizeof(extra) ? len : sizeof(extra) - 1] = '\0';
    snprintf(text, sizeof(text),
             "# written by the end-to-end tests\n"
             "listen = 127.0.0.1:0\n"
             "http_listen = 127.0.0.1:0\n"
             "admin_socket = %s\n"
             "data_dir = %s/data\n"
             "metrics_listen = off\n"
             "workers = 2\n"
             "corpus = off\n" /* tests that want data say so */
             "freight_dir = off\n"
             "catalog = off\n"
             "ready_file = %s\n"
             "shutdown_timeout = 5s\n"
             "%s",
             s->admin, s->dir, s->ready, extra);
    if (e2e_write_file(s->conf, text) != 0) {
        perror(s->conf);
        return -1;
    }
    return spawn(s, args);
}

int
e2e_log_has(const struct e2e_server *s, const char *needle)
{
    char line[4096];
    FILE *f;
    int found = 0;

    if ((f = fopen(s->log, "r")) == NULL)
        return 0;
    while (!found && fgets(line, sizeof(line), f) != NULL)
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

int
e2e_wait_log(const struct e2e_server *s, const char *needle, int timeout_ms)
{
    uint64_t deadline = e2e_now_ms() + (uint64_t)timeout_ms;

    while (!e2e_log_has(s, needle)) {
        if (e2e_now_ms() >= deadline)
            return -1;
        pause_ms(10);
    }
    return 0;
}

int
e2e_log_check(const struct e2e_server *s)
{
    static const char *const bad[] = {
        "[crit]", "Sanitizer", "runtime error", "libevent:", "Segmentation",
        "core dumped",
    };
    char line[4096];
    FILE *f;
    size_t i;
    int rc = 0;

    if (s->external || (f = fopen(s->log, "r")) == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            if (strstr(line, bad[i]) != NULL) {
                fprintf(stderr, "foliod log: %s", line);
                rc = -1;
            }
        }
    }
    fclose(f);
    return rc;
}

int
e2e_wait_exit(struct e2e_server *s, int timeout_ms)
{
    uint64_t deadline = e2e_now_ms() + (uint64_t)timeout_ms;
    int st;

    if (s->pid <= 0)
        return -1;
    for (;;) {
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            s->pid = -1;
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        if (e2e_now_ms() >= deadline)
            return -1;
        pause_ms(5);
    }
}

int
e2e_stop(struct e2e_server *s)
{
    int rc = 0, bad;

    if (s->external)
        return 0;
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        rc = e2e_wait_exit(s, 15000);
        if (rc == -1) {
            fprintf(stderr, "foliod did not stop in 15 s: killed\n");
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
            s->pid = -1;
            e2e_print_log(s);
        }
    }
    bad = e2e_log_check(s);
    if (bad != 0 || (rc != 0 && getenv("E2E_KEEP") == NULL))
        e2e_print_log(s);
    forget(s);
    if (getenv("E2E_KEEP") == NULL)
        e2e_rm_rf(s->dir);
    return bad != 0 ? -2 : rc;
}

static struct folio_client *
connect_to(const char *addr)
{
    struct folio_client *c;
    char err[256];

    if (folio_client_open(addr, 10000, &c, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    return c;
}

struct folio_client *
e2e_connect(const struct e2e_server *s)
{
    return connect_to(s->addr);
}

struct folio_client *
e2e_connect_admin(const struct e2e_server *s)
{
    char addr[340];

    snprintf(addr, sizeof(addr), "unix:%s", s->admin);
    return connect_to(addr);
}

void
e2e_sockaddr(const char *addr, struct sockaddr_in *sin)
{
    char host[64];
    int port;

    ck_assert_int_eq(sscanf(addr, "%63[^:]:%d", host, &port), 2);
    memset(sin, 0, sizeof(*sin));
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t)port);
    ck_assert_int_eq(inet_pton(AF_INET, host, &sin->sin_addr), 1);
}

int
e2e_tcp_connect(const char *addr, int rcvbuf)
{
    struct sockaddr_in sin;
    int fd;

    e2e_sockaddr(addr, &sin);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    if (rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    ck_assert_msg(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0,
                  "connect %s: %s", addr, strerror(errno));
    return fd;
}

int
e2e_pid_gone(pid_t pid)
{
    char path[64], buf[512], *p;
    FILE *f;
    int z = 0;

    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    if ((f = fopen(path, "r")) == NULL)
        return 1;
    if (fgets(buf, sizeof(buf), f) != NULL && (p = strrchr(buf, ')')) != NULL)
        z = p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
    fclose(f);
    return z;
}

int
e2e_workers(const struct e2e_server *s, pid_t *pids, int max)
{
    char path[64], buf[4096], *p, *end;
    int fd, n = 0;
    ssize_t len;
    long v;

    snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)s->pid,
             (long)s->pid);
    if ((fd = open(path, O_RDONLY)) == -1)
        return 0;
    len = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (len <= 0)
        return 0;
    buf[len] = '\0';
    for (p = buf; n < max; p = end) {
        v = strtol(p, &end, 10);
        if (end == p)
            break;
        pids[n++] = (pid_t)v;
    }
    return n;
}

int
e2e_http_status(const char *addr, const char *path, char *body, size_t len)
{
    struct folio_http_answer a;
    char err[512];
    int status = -1;

    if (body != NULL && len > 0)
        body[0] = '\0';
    if (folio_http_get(addr, path, E2E_HTTP_MS, &a, err, sizeof(err)) == 0) {
        status = a.status;
        if (body != NULL && len > 0)
            snprintf(body, len, "%s", a.body.b_data);
    }
    folio_http_answer_free(&a);
    return status;
}

double
e2e_metric(const struct e2e_server *s, const char *series)
{
    struct folio_http_answer a;
    char err[512], pat[256];
    const char *p;
    double v = NAN;

    snprintf(pat, sizeof(pat), "\n%s ", series);
    if (folio_http_get(s->metrics, "/metrics", E2E_HTTP_MS, &a, err,
                       sizeof(err)) == 0 &&
        a.status == 200 && (p = strstr(a.body.b_data, pat)) != NULL)
        v = strtod(p + strlen(pat), NULL);
    folio_http_answer_free(&a);
    return v;
}

double
e2e_server_stat(const struct e2e_server *s, ...)
{
    struct folio_client *a = e2e_connect_admin(s);
    struct folio_reply r;
    const char *keys[16];
    double v = NAN;
    va_list ap;
    int n = 0;

    va_start(ap, s);
    while (n < 15 && (keys[n] = va_arg(ap, const char *)) != NULL)
        n++;
    va_end(ap);
    keys[n] = NULL;
    if (a != NULL && e2e_stats(a, &r) == 0)
        v = e2e_stat_num(&r, keys[0], n > 1 ? keys[1] : NULL,
                         n > 2 ? keys[2] : NULL, n > 3 ? keys[3] : NULL,
                         NULL);
    folio_client_close(a);
    return v;
}

/* Whether every worker's heartbeat in r is later than `after`. */
static int
beats_after(const struct folio_reply *r, uint64_t asked, uint64_t after)
{
    double age;
    char idx[16];
    int i;

    for (i = 0;; i++) {
        snprintf(idx, sizeof(idx), "#%d", i);
        if (isnan(e2e_stat_num(r, "workers", idx, "pid", NULL)))
            return i > 0;
        age = e2e_stat_num(r, "workers", idx, "heartbeat_age_ms", NULL);
        /* the reply's clock is later than `asked`: its beat is too */
        if (isnan(age) || (double)asked - age <= (double)after)
            return 0;
    }
}

int
e2e_wait_tick(const struct e2e_server *s, int timeout_ms)
{
    struct folio_client *a = e2e_connect_admin(s);
    uint64_t deadline = e2e_deadline(timeout_ms), after = e2e_now_ms(), asked;
    struct folio_reply r;
    int turns = 0;

    if (a == NULL)
        return -1;
    /*
     * Two ticks: the heartbeat is written before the tick refreshes the
     * figures, so the first tick's figures are surely there at the second.
     */
    do {
        asked = e2e_now_ms();
        if (e2e_stats(a, &r) != 0)
            break;
        if (beats_after(&r, asked, after)) {
            after = e2e_now_ms();
            if (++turns == 2)
                break;
        }
    } while (e2e_wait_more(deadline));
    folio_client_close(a);
    return turns == 2 ? 0 : -1;
}

int
e2e_log_count(const struct e2e_server *s, const char *needle)
{
    char line[4096];
    FILE *f = fopen(s->log, "r");
    int n = 0;

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

int
e2e_pid_in(pid_t pid, const pid_t *set, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (set[i] == pid)
            return 1;
    return 0;
}

int
e2e_holds_inode(pid_t pid, unsigned long ino)
{
    char dir[64], path[330], link[128], want[64];
    struct dirent *e;
    ssize_t n;
    DIR *d;
    int found = 0;

    snprintf(dir, sizeof(dir), "/proc/%ld/fd", (long)pid);
    snprintf(want, sizeof(want), "socket:[%lu]", ino);
    if ((d = opendir(dir)) == NULL)
        return 0;
    while (!found && (e = readdir(d)) != NULL) {
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        n = readlink(path, link, sizeof(link) - 1);
        if (n > 0) {
            link[n] = '\0';
            found = strcmp(link, want) == 0;
        }
    }
    closedir(d);
    return found;
}

int
e2e_ping(struct folio_client *c)
{
    struct folio_reply r;
    const char *s;
    uint32_t len;

    if (folio_client_call0(c, "server.ping", &r) != 1 || r.code != 0)
        return -1;
    if (folio_mp_read_str(&r.result, &s, &len) != 0 || len != 4 ||
        memcmp(s, "pong", 4) != 0)
        return -1;
    return 0;
}

int
e2e_stats(struct folio_client *admin, struct folio_reply *r)
{
    int rc = folio_client_call0(admin, "server.stats", r);

    if (rc != 1) {
        fprintf(stderr, "server.stats failed: rc %d (no reply)\n", rc);
        return -1;
    }
    if (r->code != 0) {
        fprintf(stderr, "server.stats failed: code %d %.*s\n", r->code,
                (int)r->message_len, r->message != NULL ? r->message : "");
        return -1;
    }
    return 0;
}

double
e2e_stat_num(const struct folio_reply *r, ...)
{
    struct folio_mp_cur c = r->result;
    const char *key, *k;
    uint32_t n, i, klen;
    va_list ap;
    int64_t iv;
    double d;
    int found;

    va_start(ap, r);
    while ((key = va_arg(ap, const char *)) != NULL) {
        found = 0;
        if (key[0] == '#') {
            uint32_t want = (uint32_t)atoi(key + 1);

            if (folio_mp_read_array(&c, &n) != 0 || want >= n)
                break;
            for (i = 0; i < want; i++)
                folio_mp_skip(&c);
            found = 1;
        } else {
            if (folio_mp_read_map(&c, &n) != 0)
                break;
            for (i = 0; i < n && !found; i++) {
                if (folio_mp_read_str(&c, &k, &klen) != 0)
                    break;
                if (folio_mp_str_eq(k, klen, key))
                    found = 1;
                else
                    folio_mp_skip(&c);
            }
        }
        if (!found)
            break;
    }
    va_end(ap);
    if (key != NULL)
        return NAN;
    if (folio_mp_read_int(&c, &iv) == 0)
        return (double)iv;
    if (folio_mp_read_float(&c, &d) == 0)
        return d;
    return NAN;
}

pid_t
e2e_spawn(const char *const argv[], const char *log)
{
    pid_t pid = fork();
    int fd;

    if (pid != 0)
        return pid;
    /* Die with the test, even if it is killed. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    fd = log != NULL ? open(log, O_WRONLY | O_CREAT | O_APPEND, 0644)
                     : open("/dev/null", O_WRONLY);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
    execvp(argv[0], (char *const *)argv);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

const char *
e2e_which(const char *prog)
{
    static char found[1024];
    const char *path = getenv("PATH");
    size_t n;

    if (strchr(prog, '/') != NULL)
        return access(prog, X_OK) == 0 ? prog : NULL;
    while (path != NULL && *path != '\0') {
        n = strcspn(path, ":");
        snprintf(found, sizeof(found), "%.*s/%s", (int)n, path, prog);
        if (n > 0 && access(found, X_OK) == 0)
            return found;
        path += n + (path[n] == ':');
    }
    return NULL;
}

/* ---- components ---------------------------------------------------- */

static int
under_ci(void)
{
    const char *ci = getenv("CI");

    return ci != NULL && *ci != '\0';
}

/* A line of the table that ends make check (tests/components.sh). */
static void
record(const char *what, const char *state, const char *detail)
{
    printf("e2e-component: %s %s %s %s\n", program_invocation_short_name,
           what, state, detail);
    fflush(stdout);
}

const char *
e2e_require_at(const char *what, const char *path, const char *how)
{
    const char *suite = program_invocation_short_name;

    if (path != NULL) {
        record(what, "used", path);
        return path;
    }
    if (under_ci()) {
        printf("FAIL %s: %s is missing (%s): CI is set, and CI installs "
               "every component (dist/install-deps.sh), the corpus too\n",
               suite, what, how);
        record(what, "MISSING", "(failed: CI is set)");
        exit(EXIT_FAILURE);
    }
    printf("SKIP %s: %s is missing (%s)\n", suite, what, how);
    record(what, "missing", "(skipped)");
    exit(77);
}

const char *
e2e_require(const char *prog, const char *package)
{
    static char path[1024];
    const char *p = e2e_which(prog);
    char how[256];

    snprintf(how, sizeof(how), "no %s on PATH: apt-get install %s", prog,
             package);
    if (p != NULL)
        snprintf(path, sizeof(path), "%s", p);
    return e2e_require_at(prog, p != NULL ? path : NULL, how);
}

const char *
e2e_require_corpus(void)
{
    const char *p = getenv("FOLIO_TEST_CORPUS");
    char how[1024];

    snprintf(how, sizeof(how),
             "no directory %s: configure --with-corpus=DIR, or set "
             "FOLIO_TEST_CORPUS",
             p != NULL && *p != '\0' ? p
             : *FOLIO_TEST_CORPUS_DEFAULT != '\0'
                 ? FOLIO_TEST_CORPUS_DEFAULT
                 : "(none configured)");
    return e2e_require_at("corpus", e2e_corpus(), how);
}

int
e2e_want(int have, const char *what, const char *why)
{
    if (have) {
        record(what, "used", "(in a case)");
        return 1;
    }
    if (under_ci()) {
        record(what, "MISSING", "(a case failed: CI is set)");
        ck_abort_msg("%s: %s (CI is set: a missing component fails)", what,
                     why);
    }
    printf("SKIP %s, one case: %s: %s\n", program_invocation_short_name, what,
           why);
    record(what, "missing", "(a case skipped)");
    return 0;
}

int
e2e_free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

void
e2e_start_metrics(struct e2e_server *s, const char *conf)
{
    char text[2048];

    snprintf(text, sizeof(text), "metrics_listen = 127.0.0.1:0\n%s",
             conf != NULL ? conf : "");
    ck_assert_msg(e2e_start(s, text, NULL) == 0, "foliod did not start");
    ck_assert_msg(s->metrics[0] != '\0', "no metrics line in the ready file");
}
