/*
 * e2e_profile_pull.c - /debug/pprof/ as a continuous profiler pulls it
 * (foliod(8), PROFILING): a CPU profile and ten heap profiles under a
 * steady open-loop load, each worker's share of the cost reported (the
 * profiles' comments, the workers' longest loop turns) and the naming
 * shown to be the master's (the workers look no symbol up); a worker's
 * allocations right after its start, and after a reload, hold none of the
 * master's start-up; the longest loop turn covers the dearest request
 * (e2e_profile_tools has google-pprof read format=legacy); `folio profile
 * --every` pulls into a directory; the Parca and Pyroscope configurations
 * of dist/profiling/ pull paths that answer profiles.
 */
#include "config.h"

#include <sys/stat.h>

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/buf.h"
#include "src/client.h"
#include "src/http.h"
#include "src/mp.h"
#include "src/prof/pprof.h"
#include "tests/check_run.h"
#include "tests/cli_util.h"
#include "tests/e2e_bench_util.h"
#include "tests/e2e_util.h"

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define PARCA FOLIO_SRCDIR "/dist/profiling/parca.yaml"
#define PYROSCOPE FOLIO_SRCDIR "/dist/profiling/pyroscope.alloy"

static struct e2e_server srv;

static void
start(const char *conf)
{
    e2e_start_metrics(&srv, conf);
}

/* GET path from the metrics listener: the status; the body in *ans. */
static int
get(const char *path, struct folio_http_answer *ans)
{
    char err[512];

    ck_assert_msg(folio_http_get(srv.metrics, path, 120000, ans, err,
                                 sizeof(err)) == 0,
                  "GET %s: %s", path, err);
    return ans->status;
}

/* GET path as a profile, asserted to answer and decode. */
static void
fetch(const char *path, struct folio_pprof *p)
{
    struct folio_http_answer ans;
    char err[256];

    memset(&ans, 0, sizeof(ans));
    ck_assert_msg(get(path, &ans) == 200, "GET %s: %d %.*s", path, ans.status,
                  (int)folio_buf_pending(&ans.body), folio_buf_at(&ans.body, 0));
    ck_assert_msg(folio_pprof_decode(folio_buf_at(&ans.body, 0),
                                     folio_buf_pending(&ans.body), p, err,
                                     sizeof(err)) == 0,
                  "GET %s: %s", path, err);
    folio_http_answer_free(&ans);
}

/* The label `key` of sample i as text ("" if none). */
static const char *
label(const struct folio_pprof *p, uint32_t i, const char *key, char *buf,
      size_t len)
{
    const struct folio_pprof_sample *s = &p->samples[i];
    uint32_t k;

    for (k = 0; k < s->nlabel; k++) {
        const struct folio_pprof_label *l = &p->labels[s->label + k];

        if (strcmp(folio_pprof_text(p, l->key), key) != 0)
            continue;
        if (l->str != 0)
            return folio_pprof_text(p, l->str);
        snprintf(buf, len, "%lld", (long long)l->num);
        return buf;
    }
    return "";
}

/* The first comment that starts with `prefix`, or NULL. */
static const char *
comment(const struct folio_pprof *p, const char *prefix)
{
    uint32_t i;

    for (i = 0; i < p->ncomments; i++)
        if (strncmp(folio_pprof_text(p, p->comments[i]), prefix,
                    strlen(prefix)) == 0)
            return folio_pprof_text(p, p->comments[i]);
    return NULL;
}

/* Worker k's number `key` in server.stats; NAN if none. */
static double
worker_stat(int k, const char *key)
{
    char idx[16];

    snprintf(idx, sizeof(idx), "#%d", k);
    return e2e_server_stat(&srv, "workers", idx, key, NULL);
}

/* ------------------------------------------------------------------ */

struct cpu_fetch {
    struct folio_pprof p;
    pthread_t th;
};

static void *
cpu_thread(void *arg)
{
    struct cpu_fetch *c = arg;

    fetch("/debug/pprof/profile?seconds=3", &c->p);
    return NULL;
}

/*
 * What each worker's loop spent on the profile (its '#' comments), the
 * longest in *longest_ms; and the master's naming, which must be there
 * when anything was named.
 */
