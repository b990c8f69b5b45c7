/*
 * e2e_hosts.c - several foliod hosts, as foliod(8) runs them: three
 * foliod (three data directories and ports on this machine) with
 * comments_backend = postgres on one real PostgreSQL, behind a real
 * HAProxy configured by dist/haproxy.cfg (its backend and checks as
 * shipped; only the addresses, the log, the stats socket and maxconn
 * rewritten).
 *
 *   - posts through HAProxy, lists on each host directly: every
 *     acknowledged comment is visible on every host within the
 *     invalidation bound, and the delays are measured and printed;
 *   - kill -9 of one host under load: HAProxy marks it down within its
 *     checks' time, requests through HAProxy keep succeeding but for those
 *     in flight on the victim, every acknowledged comment is there once;
 *   - PostgreSQL stopped (pg_ctl stop -m immediate) mid-posting, then
 *     started again: error 14 meanwhile, quickly, with the cached pages
 *     still served; posting resumes; every acknowledged comment is stored
 *     exactly once.
 *
 * PostgreSQL, HAProxy and curl are required (e2e_require): without one,
 * the suite is skipped, or fails when CI is set.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/client.h"
#include "src/err.h"
#include "tests/check_run.h"
#include "tests/comments_util.h"
#include "tests/e2e_util.h"
#include "tests/pg_util.h"

#define NHOSTS 3
#define VISIBLE_MS 3000 /* a post seen everywhere within (bound) */
/* dist/haproxy.cfg: inter 1s, fall 2, timeout check 1s; and a margin */
#define DOWN_MS 6000

static struct pg_cluster pgc;
static struct e2e_server hosts[NHOSTS];
static char db[64];

struct haproxy {
    char dir[256];
    char cfg[320];
    char sock[320];
    char log[320];
    char addr[64];
    pid_t pid;
};

static struct haproxy hap;

/* ---- HAProxy ------------------------------------------------------- */

static const char *
haproxy_bin(void)
{
    static const char *const dirs[] = {"/usr/sbin", "/usr/local/sbin",
                                       "/usr/bin", "/usr/local/bin"};
    static char found[600];
    const char *path = getenv("PATH");
    char p[600];
    size_t i, n;

    if (found[0] != '\0')
        return found;
    while (path != NULL && *path != '\0') {
        n = strcspn(path, ":");
        snprintf(p, sizeof(p), "%.*s/haproxy", (int)n, path);
        if (n > 0 && access(p, X_OK) == 0) {
            snprintf(found, sizeof(found), "%s", p);
            return found;
        }
        path += n + (path[n] == ':');
    }
    for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(p, sizeof(p), "%s/haproxy", dirs[i]);
        if (access(p, X_OK) == 0) {
            snprintf(found, sizeof(found), "%s", p);
            return found;
        }
    }
    return NULL;
}

/*
 * dist/haproxy.cfg for this machine: its addresses, a stats socket in our
 * directory, no chroot or user; everything else as shipped (its log goes
 * to standard error, which hap_start sends to hap.log; no maxconn, so
 * HAProxy sizes it from the test's descriptor limit).
 */
static int
write_haproxy_cfg(int port)
{
    char line[1024], word[64], *p;
    FILE *in, *out;
    int i, servers = 0;

    if ((in = fopen(FOLIO_SRCDIR "/dist/haproxy.cfg", "r")) == NULL) {
        perror(FOLIO_SRCDIR "/dist/haproxy.cfg");
        return -1;
    }
    if ((out = fopen(hap.cfg, "w")) == NULL) {
        fclose(in);
        return -1;
    }
    while (fgets(line, sizeof(line), in) != NULL) {
        for (p = line; *p == ' ' || *p == '\t'; p++)
            ;
        word[0] = '\0';
        sscanf(p, "%63s", word);
        if (strcmp(word, "chroot") == 0 || strcmp(word, "user") == 0 ||
            strcmp(word, "group") == 0 || strcmp(word, "daemon") == 0)
            continue;
        if (strcmp(word, "stats") == 0 && strstr(p, "socket") != NULL) {
            fprintf(out, "    stats socket %s mode 600 level admin\n",
                    hap.sock);
            continue;
        }
        if (strcmp(word, "bind") == 0) {
            fprintf(out, "    bind 127.0.0.1:%d\n", port);
            continue;
        }
        if (strcmp(word, "server") == 0) {
            char name[64], addr[128], rest[512] = "";

            if (servers++ > 0)
                continue;
            /* the first server line's options, on each of our hosts */
            if (sscanf(p, "server %63s %127s %511[^\n]", name, addr, rest) < 2)
                rest[0] = '\0';
            for (i = 0; i < NHOSTS; i++)
                fprintf(out, "    server host%d %s %s\n", i + 1, hosts[i].addr,
                        rest);
            continue;
        }
        fputs(line, out);
    }
    fclose(in);
    return fclose(out) == 0 && servers > 0 ? 0 : -1;
}

