/*
 * e2e_hostile.c - hostile clients against the real foliod, each while a
 * well-behaved client keeps pinging on its own connection (a thread) and
 * must be answered every time, within a generous bound (its latency is
 * printed: bench/hostile.sh reports it).  Each case measures the
 * worker's memory before, during and after the attack (VmRSS from /proc
 * and server.stats' heap_inuse) and prints one line of figures:
 *
 *   slowloris          hundreds of connections trickling a byte a second
 *   huge claims        headers announcing 4 GiB strings, 2^32 elements
 *   large claims       announced sizes within the limit, never sent
 *   deep nesting       10,000 levels of arrays and maps
 *   truncated          every prefix of a request, then EOF
 *   garbage after      valid requests followed by bytes that are not
 *   max_connections    more connections than allowed (and than the reserve)
 *   never reads        megabytes of pipelined requests, replies unread
 *   notification flood  2 MiB of expensive notifications after a big message
 *                      (e2e_hostile_flood: this file with E2E_HOSTILE_CORPUS,
 *                      which requires the corpus)
 *
 * e2e_server.c has the basic case of several of these; these go further;
 * e2e_hostile_output.c has the attacks on the output side.  Time-outs are
 * short in the configuration, so the suite takes seconds.  The helpers
 * (the good client, memory figures, raw connections) are tests/hostile.c.
 */
#include "config.h"

#include <sys/socket.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "src/client.h"
#include "src/err.h"
#include "src/rpc.h"
#include "tests/check_run.h"
#include "tests/e2e_util.h"
#include "tests/hostile.h"

/* ---- the cases ---- */

#ifndef E2E_HOSTILE_CORPUS
#define SLOW_CONNS 300