static void
costs(const struct folio_pprof *p, double *longest_ms, int *workers)
{
    char want[64];
    const char *c;
    uint32_t i;
    double ms;
    long pid;
    int k;

    for (i = 0; i < p->ncomments; i++) {
        c = folio_pprof_text(p, p->comments[i]);
        if (sscanf(c, "# worker %d (pid %ld): %lf ms of its loop", &k, &pid,
                   &ms) == 3) {
            *longest_ms = ms > *longest_ms ? ms : *longest_ms;
            (*workers)++;
        }
    }
    snprintf(want, sizeof(want), "# symbols: ");
    if (p->nlocations > 0) {
        ck_assert_msg((c = comment(p, want)) != NULL,
                      "no comment says who named the addresses");
        snprintf(want, sizeof(want), "named by pid %ld (the master)",
                 (long)srv.pid);
        ck_assert_msg(strstr(c, want) != NULL, "%s", c);
    }
}

/*
 * A CPU profile and ten heap profiles under 2,000 req/s open loop: what
 * each cost a worker's loop is reported, not asserted (a loaded machine
 * decides it); that the workers named no address is asserted.
 */
START_TEST(test_fetch_no_stall)
{
    static struct bproc b;
    struct cpu_fetch cpu;
    struct folio_pprof p;
    double longest = 0, turn[2], lookups;
    uint64_t t0;
    int k, i, answers = 0;

    start(NULL);
    bspawn(&b, ARGS("-q", "-H", srv.addr, "-R", "2000", "-c", "20", "-d",
                    "120"));
    /* The load is on: a few thousand requests answered. */
    t0 = e2e_now_ms();
    while (!(e2e_server_stat(&srv, "totals", "requests", NULL) > 4000) &&
           e2e_now_ms() - t0 < 30000)
        ck_assert_int_eq(bpump(&b, "\n", 100), -1); /* still running */
    ck_assert_msg(e2e_server_stat(&srv, "totals", "requests", NULL) > 4000,
                  "folio-bench's load did not come: %s", b.err);
    memset(&cpu, 0, sizeof(cpu));
    ck_assert_int_eq(pthread_create(&cpu.th, NULL, cpu_thread, &cpu), 0);
    ck_assert_int_eq(e2e_wait_log(&srv, "profile: profile for 3 s", 10000), 0);
    for (i = 0; i < 10; i++) {
        fetch("/debug/pprof/heap", &p);
        costs(&p, &longest, &answers);
        folio_pprof_free(&p);
    }
    pthread_join(cpu.th, NULL);
    costs(&cpu.p, &longest, &answers);
    /* The stacks are user space's: the profile says how much is not. */
    ck_assert_msg(comment(&cpu.p, "user-space stacks only: ") != NULL,
                  "no word of the kernel's share");
    folio_pprof_free(&cpu.p);
    for (k = 0; k < 2; k++)
        turn[k] = worker_stat(k, "loop_turn_max_s") * 1e3;
    kill(b.pid, SIGINT);
    bfinish(&b, 10000);
    fprintf(stderr,
            "test_fetch_no_stall: 11 fetches, %d answers of workers: the "
            "longest took %.3f ms of a worker's loop; longest loop turns of "
            "the last 10 s %.3f and %.3f ms (machine load included)\n",
            answers, longest, turn[0], turn[1]);
    ck_assert_int_eq(answers, 22);
    /* The naming is the master's: no worker looked a symbol up. */
    for (k = 0; k < 2; k++) {
        lookups = worker_stat(k, "profile_symbol_lookups");
        ck_assert_msg(lookups == 0, "worker %d looked up %.0f symbols", k,
                      lookups);
    }
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * The dearest request there is (the last page of "the") is in one turn
 * of a worker's loop: the longest turn is at least its time.
 */
START_TEST(test_loop_turn_covers_request)
{
    struct folio_client *c;
    struct folio_reply r;
    msgpack_packer *pk;
    char conf[512];
    uint64_t count;
    uint32_t id;
    double turn = 0, took;
    int k;

    snprintf(conf, sizeof(conf), "corpus = %s\n", e2e_corpus());
    start(conf);
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    ck_assert_int_eq(folio_client_call_str(c, "corpus.match_count", "the", &r),
                     1);
    ck_assert_int_eq(folio_mp_read_uint(&r.result, &count), 0);
    pk = folio_client_request(c, 0, "corpus.search", 2, &id);
    msgpack_pack_str_with_body(pk, "the", 3);
    msgpack_pack_map(pk, 1);
    msgpack_pack_str_with_body(pk, "offset", 6);
    msgpack_pack_uint64(pk, count > 10 ? count - 10 : 0);
    ck_assert_int_eq(folio_client_flush(c), 0);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    ck_assert_uint_eq(r.msgid, id);
    ck_assert_int_eq(r.code, 0);
    folio_client_close(c);
    took = e2e_server_stat(&srv, "totals", "methods", "corpus.search",
                           "mean_us", NULL);
    /*
     * A turn is counted as the next one begins (loop.c, at the poll): the
     * worker may be preempted between its reply and that poll, so the
     * reply can come before its turn is counted.  Once every worker has
     * had turns of its timer since, it is.
     */
    ck_assert_int_eq(e2e_wait_tick(&srv, E2E_READY_MS), 0);
    for (k = 0; k < 2; k++)
        if (worker_stat(k, "loop_turn_max_s") * 1e6 > turn)
            turn = worker_stat(k, "loop_turn_max_s") * 1e6;
    fprintf(stderr,
            "test_loop_turn_covers_request: the request %.0f us, the longest "
            "turn %.0f us\n",
            took, turn);
    ck_assert_msg(took > 0 && turn >= took * 0.95,
                  "the longest turn (%.0f us) is shorter than the request "
                  "(%.0f us)",
                  turn, took);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* The master's start-up functions: never in a worker's allocations. */
static const char *const startup[] = {"corpus_build_sa_h", "build_image",
                                      "corpus_open", "load_corpus",
                                      "folio_gen_load"};

static int64_t
startup_bytes(const struct folio_pprof *p)
{
    int t = folio_pprof_type_index(p, "alloc_space");
    int64_t sum = 0;
    uint32_t i;
    size_t k;

    ck_assert_int_ge(t, 0);
    for (i = 0; i < p->nsamples; i++)
        for (k = 0; k < sizeof(startup) / sizeof(startup[0]); k++)
            if (folio_pprof_on_stack(p, i, startup[k])) {
                sum += p->values[p->samples[i].value + (uint32_t)t];
                break;
            }
    return sum;
}

START_TEST(test_worker_allocs_fresh)
{
    struct folio_pprof p;
    char conf[512];
    int round;

    /* The corpus is built by this master: no cache in a new data_dir. */
    snprintf(conf, sizeof(conf), "corpus = %s\nprofile_heap_rate = 64k\n",
             e2e_corpus());
    start(conf);
    fetch("/debug/pprof/allocs?worker=master", &p);
    ck_assert_msg(startup_bytes(&p) > 1000000,
                  "the master's allocations lack its start-up (%lld bytes)",
                  (long long)startup_bytes(&p));
    folio_pprof_free(&p);
    for (round = 0; round < 2; round++) {
        fetch("/debug/pprof/allocs?worker=0", &p);
        ck_assert_msg(startup_bytes(&p) == 0,
                      "worker 0's allocations hold %lld bytes of the "
                      "master's start-up (%s)",
                      (long long)startup_bytes(&p),
                      round == 0 ? "at start" : "after a reload");
        ck_assert_uint_gt(p.nsamples, 0); /* its own are there */
        folio_pprof_free(&p);
        /* A reload: the new workers are forks of a master that loaded more. */
        ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
        ck_assert_int_eq(e2e_wait_ready(&srv, 2, 20000), 0);
    }
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* Files of dir whose names start with `prefix`, each asserted a profile. */
static int
profiles_in(const char *dir, const char *prefix)
{
    struct folio_pprof p;
    struct dirent *e;
    struct stat st;
    char path[600], err[256], *data;
    size_t len;
    FILE *f;
    DIR *d;
    int n = 0;

    ck_assert_ptr_nonnull(d = opendir(dir));
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert_ptr_nonnull(data = malloc((size_t)st.st_size + 1));
        ck_assert_ptr_nonnull(f = fopen(path, "rb"));
        len = fread(data, 1, (size_t)st.st_size, f);
        fclose(f);
        ck_assert_msg(folio_pprof_decode(data, len, &p, err, sizeof(err)) == 0,
                      "%s: %s", path, err);
        folio_pprof_free(&p);
        free(data);
        n++;
    }
    closedir(d);
    return n;
}

/* Files of dir named *.tmp: what a pull would leave half written. */
static int
leftovers(const char *dir)
{
    struct dirent *e;
    size_t n;
    DIR *d;
    int k = 0;

    ck_assert_ptr_nonnull(d = opendir(dir));
    while ((e = readdir(d)) != NULL)
        k += (n = strlen(e->d_name)) > 4 &&
             strcmp(e->d_name + n - 4, ".tmp") == 0;
    closedir(d);
    return k;
}

START_TEST(test_every)
{
    static const char *const bad[][12] = {
        {"profile", "--every", "0s", "--dir", ".", NULL},
        {"profile", "--every", "soon", "--dir", ".", NULL},
        {"profile", "heap", "--every", "1s", NULL},
        {"profile", "cpu", "--every", "5s", "--dir", ".", NULL},
        {"profile", "heap", "--count", "2", NULL},
        {"profile", "heap", "--keep", "2", "-o", "x", NULL},
        {"profile", "heap", "--every", "1s", "--dir", ".", "-o", "x", NULL},
        {"profile", "heap", "--dir", "/nonexistent/dir", NULL},
        {"profile", "heap,gpu", "--every", "1s", "--dir", ".", NULL},
        {"profile", "heap,allocs", NULL},
        {"profile", "heap", "--every", "1s", "--seconds", "1", "--dir", ".",
         NULL},
    };
    struct cli_run r;
    struct cli_opts o;
    char dir[400], one[400];
    const char *env[2];
    char envm[200];
    size_t i;

    start(NULL);
    snprintf(dir, sizeof(dir), "%s/pulls", srv.dir);
    snprintf(one, sizeof(one), "%s/one", srv.dir);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    ck_assert_int_eq(mkdir(one, 0755), 0);
    /* Three rounds of two kinds, the newest two of each kept. */
    cli_expect(&r, NULL,
               ARGS("profile", "heap,allocs", "--every", "1s", "--count", "3",
                    "--keep", "2", "--dir", dir, "--metrics", srv.metrics),
               0);
    ck_assert_msg(strstr(r.err, "heap profile written to") != NULL &&
                      strstr(r.err, "allocs profile written to") != NULL,
                  "%s", r.err);
    cli_run_free(&r);
    ck_assert_int_eq(profiles_in(dir, "folio-heap-"), 2);
    ck_assert_int_eq(profiles_in(dir, "folio-allocs-"), 2);
    ck_assert_int_eq(profiles_in(dir, "folio-cpu-"), 0);
    ck_assert_int_eq(leftovers(dir), 0); /* no temporary left */
    /* Every kind by default, until interrupted; $FOLIO_METRICS. */
    snprintf(envm, sizeof(envm), "FOLIO_METRICS=%s", srv.metrics);
    env[0] = envm;
    env[1] = NULL;
    memset(&o, 0, sizeof(o));
    o.env = env;
    o.until = "allocs profile written";
    o.deadline_ms = 30000;
    cli_expect(&r, &o,
               ARGS("profile", "--every", "3s", "--seconds", "1", "--dir", one),
               0);
    cli_run_free(&r);
    ck_assert_int_eq(profiles_in(one, "folio-cpu-"), 1);
    ck_assert_int_eq(profiles_in(one, "folio-heap-"), 1);
    ck_assert_int_eq(profiles_in(one, "folio-allocs-"), 1);
    /* -o to what is not a regular file writes it, never replaces it. */
    {
        char fifo[400], buf[4];
        struct stat st;
        int fd;

        snprintf(fifo, sizeof(fifo), "%s/fifo", srv.dir);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        ck_assert_int_ge(fd = open(fifo, O_RDONLY | O_NONBLOCK), 0);
        cli_expect(&r, NULL,
                   ARGS("profile", "heap", "-o", fifo, "--top", "0",
                        "--metrics", srv.metrics),
                   0);
        cli_run_free(&r);
        ck_assert_int_eq(read(fd, buf, 2), 2);
        ck_assert_int_eq((unsigned char)buf[0], 0x1f); /* gzip */
        close(fd);
        ck_assert_int_eq(stat(fifo, &st), 0);
        ck_assert(S_ISFIFO(st.st_mode));
    }
    /* A pull that fails is said, and the next one goes on: exit 3. */
    cli_expect(&r, NULL,
               ARGS("profile", "heap", "--every", "1s", "--count", "2",
                    "--dir", dir, "--metrics", "127.0.0.1:1"),
               3);
    ck_assert_ptr_nonnull(strstr(strstr(r.err, "cannot connect") + 1,
                                 "cannot connect"));
    cli_run_free(&r);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(cli_run(&r, NULL, bad[i]), 0);
        ck_assert_msg(r.status == 2 &&
                          strstr(r.err, "usage: folio [options] profile") !=
                              NULL,
                      "case %zu: exit %d: %s", i, r.status, r.err);
        cli_run_free(&r);
    }
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * The enabled profiles of a scrape configuration: each a path, and
 * whether it is a delta one (the puller adds ?seconds=).  Two formats,
 * read by the line: Parca's YAML (`  name:`, `enabled: true`, `path: P`,
 * `delta: true`) and Alloy's (`profile.name {`, `enabled = true`,
 * `path = "P"`, `delta = true`, `}`).
 */
