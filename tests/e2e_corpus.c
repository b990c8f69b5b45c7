/*
 * e2e_corpus.c - the corpus service end to end: corpus.match_count,
 * corpus.search and corpus.info over the wire on the shared corpus, bad
 * params (error 3), no corpus (error 14), a missing corpus directory at
 * start and at reload, a changed corpus served after SIGHUP, the warm
 * start from the index cache, the index mapped once: the workers'
 * private memory does not grow with it (/proc/PID/smaps), and no heap
 * allocation per request once warm (server.stats).  The cases on the
 * shared corpus are e2e_corpus_shared (this file with E2E_SHARED_CORPUS),
 * which requires it (e2e_require_corpus).
 */
#include "config.h"

#include <sys/stat.h>

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "src/client.h"
#include "src/err.h"
#include "src/rpc.h"
#include "tests/e2e_util.h"
#include "tests/check_run.h"

static struct e2e_server srv;

static void
start(const char *conf)
{
    ck_assert_msg(e2e_start(&srv, conf, NULL) == 0, "foliod did not start");
}

static void
stop_clean(void)
{
    ck_assert_int_eq(e2e_stop(&srv), 0);
}

#ifdef E2E_SHARED_CORPUS
static void
start_shared(const char *extra)
{
    char conf[2048];

    snprintf(conf, sizeof(conf), "corpus = %s\n%s", e2e_corpus(),
             extra != NULL ? extra : "");
    start(conf);
}

#endif

/* Send corpus.match_count [q] and receive the reply. */
static void
call_count(struct folio_client *c, const char *q, size_t len,
           struct folio_reply *r)
{
    msgpack_packer *pk;
    uint32_t id;

    pk = folio_client_request(c, 0, "corpus.match_count", 1, &id);
    msgpack_pack_str_with_body(pk, q, len);
    ck_assert_int_eq(folio_client_flush(c), 0);
    ck_assert_int_eq(folio_client_reply(c, r), 1);
    ck_assert_uint_eq(r->msgid, id);
}

static uint64_t
count(struct folio_client *c, const char *q)
{
    struct folio_reply r;
    uint64_t v;

    call_count(c, q, strlen(q), &r);
    ck_assert_msg(r.code == 0, "count '%s': error %d %.*s", q, r.code,
                  (int)r.message_len, r.message);
    ck_assert_int_eq(folio_mp_read_uint(&r.result, &v), 0);
    return v;
}

static void
expect_code(const struct folio_reply *r, int code, const char *text)
{
    ck_assert_int_eq(r->code, code);
    ck_assert_ptr_nonnull(r->message);
    if (text != NULL)
        ck_assert_msg(memmem(r->message, r->message_len, text,
                             strlen(text)) != NULL,
                      "'%.*s' lacks '%s'", (int)r->message_len, r->message,
                      text);
}

struct hit {
    char work[64];
    uint64_t line;
    char text[256];
};

