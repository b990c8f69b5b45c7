/*
 * e2e_profile.c - /debug/pprof/ end to end (PROTOCOL.md section 6): a CPU
 * profile of deep corpus.search pages under folio-bench names the corpus
 * code, holds both workers' samples, adds up to the CPU time /proc counts
 * and reads in `go tool pprof`; an allocs profile after comments.post
 * shows the posting stack; a heap profile agrees with heap_inuse; a
 * worker killed during a profile leaves a note and the other's samples;
 * bad parameters, a second CPU profile, a non-loopback listener; the
 * master's own profile, ?debug=1, a replaced binary, a reload; and the
 * clients: `folio profile` and `folio-bench --profile`.
 *
 * `go tool pprof` writes a cache in $HOME: it runs with HOME and
 * PPROF_TMPDIR in the test's directory.  What reads profiles with the
 * real tools (go tool pprof, google-pprof's format=legacy) on the shared
 * corpus is e2e_profile_tools, this file with E2E_PROFILE_TOOLS, which
 * requires the corpus, go and google-pprof (e2e_require).
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/buf.h"
#include "src/client.h"
#include "src/err.h"
#include "src/http.h"
#include "src/mp.h"
#include "src/prof/pprof.h"
#include "tests/check_run.h"
#include "tests/cli_util.h"
#include "tests/e2e_bench_util.h"
#include "tests/e2e_util.h"

static struct e2e_server srv;

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void
start(const char *conf)
{
    e2e_start_metrics(&srv, conf);
}

static void
stop(void)
{
    ck_assert_int_eq(e2e_stop(&srv), 0);
}

/* ------------------------------------------------------------------ */
/* HTTP                                                                */

struct get {
    char addr[128];
    char path[256];
    struct folio_http_answer ans;
    int rc;
    char err[512];
    pthread_t th;
    uint64_t ms;
};

static void
get_run(struct get *g)
{
    uint64_t t0 = e2e_now_ms();

    g->rc = folio_http_get(g->addr, g->path, 120000, &g->ans, g->err,
                           sizeof(g->err));
    g->ms = e2e_now_ms() - t0;
}

#ifndef E2E_PROFILE_TOOLS
static void *
get_thread(void *arg)
{
    get_run(arg);
    return NULL;
}

#endif

/* GET path from the server's metrics listener; the status. */
static int
get(struct get *g, const char *path)
{
    snprintf(g->addr, sizeof(g->addr), "%s", srv.metrics);
    snprintf(g->path, sizeof(g->path), "%s", path);
    get_run(g);
    ck_assert_msg(g->rc == 0, "GET %s: %s", g->path, g->err);
    return g->ans.status;
}

#ifndef E2E_PROFILE_TOOLS
/* The same in a thread: get_join waits for it. */
static void
get_async(struct get *g, const char *path)
{
    snprintf(g->addr, sizeof(g->addr), "%s", srv.metrics);
    snprintf(g->path, sizeof(g->path), "%s", path);
    ck_assert_int_eq(pthread_create(&g->th, NULL, get_thread, g), 0);
}

static int
get_join(struct get *g)
{
    pthread_join(g->th, NULL);
    ck_assert_msg(g->rc == 0, "GET %s: %s", g->path, g->err);
    return g->ans.status;
}

#endif

static const char *
text_of(struct get *g)
{
    return folio_buf_at(&g->ans.body, 0);
}

/* The answer as a profile (asserted to decode). */
static void
decode(struct get *g, struct folio_pprof *p)
{
    char err[256];

    ck_assert_msg(g->ans.status == 200, "GET %s: %d %s", g->path, g->ans.status,
                  text_of(g));
    ck_assert_msg(folio_pprof_decode(folio_buf_at(&g->ans.body, 0),
                                     folio_buf_pending(&g->ans.body), p, err,
                                     sizeof(err)) == 0,
                  "GET %s: %s", g->path, err);
}

static void
get_free(struct get *g)
{
    folio_http_answer_free(&g->ans);
}

/* ------------------------------------------------------------------ */
/* Reading profiles                                                    */

/* The label `key` of sample i, or NULL; a numeric one as text. */
static const char *
label(const struct folio_pprof *p, uint32_t i, const char *key)
{
    static char num[8][24];
    static unsigned next;
    const struct folio_pprof_sample *s = &p->samples[i];
    uint32_t k;

    for (k = 0; k < s->nlabel; k++) {
        const struct folio_pprof_label *l = &p->labels[s->label + k];

        if (strcmp(folio_pprof_text(p, l->key), key) != 0)
            continue;
        if (l->str != 0)
            return folio_pprof_text(p, l->str);
        next = (next + 1) % 8;
        snprintf(num[next], sizeof(num[next]), "%lld", (long long)l->num);
        return num[next];
    }
    return NULL;
}

