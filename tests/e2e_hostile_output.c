/*
 * e2e_hostile_output.c - hostile clients on the output side, and the
 * operator's way in, against the real foliod (the helpers: tests/hostile.c;
 * the input side: e2e_hostile.c).  Each case runs while a well-behaved
 * client pings and prints its figures (RELIABILITY.md has them):
 *
 *   deep searches unread  400 connections x 25 pipelined searches of 1000
 *                         lines, never read: heap bounded, pings fast
 *   slow readers          200 of them reading 4 KiB every 50 ms
 *   big page unread       200 connections x 3 pipelined lists of a 3.9 MB
 *                         page, never read: the page held once, by
 *                         reference, the heap within the budget
 *   big page over HTTP    the same with GET /v1/comments: its JSON too
 *   send timeout          replies that do not move: closed
 *   admin under flood     9,500 connections: server.stats still answers
 *   fd exhaustion         over RLIMIT_NOFILE: refused at once, not hung
 *   error bytes           error messages are UTF-8 whatever was sent
 *   msgid out of range    -1, 2^32: error 3 with the msgid as sent
 *   held post stats       posts held for group commit counted right
 *
 * The cases on the shared corpus (deep searches, slow readers, error
 * bytes) are e2e_hostile_searches: this file with E2E_HOSTILE_CORPUS,
 * which requires the corpus (e2e_require_corpus).  The good client's
 * latency is printed, not asserted: bench/hostile.sh reports it.
 * CK_RUN_CASE=output, access or replies runs one group.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <iconv.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>

#include <msgpack.h>

#include "src/client.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/rpc.h"
#include "tests/check_run.h"
#include "tests/comments_util.h"
#include "tests/e2e_util.h"
#include "tests/hostile.h"

/*
 * Raise this process's RLIMIT_NOFILE toward `want` (the hard limit too,
 * as root); foliod, started afterwards, inherits it.  Returns the soft
 * limit it could get.
 */
static long
raise_nofile(long want)
{
    struct rlimit rl;

    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur >= (rlim_t)want)
        return (long)rl.rlim_cur;
    if (rl.rlim_max < (rlim_t)want) {
        struct rlimit up = {(rlim_t)want, (rlim_t)want};

        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            return want;
    }
    rl.rlim_cur = rl.rlim_max < (rlim_t)want ? rl.rlim_max : (rlim_t)want;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    return (long)rl.rlim_cur;
}

#ifdef E2E_HOSTILE_CORPUS
/*
 * Under the sanitizers a search of 1000 lines takes tens of milliseconds,
 * not 0.2: the output cases run there at a twentieth of the connections
 * and a fifth of the requests (what they check there is that nothing is
 * lost and that the budget holds).
 */
#ifdef FOLIO_SANITIZED
#define OUTPUT_SCALE 20
#define DEEP_REQS 5
#else
#define OUTPUT_SCALE 1
#define DEEP_REQS 25
#endif

/* n corpus.search ["the", {"limit": 1000}] requests, as bytes. */
static char *
deep_searches(uint32_t n, size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    uint32_t i;

    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    for (i = 0; i < n; i++) {
        folio_rpc_pack_request_head(&pk, 0, i + 1, "corpus.search", 2);
        folio_pack_cstr(&pk, "the");
        msgpack_pack_map(&pk, 1);
        folio_pack_cstr(&pk, "limit");
        msgpack_pack_uint16(&pk, 1000);
    }
    *len = sb.size;
    return sb.data; /* free() it */
}

/* Every one of the DEEP_REQS replies on c, in order, each 1000 lines. */
static void
read_deep_replies(struct folio_client *c)
{
    struct folio_reply r;
    uint32_t i, n;

    c->timeout_ms = 60000;
    for (i = 0; i < DEEP_REQS; i++) {
        ck_assert_int_eq(folio_client_reply(c, &r), 1);
        ck_assert_uint_eq(r.msgid, i + 1);
        ck_assert_int_eq(r.code, 0);
        ck_assert_int_eq(folio_mp_read_map(&r.result, &n), 0);
        ck_assert_uint_eq(n, 2);
    }
}

/*
 * Start a one-worker server with the corpus and `conns` attackers, each
 * having sent DEEP_REQS deep searches; NULL conf if there is no corpus.
 * Returns how many attackers the fd limit allowed.
 */
static int
deep_attack(struct folio_client **c, int conns, const char *extra,
            struct mem *m, struct watch *w)
{
    const char *corpus = e2e_corpus();
    char conf[1024], *batch;
    size_t blen;
    long lim;
    int i, n = conns;

    lim = raise_nofile(conns + 256);
    if (lim < conns + 256) {
        n = (int)lim - 256;
        printf("hostile: RLIMIT_NOFILE %ld: %d connections instead of %d\n",
               lim, n, conns);
    }
    ck_assert_int_gt(n, 0);
    snprintf(conf, sizeof(conf), "workers = 1\ncorpus = %s\n%s", corpus,
             extra != NULL ? extra : "");
    start(conf);
    mem_before(m, 1);
    watch_start(w);
    batch = deep_searches(DEEP_REQS, &blen);
    for (i = 0; i < n; i++) {
        c[i] = e2e_connect(&srv);
        ck_assert_ptr_nonnull(c[i]);
        ck_assert_int_eq(folio_client_send_raw(c[i], batch, blen), 0);
    }
    free(batch);
    return n;
}

/*
 * A budget, not a soft wish: the worker's output_bytes (what its public
 * connections' buffers hold beyond their base) stays within
 * max_output_total, give or take one reply's room.
 */
static void
check_output_bytes(struct folio_client *admin, double budget)
{
    struct folio_reply r;
    double v;

    ck_assert_int_eq(e2e_stats(admin, &r), 0);
    v = e2e_stat_num(&r, "workers", "#0", "output_bytes", NULL);
    ck_assert_msg(v <= budget + 1048576, "output_bytes %.0f over %.0f", v,
                  budget);
}


#define UNREAD_CONNS (400 / OUTPUT_SCALE)

/*
 * 400 connections each pipeline 25 searches of 1000 lines (800 bytes
 * sent, 2 MB of replies each) and read nothing: the worker produces
 * replies only while there is room for them (max_output_bytes per
 * connection, max_output_total in all), so its heap stays bounded (it
 * reached 814 MB), and the good client is answered in milliseconds.
 */
