/*
 * check_dispatch.c - worker/dispatch.c on a masterless worker
 * (tests/fuzz_harness.h): what a reply leaves in the connection's output
 * buffer, in particular when packing it makes the buffer move its pending
 * bytes to the front (the client had read only part of the earlier
 * replies).  A reply that is dropped (a notification's, or an error's
 * partial result) must be dropped from where it really starts.
 */
#include "config.h"

#include <sys/socket.h>

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/buf.h"
#include "src/err.h"
#include "src/mp.h"
#include "src/rpc.h"
#include "tests/fuzz_harness.h"
#include "tests/check_run.h"
#include "worker/conn.h"
#include "worker/conn_io.h"
#include "worker/dispatch.h"
#include "worker/worker_int.h"

#define CAP 16384

/*
 * An output buffer as a slow reader leaves it: `sent` bytes already
 * written (b_off), `pending` bytes of earlier replies waiting, the end
 * `room` bytes short of the capacity.  The pending bytes are a pattern
 * that must come out unchanged.
 */
static void
fill(struct folio_buf *out, size_t sent, size_t room)
{
    size_t i;

    ck_assert_int_eq(folio_buf_init(out, CAP, 0), 0);
    for (i = 0; i < CAP - room; i++)
        out->b_data[i] = (char)(i * 7);
    out->b_off = sent;
    out->b_len = CAP - room;
}

static void
assert_pattern_kept(const struct folio_buf *out, size_t sent, size_t room)
{
    size_t i, n = CAP - room - sent;

    ck_assert_uint_ge(folio_buf_pending(out), n);
    /* One assertion, not one per byte: each is a message to Check. */
    for (i = 0; i < n; i++)
        if (out->b_data[out->b_off + i] != (char)((sent + i) * 7))
            break;
    ck_assert_msg(i == n, "pending byte %zu changed", i);
}

/* The replies after the earlier pending bytes: how many, the first code. */
static size_t
replies_after(const struct folio_buf *out, size_t earlier, int *code)
{
    return fuzz_check_replies(out->b_data + out->b_off + earlier,
                              folio_buf_pending(out) - earlier, code);
}

static const unsigned char no_params[] = {0x90};
static const unsigned char two_params[] = {0x92, 0x01, 0x02};

/* Every method found at its row; near misses (prefixes, longer names,
 * an embedded NUL, bytes above 0x7f) not. */
/* The slow log's params summary: printable, JSON-like, cut short. */
START_TEST(test_slowlog_summary)
{
    static const unsigned char params[] = {
        0x93,                                      /* [ */
        0xa3, 't', 'h', 'e',                       /* "the", */
        0x82,                                      /* { */
        0xa5, 'l', 'i', 'm', 'i', 't', 0xcd, 0x03, 0xe8, /* "limit": 1000, */
        0xa1, 'q', 0xa3, 'a', '"', 0x01,           /* "q": "a\"\x01" } */
        0xc4, 0x03, 1, 2, 3};                      /* <bin> ] */
    static unsigned char big[4200];
    struct folio_mp_cur c, arr;
    char out[200];
    uint32_t n;
    size_t i;

    folio_mp_cur_init(&c, params, sizeof(params));
    arr = c;
    ck_assert_int_eq(folio_mp_read_array(&arr, &n), 0);
    folio_slowlog_summary(&arr, n, out, sizeof(out));
    ck_assert_str_eq(out, "[\"the\", {\"limit\": 1000, \"q\": "
                          "\"a\\\"\\x01\"}, <bin 3 bytes>]");
    /* A long string: cut, with "...", inside the buffer. */
    big[0] = 0x91;
    big[1] = 0xda;
    big[2] = (unsigned char)(4096 >> 8);
    big[3] = 0;
    for (i = 0; i < 4096; i++)
        big[4 + i] = 'x';
    folio_mp_cur_init(&c, big, 4 + 4096);
    ck_assert_int_eq(folio_mp_read_array(&c, &n), 0);
    folio_slowlog_summary(&c, n, out, sizeof(out));
    ck_assert_uint_le(strlen(out), sizeof(out) - 1);
    ck_assert_ptr_nonnull(strstr(out, "..."));
    /* Malformed: said so, no overrun. */
    folio_mp_cur_init(&c, params, 5);
    ck_assert_int_eq(folio_mp_read_array(&c, &n), 0);
    folio_slowlog_summary(&c, n, out, sizeof(out));
    ck_assert_ptr_nonnull(strstr(out, "(malformed)"));
}
END_TEST