struct scrape {
    char path[8][128];
    int delta[8], enabled[8];
    int n;
};

static void
read_scrape(const char *file, struct scrape *s)
{
    char line[512], val[128];
    FILE *f;
    int in = -1;

    memset(s, 0, sizeof(*s));
    ck_assert_ptr_nonnull(f = fopen(file, "r"));
    while (fgets(line, sizeof(line), f) != NULL) {
        char *l = line + strspn(line, " ");

        if (l[0] == '#' || (l[0] == '/' && l[1] == '/'))
            continue;
        if ((strncmp(l, "profile.", 8) == 0 && strchr(l, '{') != NULL) ||
            (strcmp(l + strcspn(l, ":"), ":\n") == 0 && l - line == 8)) {
            ck_assert_int_lt(s->n, 8);
            in = s->n++;
        } else if (in >= 0 && (strncmp(l, "enabled: true", 13) == 0 ||
                               strncmp(l, "enabled = true", 14) == 0)) {
            s->enabled[in] = 1;
        } else if (in >= 0 && (strncmp(l, "delta: true", 11) == 0 ||
                               strncmp(l, "delta   = true", 14) == 0)) {
            s->delta[in] = 1;
        } else if (in >= 0 && (sscanf(l, "path: %127s", val) == 1 ||
                               sscanf(l, "path = \"%127[^\"]\"", val) == 1 ||
                               sscanf(l, "path    = \"%127[^\"]\"", val) ==
                                   1)) {
            snprintf(s->path[in], sizeof(s->path[in]), "%s", val);
        } else if (l[0] == '}' && in >= 0) {
            in = -1;
        }
    }
    fclose(f);
}