START_TEST(test_slowloris)
{
    static int fds[SLOW_CONNS];
    const unsigned char req[] = {0x94, 0x00, 0x01, 0xab, 's', 'e', 'r', 'v',
                                 'e',  'r',  '.',  'p',  'i', 'n', 'g', 0x90};
    struct watch w;
    struct mem m;
    struct folio_client *a;
    struct folio_reply r;
    uint64_t t0, deadline;
    double timeouts0, timeouts1;
    int i, open, round = 0;

    /* Every message must be complete 1.5 s after its first byte. */
    start("workers = 1\nrequest_timeout = 1500ms\nidle_timeout = 60s\n");
    a = e2e_connect_admin(&srv);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    timeouts0 = e2e_stat_num(&r, "totals", "timeouts", NULL);
    mem_before(&m, 1);
    watch_start(&w);
    for (i = 0; i < SLOW_CONNS; i++)
        fds[i] = raw_connect();
    /*
     * One byte a second each, never a whole request (16 bytes): closed by
     * request_timeout, within the suite's bound (less than 16 s).
     */
    t0 = e2e_now_ms();
    deadline = t0 + (uint64_t)(e2e_bound_ms(10000, 15000) < 15000
                                   ? e2e_bound_ms(10000, 15000)
                                   : 15000);
    open = SLOW_CONNS;
    while (open > 0 && e2e_now_ms() < deadline) {
        for (i = 0; i < SLOW_CONNS; i++) {
            if (fds[i] < 0)
                continue;
            if (send(fds[i], &req[round % sizeof(req)], 1, MSG_NOSIGNAL) != 1 ||
                raw_closed(fds[i], 0)) {
                close(fds[i]);
                fds[i] = -1;
                open--;
            }
        }
        round++;
        mem_sample(&m);
        /* The rest of the second, watching for closes. */
        while (e2e_now_ms() < t0 + (uint64_t)round * 1000 && open > 0) {
            for (i = 0; i < SLOW_CONNS; i++) {
                if (fds[i] >= 0 && raw_closed(fds[i], 0)) {
                    close(fds[i]);
                    fds[i] = -1;
                    open--;
                }
            }
            e2e_pace_ms(20);
        }
    }
    printf("hostile: slowloris: %d connections, %d bytes each, all closed "
           "%.1f s after their first byte (request_timeout 1.5 s)\n",
           SLOW_CONNS, round, (e2e_now_ms() - t0) / 1000.0);
    ck_assert_msg(open == 0, "%d slow connections still open after %.1f s",
                  open, (e2e_now_ms() - t0) / 1000.0);
    watch_stop(&w, "slowloris");
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    timeouts1 = e2e_stat_num(&r, "totals", "timeouts", NULL);
    ck_assert_msg(timeouts1 - timeouts0 >= SLOW_CONNS, "timeouts counted: %.0f",
                  timeouts1 - timeouts0);
    folio_client_close(a);
    mem_after(&m, "slowloris", 32, 16);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* A header announcing more than any limit: error 8, close, no allocation. */
START_TEST(test_huge_claims)
{
    static const struct {
        const char *what;
        unsigned char b[12];
        size_t n;
        int code; /* 0: no reply expected */
    } claims[] = {
        {"str 32 of 4 GiB - 1",
         {0x94, 0, 5, 0xdb, 0xff, 0xff, 0xff, 0xff},
         8,
         FOLIO_ST_RESOURCE_EXHAUSTED},
        {"bin 32 of 4 GiB - 1",
         {0x94, 0, 5, 0xc6, 0xff, 0xff, 0xff, 0xff},
         8,
         FOLIO_ST_RESOURCE_EXHAUSTED},
        {"ext 32 of 4 GiB - 1",
         {0x94, 0, 5, 0xc9, 0xff, 0xff, 0xff, 0xff, 0x01},
         9,
         FOLIO_ST_RESOURCE_EXHAUSTED},
        {"array 32 of 2^32 - 1 params",
         {0x94, 0, 5, 0xa1, 'x', 0xdd, 0xff, 0xff, 0xff, 0xff},
         10,
         FOLIO_ST_RESOURCE_EXHAUSTED},
        {"map 32 of 2^32 - 1 pairs in params",
         {0x94, 0, 5, 0xa1, 'x', 0x91, 0xdf, 0xff, 0xff, 0xff, 0xff},
         11,
         FOLIO_ST_RESOURCE_EXHAUSTED},
        {"message: array 32 of 2^32 - 1", {0xdd, 0xff, 0xff, 0xff, 0xff}, 5, 0},
        {"message: str 32 of 4 GiB - 1", {0xdb, 0xff, 0xff, 0xff, 0xff}, 5, 0},
    };
    struct folio_client *c;
    struct watch w;
    struct mem m;
    size_t i;
    int rep;

    start("workers = 1\n"); /* max_message_bytes: the default, 4 MiB */
    mem_before(&m, 1);
    watch_start(&w);
    for (i = 0; i < sizeof(claims) / sizeof(claims[0]); i++) {
        c = e2e_connect(&srv);
        ck_assert_int_eq(folio_client_send_raw(c, claims[i].b, claims[i].n), 0);
        if (claims[i].code != 0) {
            expect_error(c, 5, claims[i].code, "max_message_bytes");
            rep = expect_close(c);
            ck_assert_int_eq(rep, 0);
        } else {
            ck_assert_msg(expect_close(c) == 0, "%s: answered", claims[i].what);
        }
        folio_client_close(c);
        mem_sample(&m);
    }
    watch_stop(&w, "huge claims");
    mem_after(&m, "huge claims", 4, 4);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * Claims within the limit (a str of 4 MiB - 64 bytes) that never come:
 * the server makes room for the message, but only the bytes that arrive
 * cost memory, and request_timeout ends them.
 */
#define CLAIM_CONNS 100

START_TEST(test_large_claims_unsent)
{
    static struct folio_client *c[CLAIM_CONNS];
    unsigned char fill[1000];
    struct watch w;
    struct mem m;
    uint32_t len = 4 * 1024 * 1024 - 64;
    int i;

    start("workers = 1\nrequest_timeout = 2s\n");
    memset(fill, 'a', sizeof(fill));
    mem_before(&m, 1);
    watch_start(&w);
    for (i = 0; i < CLAIM_CONNS; i++) {
        unsigned char s[5] = {0xdb, (unsigned char)(len >> 24),
                              (unsigned char)(len >> 16),
                              (unsigned char)(len >> 8), (unsigned char)len};

        c[i] = e2e_connect(&srv);
        /* A valid start, a 4 MiB str announced, 1000 bytes of it sent. */
        ck_assert_int_eq(folio_client_send_raw(c[i],
                                               "\x94\x00\x07\xb2"
                                               "corpus.match_count\x91",
                                               23),
                         0);
        ck_assert_int_eq(folio_client_send_raw(c[i], s, sizeof(s)), 0);
        ck_assert_int_eq(folio_client_send_raw(c[i], fill, sizeof(fill)), 0);
    }
    /* The attack held for a second, memory sampled meanwhile. */
    for (i = 0; i < 20; i++) {
        e2e_pace_ms(50);
        mem_sample(&m);
    }
    /* All of them closed by request_timeout, without a reply. */
    for (i = 0; i < CLAIM_CONNS; i++) {
        ck_assert_int_eq(expect_close(c[i]), 0);
        folio_client_close(c[i]);
    }
    watch_stop(&w, "large claims");
    printf("hostile: large claims: %d connections each announcing a %u-byte "
           "str and sending 1000 bytes of it\n",
           CLAIM_CONNS, len);
    /*
     * 100 x 4 MiB announced: the worker grows each buffer as the bytes
     * come (it used to reserve the whole claim: 400 MB of heap).
     */
    mem_after(&m, "large claims", 24, 16);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_deep_nesting)
{
    static unsigned char deep[3 * 10000 + 64];
    struct folio_client *c;
    struct watch w;
    struct mem m;
    size_t n;
    int i, kind;

    start("workers = 1\n"); /* max_depth: the default, 32 */
    mem_before(&m, 1);
    watch_start(&w);
    for (kind = 0; kind < 3; kind++) {
        /* [0, 9, "x", [[[[... 10,000 deep: arrays, maps, or bare. */
        n = 0;
        if (kind < 2) {
            memcpy(deep, "\x94\x00\x09\xa1x", 5);
            n = 5;
        }
        for (i = 0; i < 10000; i++) {
            if (kind == 1) {
                deep[n++] = 0x81;
                deep[n++] = 0xa1;
                deep[n++] = 'k';
            } else {
                deep[n++] = 0x91;
            }
        }
        c = e2e_connect(&srv);
        ck_assert_int_eq(folio_client_send_raw(c, deep, n), 0);
        if (kind < 2)
            expect_error(c, 9, FOLIO_ST_INVALID_ARGUMENT, "max_depth");
        ck_assert_int_eq(expect_close(c), 0);
        folio_client_close(c);
        mem_sample(&m);
    }
    /* 31 levels of params are fine: answered (wrong arity), not closed. */
    c = e2e_connect(&srv);
    n = 0;
    memcpy(deep, "\x94\x00\x0a\xabserver.ping", 15);
    n = 15;
    for (i = 0; i < 31; i++)
        deep[n++] = 0x91;
    deep[n++] = 0xc0;
    ck_assert_int_eq(folio_client_send_raw(c, deep, n), 0);
    expect_error(c, 10, FOLIO_ST_INVALID_ARGUMENT, "takes 0 params");
    ck_assert_int_eq(e2e_ping(c), 0);
    folio_client_close(c);
    watch_stop(&w, "deep nesting");
    mem_after(&m, "deep nesting", 4, 4);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* Every prefix of a request, then EOF: closed, never answered. */
START_TEST(test_truncated)
{
    struct folio_client *c, *b;
    struct watch w;
    struct mem m;
    msgpack_packer *pk;
    char *req;
    size_t len, i;
    uint32_t id;
    int answered = 0;

    start("workers = 1\nfreight_dir = off\ncatalog = off\n");
    mem_before(&m, 1);
    watch_start(&w);
    /* A request with params of several types, as bytes. */
    b = e2e_connect(&srv);
    pk = folio_client_request(b, 0, "freight.quote", 2, &id);
    folio_pack_cstr(pk, "01310-100");
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 2);
    folio_pack_cstr(pk, "weight_g");
    msgpack_pack_uint32(pk, 70000);
    folio_pack_cstr(pk, "qty");
    msgpack_pack_int(pk, 3);
    len = b->out.size;
    req = malloc(len);
    memcpy(req, b->out.data, len);
    msgpack_sbuffer_clear(&b->out);
    folio_client_close(b);
    for (i = 0; i <= len; i++) {
        c = e2e_connect(&srv);
        ck_assert_int_eq(folio_client_send_raw(c, req, i), 0);
        shutdown(c->fd, SHUT_WR);
        answered = expect_close(c);
        /* Only the whole request is answered (freight is off: error 14). */
        ck_assert_msg(answered == (i == len), "prefix %zu/%zu: %d replies", i,
                      len, answered);
        folio_client_close(c);
    }
    /* A truncated message left hanging is ended by request_timeout. */
    free(req);
    watch_stop(&w, "truncated");
    printf("hostile: truncated: %zu prefixes of a %zu-byte request, each "
           "closed unanswered at EOF\n",
           len, len);
    mem_after(&m, "truncated", 4, 4);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

START_TEST(test_garbage_after_valid)
{
    static const struct {
        const char *what;
        const char *b;
        size_t n;
    } junk[] = {
        {"0xc1", "\xc1\xc1\xc1\xc1", 4},
        {"HTTP", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27},
        {"TLS ClientHello", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11},
        {"a bare int", "\x07", 1},
        {"a str", "\xa5hello", 6},
        {"a 5-element array", "\x95\x00\x01\xa1x\x90\xc0", 7},
        {"type 9", "\x94\x09\x01\xa1x\x90", 6},
        {"a 2-element array", "\x92\x00\x01", 3},
    };
    struct folio_client *c;
    struct folio_reply r;
    struct watch w;
    struct mem m;
    uint32_t first = 0, id;
    size_t j;
    int i, extra;

    start("workers = 1\n");
    mem_before(&m, 1);
    watch_start(&w);
    for (j = 0; j < sizeof(junk) / sizeof(junk[0]); j++) {
        c = e2e_connect(&srv);
        /* 100 good requests, then the junk, in one write. */
        for (i = 0; i < 100; i++) {
            folio_client_request(c, 0, "server.ping", 0, &id);
            if (i == 0)
                first = id;
        }
        msgpack_sbuffer_write(&c->out, junk[j].b, junk[j].n);
        ck_assert_int_eq(folio_client_flush(c), 0);
        for (i = 0; i < 100; i++) {
            ck_assert_int_eq(folio_client_reply(c, &r), 1);
            ck_assert_uint_eq(r.msgid, first + (uint32_t)i);
            ck_assert_int_eq(r.code, 0);
        }
        /* Then at most one error reply (when a msgid can be read), closed. */
        extra = expect_close(c);
        ck_assert_msg(extra <= 1, "%s: %d replies after the junk", junk[j].what,
                      extra);
        folio_client_close(c);
        mem_sample(&m);
    }
    watch_stop(&w, "garbage after valid");
    mem_after(&m, "garbage after valid", 4, 4);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

#define MAXC 50
#define RESERVE 64 /* FOLIO_CONN_RESERVE: refused with a reply */

START_TEST(test_max_connections)
{
    static struct folio_client *c[MAXC + RESERVE + 20];
    struct folio_client *a;
    struct folio_reply r;
    struct watch w;
    struct mem m;
    uint32_t id;
    int i, refused = 0, dropped = 0, n = MAXC + RESERVE + 20;
    double rejected;

    start("workers = 1\nmax_connections = 50\n");
    mem_before(&m, 0);
    watch_start(&w); /* the good client holds one of the 50 */
    for (i = 0; i < n; i++) {
        c[i] = e2e_connect(&srv);
        ck_assert_ptr_nonnull(c[i]);
        /* Accepted in order: keep the accept queue short. */
        if (i < MAXC - 1)
            ck_assert_int_eq(e2e_ping(c[i]), 0);
    }
    for (i = MAXC - 1; i < n; i++) {
        folio_client_request(c[i], 0, "server.ping", 0, &id);
        if (folio_client_flush(c[i]) != 0) {
            dropped++;
            continue;
        }
        switch (folio_client_reply(c[i], &r)) {
        case 1:
            ck_assert_uint_eq(r.msgid, id);
            ck_assert_int_eq(r.code, FOLIO_ST_RESOURCE_EXHAUSTED);
            ck_assert(memmem(r.message, r.message_len, "too many connections",
                             20) != NULL);
            refused++;
            ck_assert_int_eq(expect_close(c[i]), 0);
            break;
        default:
            dropped++; /* over the reserve too: closed at once */
            break;
        }
        mem_sample(&m);
    }
    printf("hostile: max_connections: %d connections over a limit of %d: %d "
           "refused with error 8, %d closed at once\n",
           n - (MAXC - 1), MAXC, refused, dropped);
    ck_assert_int_ge(refused, RESERVE - 1);
    ck_assert_int_eq(refused + dropped, n - (MAXC - 1));
    /* The first 49 are served; once some leave, newcomers are too. */
    for (i = 0; i < MAXC - 1; i++)
        ck_assert_int_eq(e2e_ping(c[i]), 0);
    for (i = 0; i < n; i++)
        folio_client_close(c[i]);
    {
        uint64_t deadline = e2e_now_ms() + 3000;
        int ok = 0;

        while (!ok && e2e_now_ms() < deadline) {
            struct folio_client *d = e2e_connect(&srv);

            ok = d != NULL && e2e_ping(d) == 0;
            folio_client_close(d);
        }
        ck_assert(ok);
    }
    a = e2e_connect_admin(&srv);
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    rejected = e2e_stat_num(&r, "totals", "conns_rejected", NULL);
    ck_assert_msg(rejected >= refused + dropped, "conns_rejected %.0f",
                  rejected);
    folio_client_close(a);
    watch_stop(&w, "max_connections");
    mem_after(&m, "max_connections", 16, 8);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * A client that pipelines megabytes of requests and never reads: the
 * server stops reading from it once max_output_bytes of replies wait, so
 * its memory stays bounded; when the client finally reads, every reply
 * is there, in order.
 */
START_TEST(test_never_reads)
{
    struct folio_client *c;
    struct folio_reply r;
    struct watch w;
    struct mem m;
    char *batch;
    size_t blen, off = 0;
    uint64_t sent = 0, quiet_since;
    uint32_t id, first = 0, i, nreq = 0, per_batch = 1000;
    ssize_t k;

    start("workers = 1\nmax_output_bytes = 64k\n");
    mem_before(&m, 1);
    watch_start(&w);
    c = e2e_connect(&srv);
    /* 1000 server.methods requests (each reply about 700 bytes). */
    for (i = 0; i < per_batch; i++)
        folio_client_request(c, 0, "server.methods", 0, i == 0 ? &first : &id);
    blen = c->out.size;
    batch = malloc(blen);
    memcpy(batch, c->out.data, blen);
    msgpack_sbuffer_clear(&c->out);
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
    /* Send until the server has not taken a byte for half a second. */
    quiet_since = e2e_now_ms();
    while (e2e_now_ms() - quiet_since < 500 && sent < 64u << 20) {
        k = send(c->fd, batch + off, blen - off, MSG_NOSIGNAL);
        if (k > 0) {
            sent += (uint64_t)k;
            off += (size_t)k;
            if (off == blen) {
                off = 0;
                nreq += per_batch;
            }
            quiet_since = e2e_now_ms();
            continue;
        }
        ck_assert_msg(errno == EAGAIN || errno == EWOULDBLOCK, "send: %s",
                      strerror(errno));
        mem_sample(&m);
        {
            struct pollfd p = {c->fd, POLLOUT, 0};

            poll(&p, 1, 10); /* room to send, or 10 ms more of quiet */
        }
    }
    mem_sample(&m);
    printf("hostile: never reads: %.1f MB of requests (%u whole batches of "
           "%u) sent before the server stopped reading\n",
           sent / 1e6, nreq / per_batch, per_batch);
    ck_assert_msg(sent < 32u << 20, "the server took %llu bytes unread",
                  (unsigned long long)sent);
    /* The worker is bounded while the replies wait. */
    {
        long held = rss_kb(the_worker());

        printf("hostile: never reads: worker RSS %ld kB with the replies "
               "unread (before: %ld kB)\n",
               held, m.rss_kb);
        if (check_memory())
            ck_assert_msg(held - m.rss_kb <= 16 * 1024, "RSS grew by %ld kB",
                          held - m.rss_kb);
    }
    /* Then read every reply, in order; and finish the partial batch. */
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) & ~O_NONBLOCK);
    for (i = 0; i < nreq; i++) {
        ck_assert_int_eq(folio_client_reply(c, &r), 1);
        ck_assert_uint_eq(r.msgid, first + i % per_batch);
        ck_assert_int_eq(r.code, 0);
    }
    if (off > 0) {
        ck_assert_int_eq(folio_client_send_raw(c, batch + off, blen - off), 0);
        for (i = 0; i < per_batch; i++) {
            ck_assert_int_eq(folio_client_reply(c, &r), 1);
            ck_assert_uint_eq(r.msgid, first + i);
            ck_assert_int_eq(r.code, 0);
        }
        nreq += per_batch;
    }
    ck_assert_int_eq(e2e_ping(c), 0);
    printf("hostile: never reads: then all %u replies read, in order\n", nreq);
    free(batch);
    folio_client_close(c);
    watch_stop(&w, "never reads");
    mem_after(&m, "never reads", 16, 16);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

#else
/*
 * A flood of expensive notifications (no replies, so no output
 * backpressure) after a large message grew the connection's input buffer:
 * each connection is served a share of messages per turn of the loop, so
 * the good client waits milliseconds, not until the flood is done (6.5 s
 * for 3 MiB of corpus.search notifications before the share existed).
 */
/*
 * Under the sanitizers a search costs several times more: a smaller
 * flood (still thousands of turns' shares) fits the case's bound.
 */
#ifdef FOLIO_SANITIZED
#define FLOOD_BYTES (512u << 10)
#else
#define FLOOD_BYTES (2u << 20)
#endif

START_TEST(test_notification_flood)
{
    const char *corpus = e2e_corpus();
    struct folio_client *c;
    struct folio_reply r;
    struct watch w;
    struct mem m;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    char conf[512], *big;
    size_t flood = getenv("E2E_VALGRIND") != NULL ? 64u << 10 : FLOOD_BYTES;
    uint64_t t0;
    uint32_t id, n = 0;

    snprintf(conf, sizeof(conf), "workers = 1\ncorpus = %s\n", corpus);
    start(conf);
    mem_before(&m, 1);
    watch_start(&w);
    c = e2e_connect(&srv);
    /* A 3 MiB query (refused: over 1024 bytes) grows the input buffer. */
    big = malloc(3u << 20);
    memset(big, 'x', 3u << 20);
    folio_pack_str(folio_client_request(c, 0, "corpus.match_count", 1, &id),
                   big, 3u << 20);
    ck_assert_int_eq(folio_client_flush(c), 0);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    ck_assert_int_eq(r.code, FOLIO_ST_INVALID_ARGUMENT);
    free(big);
    /* Then the flood, and a ping at its end. */
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    while (sb.size < flood) {
        folio_rpc_pack_request_head(&pk, 1, 0, "corpus.search", 2);
        folio_pack_cstr(&pk, "e");
        msgpack_pack_map(&pk, 1);
        folio_pack_cstr(&pk, "limit");
        msgpack_pack_uint16(&pk, 1000);
        n++;
    }
    t0 = e2e_now_ms();
    ck_assert_int_eq(folio_client_send_raw(c, sb.data, sb.size), 0);
    msgpack_sbuffer_destroy(&sb);
    /* All of it served first: within the case's own bound (90 s, 360 s
     * under the sanitizers), whatever the machine's pace. */
    c->timeout_ms = e2e_bound_ms(85000, 340000);
    ck_assert_int_eq(e2e_ping(c), 0);
    printf("hostile: notification flood: %u corpus.search notifications "
           "(%zu bytes) after a 3 MiB message, served in %.1f s\n",
           n, flood, (e2e_now_ms() - t0) / 1000.0);
    mem_sample(&m);
    folio_client_close(c);
    watch_stop(&w, "notification flood");
    mem_after(&m, "notification flood", 24, 16);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

#endif

int
main(void)
{
#ifdef E2E_HOSTILE_CORPUS
    Suite *s = suite_create("e2e_hostile_flood");
#else
    Suite *s = suite_create("e2e_hostile");
#endif
    TCase *tc = tcase_create("hostile");

    setvbuf(stdout, NULL, _IOLBF, 0); /* a failing case's figures too */
    tcase_set_timeout(tc, 90);
#ifdef E2E_HOSTILE_CORPUS
    e2e_require_corpus();
    tcase_add_test(tc, test_notification_flood);
#else
    tcase_add_test(tc, test_slowloris);
    tcase_add_test(tc, test_huge_claims);
    tcase_add_test(tc, test_large_claims_unsent);
    tcase_add_test(tc, test_deep_nesting);
    tcase_add_test(tc, test_truncated);
    tcase_add_test(tc, test_garbage_after_valid);
    tcase_add_test(tc, test_max_connections);
    tcase_add_test(tc, test_never_reads);
#endif
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