/* Sum of sample type `type` over the samples (with `fn` on the stack). */
static int64_t
total(const struct folio_pprof *p, const char *type, const char *fn)
{
    int t = folio_pprof_type_index(p, type);
    int64_t sum = 0;
    uint32_t i;

    ck_assert_msg(t >= 0, "no sample type %s", type);
    for (i = 0; i < p->nsamples; i++)
        if (fn == NULL || folio_pprof_on_stack(p, i, fn))
            sum += p->values[p->samples[i].value + (uint32_t)t];
    return sum;
}

#ifndef E2E_PROFILE_TOOLS
static int
has_comment(const struct folio_pprof *p, const char *needle)
{
    uint32_t i;

    for (i = 0; i < p->ncomments; i++)
        if (strstr(folio_pprof_text(p, p->comments[i]), needle) != NULL)
            return 1;
    return 0;
}

/* The profile's comments, for a failure's message. */
#endif

static const char *
notes(const struct folio_pprof *p)
{
    static char buf[4096];
    size_t n = 0;
    uint32_t i;

    buf[0] = '\0';
    for (i = 0; i < p->ncomments && n < sizeof(buf) - 1; i++)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s; ",
                              folio_pprof_text(p, p->comments[i]));
    return buf;
}

/* Which worker labels the samples carry: a bit per index. */
static unsigned
workers_seen(const struct folio_pprof *p)
{
    unsigned bits = 0;
    uint32_t i;

    for (i = 0; i < p->nsamples; i++) {
        const char *w = label(p, i, "worker");

        ck_assert_ptr_nonnull(label(p, i, "pid"));
        ck_assert_ptr_nonnull(label(p, i, "process"));
        if (strcmp(label(p, i, "process"), "master") == 0)
            continue;
        ck_assert_ptr_nonnull(w);
        bits |= 1u << atoi(w);
    }
    return bits;
}

/* ------------------------------------------------------------------ */
/* The server                                                          */

/* Worker i's field `key` in server.stats; NAN if none. */
static double
worker_stat(int i, const char *key)
{
    struct folio_client *a = e2e_connect_admin(&srv);
    struct folio_reply r;
    char idx[16];
    double v = NAN;

    snprintf(idx, sizeof(idx), "#%d", i);
    if (a != NULL && e2e_stats(a, &r) == 0)
        v = e2e_stat_num(&r, "workers", idx, key, NULL);
    folio_client_close(a);
    return v;
}

/* Requests each worker answered in 300 ms. */
static void
rates(double d[2])
{
    double r0[2];
    int k;

    for (k = 0; k < 2; k++)
        r0[k] = worker_stat(k, "requests");
    e2e_pace_ms(300); /* the window of the rates */
    for (k = 0; k < 2; k++)
        d[k] = worker_stat(k, "requests") - r0[k];
}

/*
 * Put folio-bench's load (`args`) on both workers.  A worker accepts
 * what is queued when it wakes, so one may take every connection of a
 * run: two runs, the second once the first keeps one worker busy (the
 * idle one then wakes first), until both answer dozens of requests in
 * 300 ms (these server.stats calls are a handful).
 */
static void
load_both(struct bproc b[2], const char *const *args)
{
    double d[2];
    uint64_t t0;
    int tries, k;

    for (tries = 0; tries < 8; tries++) {
        bspawn(&b[0], args);
        t0 = e2e_now_ms();
        do
            rates(d);
        while (d[0] + d[1] < 30 && e2e_now_ms() - t0 < 5000);
        bspawn(&b[1], args);
        t0 = e2e_now_ms();
        do {
            rates(d);
            if (d[0] >= 30 && d[1] >= 30)
                return;
        } while (e2e_now_ms() - t0 < 3000);
        for (k = 0; k < 2; k++) {
            kill(b[k].pid, SIGKILL);
            bfinish(&b[k], 5000);
        }
    }
    ck_abort_msg("8 times, folio-bench's connections all went to one worker");
}

static void
load_stop(struct bproc b[2])
{
    int k;

    for (k = 0; k < 2; k++) {
        kill(b[k].pid, SIGINT);
        bfinish(&b[k], 10000);
    }
}

#ifdef E2E_PROFILE_TOOLS
/* A command's output (malloc'd); it must exit 0. */
static char *
tool_output(const char *cmd)
{
    char *out;
    size_t len = 0, cap = 1 << 16;
    FILE *f;
    int st;

    ck_assert_ptr_nonnull(f = popen(cmd, "r"));
    out = malloc(cap);
    while ((st = (int)fread(out + len, 1, cap - len - 1, f)) > 0) {
        len += (size_t)st;
        if (len + 1 == cap)
            out = realloc(out, cap *= 2);
    }
    out[len] = '\0';
    st = pclose(f);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed:\n%s",
                  cmd, out);
    return out;
}