/* `show stat` on the stats socket: host's status ("UP", "DOWN"...). */
static int
hap_status(int host, char *status, size_t len)
{
    struct sockaddr_un a;
    char buf[65536], want[32], *line, *save, *f, *fs;
    int fd, col = -1, i;
    size_t n = 0;
    ssize_t r;

    status[0] = '\0';
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    if (strlen(hap.sock) >= sizeof(a.sun_path))
        return -1;
    memcpy(a.sun_path, hap.sock, strlen(hap.sock) + 1);
    if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        write(fd, "show stat\n", 10) != 10) {
        close(fd);
        return -1;
    }
    while (n < sizeof(buf) - 1 &&
           (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    buf[n] = '\0';
    snprintf(want, sizeof(want), "host%d", host + 1);
    for (line = strtok_r(buf, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char *fsave;

        if (line[0] == '#') {
            /* the header names the columns */
            for (i = 0, f = strtok_r(line + 2, ",", &fsave); f != NULL;
                 f = strtok_r(NULL, ",", &fsave), i++)
                if (strcmp(f, "status") == 0)
                    col = i;
            continue;
        }
        if (col < 0 || strncmp(line, "foliod,", 7) != 0 ||
            strncmp(line + 7, want, strlen(want)) != 0 ||
            line[7 + strlen(want)] != ',')
            continue;
        /* strtok would merge empty fields: walk the commas */
        for (i = 0, fs = line; i < col && fs != NULL; i++)
            fs = (fs = strchr(fs, ',')) != NULL ? fs + 1 : NULL;
        if (fs == NULL)
            return -1;
        snprintf(status, len, "%.*s", (int)strcspn(fs, ","), fs);
        return 0;
    }
    return -1;
}

static void
hap_print_log(void)
{
    char line[1024];
    FILE *f;

    if ((f = fopen(hap.log, "r")) == NULL)
        return;
    fprintf(stderr, "---- %s ----\n", hap.log);
    while (fgets(line, sizeof(line), f) != NULL)
        fputs(line, stderr);
    fclose(f);
    if ((f = fopen(hap.cfg, "r")) == NULL)
        return;
    fprintf(stderr, "---- %s ----\n", hap.cfg);
    while (fgets(line, sizeof(line), f) != NULL)
        fputs(line, stderr);
    fclose(f);
}

static void
hap_kill(void)
{
    if (hap.pid > 0) {
        kill(hap.pid, SIGKILL);
        waitpid(hap.pid, NULL, 0);
        hap.pid = 0;
    }
    if (hap.dir[0] != '\0' && getenv("E2E_KEEP") == NULL)
        e2e_rm_rf(hap.dir);
    hap.dir[0] = '\0';
}

/* Start HAProxy before the hosts' checks pass: wait until all are UP. */
static void
hap_start(void)
{
    static int registered;
    char status[64];
    uint64_t deadline;
    int port = e2e_free_port(), i, up;

    memset(&hap, 0, sizeof(hap));
    if (!registered) {
        atexit(hap_kill);
        registered = 1;
    }
    snprintf(hap.dir, sizeof(hap.dir), "/tmp/folio-hap.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(hap.dir));
    snprintf(hap.cfg, sizeof(hap.cfg), "%s/haproxy.cfg", hap.dir);
    snprintf(hap.sock, sizeof(hap.sock), "%s/admin.sock", hap.dir);
    snprintf(hap.log, sizeof(hap.log), "%s/haproxy.log", hap.dir);
    snprintf(hap.addr, sizeof(hap.addr), "127.0.0.1:%d", port);
    ck_assert_int_gt(port, 0);
    ck_assert_int_eq(write_haproxy_cfg(port), 0);
    {
        const char *const argv[] = {haproxy_bin(), "-db", "-f", hap.cfg, NULL};

        hap.pid = e2e_spawn(argv, hap.log);
    }
    ck_assert_int_ge(hap.pid, 0);
    deadline = e2e_deadline(15000);
    do {
        for (i = 0, up = 0; i < NHOSTS; i++)
            up += hap_status(i, status, sizeof(status)) == 0 &&
                  strcmp(status, "UP") == 0;
        if (waitpid(hap.pid, NULL, WNOHANG) == hap.pid) {
            hap.pid = 0;
            hap_print_log();
            ck_abort_msg("haproxy exited at start");
        }
    } while (up < NHOSTS && e2e_wait_more(deadline));
    if (up < NHOSTS)
        hap_print_log();
    ck_assert_msg(up == NHOSTS, "HAProxy sees %d of %d hosts up", up, NHOSTS);
}

static struct folio_client *
connect_hap(void)
{
    struct folio_client *c = NULL;
    char err[256];

    if (folio_client_open(hap.addr, 10000, &c, err, sizeof(err)) != 0)
        return NULL;
    return c;
}

/* ---- the hosts ----------------------------------------------------- */

/* Three hosts on a new database of cluster pc. */
static void
start_hosts(struct pg_cluster *pc, const char *extra)
{
    char conf[2048], dsn[512];
    int i;

    ck_assert_int_eq(pg_new_db(pc, db, sizeof(db)), 0);
    pg_dsn(pc, db, dsn, sizeof(dsn));
    snprintf(conf, sizeof(conf),
             "comments_backend = postgres\ncomments_dsn = \"%s\"\n"
             "workers = 2\nfreight_dir = off\ncatalog = off\n"
             "metrics_listen = 127.0.0.1:0\n%s",
             dsn, extra != NULL ? extra : "");
    for (i = 0; i < NHOSTS; i++)
        ck_assert_msg(e2e_start(&hosts[i], conf, NULL) == 0,
                      "host %d did not start", i + 1);
}

static void
stop_hosts(void)
{
    int i;

    for (i = 0; i < NHOSTS; i++)
        if (hosts[i].pid > 0 || hosts[i].dir[0] != '\0')
            ck_assert_int_eq(e2e_stop(&hosts[i]), 0);
}

/*
 * kill -9 a host: its master and every worker at once, as a machine
 * dying (stopped first, so that none of them serves on while the others
 * die).  Returns when every one of them is gone.
 */
static void
kill_host(int h)
{
    pid_t w[16];
    int n = e2e_workers(&hosts[h], w, 16), i, st;
    uint64_t deadline;

    ck_assert_int_eq(kill(hosts[h].pid, SIGSTOP), 0);
    for (i = 0; i < n; i++)
        kill(w[i], SIGSTOP);
    ck_assert_int_eq(kill(hosts[h].pid, SIGKILL), 0);
    for (i = 0; i < n; i++)
        kill(w[i], SIGKILL);
    ck_assert_int_eq(waitpid(hosts[h].pid, &st, 0), hosts[h].pid);
    hosts[h].pid = -1;
    deadline = e2e_deadline(5000);
    for (i = 0; i < n; i++)
        while (!e2e_pid_gone(w[i]))
            ck_assert_msg(e2e_wait_more(deadline), "worker %ld lives on",
                          (long)w[i]);
}

static double
host_stat(int h, const char *method)
{
    struct folio_client *a = e2e_connect_admin(&hosts[h]);
    struct folio_reply r;
    double v;

    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    v = e2e_stat_num(&r, "totals", "methods", method, "calls", NULL);
    folio_client_close(a);
    return v;
}

/* Whether the list of `path` on c holds comment `id`; -1 on error. */
static int
lists(struct folio_client *c, const char *path, uint64_t id)
{
    struct e2e_comment *v;
    int n, i, found = 0;

    if ((n = e2e_comment_list(c, path, &v)) < 0)
        return -1;
    for (i = 0; i < n; i++)
        found |= v[i].id == id;
    free(v);
    return found;
}

/*
 * List `path` on c (a connection to host h) until it has n comments and
 * the list came from the cache (the host's hit counter moved): a list
 * answered while an invalidation of the page was on its way is not cached.
 */
static void
cache_page(int h, struct folio_client *c, const char *path, int n)
{
    struct folio_client *a = e2e_connect_admin(&hosts[h]);
    uint64_t deadline = e2e_now_ms() + VISIBLE_MS;
    struct e2e_comment *v;
    struct folio_reply r;
    double hits = -1, now;
    int got;

    ck_assert_ptr_nonnull(a);
    for (;;) {
        got = e2e_comment_list(c, path, &v);
        free(v);
        ck_assert_int_eq(e2e_stats(a, &r), 0);
        now = e2e_stat_num(&r, "totals", "comments_cache_hits", NULL);
        if (got == n && hits >= 0 && now > hits)
            break;
        hits = got == n ? now : -1;
        ck_assert_msg(e2e_now_ms() < deadline, "%s is not cached on host %d",
                      path, h + 1);
    }
    folio_client_close(a);
}

/* How many lines of host h's log hold `needle`. */
static int
log_count(int h, const char *needle)
{
    char line[4096];
    FILE *f = fopen(hosts[h].log, "r");
    int n = 0;

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/*
 * The ids stored for `path` (its normalized form, "/load/") in the
 * database, ascending, into *ids (malloc'd): how many.  No body is stored
 * twice (the posts' bodies are unique): asserted.
 */
static int
stored_ids(struct pg_cluster *pc, const char *path, uint64_t **ids)
{
    static char out[1 << 20];
    char sql[512], *p, *end;
    int n = 0, cap = 256;

    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM (SELECT body FROM folio_comments WHERE "
             "path = '%s' GROUP BY body HAVING count(*) > 1) AS twice",
             path);
    ck_assert_int_eq(pg_query(pc, db, sql, out, sizeof(out)), 1);
    ck_assert_msg(strcmp(out, "0") == 0, "%s bodies stored twice on %s", out,
                  path);
    snprintf(sql, sizeof(sql),
             "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') "
             "FROM folio_comments WHERE path = '%s'",
             path);
    ck_assert_int_eq(pg_query(pc, db, sql, out, sizeof(out)), 1);
    ck_assert_ptr_nonnull(*ids = malloc((size_t)cap * sizeof(**ids)));
    for (p = out; *p != '\0'; p = *end == ',' ? end + 1 : end) {
        if (n == cap)
            ck_assert_ptr_nonnull(
                *ids = realloc(*ids, (size_t)(cap *= 2) * sizeof(**ids)));
        (*ids)[n++] = strtoull(p, &end, 10);
        ck_assert_msg(end != p, "ids: %.40s", p);
    }
    return n;
}

/* ---- posts everywhere ---------------------------------------------- */

#define NPOSTS 25
#define CONNS_PER_HOST 4 /* so that each worker of a host gets some */

START_TEST(test_posts_seen_everywhere)
{
    struct folio_client *lc[NHOSTS * CONNS_PER_HOST], *c;
    struct folio_reply r;
    struct folio_mp_cur cur;
    struct e2e_comment d;
    uint64_t delays[NPOSTS * NHOSTS * CONNS_PER_HOST], t_ack, deadline;
    int seen[NHOSTS * CONNS_PER_HOST];
    char body[64];
    int i, k, left, nd = 0, hosts_posted = 0;
    const int nl = NHOSTS * CONNS_PER_HOST;

    start_hosts(&pgc, NULL);
    hap_start();
    for (i = 0; i < nl; i++) {
        ck_assert_ptr_nonnull(lc[i] = e2e_connect(&hosts[i % NHOSTS]));
        /* cache the page on every worker: the post must invalidate it */
        ck_assert_int_eq(lists(lc[i], "/shared", 0), 0);
        ck_assert_int_eq(lists(lc[i], "/shared", 0), 0);
    }
    for (k = 0; k < NPOSTS; k++) {
        /* a new connection each time: HAProxy spreads them */
        ck_assert_ptr_nonnull(c = connect_hap());
        snprintf(body, sizeof(body), "post %d through HAProxy", k);
        ck_assert_int_eq(
            e2e_comment_post(c, "/shared", "hap", body, strlen(body), &r), 0);
        ck_assert_msg(r.code == 0, "post %d: error %d", k, r.code);
        t_ack = e2e_now_ms();
        cur = r.result;
        ck_assert_int_eq(e2e_comment_decode(&cur, &d), 0);
        folio_client_close(c);
        memset(seen, 0, sizeof(seen));
        deadline = t_ack + VISIBLE_MS;
        for (left = nl; left > 0;) {
            for (i = 0; i < nl; i++) {
                if (seen[i])
                    continue;
                if (lists(lc[i], "/shared", d.id) == 1) {
                    seen[i] = 1;
                    delays[nd++] = e2e_now_ms() - t_ack;
                    left--;
                }
            }
            ck_assert_msg(left == 0 || e2e_now_ms() < deadline,
                          "comment %llu not listed on %d of %d connections "
                          "%d ms after its post was acknowledged",
                          (unsigned long long)d.id, left, nl, VISIBLE_MS);
        }
    }
    qsort(delays, (size_t)nd, sizeof(delays[0]), cmp_u64);
    printf("e2e_hosts: invalidation delay, post acknowledged to listed on "
           "every host: p50 %llu ms, p99 %llu ms, max %llu ms (%d lists)\n",
           (unsigned long long)delays[nd / 2],
           (unsigned long long)delays[nd * 99 / 100],
           (unsigned long long)delays[nd - 1], nd);
    /* /metrics says so too, to curl: hits, and both workers connected */
    {
        char cmd[512];

        snprintf(cmd, sizeof(cmd),
                 "curl -sf http://%s/metrics | awk "
                 "'/^folio_comments_cache_hits_total / {h = $2} "
                 "/^folio_comments_db_up[{]/ {u += $2} "
                 "END {exit !(h > 0 && u == 2)}'",
                 hosts[1].metrics);
        ck_assert_msg(system(cmd) == 0, "%s", cmd);
    }
    /* the posts went to several hosts */
    for (i = 0; i < NHOSTS; i++)
        hosts_posted += host_stat(i, "comments.post") > 0;
    ck_assert_int_ge(hosts_posted, 2);
    /* and every host lists the same page */
    {
        struct e2e_comment *v0, *v;
        int n0, n, j;

        n0 = e2e_comment_list(lc[0], "/shared", &v0);
        ck_assert_int_eq(n0, NPOSTS);
        for (i = 1; i < NHOSTS; i++) {
            n = e2e_comment_list(lc[i], "/shared", &v);
            ck_assert_int_eq(n, n0);
            for (j = 0; j < n; j++)
                ck_assert_uint_eq(v[j].id, v0[j].id);
            free(v);
            /* lc[0]'s spans were overwritten: list it again */
            free(v0);
            n0 = e2e_comment_list(lc[0], "/shared", &v0);
        }
        free(v0);
    }
    for (i = 0; i < nl; i++)
        folio_client_close(lc[i]);
    stop_hosts();
    hap_kill();
}
END_TEST

/* ---- a host dies under load ---------------------------------------- */

#define NCLIENTS 12

struct loader {
    int index;
    atomic_int *stop;
    atomic_int *after_down; /* the victim is marked down */
    atomic_int ok;
    int failed;              /* requests with no answer */
    int failed_after_down;
    int errors;     /* error replies (none expected) */
    uint64_t *acks; /* ids of acknowledged posts */
    int nacks, cap;
};

static void *
loader_run(void *arg)
{
    struct loader *l = arg;
    struct folio_client *c = connect_hap();
    struct folio_reply r;
    struct folio_mp_cur cur;
    struct e2e_comment d;
    char body[64];
    int i, rc;

    for (i = 0; !atomic_load(l->stop); i++) {
        if (c == NULL && (c = connect_hap()) == NULL) {
            l->failed++;
            if (atomic_load(l->after_down))
                l->failed_after_down++;
            e2e_pace_ms(10); /* a client's retry, a moment later */
            continue;
        }
        if (i % 2 == 0) {
            snprintf(body, sizeof(body), "load %d of %d", i, l->index);
            rc = e2e_comment_post(c, "/load", "loader", body, strlen(body), &r);
        } else {
            rc = folio_client_call_str(c, "comments.list", "/load", &r) == 1
                     ? 0
                     : -1;
        }
        if (rc != 0) {
            /* in flight on the host that died: connect again */
            l->failed++;
            if (atomic_load(l->after_down))
                l->failed_after_down++;
            folio_client_close(c);
            c = NULL;
            continue;
        }
        if (r.code != 0) {
            l->errors++;
            continue;
        }
        if (i % 2 == 0) {
            cur = r.result;
            if (e2e_comment_decode(&cur, &d) == 0) {
                if (l->nacks == l->cap) {
                    l->cap = l->cap ? l->cap * 2 : 256;
                    l->acks = realloc(l->acks, (size_t)l->cap * 8);
                }
                l->acks[l->nacks++] = d.id;
            }
        }
        atomic_fetch_add(&l->ok, 1);
    }
    folio_client_close(c);
    return NULL;
}

START_TEST(test_host_killed)
{
    struct loader ls[NCLIENTS];
    pthread_t th[NCLIENTS];
    atomic_int stop = 0, after_down = 0;
    char status[64];
    uint64_t t_kill, t_gone, t_down = 0, deadline, *all;
    struct folio_client *c;
    struct e2e_comment *v;
    int i, j, k, ok, total, failed = 0, n;

    start_hosts(&pgc, NULL);
    hap_start();
    memset(ls, 0, sizeof(ls));
    for (i = 0; i < NCLIENTS; i++) {
        ls[i].index = i;
        ls[i].stop = &stop;
        ls[i].after_down = &after_down;
        ck_assert_int_eq(pthread_create(&th[i], NULL, loader_run, &ls[i]), 0);
    }
    deadline = e2e_deadline(20000);
    do {
        for (i = 0, ok = 0; i < NCLIENTS; i++)
            ok += atomic_load(&ls[i].ok);
    } while (ok < 600 && e2e_wait_more(deadline));
    ck_assert_int_ge(ok, 600);
    /* every host serves some of the load */
    for (i = 0; i < NHOSTS; i++)
        ck_assert_double_gt(host_stat(i, "comments.list"), 0);

    t_kill = e2e_now_ms();
    kill_host(1);
    t_gone = e2e_now_ms();
    deadline = t_kill + (uint64_t)e2e_bound_ms(DOWN_MS, 2 * DOWN_MS);
    do {
        if (hap_status(1, status, sizeof(status)) == 0 &&
            strncmp(status, "DOWN", 4) == 0) {
            t_down = e2e_now_ms();
            break;
        }
    } while (e2e_wait_more(deadline));
    ck_assert_msg(t_down != 0,
                  "HAProxy has not marked host2 down %d ms "
                  "after it died (status %s)",
                  e2e_bound_ms(DOWN_MS, 2 * DOWN_MS), status);
    printf("e2e_hosts: host2 killed (gone in %llu ms); HAProxy marked it "
           "down after %llu ms\n",
           (unsigned long long)(t_gone - t_kill),
           (unsigned long long)(t_down - t_kill));
    atomic_store(&after_down, 1);
    /* the load goes on, on the two hosts left */
    for (i = 0, ok = 0; i < NCLIENTS; i++)
        ok += atomic_load(&ls[i].ok);
    k = ok;
    deadline = e2e_deadline(20000);
    do {
        for (i = 0, ok = 0; i < NCLIENTS; i++)
            ok += atomic_load(&ls[i].ok);
    } while (ok < k + 300 && e2e_wait_more(deadline));
    atomic_store(&stop, 1);
    for (i = 0; i < NCLIENTS; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_ge(ok, k + 300);
    for (i = 0, total = 0; i < NCLIENTS; i++) {
        ck_assert_msg(ls[i].errors == 0, "client %d: %d error replies", i,
                      ls[i].errors);
        ck_assert_msg(ls[i].failed_after_down == 0,
                      "client %d: %d requests failed after host2 was marked "
                      "down",
                      i, ls[i].failed_after_down);
        /*
         * Only requests on a connection to the victim failed (the one in
         * flight, and one sent before HAProxy saw the reset: after the
         * victim was gone by a millisecond on a loaded machine, so no
         * clock is compared); none after it was marked down, above.
         */
        ck_assert_int_le(ls[i].failed, 2);
        failed += ls[i].failed;
        total += ls[i].nacks;
    }
    printf("e2e_hosts: %d requests lost with host2 (%d clients)\n", failed,
           NCLIENTS);

    /*
     * The truth is PostgreSQL's: every acknowledged post stored, once
     * (each body is unique), and only those and the few in flight.
     */
    n = stored_ids(&pgc, "/load/", &all);
    ck_assert_int_ge(n, total);
    ck_assert_int_le(n, total + NCLIENTS); /* + unacknowledged in flight */
    for (i = 0; i < NCLIENTS; i++)
        for (j = 0; j < ls[i].nacks; j++)
            ck_assert_msg(bsearch(&ls[i].acks[j], all, (size_t)n, sizeof(*all),
                                  cmp_u64) != NULL,
                          "acknowledged comment %llu is not stored",
                          (unsigned long long)ls[i].acks[j]);
    /*
     * Host 1's cached list comes to show exactly that, within the
     * notification's delay (folio-rpc(7): milliseconds; VISIBLE_MS here).
     */
    ck_assert_ptr_nonnull(c = e2e_connect(&hosts[0]));
    deadline = e2e_deadline(e2e_bound_ms(VISIBLE_MS, 2 * VISIBLE_MS));
    for (;;) {
        int same;

        k = e2e_comment_list(c, "/load", &v);
        for (j = 0, same = k == n; same && j < n; j++)
            same = v[j].id == all[j];
        free(v);
        if (same)
            break;
        ck_assert_msg(e2e_wait_more(deadline),
                      "host 1 lists %d comments of /load, PostgreSQL holds "
                      "%d: not the same ids %d ms after the load stopped",
                      k, n, e2e_bound_ms(VISIBLE_MS, 2 * VISIBLE_MS));
    }
    free(all);
    folio_client_close(c);
    for (i = 0; i < NCLIENTS; i++)
        free(ls[i].acks);
    stop_hosts();
    hap_kill();
}
END_TEST

/* ---- PostgreSQL stops ---------------------------------------------- */

#define NPOSTERS 6
#define TIMEOUT_MS 1000 /* comments_timeout of the hosts */

struct poster {
    int index;
    atomic_int *stop;
    atomic_int acked, unavailable;
    atomic_uint_fast64_t last_ack_ms;
    int other;       /* anything but an ack or a 14 */
    uint64_t max_ms; /* the slowest answer */
    char why[256];
    char (*bodies)[48]; /* acknowledged */
    int n, cap;
};

static void *
poster_run(void *arg)
{
    struct poster *p = arg;
    struct folio_client *c = connect_hap();
    struct folio_reply r;
    char body[48];
    uint64_t t0, dt;
    int i;

    for (i = 0; c != NULL && !atomic_load(p->stop); i++) {
        snprintf(body, sizeof(body), "outage post %d of %d", i, p->index);
        t0 = e2e_now_ms();
        if (e2e_comment_post(c, "/outage", "poster", body, strlen(body), &r) !=
            0) {
            p->other++;
            snprintf(p->why, sizeof(p->why), "post %d: no answer", i);
            break;
        }
        dt = e2e_now_ms() - t0;
        if (dt > p->max_ms)
            p->max_ms = dt;
        if (r.code == FOLIO_ST_UNAVAILABLE && r.message != NULL &&
            memmem(r.message, r.message_len, "database", 8) != NULL) {
            atomic_fetch_add(&p->unavailable, 1);
            e2e_pace_ms(5); /* a client's retry, a moment later */
            continue;
        }
        if (r.code != 0) {
            p->other++;
            snprintf(p->why, sizeof(p->why), "post %d: error %d %.*s", i,
                     r.code, r.message != NULL ? (int)r.message_len : 0,
                     r.message != NULL ? r.message : "");
            continue;
        }
        if (p->n == p->cap) {
            p->cap = p->cap ? p->cap * 2 : 256;
            p->bodies = realloc(p->bodies, (size_t)p->cap * sizeof(*p->bodies));
        }
        memcpy(p->bodies[p->n++], body, sizeof(body));
        atomic_store(&p->last_ack_ms, e2e_now_ms());
        atomic_fetch_add(&p->acked, 1);
    }
    folio_client_close(c);
    return NULL;
}

static int
sum_posters(struct poster *ps, int what)
{
    int i, n = 0;

    for (i = 0; i < NPOSTERS; i++)
        n += what == 0 ? atomic_load(&ps[i].acked)
                       : atomic_load(&ps[i].unavailable);
    return n;
}

/*
 * On a cluster of its own, started by this test's process: a cluster
 * the suite's process started could not be restarted from here.
 */
START_TEST(test_database_stops)
{
    static struct pg_cluster own;
    struct poster ps[NPOSTERS];
    pthread_t th[NPOSTERS];
    atomic_int stop = 0;
    struct folio_client *lc[NHOSTS], *c;
    struct folio_reply r;
    struct e2e_comment *v;
    char conf[64], out[64], *q;
    uint64_t deadline, t_restart, t0;
    size_t len, sqlcap;
    int i, j, n, acked_before, total;

    snprintf(conf, sizeof(conf), "comments_timeout = %dms\n", TIMEOUT_MS);
    ck_assert_int_eq(pg_start(&own, NULL), 0);
    start_hosts(&own, conf);
    hap_start();
    /* a page every host has cached */
    ck_assert_ptr_nonnull(c = e2e_connect(&hosts[0]));
    for (i = 0; i < 3; i++) {
        ck_assert_int_eq(e2e_comment_post(c, "/cached", "a", "cached", 6, &r),
                         0);
        ck_assert_int_eq(r.code, 0);
    }
    folio_client_close(c);
    for (i = 0; i < NHOSTS; i++) {
        ck_assert_ptr_nonnull(lc[i] = e2e_connect(&hosts[i]));
        cache_page(i, lc[i], "/cached", 3);
    }

    memset(ps, 0, sizeof(ps));
    for (i = 0; i < NPOSTERS; i++) {
        ps[i].index = i;
        ps[i].stop = &stop;
        ck_assert_int_eq(pthread_create(&th[i], NULL, poster_run, &ps[i]), 0);
    }
    deadline = e2e_deadline(20000);
    while (sum_posters(ps, 0) < 100 && e2e_wait_more(deadline))
        ;
    ck_assert_int_ge(sum_posters(ps, 0), 100);

    /* PostgreSQL dies mid-posting */
    ck_assert_int_eq(pg_stop_immediate(&own), 0);
    deadline = e2e_deadline(10000);
    while (sum_posters(ps, 1) < 50 && e2e_wait_more(deadline))
        ;
    ck_assert_int_ge(sum_posters(ps, 1), 50);
    acked_before = sum_posters(ps, 0);
    /* cached pages are still served, an uncached one answers 14 soon */
    for (i = 0; i < NHOSTS; i++) {
        ck_assert_int_eq(e2e_comment_list(lc[i], "/cached", &v), 3);
        free(v);
        t0 = e2e_now_ms();
        ck_assert_int_eq(
            folio_client_call_str(lc[i], "comments.list", "/never", &r), 1);
        ck_assert_int_eq(r.code, FOLIO_ST_UNAVAILABLE);
        /* within comments_timeout, and a generous margin */
        ck_assert_uint_le(e2e_now_ms() - t0,
                          e2e_bound_ms(TIMEOUT_MS + 2000, TIMEOUT_MS + 5000));
    }
    ck_assert_int_le(sum_posters(ps, 0) - acked_before, 0);

    /* back: posting resumes on every poster */
    ck_assert_int_eq(pg_restart(&own), 0);
    t_restart = e2e_now_ms();
    deadline = t_restart + 15000;
    for (i = 0; i < NPOSTERS; i++) {
        while (atomic_load(&ps[i].last_ack_ms) <= t_restart &&
               e2e_wait_more(deadline))
            ;
        ck_assert_msg(atomic_load(&ps[i].last_ack_ms) > t_restart,
                      "poster %d: no post acknowledged 15 s after "
                      "PostgreSQL came back",
                      i);
    }
    printf("e2e_hosts: PostgreSQL down: %d posts answered 14; posting "
           "resumed within %llu ms of the restart\n",
           sum_posters(ps, 1), (unsigned long long)(e2e_now_ms() - t_restart));
    atomic_store(&stop, 1);
    for (i = 0; i < NPOSTERS; i++)
        pthread_join(th[i], NULL);
    for (i = 0, total = 0; i < NPOSTERS; i++) {
        ck_assert_msg(ps[i].other == 0, "poster %d: %s", i, ps[i].why);
        /* no answer took longer than the bound (no hang) */
        ck_assert_msg(ps[i].max_ms <= (uint64_t)e2e_bound_ms(TIMEOUT_MS + 4000,
                                                             TIMEOUT_MS + 8000),
                      "poster %d waited %llu ms for an answer", i,
                      (unsigned long long)ps[i].max_ms);
        total += ps[i].n;
    }

    /* every acknowledged comment exactly once, nothing stored twice */
    ck_assert_int_eq(pg_query(&own, db,
                              "SELECT body FROM folio_comments WHERE "
                              "path = '/outage/' GROUP BY body "
                              "HAVING count(*) > 1",
                              out, sizeof(out)),
                     0);
    /*
     * Each acknowledged body stored: one query over all of them (a query
     * per body, a connection each, took longer than the hosts' idle
     * timeout with 10,000 posts, and lc[] was closed under the test).
     */
    sqlcap = 256 + (size_t)total * 56;
    ck_assert_ptr_nonnull(q = malloc(sqlcap));
    len = (size_t)snprintf(q, sqlcap,
                           "SELECT count(*) FROM folio_comments WHERE "
                           "path = '/outage/' AND body = ANY(ARRAY[''");
    for (i = 0; i < NPOSTERS; i++) {
        for (j = 0; j < ps[i].n; j++)
            len += (size_t)snprintf(q + len, sqlcap - len, ",'%s'",
                                    ps[i].bodies[j]);
        free(ps[i].bodies);
    }
    snprintf(q + len, sqlcap - len, "])");
    ck_assert_int_eq(pg_query(&own, db, q, out, sizeof(out)), 1);
    free(q);
    ck_assert_msg(atoi(out) == total, "%s of %d acknowledged posts stored", out,
                  total);
    /*
     * And listed so on every host, once each worker is connected again
     * (a worker no poster used may still be in its backoff: 2 s at most).
     */
    for (i = 0; i < NHOSTS; i++) {
        folio_client_close(lc[i]); /* idle a while: a new one */
        ck_assert_ptr_nonnull(lc[i] = e2e_connect(&hosts[i]));
        deadline = e2e_deadline(10000);
        while ((n = e2e_comment_list(lc[i], "/outage", &v)) < 0 &&
               e2e_wait_more(deadline))
            ;
        free(v);
        ck_assert_msg(n >= total, "host %d lists %d of %d comments", i + 1, n,
                      total);
    }
    printf("e2e_hosts: %d acknowledged posts, each stored once, listed on "
           "every host\n",
           total);
    /*
     * Each worker said it: lost, then back (on its own backoff), and every
     * loss was followed by its reconnection.  A worker may lose a
     * connection made while the database was still coming up (seen once
     * on a loaded machine: 3 of each), so the count is not fixed at one.
     */
    for (i = 0; i < NHOSTS; i++) {
        int lost, back;

        deadline = e2e_deadline(10000);
        do {
            lost = log_count(i, "comments: lost PostgreSQL");
            back = log_count(i, "reconnected after");
        } while ((back < 2 || back < lost) && e2e_wait_more(deadline));
        ck_assert_int_ge(back, 2);
        ck_assert_int_eq(lost, back);
    }
    for (i = 0; i < NHOSTS; i++)
        folio_client_close(lc[i]);
    stop_hosts();
    hap_kill();
    pg_destroy(&own);
}
END_TEST

static Suite *
hosts_suite(void)
{
    Suite *s = suite_create("e2e_hosts");
    TCase *tc = tcase_create("hosts");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_posts_seen_everywhere);
    tcase_add_test(tc, test_host_killed);
    tcase_add_test(tc, test_database_stops);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    pg_require();
    e2e_require_at("haproxy", haproxy_bin(),
                   "no haproxy on PATH or in /usr/sbin: apt-get install "
                   "haproxy");
    e2e_require("curl", "curl");
    if (pg_start(&pgc, NULL) != 0)
        return EXIT_FAILURE;
    return folio_check_run(hosts_suite());
}