START_TEST(test_deep_searches_unread)
{
    static struct folio_client *c[UNREAD_CONNS];
    struct watch w;
    struct mem m;
    uint64_t t0;
    int i, n;

    n = deep_attack(c, UNREAD_CONNS, NULL, &m, &w);
    /* The attack goes on for 3 s, sampled every 100 ms. */
    t0 = e2e_now_ms();
    while (e2e_now_ms() - t0 < 3000) {
        mem_sample(&m);
        check_output_bytes(m.admin, 32 << 20); /* max_output_total */
        e2e_pace_ms(100);
    }
    watch_stop(&w, "deep searches unread");
    /* Nothing is lost: whoever reads gets every reply, in order. */
    for (i = 0; i < 4; i++)
        read_deep_replies(c[i]);
    printf("hostile: deep searches unread: %d connections x %d searches of "
           "1000 lines, unread; then all replies read on 4 of them\n",
           n, DEEP_REQS);
    for (i = 0; i < n; i++)
        folio_client_close(c[i]);
    mem_after(&m, "deep searches unread", 64, 64);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

#define SLOW_READERS (200 / OUTPUT_SCALE)

/*
 * 200 connections pipeline the same searches and read 4 KiB every 50 ms
 * each: the same bounds (the good client waited 2.1 s).
 */
START_TEST(test_slow_readers)
{
    static struct folio_client *c[SLOW_READERS];
    char buf[4096];
    struct watch w;
    struct mem m;
    uint64_t t0, next, got = 0;
    ssize_t k;
    int i, n;

    n = deep_attack(c, SLOW_READERS, NULL, &m, &w);
    for (i = 0; i < n; i++)
        fcntl(c[i]->fd, F_SETFL, fcntl(c[i]->fd, F_GETFL) | O_NONBLOCK);
    t0 = next = e2e_now_ms();
    while (e2e_now_ms() - t0 < 3000) {
        for (i = 0; i < n; i++)
            if ((k = recv(c[i]->fd, buf, sizeof(buf), 0)) > 0)
                got += (uint64_t)k;
        mem_sample(&m);
        check_output_bytes(m.admin, 32 << 20);
        /* a slow reader's pace: 4 KiB every 50 ms */
        next += 50;
        if (e2e_now_ms() < next)
            e2e_pace_ms((int)(next - e2e_now_ms()));
    }
    watch_stop(&w, "slow readers");
    printf("hostile: slow readers: %d connections x %d searches of 1000 "
           "lines, 4 KiB read every 50 ms: %.1f MB read in 3 s\n",
           n, DEEP_REQS, got / 1e6);
    for (i = 0; i < n; i++)
        folio_client_close(c[i]);
    mem_after(&m, "slow readers", 64, 64);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST
#else

/* ---- a big page, listed and never read ---- */

#define BIG_POSTS 60
#define BIG_BODY 65000
#ifdef FOLIO_SANITIZED
#define BIG_CONNS 16 /* and 4 that read */
#else
#define BIG_CONNS 196
#endif
#define BIG_LISTS 3

/* n pipelined comments.list [path] requests, as bytes (free() them). */
static char *
lists(const char *path, uint32_t n, size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    uint32_t i;

    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    for (i = 0; i < n; i++) {
        folio_rpc_pack_request_head(&pk, 0, i + 1, "comments.list", 1);
        folio_pack_cstr(&pk, path);
    }
    *len = sb.size;
    return sb.data;
}

/* The next reply on c is the whole big page, for msgid id. */
static void
read_big_page(struct folio_client *c, uint32_t id)
{
    struct folio_reply r;
    struct e2e_comment d;
    uint32_t n, i;

    c->timeout_ms = 60000;
    if (folio_client_reply(c, &r) != 1) {
        e2e_print_log(&srv);
        ck_abort_msg("no reply %u", id);
    }
    ck_assert_uint_eq(r.msgid, id);
    ck_assert_int_eq(r.code, 0);
    ck_assert_int_eq(folio_mp_read_array(&r.result, &n), 0);
    ck_assert_uint_eq(n, BIG_POSTS);
    for (i = 0; i < n; i++) {
        ck_assert_int_eq(e2e_comment_decode(&r.result, &d), 0);
        ck_assert_uint_eq(d.body_len, BIG_BODY);
        ck_assert_int_eq(d.body[0], 'a' + (int)(i % 26));
        ck_assert_int_eq(d.body[BIG_BODY - 1], 'a' + (int)(i % 26));
    }
}

/* Post the big page at path (BIG_POSTS comments of BIG_BODY bytes). */
static void
post_big_page(const char *path)
{
    struct folio_client *p;
    struct folio_reply r;
    char *body = malloc(BIG_BODY);
    int i;

    ck_assert_ptr_nonnull(body);
    ck_assert_ptr_nonnull(p = e2e_connect(&srv));
    for (i = 0; i < BIG_POSTS; i++) {
        memset(body, 'a' + i % 26, BIG_BODY);
        ck_assert_int_eq(e2e_comment_post(p, path, "a", body, BIG_BODY, &r), 0);
        ck_assert_int_eq(r.code, 0);
    }
    folio_client_close(p);
    free(body);
}

/* Worker 0's stat `name` (server.stats on admin). */
static double
worker_stat(struct folio_client *admin, const char *name)
{
    struct folio_reply r;

    ck_assert_int_eq(e2e_stats(admin, &r), 0);
    return e2e_stat_num(&r, "workers", "#0", name, NULL);
}

/*
 * The attack kept on for 3 s, sampled every 100 ms: the worker's heap,
 * and its output_bytes within `bound` at every sample.  Returns the
 * output_bytes peak.
 */
static double
sample_attack(struct mem *m, double bound)
{
    struct folio_reply r;
    uint64_t t0 = e2e_now_ms();
    double out, peak = 0;

    while (e2e_now_ms() - t0 < 3000) {
        mem_sample(m);
        ck_assert_int_eq(e2e_stats(m->admin, &r), 0);
        out = e2e_stat_num(&r, "workers", "#0", "output_bytes", NULL);
        if (out > peak)
            peak = out;
        ck_assert_msg(out <= bound, "output_bytes %.0f over max_output_total",
                      out);
        e2e_pace_ms(100); /* the attack kept on, sampled */
    }
    return peak;
}

/*
 * Issue 26's first attack: 60 comments of 65 KB on one page (a 3.9 MB
 * list), and 200 connections that each pipeline 3 comments.list of it
 * (60 bytes) and never read.  The page is cached once and every output
 * points at it (worker/out.c's references): it counts once against
 * max_output_total, a connection's second list waits for its client to
 * read (max_output_bytes), so the worker's heap stays within the budget
 * plus a fixed overhead (it took 1.5 GB: a copy per reply); the good
 * client is answered meanwhile, and whoever reads gets all three pages
 * whole, in order.
 */
START_TEST(test_big_page_unread)
{
    static int fds[BIG_CONNS];
    struct folio_client *rd[4];
    struct watch w;
    struct mem m;
    char *batch;
    size_t blen;
    int i;
    double out_peak;

    raise_nofile(BIG_CONNS + 256);
    start("workers = 1\n");
    post_big_page("/big");
    mem_before(&m, 1);
    watch_start(&w);
    batch = lists("/big", BIG_LISTS, &blen);
    /* Four that will read at the end; the others never do. */
    for (i = 0; i < 4; i++) {
        ck_assert_ptr_nonnull(rd[i] = e2e_connect(&srv));
        ck_assert_int_eq(folio_client_send_raw(rd[i], batch, blen), 0);
    }
    for (i = 0; i < BIG_CONNS; i++) {
        /* a 4 KiB window, set before the connect (autotuning takes MBs) */
        fds[i] = raw_connect_rcvbuf(4096);
        ck_assert_int_eq(send(fds[i], batch, blen, MSG_NOSIGNAL), (ssize_t)blen);
    }
    free(batch);
    /* the budget, and one page's reservation on top at most */
    out_peak = sample_attack(&m, (32 << 20) + (4 << 20));
    watch_stop(&w, "big page unread");
    printf("hostile: big page unread: %d connections x %d lists of a %.1f MB "
           "page, unread: output_bytes at most %.1f MB\n",
           BIG_CONNS, BIG_LISTS, BIG_POSTS * (BIG_BODY + 60) / 1e6,
           out_peak / 1e6);
    /* Nothing is lost: whoever reads gets every page, whole, in order. */
    for (i = 0; i < 4; i++) {
        read_big_page(rd[i], 1);
        read_big_page(rd[i], 2);
        read_big_page(rd[i], 3);
        folio_client_close(rd[i]);
    }
    for (i = 0; i < BIG_CONNS; i++)
        close(fds[i]);
    /*
     * The heap: the budget (32 MiB), the page once in the cache (4 MiB),
     * and each connection's base buffers (32 KiB): at most 48 MiB more.
     */
    mem_after(&m, "big page unread", 48, 48);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* ---- the same big page over HTTP ---- */

/* What non-blocking fd has, read into b[*n..cap): at least a byte. */
static void
http_read_more(int fd, char *b, size_t *n, size_t cap, uint64_t deadline)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    ssize_t k;

    for (;;) {
        ck_assert_msg(*n < cap, "an HTTP answer over %zu bytes", cap);
        if ((k = recv(fd, b + *n, cap - *n, 0)) > 0) {
            *n += (size_t)k;
            return;
        }
        ck_assert_msg(k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
                                errno == EINTR),
                      "the HTTP connection closed: %s",
                      k == 0 ? "EOF" : strerror(errno));
        ck_assert_msg(e2e_now_ms() < deadline, "no HTTP answer in time");
        (void)poll(&pfd, 1, 100);
    }
}

/* Count of needle in p[0..len). */
static unsigned
count_of(const char *p, size_t len, const char *needle)
{
    size_t nl = strlen(needle);
    const char *q = p, *end = p + len;
    unsigned k = 0;

    while ((q = memmem(q, (size_t)(end - q), needle, nl)) != NULL) {
        k++;
        q += nl;
    }
    return k;
}

/*
 * The head of the next HTTP answer on fd (buffered in b, *n bytes of
 * which are read), a 200: its length in *head, its Content-Length
 * returned.
 */
static size_t
read_head(int fd, char *b, size_t *n, size_t cap, size_t *head,
          uint64_t deadline)
{
    const char *eoh, *cl;
    int status;

    while ((eoh = memmem(b, *n, "\r\n\r\n", 4)) == NULL)
        http_read_more(fd, b, n, cap, deadline);
    *head = (size_t)(eoh - b) + 4;
    ck_assert_int_eq(sscanf(b, "HTTP/1.1 %d", &status), 1);
    ck_assert_int_eq(status, 200);
    ck_assert_ptr_nonnull(cl = memmem(b, *head, "Content-Length:", 15));
    return strtoul(cl + 15, NULL, 10);
}

/*
 * The next HTTP answer on fd (as read_head): a 200 whose JSON body holds
 * BIG_POSTS comments; consumed from b.  Returns the body's length.
 */
static size_t
read_big_json(int fd, char *b, size_t *n, size_t cap)
{
    uint64_t deadline = e2e_deadline(e2e_bound_ms(60000, 120000));
    size_t head, len, whole;

    len = read_head(fd, b, n, cap, &head, deadline);
    whole = head + len;
    while (*n < whole)
        http_read_more(fd, b, n, cap, deadline);
    ck_assert_int_eq(b[head], '[');
    ck_assert_int_eq(b[whole - 1], ']');
    ck_assert_uint_eq(count_of(b + head, len, "\"Body\":"), BIG_POSTS);
    memmove(b, b + whole, *n - whole);
    *n -= whole;
    return len;
}

/*
 * Issue 26's first attack over the HTTP face: the same page, 200
 * connections that each pipeline 3 GET /v1/comments for it and never
 * read.  The page's JSON, cached with it, is sent by reference (it took
 * a copy per connection) and budgeted as the RPC replies are: it counts
 * once, a connection's second GET waits for its client to read, and the
 * heap stays within the budget plus a fixed overhead; whoever reads gets
 * every answer whole, in order.
 */
START_TEST(test_big_page_http_unread)
{
    static int fds[BIG_CONNS];
    static char rb[BIG_POSTS * (4 * BIG_BODY)]; /* a reader's answers */
    const char *get = "GET /v1/comments?uri=/big HTTP/1.1\r\n"
                      "Host: folio\r\n\r\n";
    struct watch w;
    struct mem m;
    char batch[512];
    size_t blen = 0, rn, len0 = 0, len;
    int i, k, rd[4];
    double out_peak;

    raise_nofile(BIG_CONNS + 256);
    start("workers = 1\n");
    ck_assert_msg(srv.http[0] != '\0', "no HTTP face");
    post_big_page("/big");
    for (i = 0; i < BIG_LISTS; i++) {
        memcpy(batch + blen, get, strlen(get));
        blen += strlen(get);
    }
    mem_before(&m, 1);
    watch_start(&w);
    /* Four that will read at the end; the others never do. */
    for (i = 0; i < 4; i++) {
        rd[i] = raw_connect_to(srv.http, 0);
        ck_assert_int_eq(send(rd[i], batch, blen, MSG_NOSIGNAL), (ssize_t)blen);
    }
    for (i = 0; i < BIG_CONNS; i++) {
        fds[i] = raw_connect_to(srv.http, 4096);
        ck_assert_int_eq(send(fds[i], batch, blen, MSG_NOSIGNAL),
                         (ssize_t)blen);
    }
    /* the budget, and one page's reservation on top at most */
    out_peak = sample_attack(&m, (32 << 20) + (8 << 20));
    watch_stop(&w, "big page over HTTP");
    printf("hostile: big page over HTTP: %d connections x %d GETs of a "
           "%.1f MB page, unread: output_bytes at most %.1f MB\n",
           BIG_CONNS, BIG_LISTS, BIG_POSTS * (BIG_BODY + 60) / 1e6,
           out_peak / 1e6);
    /* Nothing is lost: whoever reads gets every answer, whole, in order. */
    for (i = 0; i < 4; i++) {
        for (rn = 0, k = 0; k < BIG_LISTS; k++) {
            len = read_big_json(rd[i], rb, &rn, sizeof(rb));
            if (len0 == 0)
                len0 = len;
            ck_assert_uint_eq(len, len0);
        }
        close(rd[i]);
    }
    for (i = 0; i < BIG_CONNS; i++)
        close(fds[i]);
    /*
     * The heap: the budget (32 MiB), the page and its JSON once in the
     * cache (9 MiB), the face's scratch for them (9 MiB) and each
     * connection's base buffers (32 KiB): at most 56 MiB more.
     */
    mem_after(&m, "big page over HTTP", 56, 56);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * Over the budget, an HTTP answer of a page waits its turn, as an RPC
 * reply does (not copied, not refused): with max_output_total 4m, eight
 * connections that GET page /a and do not read hold its JSON (3.9 MB);
 * a GET of page /b waits (output_waits moves, output_bytes stays one
 * page) until they close, then is answered whole.  A HEAD of the page
 * then says its length, and sends no body (the next answer follows).
 */
START_TEST(test_http_page_waits)
{
    const char *get_a = "GET /v1/comments?uri=/a HTTP/1.1\r\nHost: f\r\n\r\n",
               *get_b = "GET /v1/comments?uri=/b HTTP/1.1\r\nHost: f\r\n\r\n",
               *head_b = "HEAD /v1/comments?uri=/b HTTP/1.1\r\nHost: f\r\n\r\n"
                         "GET /status HTTP/1.1\r\nHost: f\r\n\r\n";
    static char rb[BIG_POSTS * (4 * BIG_BODY)];
    struct folio_client *admin;
    uint64_t deadline;
    size_t rn = 0, len, hl;
    double waits0, page;
    int fds[8], b, i;

    start("workers = 1\nmax_output_total = 4m\n");
    post_big_page("/a");
    post_big_page("/b");
    ck_assert_ptr_nonnull(admin = e2e_connect_admin(&srv));
    for (i = 0; i < 8; i++) {
        fds[i] = raw_connect_to(srv.http, 4096);
        ck_assert_int_eq(send(fds[i], get_a, strlen(get_a), MSG_NOSIGNAL),
                         (ssize_t)strlen(get_a));
    }
    /* /a's JSON counts, once: its readers have not taken it. */
    deadline = e2e_deadline(e2e_bound_ms(10000, 30000));
    while ((page = worker_stat(admin, "output_bytes")) < BIG_POSTS * BIG_BODY)
        ck_assert_msg(e2e_wait_more(deadline), "output_bytes %.0f", page);
    waits0 = worker_stat(admin, "output_waits");
    b = raw_connect_to(srv.http, 0);
    ck_assert_int_eq(send(b, get_b, strlen(get_b), MSG_NOSIGNAL),
                     (ssize_t)strlen(get_b));
    deadline = e2e_deadline(e2e_bound_ms(10000, 30000));
    while (worker_stat(admin, "output_waits") == waits0)
        ck_assert_msg(e2e_wait_more(deadline), "the GET of /b did not wait");
    /* one page held, not a copy per reader (it was 8) */
    ck_assert_double_lt(worker_stat(admin, "output_bytes"),
                        2.0 * BIG_POSTS * BIG_BODY);
    ck_assert_int_eq(recv(b, rb, sizeof(rb), MSG_DONTWAIT), -1);
    for (i = 0; i < 8; i++)
        close(fds[i]);
    len = read_big_json(b, rb, &rn, sizeof(rb));
    ck_assert_int_eq(send(b, head_b, strlen(head_b), MSG_NOSIGNAL),
                     (ssize_t)strlen(head_b));
    deadline = e2e_deadline(e2e_bound_ms(10000, 30000));
    ck_assert_uint_eq(read_head(b, rb, &rn, sizeof(rb), &hl, deadline), len);
    memmove(rb, rb + hl, rn - hl);
    rn -= hl;
    while (rn < 5)
        http_read_more(b, rb, &rn, sizeof(rb), deadline);
    ck_assert_msg(memcmp(rb, "HTTP/", 5) == 0, "a body after the HEAD");
    close(b);
    folio_client_close(admin);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * A connection whose replies have not moved for send_timeout is closed
 * (counted in timeouts), freeing what it held.
 */
START_TEST(test_send_timeout)
{
    int fds[8];
    struct folio_client *a, *c;
    struct folio_reply r;
    uint64_t t0, deadline;
    double tmo0, acc0;
    ssize_t k;
    uint32_t id;
    int i;

    start("workers = 1\nsend_timeout = 1s\n");
    a = e2e_connect_admin(&srv);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    tmo0 = e2e_stat_num(&r, "totals", "timeouts", NULL);
    acc0 = e2e_stat_num(&r, "totals", "conns_accepted", NULL);
    /* 10,000 server.methods requests: 7 MB of replies, cheap to make. */
    c = e2e_connect(&srv);
    for (i = 0; i < 10000; i++)
        folio_client_request(c, 0, "server.methods", 0, &id);
    t0 = e2e_now_ms();
    for (i = 0; i < 8; i++) {
        /*
         * A receive buffer of 64 KiB (set: the kernel's autotuning would
         * take megabytes) and never a read: the replies stop moving.
         */
        fds[i] = raw_connect_rcvbuf(65536);
        k = send(fds[i], c->out.data, c->out.size, MSG_NOSIGNAL);
        ck_assert_int_gt(k, 0);
    }
    folio_client_close(c);
    /*
     * Accepted (conns_accepted), then closed by the server (conns_open;
     * its stats, since reading would move the replies).
     */
    deadline = e2e_deadline(e2e_bound_ms(10000, 20000));
    do
        ck_assert_int_eq(e2e_stats(a, &r), 0);
    while (e2e_stat_num(&r, "totals", "conns_accepted", NULL) < acc0 + 8 &&
           e2e_wait_more(deadline));
    ck_assert_double_ge(e2e_stat_num(&r, "totals", "conns_accepted", NULL),
                        acc0 + 8);
    do
        ck_assert_int_eq(e2e_stats(a, &r), 0);
    while (e2e_stat_num(&r, "workers", "#0", "conns_open", NULL) > 1 &&
           e2e_wait_more(deadline));
    printf("hostile: send timeout: 8 connections not reading megabytes of "
           "replies closed after %.1f s (send_timeout 1 s)\n",
           (e2e_now_ms() - t0) / 1000.0);
    ck_assert_double_eq(e2e_stat_num(&r, "workers", "#0", "conns_open", NULL),
                        1);
    /*
     * Not before their replies stood still for send_timeout: the worker
     * stamps them with its turn's clock, read after t0 (1 ms for the two
     * clocks' rounding).
     */
    ck_assert_uint_ge(e2e_now_ms() - t0, 999);
    for (i = 0; i < 8; i++) {
        ck_assert_int_eq(raw_closed(fds[i], 1000), 1);
        close(fds[i]);
    }
    ck_assert_double_ge(e2e_stat_num(&r, "totals", "timeouts", NULL) - tmo0, 8);
    ck_assert_double_eq(e2e_stat_num(&r, "workers", "#0", "output_bytes", NULL),
                        0);
    folio_client_close(a);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* ---- the operator's way in ---- */

/* server.stats over a new admin connection: its time in ms (-1: failed). */
static double
admin_stats_ms(void)
{
    struct folio_client *a;
    struct folio_reply r;
    uint64_t t0 = e2e_now_ms();
    int ok;

    if ((a = e2e_connect_admin(&srv)) == NULL)
        return -1;
    a->timeout_ms = e2e_bound_ms(10000, 20000); /* answered, not refused */
    ok = folio_client_call0(a, "server.stats", &r) == 1 && r.code == 0;
    folio_client_close(a);
    return ok ? (double)(e2e_now_ms() - t0) : -1;
}

#define FLOOD_CONNS 9500

/*
 * 9,500 connections to the public port of one worker (max_connections
 * 4096): the admin socket has its own limit, so server.stats answers
 * throughout (it was refused with error 8, "too many connections"); in
 * 1-46 ms on a quiet machine (bench/hostile.sh): printed, not asserted.
 */
START_TEST(test_admin_under_flood)
{
    static int fds[FLOOD_CONNS];
    struct folio_client *a;
    struct folio_reply r;
    uint64_t t0, deadline;
    double ms, worst = 0, open_ = 0, seen = 0, refused = 0;
    long lim;
    int i, n = FLOOD_CONNS;

    lim = raise_nofile(FLOOD_CONNS + 256);
    if (lim < FLOOD_CONNS + 256) {
        n = (int)lim - 256;
        printf("hostile: RLIMIT_NOFILE %ld: %d connections instead of %d\n",
               lim, n, FLOOD_CONNS);
    }
    ck_assert_int_gt(n, 4096 + 64);
    start("workers = 1\n");
    t0 = e2e_now_ms();
    for (i = 0; i < n; i++) {
        fds[i] = raw_connect_nowait();
        ck_assert_int_ge(fds[i], 0);
        /* Every 500: the operator asks, while the flood goes on. */
        if (i % 500 == 499) {
            ms = admin_stats_ms();
            ck_assert_msg(ms >= 0, "server.stats failed after %d connections",
                          i + 1);
            if (ms > worst)
                worst = ms;
        }
    }
    /*
     * Wait for them to be there (accepted, or closed at accept), then ask
     * once more.  Not every one has to arrive (seen in CI: 9,416 of
     * 9,500): most likely a handshake the kernel completed by SYN cookie
     * while the accept queue was full, dropped with no retransmission,
     * which a client that sends nothing never learns of.  What the test needs is the
     * public port past its limit: 4,096 held and more refused.
     */
    a = e2e_connect_admin(&srv);
    ck_assert_ptr_nonnull(a);
    deadline = e2e_deadline(e2e_bound_ms(20000, 40000));
    do {
        ck_assert_int_eq(e2e_stats(a, &r), 0);
        open_ = e2e_stat_num(&r, "workers", "#0", "conns_open", NULL);
        refused = e2e_stat_num(&r, "totals", "conns_rejected", NULL);
        seen = e2e_stat_num(&r, "totals", "conns_accepted", NULL) + refused;
    } while (seen < n && e2e_wait_more(deadline));
    folio_client_close(a);
    ck_assert_msg(open_ >= 4096 && refused >= 1,
                  "the flood did not pass the limit: %.0f held, %.0f refused "
                  "(%.0f of %d connections reached the server)",
                  open_, refused, seen, n);
    ms = admin_stats_ms();
    if (ms > worst)
        worst = ms;
    printf("hostile: admin under flood: %d connections (%.0f reached the "
           "server) in %.1f s (%.0f held open, %.0f refused; "
           "max_connections 4096 + 64 to refuse): server.stats over "
           "the admin socket answered in at most %.0f ms\n",
           n, seen, (e2e_now_ms() - t0) / 1000.0, open_, refused, worst);
    ck_assert_msg(ms >= 0, "server.stats failed with the flood in place");
    for (i = 0; i < n; i++)
        close(fds[i]);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* The worker's open descriptors (from /proc). */
static int
open_fds(pid_t pid)
{
    char path[64];
    struct dirent *d;
    DIR *dir;
    int n = 0;

    snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
    ck_assert_ptr_nonnull(dir = opendir(path));
    while ((d = readdir(dir)) != NULL)
        if (d->d_name[0] != '.')
            n++;
    closedir(dir);
    return n;
}

/*
 * The bytes the kernel holds for the server's end of our connection fd
 * (rx_queue in /proc/net/tcp), -1 if it is not found.
 */
static long
server_rx_queue(int fd)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    char line[512], local[64], remote[64];
    unsigned lport, rport, txq, rxq;
    long found = -1;
    int sport = atoi(strrchr(srv.addr, ':') + 1);
    FILE *f;

    if (getsockname(fd, (struct sockaddr *)&sin, &len) != 0 ||
        (f = fopen("/proc/net/tcp", "r")) == NULL)
        return -1;
    while (found < 0 && fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, " %*d: %63s %63s %*x %x:%x", local, remote, &txq,
                   &rxq) != 4 ||
            sscanf(strchr(local, ':') + 1, "%x", &lport) != 1 ||
            sscanf(strchr(remote, ':') + 1, "%x", &rport) != 1)
            continue;
        if ((int)lport == sport && rport == ntohs(sin.sin_port))
            found = (long)rxq;
    }
    fclose(f);
    return found;
}

#define EXCESS_CONNS 300

/*
 * Out of descriptors: the worker's RLIMIT_NOFILE set (prlimit) to what it
 * has open plus 40.  300 clients connect and send a ping: those it can
 * take are answered, every other one is closed within a second (383 of
 * 2,400 hung there), with one warning line per interval, not ten a
 * second; server.stats over the admin socket still answers within a
 * second; and once descriptors are back, new clients are served.
 */
START_TEST(test_fd_exhaustion)
{
    static int fds[EXCESS_CONNS];
    static uint64_t sent_ms[EXCESS_CONNS], done_ms[EXCESS_CONNS];
    int late[5];
    const unsigned char ping[] = {0x94, 0x00, 0x01, 0xab, 's', 'e', 'r', 'v',
                                  'e',  'r',  '.',  'p',  'i', 'n', 'g', 0x90};
    struct rlimit low, was;
    struct watch w;
    pid_t pid;
    char buf[4096];
    uint64_t t0, deadline, worst = 0;
    double ms, worst_admin = 0;
    int i, k, answered = 0, closed = 0, lines;
    ssize_t got;

    start("workers = 1\n");
    raise_nofile(EXCESS_CONNS + 256);
    watch_start(&w);
    pid = the_worker();
    ck_assert_int_eq(prlimit(pid, RLIMIT_NOFILE, NULL, &was), 0);
    low = was; /* the soft limit: the hard one could not be raised again */
    low.rlim_cur = (rlim_t)open_fds(pid) + 40;
    ck_assert_int_eq(prlimit(pid, RLIMIT_NOFILE, &low, NULL), 0);
    t0 = e2e_now_ms();
    for (i = 0; i < EXCESS_CONNS; i++) {
        fds[i] = raw_connect();
        ck_assert_int_eq(send(fds[i], ping, sizeof(ping), MSG_NOSIGNAL),
                         (ssize_t)sizeof(ping));
        sent_ms[i] = e2e_now_ms();
        if (i % 100 == 99) {
            ms = admin_stats_ms();
            ck_assert_msg(ms >= 0, "server.stats failed, out of descriptors");
            if (ms > worst_admin)
                worst_admin = ms;
        }
    }
    /* Each: answered (and kept), or closed; none left hanging. */
    deadline = e2e_deadline(e2e_bound_ms(10000, 20000));
    do {
        for (i = 0; i < EXCESS_CONNS; i++) {
            if (done_ms[i] != 0)
                continue;
            got = recv(fds[i], buf, sizeof(buf), 0);
            if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
                closed++;
            else if (got > 0 && memmem(buf, (size_t)got, "pong", 4) != NULL)
                answered++; /* else error 8, out of file descriptors */
            else
                continue;
            done_ms[i] = e2e_now_ms();
            if (done_ms[i] - sent_ms[i] > worst)
                worst = done_ms[i] - sent_ms[i];
        }
    } while (answered + closed < EXCESS_CONNS && e2e_wait_more(deadline));
    printf("hostile: fd exhaustion: %d connections over RLIMIT_NOFILE %llu: "
           "%d answered, %d closed, the slowest in %llu ms; server.stats "
           "over the admin socket in at most %.0f ms\n",
           EXCESS_CONNS, (unsigned long long)low.rlim_cur, answered, closed,
           (unsigned long long)worst, worst_admin);
    ck_assert_int_eq(answered + closed, EXCESS_CONNS);
    ck_assert_int_gt(closed, EXCESS_CONNS / 2);
    /* One line, with the count, not one per refusal. */
    ck_assert(e2e_wait_log(&srv, "closed at accept", e2e_bound_ms(5000, 10000)) ==
              0);
    lines = e2e_log_count(&srv, "closed at accept");
    printf("hostile: fd exhaustion: %d warning line(s) in %.1f s\n", lines,
           (e2e_now_ms() - t0) / 1000.0);
    ck_assert_int_le(lines, 1 + (int)((e2e_now_ms() - t0) / 10000) + 1);
    /*
     * A request already there when the connection is taken off the queue
     * (the worker stopped a moment, so that it is): error 8 for it, then
     * the close.
     */
    watch_pause(&w);
    ck_assert_int_eq(kill(pid, SIGSTOP), 0);
    for (i = 0; i < 5; i++) {
        late[i] = raw_connect();
        ck_assert_int_eq(send(late[i], ping, sizeof(ping), MSG_NOSIGNAL),
                         (ssize_t)sizeof(ping));
    }
    /* The kernel holds each ping on its connection, not yet accepted. */
    deadline = e2e_deadline(e2e_bound_ms(5000, 10000));
    for (i = 0; i < 5; i++)
        while (server_rx_queue(late[i]) < (long)sizeof(ping))
            ck_assert_msg(e2e_wait_more(deadline), "ping %d not queued", i);
    ck_assert_int_eq(kill(pid, SIGCONT), 0);
    watch_resume(&w);
    for (i = 0; i < 5; i++) {
        struct folio_rpc_msg m;
        const char *why;
        size_t n = 0;

        /* All it sends, up to the close: one error reply. */
        deadline = e2e_deadline(e2e_bound_ms(10000, 20000));
        while ((got = recv(late[i], buf + n, sizeof(buf) - n, 0)) != 0 &&
               e2e_now_ms() < deadline) {
            struct pollfd pf = {late[i], POLLIN, 0};

            if (got > 0)
                n += (size_t)got;
            else if (errno != EAGAIN && errno != EINTR)
                break;
            else
                poll(&pf, 1, 100);
        }
        ck_assert_msg(got == 0, "late connection %d: recv %zd (%s) after "
                      "%zu bytes", i, got, got < 0 ? strerror(errno) : "",
                      n);
        ck_assert_int_eq(folio_rpc_parse(buf, n, &m, &why), 0);
        ck_assert_int_eq(m.type, FOLIO_RPC_RESPONSE);
        ck_assert_uint_eq(m.msgid, 1);
        ck_assert(memmem(buf, n, "\x92\x08", 2) != NULL); /* [8, ... */
        ck_assert(memmem(buf, n, "file descriptors", 16) != NULL);
        close(late[i]);
    }
    printf("hostile: fd exhaustion: 5 requests already there when taken "
           "off the queue: error 8, then closed\n");
    /* Descriptors back: new clients are served. */
    for (i = 0; i < EXCESS_CONNS; i++)
        close(fds[i]);
    ck_assert_int_eq(prlimit(pid, RLIMIT_NOFILE, &was, NULL), 0);
    for (k = 0; k < 20; k++) {
        struct folio_client *c = e2e_connect(&srv);

        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(e2e_ping(c), 0);
        folio_client_close(c);
    }
    watch_stop(&w, "fd exhaustion");
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

#endif

#ifdef E2E_HOSTILE_CORPUS
/* ---- the errors' own bytes ---- */

/* Whether s[0..n) is UTF-8 by glibc's strict decoder (iconv). */
static int
strict_utf8(const char *s, size_t n)
{
    iconv_t cd = iconv_open("UTF-32LE", "UTF-8");
    char out[4 * 1024], *in = (char *)s, *o = out;
    size_t il = n, ol = sizeof(out), rc;

    ck_assert(cd != (iconv_t)-1);
    rc = iconv(cd, &in, &il, &o, &ol);
    iconv_close(cd);
    return rc != (size_t)-1 && il == 0;
}

/* A string literal and its length, for bytes that hold NULs. */
#define S(lit) (lit), (sizeof(lit) - 1)

/* Call method with params (msgpack bytes); the error must be strict UTF-8. */
static void
expect_utf8_error(struct folio_client *c, const char *method,
                  const void *params, size_t plen, int code, const char *text)
{
    struct folio_reply r;
    uint32_t id;

    folio_client_request(c, 0, method, 0, &id);
    /* Replace the empty params array the request ends with. */
    c->out.size--;
    msgpack_sbuffer_write(&c->out, params, plen);
    ck_assert_int_eq(folio_client_flush(c), 0);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    ck_assert_uint_eq(r.msgid, id);
    ck_assert_int_eq(r.code, code);
    ck_assert_msg(strict_utf8(r.message, r.message_len),
                  "%s: error message not UTF-8: '%.*s'", method,
                  (int)r.message_len, r.message);
    ck_assert_msg(memmem(r.message, r.message_len, text, strlen(text)) != NULL,
                  "'%.*s' lacks '%s'", (int)r.message_len, r.message, text);
}

/*
 * Every error message is valid UTF-8, whatever the request's bytes: an
 * unknown option key of 30 euro signs (it was cut at 64 bytes, inside a
 * character), of bytes that are not UTF-8, an unknown method and an
 * unknown freight key likewise; duplicate option keys are error 3.
 */
START_TEST(test_error_bytes)
{
    const char *corpus = e2e_corpus();
    unsigned char p[256];
    char conf[512];
    struct folio_client *c;
    size_t n;
    int i;

    snprintf(conf, sizeof(conf), "workers = 1\ncorpus = %s\n", corpus);
    start(conf);
    c = e2e_connect(&srv);
    /* ["hello", {"€€€...": 1}]: 90 bytes of key */
    n = 0;
    memcpy(p, "\x92\xa5hello\x81\xd9\x5a", 10);
    n = 10;
    for (i = 0; i < 30; i++) {
        memcpy(p + n, "\xe2\x82\xac", 3);
        n += 3;
    }
    p[n++] = 0x01;
    expect_utf8_error(c, "corpus.search", p, n, FOLIO_ST_INVALID_ARGUMENT,
                      "unknown option '\xe2\x82\xac");
    /* ["hello", {"\xff\xfe": 1}] */
    expect_utf8_error(c, "corpus.search", S("\x92\xa5hello\x81\xa2\xff\xfe\x01"),
                      FOLIO_ST_INVALID_ARGUMENT, "'\\xff\\xfe'");
    /* ["the", {"limit": 1, "limit": 2}] and the same for offset */
    expect_utf8_error(c, "corpus.search",
                      S("\x92\xa3the\x82\xa5limit\x01\xa5limit\x02"),
                      FOLIO_ST_INVALID_ARGUMENT, "duplicate option \"limit\"");
    expect_utf8_error(c, "corpus.search",
                      S("\x92\xa3the\x82\xa6offset\x01\xa6offset\x02"),
                      FOLIO_ST_INVALID_ARGUMENT,
                      "duplicate option \"offset\"");
    /* an unknown method: "no.\xc3" (a cut character) and a 60-euro name */
    {
        struct folio_reply r;
        char name[256];

        memcpy(name, "no.\xc3", 4);
        msgpack_pack_array(&c->pk, 4);
        msgpack_pack_uint8(&c->pk, 0);
        msgpack_pack_uint32(&c->pk, 77);
        folio_pack_str(&c->pk, name, 4);
        msgpack_pack_array(&c->pk, 0);
        ck_assert_int_eq(folio_client_flush(c), 0);
        ck_assert_int_eq(folio_client_reply(c, &r), 1);
        ck_assert_int_eq(r.code, FOLIO_ST_UNIMPLEMENTED);
        ck_assert(strict_utf8(r.message, r.message_len));
        for (i = 0; i < 60; i++)
            memcpy(name + 3 * i, "\xe2\x82\xac", 3);
        msgpack_pack_array(&c->pk, 4);
        msgpack_pack_uint8(&c->pk, 0);
        msgpack_pack_uint32(&c->pk, 78);
        folio_pack_str(&c->pk, name, 180);
        msgpack_pack_array(&c->pk, 0);
        ck_assert_int_eq(folio_client_flush(c), 0);
        ck_assert_int_eq(folio_client_reply(c, &r), 1);
        ck_assert_int_eq(r.code, FOLIO_ST_UNIMPLEMENTED);
        ck_assert_msg(strict_utf8(r.message, r.message_len), "'%.*s'",
                      (int)r.message_len, r.message);
        ck_assert(memmem(r.message, r.message_len, "...", 3) != NULL);
    }
    ck_assert_int_eq(e2e_ping(c), 0);
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

#else
/*
 * A msgid that is an integer out of range (-1, 2^32, 2^64 - 1): error 3,
 * with the msgid as sent, and the connection goes on (it was closed).
 */
START_TEST(test_msgid_out_of_range)
{
    static const struct {
        const char *what;
        unsigned char b[12];
        size_t n;
    } ids[] = {
        {"-1", {0xff}, 1},
        {"2^32", {0xcf, 0, 0, 0, 1, 0, 0, 0, 0}, 9},
        {"2^64 - 1", {0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 9},
        {"INT64_MIN", {0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}, 9},
    };
    struct folio_client *c;
    msgpack_unpacked u;
    const char *m;
    size_t len, i;
    unsigned char req[32];

    start("workers = 1\n");
    c = e2e_connect(&srv);
    for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        req[0] = 0x94;
        req[1] = 0x00;
        memcpy(req + 2, ids[i].b, ids[i].n);
        memcpy(req + 2 + ids[i].n, "\xabserver.ping\x90", 13);
        ck_assert_int_eq(folio_client_send_raw(c, req, 15 + ids[i].n), 0);
        ck_assert_int_eq(folio_client_recv(c, &m, &len), 1);
        msgpack_unpacked_init(&u);
        ck_assert_int_eq(msgpack_unpack_next(&u, m, len, NULL),
                         MSGPACK_UNPACK_SUCCESS);
        ck_assert_uint_eq(u.data.via.array.size, 4);
        /* [1, the msgid as sent, [3, "msgid must be ..."], nil] */
        ck_assert_uint_eq(u.data.via.array.ptr[0].via.u64, 1);
        ck_assert_msg(len >= 2 + ids[i].n &&
                          memcmp(m + 2, ids[i].b, ids[i].n) == 0,
                      "msgid %s not echoed", ids[i].what);
        ck_assert_uint_eq(u.data.via.array.ptr[2].via.array.ptr[0].via.u64,
                          FOLIO_ST_INVALID_ARGUMENT);
        msgpack_unpacked_destroy(&u);
        ck_assert_int_eq(e2e_ping(c), 0); /* still open */
    }
    printf("hostile: msgid out of range: -1, 2^32, 2^64 - 1, INT64_MIN: "
           "error 3 with the msgid as sent, connection kept\n");
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* ---- statistics of held posts ---- */

static int
post(struct folio_client *c, const char *body, size_t len, int flush)
{
    msgpack_packer *pk = folio_client_request(c, 0, "comments.post", 1, NULL);

    msgpack_pack_map(pk, 3);
    folio_pack_cstr(pk, "path");
    folio_pack_cstr(pk, "/held");
    folio_pack_cstr(pk, "author");
    folio_pack_cstr(pk, "ann");
    folio_pack_cstr(pk, "body");
    folio_pack_str(pk, body, len);
    return flush ? folio_client_flush(c) : 0;
}

/*
 * Posts are held until their group commit: the server counts each under
 * the code it was finally answered with (a full store's error 8 counted
 * as OK before).  That the hold is in the recorded latency is
 * e2e_faults' test_held_post_latency (a slow disk).
 */
#define HELD_SAMPLES 200

START_TEST(test_held_post_stats)
{
    static char body[60000];
    struct folio_client *c[4], *a;
    struct folio_reply r;
    double ok, full;
    int i, k, oks = 0, fulls = 0, other = 0, round;

    start("workers = 1\ncomments_max_size = 1m\n");
    a = e2e_connect_admin(&srv);
    for (k = 0; k < 4; k++)
        c[k] = e2e_connect(&srv);
    /* One post at a time, and a ping on the same connection. */
    for (i = 0; i < HELD_SAMPLES; i++) {
        ck_assert_int_eq(post(c[0], "short", 5, 1), 0);
        ck_assert_int_eq(folio_client_reply(c[0], &r), 1);
        ck_assert_int_eq(r.code, 0);
        ck_assert_int_eq(e2e_ping(c[0]), 0);
    }
    /* Then fill the store from 4 connections at once: group commits. */
    memset(body, 'x', sizeof(body));
    for (round = 0; round < 20 && fulls < 20; round++) {
        for (k = 0; k < 4; k++)
            for (i = 0; i < 4; i++)
                ck_assert_int_eq(post(c[k], body, sizeof(body), i == 3), 0);
        for (k = 0; k < 4; k++)
            for (i = 0; i < 4; i++) {
                ck_assert_int_eq(folio_client_reply(c[k], &r), 1);
                if (r.code == 0)
                    oks++;
                else if (r.code == FOLIO_ST_RESOURCE_EXHAUSTED)
                    fulls++;
                else
                    other++;
            }
    }
    ck_assert_int_eq(other, 0);
    ck_assert_int_ge(fulls, 20);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    ok = e2e_stat_num(&r, "totals", "methods", "comments.post", "codes", "OK",
                      NULL);
    full = e2e_stat_num(&r, "totals", "methods", "comments.post", "codes",
                        "RESOURCE_EXHAUSTED", NULL);
    printf("hostile: held posts: %d acknowledged and %d refused (store "
           "full) after the first %d: counted OK %.0f, RESOURCE_EXHAUSTED "
           "%.0f\n",
           oks, fulls, HELD_SAMPLES, ok, full);
    ck_assert_double_eq(ok, HELD_SAMPLES + oks);
    ck_assert_double_eq(full, fulls);
    for (k = 0; k < 4; k++)
        folio_client_close(c[k]);
    folio_client_close(a);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

#endif

int
main(void)
{
#ifdef E2E_HOSTILE_CORPUS
    Suite *s = suite_create("e2e_hostile_searches");
#else
    Suite *s = suite_create("e2e_hostile_output");
#endif
    TCase *tc;

    setvbuf(stdout, NULL, _IOLBF, 0); /* a failing case's figures too */
#ifdef E2E_HOSTILE_CORPUS
    e2e_require_corpus();
    tc = tcase_create("output");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_deep_searches_unread);
    tcase_add_test(tc, test_slow_readers);
    suite_add_tcase(s, tc);
    tc = tcase_create("replies");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_error_bytes);
    suite_add_tcase(s, tc);
#else
    tc = tcase_create("output");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_big_page_unread);
    tcase_add_test(tc, test_big_page_http_unread);
    tcase_add_test(tc, test_http_page_waits);
    tcase_add_test(tc, test_send_timeout);
    suite_add_tcase(s, tc);
    /* CK_RUN_CASE=access: the operator's way in, at the limits. */
    tc = tcase_create("access");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_admin_under_flood);
    tcase_add_test(tc, test_fd_exhaustion);
    suite_add_tcase(s, tc);
    /* CK_RUN_CASE=replies: what error replies and the stats say. */
    tc = tcase_create("replies");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_msgid_out_of_range);
    tcase_add_test(tc, test_held_post_stats);
    suite_add_tcase(s, tc);
#endif
    return folio_check_run(s);
}