/* corpus.search [q, {limit, offset}] (opts packed when limit >= 0). */
static int
search(struct folio_client *c, const char *q, int64_t limit, int64_t offset,
       uint64_t *total, struct hit *hits, int max, struct folio_reply *r)
{
    msgpack_packer *pk;
    const char *k, *s;
    uint32_t id, n, m, klen, slen, i, j, nlines = 0;
    uint64_t v;

    pk = folio_client_request(c, 0, "corpus.search", limit >= 0 ? 2 : 1, &id);
    msgpack_pack_str_with_body(pk, q, strlen(q));
    if (limit >= 0) {
        msgpack_pack_map(pk, 2);
        msgpack_pack_str_with_body(pk, "limit", 5);
        msgpack_pack_int64(pk, limit);
        msgpack_pack_str_with_body(pk, "offset", 6);
        msgpack_pack_int64(pk, offset);
    }
    ck_assert_int_eq(folio_client_flush(c), 0);
    ck_assert_int_eq(folio_client_reply(c, r), 1);
    ck_assert_uint_eq(r->msgid, id);
    if (r->code != 0)
        return -1;
    ck_assert_int_eq(folio_mp_read_map(&r->result, &n), 0);
    ck_assert_uint_eq(n, 2);
    for (i = 0; i < n; i++) {
        ck_assert_int_eq(folio_mp_read_str(&r->result, &k, &klen), 0);
        if (folio_mp_str_eq(k, klen, "count")) {
            ck_assert_int_eq(folio_mp_read_uint(&r->result, total), 0);
            continue;
        }
        ck_assert(folio_mp_str_eq(k, klen, "lines"));
        ck_assert_int_eq(folio_mp_read_array(&r->result, &nlines), 0);
        for (j = 0; j < nlines; j++) {
            struct hit h;
            uint32_t f;

            memset(&h, 0, sizeof(h));
            ck_assert_int_eq(folio_mp_read_map(&r->result, &m), 0);
            ck_assert_uint_eq(m, 3);
            for (f = 0; f < m; f++) {
                ck_assert_int_eq(folio_mp_read_str(&r->result, &k, &klen), 0);
                if (folio_mp_str_eq(k, klen, "line")) {
                    ck_assert_int_eq(folio_mp_read_uint(&r->result, &v), 0);
                    h.line = v;
                    continue;
                }
                ck_assert_int_eq(folio_mp_read_str(&r->result, &s, &slen), 0);
                if (folio_mp_str_eq(k, klen, "work"))
                    snprintf(h.work, sizeof(h.work), "%.*s", (int)slen, s);
                else if (folio_mp_str_eq(k, klen, "text"))
                    snprintf(h.text, sizeof(h.text), "%.*s", (int)slen, s);
                else
                    ck_abort_msg("unexpected key %.*s", (int)klen, k);
            }
            if ((int)j < max)
                hits[j] = h;
        }
    }
    return (int)nlines;
}

/* A number or bool field of corpus.info; -1 if absent. */
static int64_t
info_field(struct folio_client *c, const char *key, uint32_t *nworks)
{
    struct folio_reply r;
    const char *k;
    uint32_t n, klen, i;
    uint64_t v;
    int64_t out = -1;
    int b;

    ck_assert_int_eq(folio_client_call0(c, "corpus.info", &r), 1);
    ck_assert_int_eq(r.code, 0);
    ck_assert_int_eq(folio_mp_read_map(&r.result, &n), 0);
    for (i = 0; i < n; i++) {
        ck_assert_int_eq(folio_mp_read_str(&r.result, &k, &klen), 0);
        if (folio_mp_str_eq(k, klen, "works") && nworks != NULL) {
            ck_assert_int_eq(folio_mp_read_array(&r.result, nworks), 0);
            continue;
        }
        if (folio_mp_str_eq(k, klen, key)) {
            if (folio_mp_read_uint(&r.result, &v) == 0)
                out = (int64_t)v;
            else if (folio_mp_read_bool(&r.result, &b) == 0)
                out = b;
            else
                ck_abort_msg("%s is neither int nor bool", key);
            continue;
        }
        ck_assert_int_eq(folio_mp_skip(&r.result), 0);
    }
    return out;
}