/* The go toolchain (required in main), on PATH or where Debian puts it. */
static const char *
go_tool(void)
{
    static const char *const dirs[] = {"/usr/bin/go", "/usr/lib/go/bin/go",
                                       "/usr/local/go/bin/go"};
    size_t i;

    if (e2e_which("go") != NULL)
        return e2e_which("go");
    for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
        if (access(dirs[i], X_OK) == 0)
            return dirs[i];
    return NULL;
}

/* `go tool pprof -top FILE`: its output (malloc'd). */
static char *
go_pprof_top(const char *file, const char *extra)
{
    char cmd[2048];

    snprintf(cmd, sizeof(cmd),
             "HOME=%s PPROF_TMPDIR=%s %s tool pprof -top %s %s 2>&1", srv.dir,
             srv.dir, go_tool(), extra != NULL ? extra : "", file);
    return tool_output(cmd);
}

/* `google-pprof --text FILE` (gperftools' Perl pprof): its output. */
static char *
google_pprof_text(const char *file)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "HOME=%s google-pprof --text %s 2>&1", srv.dir,
             file);
    return tool_output(cmd);
}
#endif

#ifndef E2E_PROFILE_TOOLS
/* The profile in file `path` (asserted to decode). */
static void
decode_file(const char *path, struct folio_pprof *p)
{
    struct stat st;
    char err[256], *data;
    size_t len;
    FILE *f;

    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_ptr_nonnull(f = fopen(path, "rb"));
    data = malloc((size_t)st.st_size + 1);
    len = fread(data, 1, (size_t)st.st_size, f);
    fclose(f);
    ck_assert_msg(folio_pprof_decode(data, len, p, err, sizeof(err)) == 0,
                  "%s: %s", path, err);
    free(data);
}

#endif

#ifdef E2E_PROFILE_TOOLS
static void
save(struct get *g, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, folio_buf_at(&g->ans.body, 0),
                           folio_buf_pending(&g->ans.body)),
                     (ssize_t)folio_buf_pending(&g->ans.body));
    close(fd);
}
#endif

/* ------------------------------------------------------------------ */

#ifdef E2E_PROFILE_TOOLS
/*
 * Deep corpus.search pages (the last page of the commonest words) from
 * folio-bench, a 4 s CPU profile: corpus functions on top, both workers;
 * go tool pprof reads it, -tagfocus isolates a worker; google-pprof reads
 * the same load's CPU and heap profiles in format=legacy.  (The samples'
 * CPU against /proc's is a figure: bench/profile-cpu.sh.)
 */