/* What Parca and Pyroscope would pull answers a profile of every worker. */
START_TEST(test_scrape_samples)
{
    static const char *const files[] = {PARCA, PYROSCOPE};
    static struct bproc b;
    struct folio_pprof p;
    struct scrape s;
    char path[200], num[24];
    size_t f;
    int i, pulled, delta;
    uint32_t k;

    start("profile_heap_rate = 4k\n");
    bspawn(&b, ARGS("-q", "-H", srv.addr, "-c", "4", "-d", "120"));
    for (f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        read_scrape(files[f], &s);
        ck_assert_int_ge(s.n, 3); /* Go's goroutine and friends: named off */
        for (i = pulled = delta = 0; i < s.n; i++) {
            if (!s.enabled[i])
                continue;
            ck_assert_msg(s.path[i][0] == '/', "%s: profile %d has no path",
                          files[f], i);
            snprintf(path, sizeof(path), "%s%s", s.path[i],
                     s.delta[i] ? "?seconds=1" : "");
            fetch(path, &p);
            for (k = 0; k < p.nsamples; k++)
                ck_assert_str_ne(label(&p, k, "worker", num, sizeof(num)), "");
            folio_pprof_free(&p);
            pulled++;
            delta += s.delta[i];
        }
        ck_assert_msg(pulled == 2 && delta == 1,
                      "%s: %d profiles pulled, %d CPU ones", files[f], pulled,
                      delta);
    }
    kill(b.pid, SIGINT);
    bfinish(&b, 10000);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

static Suite *
pull_suite(void)
{
    Suite *s = suite_create("e2e_profile_pull");
    TCase *tc = tcase_create("pull");

    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_fetch_no_stall);
    tcase_add_test(tc, test_loop_turn_covers_request);
    tcase_add_test(tc, test_worker_allocs_fresh);
    tcase_add_test(tc, test_every);
    tcase_add_test(tc, test_scrape_samples);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    e2e_require_corpus(); /* the dearest request; the master's start-up */
    return folio_check_run(pull_suite());
}