#ifdef E2E_SHARED_CORPUS
START_TEST(test_methods_over_the_wire)
{
    struct folio_client *c;
    struct folio_reply r;
    struct hit hits[4];
    uint64_t total;
    uint32_t nworks = 0;
    int n;

    start_shared(NULL);
    c = e2e_connect(&srv);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(count(c, "hello"), 349);
    ck_assert_uint_eq(count(c, "world"), 728);
    ck_assert_uint_eq(count(c, "to be, or not to be"), 1);
    ck_assert_uint_eq(count(c, "insolence"), 14);
    ck_assert_uint_eq(count(c, "INSOLENCE"), 14);
    ck_assert_uint_eq(count(c, "hello\nworld"), 0);
    /* binary bytes and NULs are just bytes */
    call_count(c, "a\0b\xff", 4, &r);
    ck_assert_int_eq(r.code, 0);

    n = search(c, "to be, or not to be", -1, 0, &total, hits, 4, &r);
    ck_assert_int_eq(n, 1);
    ck_assert_uint_eq(total, 1);
    ck_assert_str_eq(hits[0].work, "hamlet");
    ck_assert_str_eq(hits[0].text,
                     "HAMLET\tTo be, or not to be: that is the question:");
    ck_assert_uint_gt(hits[0].line, 1000);
    /* pages of a longer list, in corpus order */
    n = search(c, "insolence", 2, 0, &total, hits, 4, &r);
    ck_assert_int_eq(n, 2);
    ck_assert_uint_eq(total, 14);
    {
        struct hit page[4];

        n = search(c, "insolence", 3, 1, &total, page, 4, &r);
        ck_assert_int_eq(n, 3);
        ck_assert_str_eq(page[0].work, hits[1].work);
        ck_assert_uint_eq(page[0].line, hits[1].line);
    }
    n = search(c, "insolence", 10, 13, &total, hits, 4, &r);
    ck_assert_int_eq(n, 1);
    n = search(c, "e", 1000, 0, &total, hits, 4, &r);
    ck_assert_int_eq(n, 1000);
    ck_assert_uint_eq(total, 119839);
    ck_assert_str_eq(hits[0].work, "1kinghenryiv");
    ck_assert_uint_eq(hits[0].line, 1);

    ck_assert_int_eq(info_field(c, "files", &nworks), 42);
    ck_assert_uint_eq(nworks, 42);
    ck_assert_int_eq(info_field(c, "lines", NULL), 172990);
    ck_assert_int_eq(info_field(c, "bytes", NULL), 5283795);
    ck_assert_int_gt(info_field(c, "index_bytes", NULL), 5283795);
    folio_client_close(c);
    stop_clean();
}
END_TEST

START_TEST(test_bad_params)
{
    struct folio_client *c;
    struct folio_reply r;
    msgpack_packer *pk;
    char big[1025];
    uint32_t id;

    start_shared(NULL);
    c = e2e_connect(&srv);
    call_count(c, "", 0, &r);
    expect_code(&r, 3, "empty");
    memset(big, 'a', sizeof(big));
    call_count(c, big, sizeof(big), &r);
    expect_code(&r, 3, "1024");
    call_count(c, big, sizeof(big) - 1, &r);
    ck_assert_int_eq(r.code, 0);
    /* not a str */
    pk = folio_client_request(c, 0, "corpus.match_count", 1, &id);
    msgpack_pack_int(pk, 7);
    ck_assert_int_eq(folio_client_flush(c), 0);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    expect_code(&r, 3, "str");
    pk = folio_client_request(c, 0, "corpus.match_count", 1, &id);
    msgpack_pack_bin_with_body(pk, "abc", 3);
    ck_assert_int_eq(folio_client_flush(c), 0);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    expect_code(&r, 3, "str");
    /* arity */
    ck_assert_int_eq(folio_client_call0(c, "corpus.match_count", &r), 1);
    expect_code(&r, 3, NULL);
    /* search options */
    ck_assert_int_eq(search(c, "e", 1001, 0, NULL, NULL, 0, &r), -1);
    expect_code(&r, 3, "limit");
    ck_assert_int_eq(search(c, "e", 5, -1, NULL, NULL, 0, &r), -1);
    expect_code(&r, 3, "offset");
    ck_assert_int_eq(search(c, "", 5, 0, NULL, NULL, 0, &r), -1);
    expect_code(&r, 3, "empty");
    pk = folio_client_request(c, 0, "corpus.search", 2, &id);
    msgpack_pack_str_with_body(pk, "e", 1);
    msgpack_pack_array(pk, 0);
    ck_assert_int_eq(folio_client_flush(c), 0);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    expect_code(&r, 3, "map");
    pk = folio_client_request(c, 0, "corpus.search", 2, &id);
    msgpack_pack_str_with_body(pk, "e", 1);
    msgpack_pack_map(pk, 1);
    msgpack_pack_str_with_body(pk, "limt", 4);
    msgpack_pack_int(pk, 1);
    ck_assert_int_eq(folio_client_flush(c), 0);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    expect_code(&r, 3, "limt");
    /* nil options are the defaults */
    pk = folio_client_request(c, 0, "corpus.search", 2, &id);
    msgpack_pack_str_with_body(pk, "e", 1);
    msgpack_pack_nil(pk);
    ck_assert_int_eq(folio_client_flush(c), 0);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    ck_assert_int_eq(r.code, 0);
    /* the connection still works */
    ck_assert_uint_eq(count(c, "hello"), 349);
    folio_client_close(c);
    stop_clean();
}
END_TEST