START_TEST(test_cpu_deep_search)
{
    static const char *const words[] = {"the", "and", "to", "of"};
    struct folio_pprof p;
    struct folio_pprof_top_row *rows;
    struct folio_client *c;
    struct folio_reply r;
    static struct bproc b[2];
    struct get g;
    char conf[512], qfile[400], pfile[400];
    double sampled;
    uint64_t count;
    uint32_t n, i;
    int64_t sum;
    size_t k;
    FILE *f;
    char *top;
    int corpus_on_top = 0, samples = 0;

    snprintf(conf, sizeof(conf), "corpus = %s\nprofile_heap_rate = 4k\n",
             e2e_corpus());
    start(conf);
    /* The queries with their counts: folio-bench asks for the last page. */
    snprintf(qfile, sizeof(qfile), "%s/queries", srv.dir);
    ck_assert_ptr_nonnull(f = fopen(qfile, "w"));
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    for (k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
        ck_assert_int_eq(folio_client_call_str(c, "corpus.match_count",
                                               words[k], &r),
                         1);
        ck_assert_int_eq(folio_mp_read_uint(&r.result, &count), 0);
        fprintf(f, "%s\t%llu\n", words[k], (unsigned long long)count);
    }
    fclose(f);
    folio_client_close(c);
    load_both(b, ARGS("-q", "-H", srv.addr, "-w", "search", "--queries", qfile,
                      "-c", "8", "-d", "60"));

    ck_assert_int_eq(get(&g, "/debug/pprof/profile?seconds=4"), 200);
    decode(&g, &p);
    ck_assert_str_eq(folio_pprof_text(&p, p.types[1].type), "cpu");
    ck_assert_msg(workers_seen(&p) == 3, "workers %u; comments: %s",
                  workers_seen(&p), notes(&p));
    sampled = (double)total(&p, "cpu", NULL);
    fprintf(stderr, "test_cpu_deep_search: %.0f ms of CPU in samples\n",
            sampled / 1e6);
    ck_assert(sampled > 0);
    /* The time is in the corpus code: its search, and what it calls. */
    ck_assert_msg(total(&p, "cpu", "folio_corpus_search") * 2 >
                      (int64_t)sampled,
                  "folio_corpus_search has %lld of %.0f ns",
                  (long long)total(&p, "cpu", "folio_corpus_search"), sampled);
    ck_assert_int_eq(folio_pprof_top(&p, 1, &rows, &n, &sum), 0);
    for (i = 0; i < n && i < 3; i++) {
        uint32_t fn;

        for (fn = 0; fn < p.nfunctions; fn++)
            if (p.functions[fn].name == rows[i].name &&
                strstr(folio_pprof_text(&p, p.functions[fn].file),
                       "shm/corpus") != NULL)
                corpus_on_top = 1;
    }
    ck_assert_msg(corpus_on_top, "no function of shm/corpus*.c in the top 3");
    free(rows);
    folio_pprof_free(&p);

    /* go's pprof reads it, without the binary. */
    snprintf(pfile, sizeof(pfile), "%s/cpu.pb.gz", srv.dir);
    save(&g, pfile);
    get_free(&g);
    top = go_pprof_top(pfile, NULL);
    ck_assert_msg(strstr(top, "folio_corpus_search") != NULL, "%s", top);
    ck_assert_msg(strstr(top, "Type: cpu") != NULL, "%s", top);
    free(top);
    /* -tagfocus isolates one worker, 0 as well as 1. */
    top = go_pprof_top(pfile, "-tagfocus worker=1");
    ck_assert_msg(strstr(top, "folio_corpus_search") != NULL, "%s", top);
    free(top);
    top = go_pprof_top(pfile, "-tagfocus worker=0");
    ck_assert_msg(strstr(top, "folio_corpus_search") != NULL, "%s", top);
    free(top);

    /* gperftools' pprof: the legacy CPU profile, then the heap. */
    ck_assert_int_eq(get(&g, "/debug/pprof/profile?seconds=2&format=legacy"),
                     200);
    snprintf(pfile, sizeof(pfile), "%s/cpu.legacy", srv.dir);
    save(&g, pfile);
    get_free(&g);
    top = google_pprof_text(pfile);
    ck_assert_msg(strstr(top, "Total: ") != NULL &&
                      sscanf(strstr(top, "Total: "), "Total: %d samples",
                             &samples) == 1 &&
                      samples > 0,
                  "%s", top);
    ck_assert_msg(strstr(top, "folio_corpus_search") != NULL, "%s", top);
    free(top);
    ck_assert_int_eq(get(&g, "/debug/pprof/heap?format=legacy"), 200);
    snprintf(pfile, sizeof(pfile), "%s/heap.legacy", srv.dir);
    save(&g, pfile);
    get_free(&g);
    top = google_pprof_text(pfile);
    ck_assert_msg(strstr(top, "Total: ") != NULL &&
                      strstr(strstr(top, "Total: "), " MB\n") != NULL,
                  "%s", top);
    /* what the workers hold at start: their corpus scratch, one each */
    ck_assert_msg(strstr(top, "folio_corpus_scratch_new") != NULL, "%s", top);
    free(top);
    load_stop(b);
    fprintf(stderr, "test_cpu_deep_search: go tool pprof and google-pprof "
                    "read the profiles (%d legacy CPU samples)\n",
            samples);
    stop();
}
END_TEST
#else

/*
 * A few hundred comments.post, each one an LMDB write transaction: their
 * stack.  A post allocates a few small blocks, so every allocation is
 * sampled here (profile_heap_rate = 1, Go's MemProfileRate = 1).
 */