START_TEST(test_method_find)
{
    const struct folio_method *m;
    char name[80];
    unsigned i, row;
    uint32_t len;

    for (i = 0; i < folio_nmethods; i++) {
        len = (uint32_t)strlen(folio_methods[i].name);
        memcpy(name, folio_methods[i].name, len);
        m = folio_method_find(name, len, &row);
        ck_assert_ptr_eq(m, &folio_methods[i]);
        ck_assert_uint_eq(row, i);
        ck_assert_ptr_null(folio_method_find(name, len - 1, &row));
        ck_assert_uint_eq(row, FOLIO_MAX_METHODS);
        name[len] = 'x';
        ck_assert_ptr_null(folio_method_find(name, len + 1, &row));
        name[len] = '\0';
        ck_assert_ptr_null(folio_method_find(name, len + 1, &row));
        name[len - 1] = (char)0xff;
        ck_assert_ptr_null(folio_method_find(name, len, &row));
        name[len - 1] = '\0';
        ck_assert_ptr_null(folio_method_find(name, len, &row));
    }
    ck_assert_ptr_null(folio_method_find("", 0, &row));
    ck_assert_ptr_null(folio_method_find("\xff", 1, &row));
    ck_assert_ptr_null(folio_method_find("a", 1, &row));
}
END_TEST

START_TEST(test_notification_dropped_after_compaction)
{
    struct folio_buf out;
    size_t sent = 8064, room, before;

    /* Every position of the buffer's end relative to the reply's bytes. */
    for (room = 0; room < 800; room++) {
        fill(&out, sent, room);
        before = folio_buf_pending(&out);
        ck_assert_int_eq(fuzz_dispatch("server.methods", no_params,
                                       sizeof(no_params), 1, 0, &out),
                         0);
        ck_assert_msg(folio_buf_pending(&out) == before,
                      "room %zu: a notification left %zu bytes", room,
                      folio_buf_pending(&out) - before);
        assert_pattern_kept(&out, sent, room);
        folio_buf_free(&out);
    }
}
END_TEST

START_TEST(test_error_replaces_result_after_compaction)
{
    struct folio_buf out;
    size_t sent = 8064, room, before;
    int code;

    for (room = 0; room < 64; room++) {
        fill(&out, sent, room);
        before = folio_buf_pending(&out);
        /* Wrong arity: the result's head is packed, then dropped. */
        ck_assert_int_eq(fuzz_dispatch("server.ping", two_params,
                                       sizeof(two_params), 0, 0, &out),
                         0);
        assert_pattern_kept(&out, sent, room);
        ck_assert_uint_eq(replies_after(&out, before, &code), 1);
        ck_assert_int_eq(code, FOLIO_ST_INVALID_ARGUMENT);
        folio_buf_free(&out);
    }
}
END_TEST

START_TEST(test_result_after_compaction)
{
    struct folio_buf out;
    size_t sent = 8064, room, before;
    int code;

    for (room = 0; room < 800; room += 7) {
        fill(&out, sent, room);
        before = folio_buf_pending(&out);
        ck_assert_int_eq(fuzz_dispatch("server.methods", no_params,
                                       sizeof(no_params), 0, 0, &out),
                         0);
        assert_pattern_kept(&out, sent, room);
        ck_assert_uint_eq(replies_after(&out, before, &code), 1);
        ck_assert_int_eq(code, 0);
        folio_buf_free(&out);
    }
}
END_TEST

START_TEST(test_unknown_method_and_admin)
{
    struct folio_buf out;
    int code;

    ck_assert_int_eq(folio_buf_init(&out, 256, 0), 0);
    code = fuzz_call("no.such", no_params, sizeof(no_params), 0, &out);
    ck_assert_int_eq(code, FOLIO_ST_UNIMPLEMENTED);
    code = fuzz_call("server.stats", no_params, sizeof(no_params), 0, &out);
    ck_assert_int_eq(code, FOLIO_ST_PERMISSION_DENIED);
    code = fuzz_call("server.stats", no_params, sizeof(no_params), 1, &out);
    ck_assert_int_eq(code, 0);
    folio_buf_free(&out);
}
END_TEST

/* comments.post [{"path": "/p", "author": "a", "body": body}] */
static size_t
post_params(unsigned char *b, size_t body)
{
    size_t n = 0;

    b[n++] = 0x91;
    b[n++] = 0x83;
    memcpy(b + n,
           "\xa4"
           "path"
           "\xa2"
           "/p"
           "\xa6"
           "author"
           "\xa1"
           "a"
           "\xa4"
           "body",
           22);
    n += 22;
    b[n++] = 0xdb;
    b[n++] = (unsigned char)(body >> 24);
    b[n++] = (unsigned char)(body >> 16);
    b[n++] = (unsigned char)(body >> 8);
    b[n++] = (unsigned char)body;
    memset(b + n, 'x', body);
    return n + body;
}