#else
START_TEST(test_no_corpus_is_unavailable)
{
    struct folio_client *c;
    struct folio_reply r;

    start("corpus = off\n");
    c = e2e_connect(&srv);
    call_count(c, "hello", 5, &r);
    expect_code(&r, 14, "make corpus");
    expect_code(&r, 14, "--corpus");
    ck_assert_int_eq(search(c, "hello", -1, 0, NULL, NULL, 0, &r), -1);
    expect_code(&r, 14, "make corpus");
    ck_assert_int_eq(folio_client_call0(c, "corpus.info", &r), 1);
    expect_code(&r, 14, NULL);
    ck_assert_int_eq(e2e_ping(c), 0);
    ck_assert(e2e_log_has(&srv, "no corpus"));
    folio_client_close(c);
    stop_clean();
}
END_TEST

START_TEST(test_missing_corpus_fails_start)
{
    ck_assert_int_eq(e2e_start(&srv, "corpus = /nonexistent/folio-corpus\n",
                               NULL),
                     -1);
    ck_assert(e2e_log_has(&srv, "/nonexistent/folio-corpus"));
    e2e_stop(&srv);
}
END_TEST

START_TEST(test_reload_serves_changed_corpus)
{
    struct folio_client *c;
    char dir[256], path[300], conf[400], moved[300];
    uint64_t deadline;

    snprintf(dir, sizeof(dir), "/tmp/folio-e2e-corpus.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/play.txt", dir);
    ck_assert_int_eq(e2e_write_file(path, "Hello there\nworld\n"), 0);
    snprintf(conf, sizeof(conf), "corpus = %s\n", dir);
    start(conf);
    c = e2e_connect(&srv);
    ck_assert_uint_eq(count(c, "hello"), 1);
    ck_assert_uint_eq(count(c, "again"), 0);
    ck_assert_int_eq(e2e_write_file(path, "Hello there\nhello again\nHELLO\n"),
                     0);
    snprintf(path, sizeof(path), "%s/zz.txt", dir);
    ck_assert_int_eq(e2e_write_file(path, "again\n"), 0);
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    ck_assert_int_eq(e2e_wait_ready(&srv, 2, E2E_READY_MS), 0);
    /* the connection moved to a new worker: it sees the new corpus */
    deadline = e2e_now_ms() + 5000;
    while (count(c, "hello") != 3 && e2e_now_ms() < deadline)
        ;
    ck_assert_uint_eq(count(c, "hello"), 3);
    ck_assert_uint_eq(count(c, "again"), 2);
    ck_assert_int_eq(info_field(c, "files", NULL), 2);
    /* a reload whose corpus is gone keeps the generation serving */
    snprintf(moved, sizeof(moved), "%s.gone", dir);
    ck_assert_int_eq(rename(dir, moved), 0);
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    ck_assert_int_eq(e2e_wait_log(&srv, "reload failed", 5000), 0);
    ck_assert(e2e_log_has(&srv, "corpus directory"));
    ck_assert_uint_eq(count(c, "hello"), 3);
    ck_assert_int_eq(e2e_wait_ready(&srv, 2, 0), 0);
    ck_assert_uint_eq(srv.generation, 2);
    folio_client_close(c);
    stop_clean();
    e2e_rm_rf(moved);
}
END_TEST

#endif