START_TEST(test_allocs_posting)
{
    struct folio_pprof p;
    struct bproc b;
    struct get g;
    double heap_stats;
    int64_t heap_prof;

    start("comments_group_commit = off\nprofile_heap_rate = 1\n");
    expect_status(&b, 0, "-q", "-H", srv.addr, "-w", "comments",
                  "--write-ratio", "1", "-c", "4", "-n", "300");
    ck_assert_int_eq(get(&g, "/debug/pprof/allocs"), 200);
    decode(&g, &p);
    ck_assert_str_eq(folio_pprof_text(&p, p.default_type), "alloc_space");
#ifdef FOLIO_SANITIZED
    /* ASan owns malloc: LMDB's allocations are not seen, and it says so. */
    ck_assert(has_comment(&p, "sanitizer build"));
    fprintf(stderr, "test_allocs_posting: sanitizer build: the posting stack "
                    "(LMDB's malloc) is not sampled: not checked\n");
#else
    /*
     * The posts' write transactions (LMDB's allocations) run in each
     * worker's comments writer thread, which is not sampled (foliod(8)):
     * the loop's profile has none of them, what it allocates to hand the
     * posts over (a batch's arrays and arenas) at most.
     */
    int64_t posting = total(&p, "alloc_objects", "folio_h_comments_post");

    ck_assert_int_eq(total(&p, "alloc_objects", "folio_comments_post_batch"),
                     0);
    fprintf(stderr, "test_allocs_posting: %lld allocations under "
                    "comments.post for 300 posts\n",
            (long long)posting);
    ck_assert_msg(posting < 300, "%lld allocations under comments.post",
                  (long long)posting);
#endif
    folio_pprof_free(&p);
    get_free(&g);

    /* ?reset=1 answers, then forgets the allocations so far. */
    ck_assert_int_eq(get(&g, "/debug/pprof/allocs?reset=1"), 200);
    get_free(&g);
    ck_assert_int_eq(get(&g, "/debug/pprof/allocs"), 200);
    decode(&g, &p);
    ck_assert_int_lt(total(&p, "alloc_objects", "folio_h_comments_post"), 10);
    folio_pprof_free(&p);
    get_free(&g);

    /* In use: within 2x of what malloc says the workers hold. */
    ck_assert_int_eq(e2e_wait_tick(&srv, e2e_bound_ms(5000, 15000)), 0);
    heap_stats = worker_stat(0, "heap_inuse") + worker_stat(1, "heap_inuse");
    ck_assert_int_eq(get(&g, "/debug/pprof/heap"), 200);
    decode(&g, &p);
    heap_prof = total(&p, "inuse_space", NULL);
#ifdef FOLIO_SANITIZED
    fprintf(stderr, "test_allocs_posting: sanitizer build: heap in use "
                    "%lld sampled, heap_inuse %.0f: not compared\n",
            (long long)heap_prof, heap_stats);
#else
    ck_assert_msg(heap_prof * 2 >= (int64_t)heap_stats &&
                      heap_prof <= 2 * (int64_t)heap_stats,
                  "heap profile %lld bytes in use, server.stats %.0f",
                  (long long)heap_prof, heap_stats);
#endif
    ck_assert_uint_eq(workers_seen(&p), 3);
    folio_pprof_free(&p);
    get_free(&g);
    stop();
}
END_TEST

/* SIGKILL of one worker 1.5 s into a 5 s profile. */
START_TEST(test_worker_killed)
{
    struct folio_pprof p;
    static struct bproc b[2];
    struct get g;
    char note[128], other[16];
    pid_t victim;
    uint32_t i;
    int survivor = 0;

    start(NULL);
    load_both(b, ARGS("-q", "-H", srv.addr, "-c", "8", "-d", "60"));
    victim = (pid_t)worker_stat(1, "pid");
    get_async(&g, "/debug/pprof/profile?seconds=5");
    ck_assert_int_eq(e2e_wait_log(&srv, "profile: profile for 5 s", 10000), 0);
    e2e_pace_ms(1500); /* the kill comes 1.5 s into the profile */
    ck_assert_int_eq(kill(victim, SIGKILL), 0);
    ck_assert_int_eq(get_join(&g), 200);
    load_stop(b);
    /*
     * Answered when the others were: at the profile's end, not at its
     * deadline (60 s later).
     */
    ck_assert_msg(g.ms < (uint64_t)e2e_bound_ms(30000, 50000),
                  "answered after %llu ms", (unsigned long long)g.ms);
    decode(&g, &p);
    snprintf(note, sizeof(note), "worker 1 (pid %ld) exited during the profile",
             (long)victim);
    ck_assert_msg(has_comment(&p, note), "no comment '%s'", note);
    snprintf(other, sizeof(other), "%ld", (long)victim);
    for (i = 0; i < p.nsamples; i++) {
        ck_assert_str_ne(label(&p, i, "pid"), other);
        if (strcmp(label(&p, i, "worker"), "0") == 0)
            survivor = 1;
    }
    ck_assert_msg(survivor, "no sample of worker 0 (%u samples; %s)",
                  p.nsamples, notes(&p));
    folio_pprof_free(&p);
    get_free(&g);
    stop();
}
END_TEST