/*
 * A held reply (comments.post's group commit) released with an error,
 * when packing the result's head moved the pending bytes: the error must
 * replace the held reply, not follow its stale head.  The store is full,
 * so the commit fails with error 8.
 */
START_TEST(test_held_error_after_compaction)
{
    static unsigned char params[70000];
    struct folio_worker *w;
    struct folio_buf rx;
    struct folio_conn *c;
    size_t n, sent = 8064, room, i, pend;
    ssize_t k;
    int sv[2], code;

    fuzz_config("comments_max_size", "1m");
    w = fuzz_setup();
    ck_assert_int_eq(folio_buf_init(&rx, 65536, 0), 0);
    /*
     * Fill the store (outside a connection, posts are not held), with
     * smaller and smaller posts, until even the one below does not fit.
     */
    for (k = 60000; k >= 10; k /= 10) {
        n = post_params(params, (size_t)k);
        for (i = 0; i < 100000; i++)
            if ((code = fuzz_call("comments.post", params, n, 0, &rx)) != 0)
                break;
        ck_assert_int_eq(code, FOLIO_ST_RESOURCE_EXHAUSTED);
    }
    n = post_params(params, 10);
    for (room = 0; room < 24; room++) {
        ck_assert_int_eq(
            socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
        folio_conn_open(w, sv[0], 0, NULL, 0);
        c = w->conns;
        ck_assert_int_eq(c->fd, sv[0]);
        /* Its buffers, as its first bytes would bring them. */
        ck_assert_int_eq(folio_conn_io_attach(c), 0);
        for (i = 0; i < CAP - room; i++)
            c->out.b_data[i] = (char)(i * 7);
        c->out.b_off = sent;
        c->out.b_len = CAP - room;
        pend = CAP - room - sent;
        ck_assert_int_eq(fuzz_dispatch_on(c, "comments.post", params, n, 0,
                                          0, &c->out),
                         0);
        ck_assert_msg(c->state == FOLIO_CONN_HELD, "the post was not held");
        /*
         * The commit runs in the writer thread: the loop waits for it
         * (its eventfd), then the release sends.
         */
        while (c->state == FOLIO_CONN_HELD)
            event_base_loop(w->base, EVLOOP_ONCE);
        ck_assert(c->state != FOLIO_CONN_HELD);
        folio_buf_reset(&rx);
        for (i = 0; i < 100; i++) {
            event_base_loop(w->base, EVLOOP_NONBLOCK);
                k = recv(sv[1], rx.b_data + rx.b_len, folio_buf_space(&rx), 0);
            if (k > 0)
                rx.b_len += (size_t)k;
            else if (k < 0 && errno != EAGAIN)
                break;
            else if (rx.b_len > pend && k < 0)
                break;
        }
        ck_assert_uint_gt(rx.b_len, pend);
        for (i = 0; i < pend; i++)
            if (rx.b_data[i] != (char)((sent + i) * 7))
                break;
        ck_assert_msg(i == pend, "room %zu: pending byte %zu changed", room, i);
        ck_assert_msg(
            fuzz_check_replies(rx.b_data + pend, rx.b_len - pend, &code) == 1,
            "room %zu: not one reply after the pending bytes", room);
        ck_assert_int_eq(code, FOLIO_ST_RESOURCE_EXHAUSTED);
        folio_conn_close(c);
        close(sv[1]);
    }
    folio_buf_free(&rx);
}
END_TEST

/* n pings and lists of "/p", pipelined, as bytes into b (returns length). */
static size_t
pipeline(unsigned char *b, const char *kinds)
{
    size_t n = 0;
    uint32_t id;

    for (id = 1; kinds[id - 1] != '\0'; id++) {
        b[n++] = 0x94;
        b[n++] = 0x00;
        b[n++] = (unsigned char)id;
        if (kinds[id - 1] == 'p') {
            b[n++] = 0xab;
            memcpy(b + n, "server.ping", 11);
            n += 11;
            b[n++] = 0x90;
        } else {
            b[n++] = 0xad;
            memcpy(b + n, "comments.list", 13);
            n += 13;
            b[n++] = 0x91;
            b[n++] = 0xa2;
            b[n++] = '/';
            b[n++] = 'p';
        }
    }
    return n;
}

/*
 * Pages sent by reference (worker/out.c): pings and lists of a 60 KB page
 * pipelined, read back 1000 bytes at a time, come out whole and in order
 * (the buffer's bytes between the references in their places), the page
 * counted once in the budget while it is pending and given back once
 * sent.
 */
START_TEST(test_pages_by_reference)
{
    static const char kinds[] = "plpllp";
    static unsigned char params[70000], req[256];
    struct folio_worker *w;
    struct folio_buf rx;
    struct folio_mp_scan sc;
    struct folio_mp_cur cur;
    struct folio_rpc_msg m;
    struct folio_conn *c;
    const char *why, *s;
    size_t n, off, len, i, nreq = 0, refs_seen = 0;
    uint32_t k, slen;
    ssize_t got;
    int sv[2];

    fuzz_config("max_message_bytes", "1m"); /* the harness's is 8k */
    w = fuzz_setup();
    ck_assert_int_eq(folio_buf_init(&rx, 1u << 20, 0), 0);
    n = post_params(params, 20000);
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(fuzz_call("comments.post", params, n, 0, &rx), 0);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv),
                     0);
    /* A small socket: the pages wait in the output, partly sent. */
    k = 4096;
    ck_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &k, sizeof(k)),
                     0);
    folio_conn_open(w, sv[0], 0, NULL, 0);
    c = w->conns;
    n = pipeline(req, kinds);
    ck_assert_int_eq(send(sv[1], req, n, 0), (ssize_t)n);
    folio_buf_reset(&rx);
    folio_mp_scan_init(&sc, 1u << 20, 32);
    off = 0;
    for (i = 0; i < 100000 && nreq < sizeof(kinds) - 1; i++) {
        event_base_loop(w->base, EVLOOP_NONBLOCK);
        if (c->nrefs > 0) {
            refs_seen++;
            /* the page, once, whatever the number pending */
            ck_assert_uint_le(w->out_total, 70000);
        }
        got = recv(sv[1], rx.b_data + rx.b_len, 1000, 0);
        if (got > 0)
            rx.b_len += (size_t)got;
        while (folio_mp_scan(&sc, rx.b_data + off, rx.b_len - off) ==
               FOLIO_MP_DONE) {
            len = (size_t)sc.pos;
            folio_mp_scan_reset(&sc);
            ck_assert_int_eq(folio_rpc_parse(rx.b_data + off, len, &m, &why),
                             0);
            ck_assert_uint_eq(m.msgid, nreq + 1);
            cur = m.result;
            if (kinds[nreq] == 'p') {
                ck_assert_int_eq(folio_mp_read_str(&cur, &s, &slen), 0);
                ck_assert(folio_mp_str_eq(s, slen, "pong"));
            } else {
                if (folio_mp_read_array(&cur, &k) != 0) {
                    struct folio_mp_cur e = m.error;
                    uint32_t en;
                    int64_t code;
                    const char *em;
                    uint32_t emlen;

                    folio_mp_read_array(&e, &en);
                    folio_mp_read_int(&e, &code);
                    folio_mp_read_str(&e, &em, &emlen);
                    ck_abort_msg("reply %zu: error %lld %.*s", nreq + 1,
                                 (long long)code, (int)emlen, em);
                }
                ck_assert_uint_eq(k, 3);
                ck_assert_uint_gt(len, 60000);
            }
            off += len;
            nreq++;
        }
    }
    ck_assert_uint_eq(nreq, sizeof(kinds) - 1);
    ck_assert_uint_eq(off, rx.b_len);
    ck_assert_uint_gt(refs_seen, 0);
    /* all sent: the references and the budget given back */
    ck_assert_uint_eq(c->nrefs, 0);
    ck_assert_uint_eq(c->out_refbytes, 0);
    ck_assert_uint_eq(w->out_total, 0);
    folio_conn_close(c);
    close(sv[1]);
    folio_buf_free(&rx);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("dispatch");
    TCase *tc = tcase_create("output");

    tcase_add_test(tc, test_method_find);
    tcase_add_test(tc, test_slowlog_summary);
    tcase_add_test(tc, test_notification_dropped_after_compaction);
    tcase_add_test(tc, test_error_replaces_result_after_compaction);
    tcase_add_test(tc, test_result_after_compaction);
    tcase_add_test(tc, test_unknown_method_and_admin);
    tcase_add_test(tc, test_held_error_after_compaction);
    tcase_add_test(tc, test_pages_by_reference);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