#ifdef E2E_SHARED_CORPUS
START_TEST(test_warm_start_from_cache)
{
    struct folio_client *c;
    char data[256], conf[600];
    int pass;

    snprintf(data, sizeof(data), "/tmp/folio-e2e-data.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(data));
    snprintf(conf, sizeof(conf), "data_dir = %s\n", data);
    for (pass = 0; pass < 2; pass++) {
        start_shared(conf);
        c = e2e_connect(&srv);
        ck_assert_int_eq(info_field(c, "cached", NULL), pass);
        ck_assert_uint_eq(count(c, "hello"), 349);
        ck_assert(e2e_log_has(&srv, pass == 0 ? "built in" : "from the cache"));
        folio_client_close(c);
        stop_clean();
    }
    e2e_rm_rf(data);
}
END_TEST

/* From /proc/PID/smaps: the kB of `field` in the corpus mapping (and,
 * with mapping NULL, in the whole process from smaps_rollup). */
static long
smaps_kb(pid_t pid, const char *mapping, const char *field)
{
    char path[64], line[512];
    size_t flen = strlen(field);
    long total = 0, v;
    int in = mapping == NULL;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid,
             mapping == NULL ? "smaps_rollup" : "smaps");
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        char *sp = strpbrk(line, " \t");

        /* "Field:  N kB" lines; anything else heads a mapping */
        if (sp == NULL || sp == line || sp[-1] != ':') {
            if (mapping != NULL)
                in = strstr(line, mapping) != NULL;
            continue;
        }
        if (in && strncmp(line, field, flen) == 0 && line[flen] == ':' &&
            sscanf(line + flen + 1, "%ld", &v) == 1)
            total += v;
    }
    fclose(f);
    return total;
}

START_TEST(test_index_mapped_once)
{
    struct folio_client *c;
    struct hit hits[4];
    struct folio_reply r;
    pid_t w[8];
    uint64_t total;
    int64_t index_kb;
    long rss, priv, shared, whole_priv;
    int i, k, nw;
    char q[8];

    start_shared("workers = 2\n");
    c = e2e_connect(&srv);
    index_kb = info_field(c, "index_bytes", NULL) / 1024;
    /* Touch much of the image in whichever workers serve: scans of the
     * whole text and many counts over the suffix array. */
    for (k = 0; k < 4; k++) {
        struct folio_client *d = e2e_connect(&srv);

        ck_assert_int_ge(search(d, " ", 10, 121000, &total, hits, 4, &r), 1);
        ck_assert_int_ge(search(d, "e", 10, 119800, &total, hits, 4, &r), 1);
        for (i = 0; i < 3000; i++) {
            snprintf(q, sizeof(q), "%c%c%c", 'a' + i % 26, 'a' + i / 26 % 26,
                     'a' + i / 676);
            count(d, q);
        }
        folio_client_close(d);
    }
    nw = e2e_workers(&srv, w, 8);
    ck_assert_int_eq(nw, 2);
    for (i = 0; i < nw; i++) {
        rss = smaps_kb(w[i], "corpus-", "Rss");
        priv = smaps_kb(w[i], "corpus-", "Private_Dirty") +
               smaps_kb(w[i], "corpus-", "Private_Clean");
        shared = smaps_kb(w[i], "corpus-", "Shared_Clean");
        whole_priv = smaps_kb(w[i], NULL, "Private_Dirty");
        fprintf(stderr,
                "worker %ld: index %lld kB mapped, Rss %ld kB of it "
                "(shared %ld, private %ld); process Private_Dirty %ld kB\n",
                (long)w[i], (long long)index_kb, rss, shared, priv,
                whole_priv);
        if (rss == 0)
            continue; /* this worker served nothing */
        /* file-backed, read-only, resident pages shared: none private */
        ck_assert_int_eq(smaps_kb(w[i], "corpus-", "Private_Dirty"), 0);
        ck_assert_int_gt(shared + priv, 0);
        /* the worker's private memory is far below the index */
        ck_assert_int_lt(whole_priv, index_kb / 4);
    }
    ck_assert_int_gt(smaps_kb(w[0], "corpus-", "Rss") +
                         smaps_kb(w[1], "corpus-", "Rss"),
                     4096);
    folio_client_close(c);
    stop_clean();
}
END_TEST