START_TEST(test_bad_requests)
{
    static const char *const bad[] = {
        "/debug/pprof/profile?seconds=0",
        "/debug/pprof/profile?seconds=abc",
        "/debug/pprof/profile?seconds=301",
        "/debug/pprof/profile?seconds=-1",
        "/debug/pprof/profile?seconds=1&worker=9",
        "/debug/pprof/profile?seconds=1&worker=-1",
        "/debug/pprof/heap?worker=x",
        "/debug/pprof/heap?seconds=5",
        "/debug/pprof/heap?debug=2",
        "/debug/pprof/heap?reset=1",
        "/debug/pprof/allocs?reset=yes",
        "/debug/pprof/heap?%zz",
    };
    struct get g, first;
    size_t i;

    start(NULL);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(get(&g, bad[i]) == 400, "%s: %d %s", bad[i], g.ans.status,
                      text_of(&g));
        ck_assert_msg(strchr(text_of(&g), '\n') != NULL, "%s: no reason",
                      bad[i]);
        get_free(&g);
    }
    ck_assert_int_eq(get(&g, "/debug/pprof/goroutine"), 404);
    ck_assert_ptr_nonnull(strstr(text_of(&g), "profile, heap and allocs"));
    get_free(&g);
    ck_assert_int_eq(get(&g, "/debug/pprof/"), 200);
    ck_assert_ptr_nonnull(strstr(text_of(&g), "/debug/pprof/profile"));
    get_free(&g);
    /* A second CPU profile while one runs: 409, with when to come back;
     * heap profiles go on meanwhile. */
    get_async(&first, "/debug/pprof/profile?seconds=2");
    ck_assert_int_eq(e2e_wait_log(&srv, "profile: profile for 2 s", 10000), 0);
    ck_assert_int_eq(get(&g, "/debug/pprof/profile?seconds=1"), 409);
    ck_assert_ptr_nonnull(strstr(text_of(&g), "already running"));
    get_free(&g);
    ck_assert_int_eq(get(&g, "/debug/pprof/heap"), 200);
    get_free(&g);
    ck_assert_int_eq(get_join(&first), 200);
    get_free(&first);
    /* ...and a new one once it is over. */
    ck_assert_int_eq(get(&g, "/debug/pprof/profile?seconds=1&worker=0"),
                     200);
    get_free(&g);
    /* The metrics are still there. */
    ck_assert_int_eq(get(&g, "/metrics"), 200);
    get_free(&g);
    stop();
}
END_TEST

/* Who may see profiles: the listener's address and `profiling`. */
START_TEST(test_access)
{
    static const struct {
        const char *conf;
        int want;
    } cases[] = {
        {"metrics_listen = *:0\n", 403},
        {"metrics_listen = *:0\nprofiling = on\n", 200},
        {"metrics_listen = 127.0.0.1:0\nprofiling = off\n", 404},
        {"metrics_listen = 127.0.0.1:0\nprofiling = auto\n", 200},
    };
    struct get g;
    const char *colon;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_msg(e2e_start(&srv, cases[i].conf, NULL) == 0,
                      "foliod did not start");
        /* 0.0.0.0:PORT is reached on 127.0.0.1:PORT. */
        colon = strrchr(srv.metrics, ':');
        ck_assert_ptr_nonnull(colon);
        snprintf(g.addr, sizeof(g.addr), "127.0.0.1%s", colon);
        snprintf(g.path, sizeof(g.path), "/debug/pprof/heap");
        get_run(&g);
        ck_assert_int_eq(g.rc, 0);
        ck_assert_msg(g.ans.status == cases[i].want, "%s: %d, not %d",
                      cases[i].conf, g.ans.status, cases[i].want);
        if (cases[i].want == 403) {
            ck_assert_ptr_nonnull(strstr(text_of(&g), "profiling = on"));
        }
        get_free(&g);
        snprintf(g.path, sizeof(g.path), "/metrics");
        get_run(&g);
        ck_assert_int_eq(g.ans.status, 200);
        get_free(&g);
        stop();
    }
}
END_TEST

/* worker=master, ?debug=1, and a foliod whose binary was replaced. */
START_TEST(test_master_debug_replaced)
{
    char tmpl[] = "/tmp/folio-e2e-bin.XXXXXX", bin[128], cmd[300];
    struct folio_pprof p;
    struct get g;
    uint32_t i;

    /* Started from a copy that is then deleted, as an upgrade does. */
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(bin, sizeof(bin), "%s/foliod", tmpl);
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", e2e_foliod(), bin);
    ck_assert_int_eq(system(cmd), 0);
    setenv("FOLIOD", bin, 1);
    start("profile_heap_rate = 4k\n"); /* the master's small heap, seen */
    unsetenv("FOLIOD");
    ck_assert_int_eq(unlink(bin), 0);
    rmdir(tmpl);

    ck_assert_int_eq(get(&g, "/debug/pprof/heap?worker=master"), 200);
    decode(&g, &p);
    ck_assert_uint_gt(p.nsamples, 0);
    for (i = 0; i < p.nsamples; i++) {
        ck_assert_str_eq(label(&p, i, "process"), "master");
        ck_assert_str_eq(label(&p, i, "worker"), "master");
    }
    /* Names from the deleted file's DWARF, through /proc/self/exe. */
    ck_assert_int_gt(total(&p, "inuse_space", "main"), 0);
    folio_pprof_free(&p);
    get_free(&g);

    ck_assert_int_eq(get(&g, "/debug/pprof/heap?debug=1"), 200);
    ck_assert_msg(strstr(text_of(&g), "Type: inuse_space\n") != NULL &&
                      strstr(text_of(&g), "      flat  flat%   sum%") != NULL &&
                      strstr(text_of(&g), "folio_worker_main") != NULL &&
                      strstr(text_of(&g), "foliod+0x") == NULL,
                  "%s", text_of(&g));
    get_free(&g);
    ck_assert_int_eq(get(&g, "/debug/pprof/profile?seconds=1&worker=0&debug=1"),
                     200);
    ck_assert_msg(strstr(text_of(&g), "Type: cpu\n") != NULL, "%s",
                  text_of(&g));
    get_free(&g);
    stop();
}
END_TEST

/* The heap sampling rate of one process's heap profile (its period). */
static int64_t
heap_period(const char *who)
{
    char path[64];
    struct folio_pprof p;
    struct get g;
    int64_t period;

    snprintf(path, sizeof(path), "/debug/pprof/heap?worker=%s", who);
    ck_assert_int_eq(get(&g, path), 200);
    decode(&g, &p);
    period = p.period;
    folio_pprof_free(&p);
    get_free(&g);
    return period;
}

/* A reload applies profile_heap_rate: to the new workers, the master too. */
START_TEST(test_heap_rate_reloaded)
{
    char *conf, *at;

    start("profile_heap_rate = 4k\n");
    ck_assert_int_eq(heap_period("master"), 4096);
    ck_assert_int_eq(heap_period("0"), 4096);
    ck_assert_ptr_nonnull(conf = e2e_read_file(srv.conf));
    ck_assert_ptr_nonnull(at = strstr(conf, "profile_heap_rate = 4k\n"));
    memcpy(at, "profile_heap_rate = 8k\n", strlen("profile_heap_rate = 8k\n"));
    ck_assert_int_eq(e2e_write_file(srv.conf, conf), 0);
    free(conf);
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    ck_assert_int_eq(e2e_wait_ready(&srv, 2, E2E_READY_MS), 0);
    ck_assert_int_eq(heap_period("master"), 8192);
    ck_assert_int_eq(heap_period("0"), 8192);
    stop();
}
END_TEST

/*
 * A reload 1 s into a 30 s profile: the old workers send what they have.
 * (A 3 s profile ended by itself when the reload was slow on a loaded
 * machine; 30 s cannot, and the test still ends at the reload.)
 */
START_TEST(test_reload_during_profile)
{
    struct folio_pprof p;
    static struct bproc b[2];
    struct get g;

    start(NULL);
    load_both(b, ARGS("-q", "-H", srv.addr, "-c", "4", "-d", "60"));
    get_async(&g, "/debug/pprof/profile?seconds=30");
    ck_assert_int_eq(e2e_wait_log(&srv, "profile: profile for 30 s", 10000), 0);
    e2e_pace_ms(1000); /* the reload comes 1 s into the profile */
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    ck_assert_int_eq(get_join(&g), 200);
    load_stop(b);
    decode(&g, &p);
    ck_assert_msg(has_comment(&p, "stopped") &&
                      has_comment(&p, "s into a 30 s profile"),
                  "no note of the early stop");
    ck_assert_uint_ne(workers_seen(&p), 0);
    folio_pprof_free(&p);
    get_free(&g);
    ck_assert_int_eq(e2e_wait_ready(&srv, 2, E2E_READY_MS), 0);
    stop();
}
END_TEST