/*
 * n corpus requests on c, all answered without error: counts pipelined in
 * groups of 50, and a search (limit 1..50) after each group, alone, so the
 * connection's output buffer never needs more than its base size.
 */
static void
requests(struct folio_client *c, int n, int salt)
{
    static const char *qs[] = {"hello", "world", "to be, or not to be",
                               "insolence", "e", "the", " ", "zqxj"};
    struct folio_reply r;
    msgpack_packer *pk;
    uint32_t id;
    int i, k;

    for (i = 0; i < n; i += 51) {
        for (k = 0; k < 50; k++) {
            const char *q = qs[(i + k + salt) % 8];

            pk = folio_client_request(c, 0, "corpus.match_count", 1, &id);
            msgpack_pack_str_with_body(pk, q, strlen(q));
        }
        ck_assert_int_eq(folio_client_flush(c), 0);
        for (k = 0; k < 50; k++) {
            ck_assert_int_eq(folio_client_reply(c, &r), 1);
            ck_assert_int_eq(r.code, 0);
        }
        pk = folio_client_request(c, 0, "corpus.search", 2, &id);
        msgpack_pack_str_with_body(pk, qs[(i + salt) % 8],
                                   strlen(qs[(i + salt) % 8]));
        msgpack_pack_map(pk, 2);
        msgpack_pack_str_with_body(pk, "limit", 5);
        msgpack_pack_int(pk, 1 + i % 50);
        msgpack_pack_str_with_body(pk, "offset", 6);
        msgpack_pack_int(pk, i % 20);
        ck_assert_int_eq(folio_client_flush(c), 0);
        ck_assert_int_eq(folio_client_reply(c, &r), 1);
        ck_assert_int_eq(r.code, 0);
    }
}

START_TEST(test_zero_alloc)
{
    struct folio_client *c[4], *a;
    struct folio_reply r;
    double before, after;
    int i, k;

    start_shared(NULL);
    for (i = 0; i < 4; i++)
        ck_assert_ptr_nonnull(c[i] = e2e_connect(&srv));
    a = e2e_connect_admin(&srv);
    ck_assert_ptr_nonnull(a);
    for (k = 0; k < 2; k++) {
        for (i = 0; i < 4; i++)
            requests(c[i], 510, k + i);
        ck_assert_int_eq(e2e_stats(a, &r), 0);
    }
    before = e2e_stat_num(&r, "totals", "alloc_calls", NULL);
    for (k = 0; k < 5; k++)
        for (i = 0; i < 4; i++)
            requests(c[i], 510, k * 3 + i);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    after = e2e_stat_num(&r, "totals", "alloc_calls", NULL);
    ck_assert_msg(after == before,
                  "10,000 corpus requests made %.0f heap allocations",
                  after - before);
    ck_assert_double_eq(e2e_stat_num(&r, "totals", "methods",
                                     "corpus.match_count", "calls", NULL),
                        7 * 4 * 500);
    for (i = 0; i < 4; i++)
        folio_client_close(c[i]);
    folio_client_close(a);
    stop_clean();
}
END_TEST

#endif

static Suite *
corpus_suite(void)
{
#ifdef E2E_SHARED_CORPUS
    Suite *s = suite_create("e2e_corpus_shared");
    TCase *tc = tcase_create("shared");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_methods_over_the_wire);
    tcase_add_test(tc, test_bad_params);
    tcase_add_test(tc, test_warm_start_from_cache);
    tcase_add_test(tc, test_index_mapped_once);
    tcase_add_test(tc, test_zero_alloc);
#else
    Suite *s = suite_create("e2e_corpus");
    TCase *tc = tcase_create("corpus");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_no_corpus_is_unavailable);
    tcase_add_test(tc, test_missing_corpus_fails_start);
    tcase_add_test(tc, test_reload_serves_changed_corpus);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
#ifdef E2E_SHARED_CORPUS
    e2e_require_corpus();
#endif
    return folio_check_run(corpus_suite());
}