/* folio profile, and folio-bench --profile. */
START_TEST(test_clients)
{
    const char *env[2];
    struct folio_pprof p;
    struct cli_run r;
    struct cli_opts o;
    struct bproc b;
    char envm[160], file[400];

    /* Heap samples in every build (a sanitizer's has few allocations). */
    start("profile_heap_rate = 4k\n");
    snprintf(file, sizeof(file), "%s/heap.pb.gz", srv.dir);
    ck_assert_int_eq(cli_run(&r, NULL,
                             ARGS("profile", "heap", "--metrics", srv.metrics,
                                  "-o", file, "--top", "5")),
                     0);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "Type: inuse_space\n") != NULL, "%s", r.out);
    ck_assert_msg(strstr(r.out, "Showing top 5 nodes out of") != NULL, "%s",
                  r.out);
    ck_assert_ptr_nonnull(strstr(r.err, file));
    cli_run_free(&r);
    /* What it wrote is the profile. */
    decode_file(file, &p);
    folio_pprof_free(&p);

    /* $FOLIO_METRICS, a CPU profile of one worker, output to stdout. */
    snprintf(envm, sizeof(envm), "FOLIO_METRICS=%s", srv.metrics);
    env[0] = envm;
    env[1] = NULL;
    memset(&o, 0, sizeof(o));
    o.env = env;
    o.deadline_ms = 30000;
    ck_assert_int_eq(cli_run(&r, &o,
                             ARGS("profile", "cpu", "--seconds", "1",
                                  "--worker", "0", "-o", file, "--top", "3")),
                     0);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "Type: cpu\n"));
    cli_run_free(&r);
    ck_assert_int_eq(cli_run(&r, &o, ARGS("profile", "allocs", "-o", "-")), 0);
    ck_assert_int_eq(r.status, 0);
    ck_assert_int_eq((unsigned char)r.out[0], 0x1f); /* gzip */
    cli_run_free(&r);

    /* folio help profile; a line of the interactive mode. */
    ck_assert_int_eq(cli_run(&r, NULL, ARGS("help", "profile")), 0);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "usage: folio [options] profile"));
    ck_assert_ptr_nonnull(strstr(r.out, "pprof -top"));
    cli_run_free(&r);
    {
        char line[600];

        snprintf(line, sizeof(line), "profile heap -o %s --top 2\n", file);
        o.input = line;
        ck_assert_int_eq(cli_run(&r, &o, ARGS("--interactive")), 0);
        o.input = NULL;
        ck_assert_msg(r.status == 0 &&
                          strstr(r.out, "Type: inuse_space\n") != NULL,
                      "exit %d: %s%s", r.status, r.out, r.err);
        cli_run_free(&r);
    }

    /* The server's refusal, and no server: exit 1 and 3. */
    ck_assert_int_eq(cli_run(&r, &o,
                             ARGS("profile", "cpu", "--seconds", "1",
                                  "--worker", "7")),
                     0);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "answered 400: worker=7") != NULL, "%s", r.err);
    cli_run_free(&r);
    ck_assert_int_eq(cli_run(&r, NULL,
                             ARGS("profile", "heap", "--metrics",
                                  "127.0.0.1:1")),
                     0);
    ck_assert_int_eq(r.status, 3);
    cli_run_free(&r);
    /* Usage errors: 2. */
    {
        static const char *const cases[][6] = {
            {"profile", NULL},
            {"profile", "gpu", NULL},
            {"profile", "cpu", "--seconds", "0", NULL},
            {"profile", "cpu", "--seconds", "abc", NULL},
            {"profile", "heap", "--seconds", "5", NULL},
            {"profile", "cpu", "--worker", "x", NULL},
            {"profile", "cpu", "heap", NULL},
            {"profile", "cpu", "--bogus", NULL},
        };
        size_t i;

        for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            ck_assert_int_eq(cli_run(&r, NULL, cases[i]), 0);
            ck_assert_msg(r.status == 2, "folio %s %s: exit %d", cases[i][0],
                          cases[i][1] ? cases[i][1] : "", r.status);
            ck_assert_ptr_nonnull(
                strstr(r.err, "usage: folio [options] profile"));
            cli_run_free(&r);
        }
    }

    /* folio-bench --profile: the run's CPU profile. */
    snprintf(file, sizeof(file), "%s/bench.pb.gz", srv.dir);
    expect_status(&b, 0, "-q", "-H", srv.addr, "-c", "4", "-d", "1",
                  "--profile", file, "--metrics", srv.metrics);
    decode_file(file, &p);
    ck_assert_str_eq(folio_pprof_text(&p, p.types[1].type), "cpu");
    ck_assert_int_ge(p.duration_nanos, 900000000);
    folio_pprof_free(&p);
    expect_status(&b, 2, "-q", "-H", srv.addr, "-n", "10", "--profile", file);
    stop();
}
END_TEST

#endif

static Suite *
profile_suite(void)
{
#ifdef E2E_PROFILE_TOOLS
    Suite *s = suite_create("e2e_profile_tools");
    TCase *tc = tcase_create("tools");

    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_cpu_deep_search);
#else
    Suite *s = suite_create("e2e_profile");
    TCase *tc = tcase_create("profile");

    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_allocs_posting);
    tcase_add_test(tc, test_worker_killed);
    tcase_add_test(tc, test_bad_requests);
    tcase_add_test(tc, test_access);
    tcase_add_test(tc, test_master_debug_replaced);
    tcase_add_test(tc, test_reload_during_profile);
    tcase_add_test(tc, test_heap_rate_reloaded);
    tcase_add_test(tc, test_clients);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
#ifdef E2E_PROFILE_TOOLS
    e2e_require_corpus();
    e2e_require_at("go", go_tool(),
                   "no go on PATH or in /usr/lib/go/bin: apt-get install "
                   "golang-go");
    e2e_require("google-pprof", "google-perftools");
#endif
    return folio_check_run(profile_suite());
}
