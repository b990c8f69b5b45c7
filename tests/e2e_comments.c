/*
 * e2e_comments.c - the comments service through the real foliod:
 * post/list/delete over the wire and their errors, delete refused off the
 * admin socket, 8 clients posting at once to several workers (every
 * acknowledged comment listed exactly once, ids unique and increasing, the
 * map never grown under them), a full store answering error 8, no allocation
 * per list request, and the crash test: kill -9 the master and every
 * worker while clients post, restart on the same data directory, and find
 * every acknowledged comment intact.
 *
 * Built twice: tests/e2e_comments runs it on the LMDB backend, and
 * tests/e2e_comments_pg (E2E_POSTGRES) on a real PostgreSQL the program
 * starts (tests/pg_util.c), each test on a database of its own; the
 * tests of LMDB's size ceiling run on LMDB only.
 */
#include "config.h"

#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "src/client.h"
#include "src/err.h"
#include "src/rpc.h"
#include "tests/check_run.h"
#include "tests/comments_util.h"
#include "tests/e2e_util.h"
#include "worker/comments_pg.h"

#define STR_(x) #x
#define STR(x) STR_(x) /* a number as a string literal */
#ifdef E2E_POSTGRES
#include "tests/pg_util.h"

static struct pg_cluster pgc;
static char test_db[64]; /* this test's database */
#endif

#define NPAGES 3

static struct e2e_server srv;
static const char *const pages[NPAGES] = {"/blog/one", "/blog/two.html",
                                          "news"};
static const char *const npages[NPAGES] = {"/blog/one/", "/blog/two.html",
                                           "/news/"};

static void
start(const char *conf)
{
#ifdef E2E_POSTGRES
    char text[2048];

    /* A database of its own: a fresh schema, ids from 1. */
    ck_assert_int_eq(pg_new_db_conf(&pgc, test_db, sizeof(test_db), conf, text,
                                    sizeof(text)),
                     0);
    conf = text;
#elif defined(FOLIO_SANITIZED)
    char text[2048];

    /*
     * A post waits comments_timeout (5 s) at most for the store's writer
     * lock, then gets 14; under ASan on a loaded machine, four workers'
     * writers taking turns were seen to wait longer.  These clients do
     * not retry: a longer timeout here (the 14 is e2e_stuck_writer's).
     */
    snprintf(text, sizeof(text), "comments_timeout = 60s\n%s",
             conf != NULL ? conf : "");
    conf = text;
#endif
    ck_assert_msg(e2e_start(&srv, conf, NULL) == 0, "foliod did not start");
}

static void
stop_clean(void)
{
    ck_assert_int_eq(e2e_stop(&srv), 0);
}

/* ---- calls --------------------------------------------------------- */

static int
call_delete(struct folio_client *c, int64_t id, struct folio_reply *r)
{
    msgpack_packer *pk = folio_client_request(c, 0, "comments.delete", 1, NULL);

    msgpack_pack_int64(pk, id);
    if (folio_client_flush(c) != 0)
        return -1;
    return folio_client_reply(c, r) == 1 ? 0 : -1;
}

static void
expect_code(const struct folio_reply *r, int code, const char *text)
{
    ck_assert_msg(r->code == code, "code %d (%.*s), want %d", r->code,
                  r->message != NULL ? (int)r->message_len : 0,
                  r->message != NULL ? r->message : "", code);
    if (text != NULL)
        ck_assert_msg(r->message != NULL && memmem(r->message, r->message_len,
                                                   text, strlen(text)) != NULL,
                      "'%.*s' lacks '%s'",
                      r->message != NULL ? (int)r->message_len : 0,
                      r->message != NULL ? r->message : "", text);
}

/* ---- basics -------------------------------------------------------- */

START_TEST(test_post_list_delete)
{
    struct folio_client *c, *a;
    struct folio_reply r;
    struct folio_mp_cur cur;
    struct e2e_comment d, *v;
    uint64_t id1, id2;
    int n;

    start(NULL);
    c = e2e_connect(&srv);
    a = e2e_connect_admin(&srv);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_nonnull(a);

    ck_assert_int_eq(e2e_comment_list(c, "/fresh", &v), 0);
    free(v);

    ck_assert_int_eq(
        e2e_comment_post(c, "fresh", "ann", "hello\n\tworld", 12, &r), 0);
    expect_code(&r, 0, NULL);
    cur = r.result;
    ck_assert_int_eq(e2e_comment_decode(&cur, &d), 0);
    ck_assert(folio_mp_str_eq(d.path, d.path_len, "/fresh/"));
    ck_assert(folio_mp_str_eq(d.author, d.author_len, "ann"));
    ck_assert(folio_mp_str_eq(d.body, d.body_len, "hello\n\tworld"));
    ck_assert_uint_gt(d.created_at, 1600000000000ull);
    id1 = d.id;
    ck_assert_int_eq(e2e_comment_post(c, "/fresh/", "bob", "second", 6, &r), 0);
    expect_code(&r, 0, NULL);
    cur = r.result;
    ck_assert_int_eq(e2e_comment_decode(&cur, &d), 0);
    id2 = d.id;
    ck_assert_uint_gt(id2, id1);

    n = e2e_comment_list(c, "/fresh", &v);
    ck_assert_int_eq(n, 2);
    ck_assert_uint_eq(v[0].id, id1);
    ck_assert_uint_eq(v[1].id, id2);
    free(v);

    /* delete: admin socket only */
    ck_assert_int_eq(call_delete(c, (int64_t)id1, &r), 0);
    expect_code(&r, FOLIO_ST_PERMISSION_DENIED, "admin socket");
    ck_assert_int_eq(call_delete(a, (int64_t)id1, &r), 0);
    expect_code(&r, 0, NULL);
    ck_assert_int_eq(folio_mp_type(&r.result), FOLIO_MP_BOOL);
    ck_assert_int_eq(call_delete(a, (int64_t)id1, &r), 0);
    expect_code(&r, FOLIO_ST_NOT_FOUND, "no comment with id");
    ck_assert_int_eq(call_delete(a, 123456789, &r), 0);
    expect_code(&r, FOLIO_ST_NOT_FOUND, NULL);
    ck_assert_int_eq(call_delete(a, -1, &r), 0);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "non-negative int");

    n = e2e_comment_list(c, "fresh/", &v);
#ifdef E2E_POSTGRES
    {
        /*
         * The delete went through the admin socket, perhaps to another
         * worker: c's worker drops its cached page when PostgreSQL's
         * notification comes (folio-rpc(7): stale for that delay at most).
         */
        uint64_t end = e2e_deadline(3000);

        while (n == 2 && e2e_wait_more(end)) {
            free(v);
            n = e2e_comment_list(c, "fresh/", &v);
        }
    }
#endif
    ck_assert_int_eq(n, 1);
    ck_assert_uint_eq(v[0].id, id2);
    free(v);
#ifdef E2E_POSTGRES
    {
        char one[32];

        /* in the database, with its encoded bytes beside the columns */
        ck_assert_int_eq(pg_query(&pgc, test_db,
                                  "SELECT count(*) FROM folio_comments WHERE "
                                  "path = '/fresh/' AND author = 'bob' AND "
                                  "length(encoded) > 0",
                                  one, sizeof(one)),
                         1);
        ck_assert_str_eq(one, "1");
    }
#endif

    /* comments.* are listed by server.methods */
    ck_assert_int_eq(folio_client_call0(c, "server.methods", &r), 1);
    ck_assert_ptr_nonnull(memmem(
        r.result.p, (size_t)(r.result.end - r.result.p), "comments.post", 13));
    folio_client_close(c);
    folio_client_close(a);
    stop_clean();
}
END_TEST

/*
 * Replies (PROTOCOL.md section 3): reply_to stored and listed; one level
 * of replies, the same page, an existing comment; nil is no reply.
 */
/* comments.post on /thread with reply_to the string `as`, or nil. */
static void
post_reply_to(struct folio_client *c, const char *as, struct folio_reply *r)
{
    msgpack_packer *pk = folio_client_request(c, 0, "comments.post", 1, NULL);

    msgpack_pack_map(pk, 4);
    folio_pack_cstr(pk, "path");
    folio_pack_cstr(pk, "/thread");
    folio_pack_cstr(pk, "author");
    folio_pack_cstr(pk, "d");
    folio_pack_cstr(pk, "body");
    folio_pack_cstr(pk, "b");
    folio_pack_cstr(pk, "reply_to");
    if (as != NULL)
        folio_pack_cstr(pk, as);
    else
        msgpack_pack_nil(pk);
    ck_assert_int_eq(folio_client_flush(c), 0);
    ck_assert_int_eq(folio_client_reply(c, r), 1);
}

START_TEST(test_replies)
{
    struct folio_client *c;
    struct folio_reply r;
    struct folio_mp_cur cur;
    struct e2e_comment d, *v;
    uint64_t top, other, reply;
    int n;

    start(NULL);
    c = e2e_connect(&srv);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(e2e_comment_post(c, "/thread", "ann", "top", 3, &r), 0);
    expect_code(&r, 0, NULL);
    cur = r.result;
    ck_assert_int_eq(e2e_comment_decode(&cur, &d), 0);
    ck_assert(!d.has_reply_to);
    top = d.id;
    ck_assert_int_eq(e2e_comment_post(c, "/other", "ann", "x", 1, &r), 0);
    cur = r.result;
    ck_assert_int_eq(e2e_comment_decode(&cur, &d), 0);
    other = d.id;
    ck_assert_int_eq(e2e_comment_reply(c, "thread", "bob", "re", top, &r), 0);
    expect_code(&r, 0, NULL);
    cur = r.result;
    ck_assert_int_eq(e2e_comment_decode(&cur, &d), 0);
    ck_assert(d.has_reply_to);
    ck_assert_uint_eq(d.reply_to, top);
    reply = d.id;
    n = e2e_comment_list(c, "/thread/", &v);
    ck_assert_int_eq(n, 2);
    ck_assert(!v[0].has_reply_to);
    ck_assert(v[1].has_reply_to && v[1].reply_to == top);
    free(v);
    /* A reply to a reply, to another page's comment, to nothing: 3. */
    ck_assert_int_eq(e2e_comment_reply(c, "/thread/", "c", "x", reply, &r), 0);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "reply_to must be the id");
    ck_assert_int_eq(e2e_comment_reply(c, "/thread/", "c", "x", other, &r), 0);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "same page");
    ck_assert_int_eq(e2e_comment_reply(c, "/thread/", "c", "x", 987654, &r), 0);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "reply_to");
    /* Of the wrong type: 3; nil: no reply. */
    post_reply_to(c, "1", &r);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "reply_to must be");
    post_reply_to(c, NULL, &r);
    expect_code(&r, 0, NULL);
    cur = r.result;
    ck_assert_int_eq(e2e_comment_decode(&cur, &d), 0);
    ck_assert(!d.has_reply_to);
    n = e2e_comment_list(c, "/thread/", &v);
    ck_assert_int_eq(n, 3);
    free(v);
    folio_client_close(c);
    stop_clean();
}
END_TEST

START_TEST(test_bad_params)
{
    static char big[70000];
    struct folio_client *c;
    struct folio_reply r;
    msgpack_packer *pk;

    start(NULL);
    c = e2e_connect(&srv);
    ck_assert_ptr_nonnull(c);

    /* list: a str of 1..1024 valid bytes */
    pk = folio_client_request(c, 0, "comments.list", 1, NULL);
    msgpack_pack_int(pk, 7);
    folio_client_flush(c);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "path must be a str");
    ck_assert_int_eq(folio_client_call_str(c, "comments.list", "", &r), 1);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "1 to 1024 bytes");
    ck_assert_int_eq(folio_client_call0(c, "comments.list", &r), 1);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "takes 1 param");
    ck_assert_int_eq(folio_client_call_str(c, "comments.list", "/\xc0\xaf", &r),
                     1);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "invalid UTF-8 at byte 1");

    /* post: the map, its keys, their types and limits */
    pk = folio_client_request(c, 0, "comments.post", 1, NULL);
    folio_pack_cstr(pk, "not a map");
    folio_client_flush(c);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "takes a map");

    pk = folio_client_request(c, 0, "comments.post", 1, NULL);
    msgpack_pack_map(pk, 2);
    folio_pack_cstr(pk, "path");
    folio_pack_cstr(pk, "/p");
    folio_pack_cstr(pk, "author");
    folio_pack_cstr(pk, "a");
    folio_client_flush(c);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "missing \"body\"");

    pk = folio_client_request(c, 0, "comments.post", 1, NULL);
    msgpack_pack_map(pk, 3);
    folio_pack_cstr(pk, "path");
    folio_pack_cstr(pk, "/p");
    folio_pack_cstr(pk, "author");
    msgpack_pack_int(pk, 5);
    folio_pack_cstr(pk, "body");
    folio_pack_cstr(pk, "b");
    folio_client_flush(c);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "author must be a str");

    pk = folio_client_request(c, 0, "comments.post", 1, NULL);
    msgpack_pack_map(pk, 4);
    folio_pack_cstr(pk, "path");
    folio_pack_cstr(pk, "/p");
    folio_pack_cstr(pk, "path");
    folio_pack_cstr(pk, "/q");
    folio_pack_cstr(pk, "author");
    folio_pack_cstr(pk, "a");
    folio_pack_cstr(pk, "body");
    folio_pack_cstr(pk, "b");
    folio_client_flush(c);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "duplicate key");

    /* an unknown key is ignored */
    pk = folio_client_request(c, 0, "comments.post", 1, NULL);
    msgpack_pack_map(pk, 4);
    folio_pack_cstr(pk, "email");
    msgpack_pack_array(pk, 1);
    msgpack_pack_nil(pk);
    folio_pack_cstr(pk, "path");
    folio_pack_cstr(pk, "/extra");
    folio_pack_cstr(pk, "author");
    folio_pack_cstr(pk, "a");
    folio_pack_cstr(pk, "body");
    folio_pack_cstr(pk, "b");
    folio_client_flush(c);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    expect_code(&r, 0, NULL);

    memset(big, 'b', sizeof(big));
    ck_assert_int_eq(e2e_comment_post(c, "/p", "a", big, 65537, &r), 0);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "body must be 1 to 65536");
    ck_assert_int_eq(e2e_comment_post(c, "/p", "a", big, 65536, &r), 0);
    expect_code(&r, 0, NULL);
    ck_assert_int_eq(e2e_comment_post(c, "/p", "a", "", 0, &r), 0);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "body must be 1 to 65536");
    ck_assert_int_eq(e2e_comment_post(c, "/p", "a", "x\ry", 3, &r), 0);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "body: control character");
    ck_assert_int_eq(e2e_comment_post(c, "/p", "a\tb", "x", 1, &r), 0);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "author: control character");
    ck_assert_int_eq(e2e_comment_post(c, "/p", "\xed\xa0\x80", "x", 1, &r), 0);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "author: invalid UTF-8");
    big[1024] = '\0';
    ck_assert_int_eq(e2e_comment_post(c, big, "a", "x", 1, &r), 0);
    expect_code(&r, 0, NULL);
    big[1025] = '\0';
    big[1024] = 'b';
    ck_assert_int_eq(e2e_comment_post(c, big, "a", "x", 1, &r), 0);
    expect_code(&r, FOLIO_ST_INVALID_ARGUMENT, "path must be 1 to 1024");

    /* the connection is still good */
    ck_assert_int_eq(e2e_ping(c), 0);
    folio_client_close(c);
    stop_clean();
}
END_TEST

/* ---- concurrent posters -------------------------------------------- */

struct ack {
    uint64_t id;
    int page;
    unsigned char *bytes; /* the comment as the reply gave it */
    size_t len;
};

struct poster {
    int index;
    int max;       /* posts to make (0: until stopped or failed) */
    int reconnect; /* a lost connection: connect again, go on */
    int retried;   /* posts answered 14 "not stored" and sent again */
    int lossy;     /* a lost connection: stop quietly (a crash) */
    atomic_int *stop;
    struct ack *acks;
    int nacks, cap;
    atomic_int acked; /* for the crash test to watch */
    int failed;       /* a post failed while not stopping */
    char why[256];
};

static void *
poster_run(void *arg)
{
    struct poster *p = arg;
    struct folio_client *c = e2e_connect(&srv);
    struct folio_reply r;
    struct folio_mp_cur cur;
    struct e2e_comment d;
    char author[32];
    char *body = malloc(40000);
    size_t blen;
    int i, page;

    if (c == NULL) {
        p->failed = 1;
        snprintf(p->why, sizeof(p->why), "cannot connect");
        free(body);
        return NULL;
    }
    snprintf(author, sizeof(author), "client %d", p->index);
    for (i = 0; p->max == 0 || i < p->max; i++) {
        if (p->stop != NULL && atomic_load(p->stop))
            break;
        page = (p->index + i) % NPAGES;
        blen = (size_t)snprintf(body, 64, "post %d of client %d", i, p->index);
        if (i % 10 == 9) { /* some large ones, to make the map grow */
            memset(body + blen, 'L', 30000);
            blen += 30000;
        }
        if (e2e_comment_post(c, pages[page], author, body, blen, &r) != 0) {
            /* A reconnecting poster's worker was killed: its post may or
             * may not be in, even if the stop came before the EOF did. */
            if (p->reconnect && atomic_load(p->stop))
                break;
            if (p->reconnect) {
                /* its worker was killed: this post may or may not be in */
                folio_client_close(c);
                if ((c = e2e_connect(&srv)) != NULL)
                    continue;
                p->failed = 1;
                snprintf(p->why, sizeof(p->why), "cannot reconnect");
                free(body);
                return NULL;
            }
            if (!p->lossy) {
                p->failed = 1;
                snprintf(p->why, sizeof(p->why), "post %d: no reply", i);
            }
            break;
        }
        /*
         * Workers killed under the posts: a post whose worker's writer
         * could not write it within comments_timeout is answered 14 and
         * not stored (folio-rpc(7)); a client sends it again.
         */
        if (p->reconnect && r.code == FOLIO_ST_UNAVAILABLE &&
            r.message != NULL &&
            memmem(r.message, r.message_len, "not stored", 10) != NULL) {
            p->retried++;
            i--;
            e2e_pace_ms(10); /* a client's retry, a moment later */
            continue;
        }
        if (r.code != 0) {
            p->failed = 1;
            snprintf(p->why, sizeof(p->why), "post %d: error %d %.*s", i,
                     r.code, r.message != NULL ? (int)r.message_len : 0,
                     r.message != NULL ? r.message : "");
            break;
        }
        cur = r.result;
        if (e2e_comment_decode(&cur, &d) != 0 || d.body_len != blen ||
            memcmp(d.body, body, blen) != 0 ||
            !folio_mp_str_eq(d.path, d.path_len, npages[page])) {
            p->failed = 1;
            snprintf(p->why, sizeof(p->why), "post %d: bad reply", i);
            break;
        }
        if (p->nacks == p->cap) {
            p->cap = p->cap ? p->cap * 2 : 64;
            p->acks = realloc(p->acks, (size_t)p->cap * sizeof(*p->acks));
        }
        p->acks[p->nacks].id = d.id;
        p->acks[p->nacks].page = page;
        p->acks[p->nacks].len = d.len;
        p->acks[p->nacks].bytes = malloc(d.len);
        memcpy(p->acks[p->nacks].bytes, d.start, d.len);
        p->nacks++;
        atomic_fetch_add(&p->acked, 1);
    }
    free(body);
    folio_client_close(c);
    return NULL;
}

static void
posters_free(struct poster *ps, int n)
{
    int i, j;

    for (i = 0; i < n; i++) {
        for (j = 0; j < ps[i].nacks; j++)
            free(ps[i].acks[j].bytes);
        free(ps[i].acks);
    }
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/*
 * Every acknowledged comment is listed on its page exactly once, with the
 * bytes its post returned; ids increase within each page and are unique
 * across pages.  `exact`: nothing else is listed either.  Returns how
 * many comments are listed in all.
 */
static int
verify(struct poster *ps, int nposters, int exact)
{
    struct folio_client *lc[NPAGES];
    struct e2e_comment *v[NPAGES];
    uint64_t *all;
    int n[NPAGES], total = 0, acked = 0, i, j, k, found;

    for (i = 0; i < NPAGES; i++) {
        /* a client per page: each list's spans stay valid */
        lc[i] = e2e_connect(&srv);
        ck_assert_ptr_nonnull(lc[i]);
        n[i] = e2e_comment_list(lc[i], pages[i], &v[i]);
        ck_assert_msg(n[i] >= 0, "list %s failed", pages[i]);
        total += n[i];
        for (j = 0; j < n[i]; j++) {
            ck_assert(
                folio_mp_str_eq(v[i][j].path, v[i][j].path_len, npages[i]));
            if (j > 0)
                ck_assert_msg(v[i][j].id > v[i][j - 1].id,
                              "page %s: id %llu after %llu", pages[i],
                              (unsigned long long)v[i][j].id,
                              (unsigned long long)v[i][j - 1].id);
        }
    }
    all = calloc((size_t)total + 1, sizeof(*all));
    for (i = 0, k = 0; i < NPAGES; i++)
        for (j = 0; j < n[i]; j++)
            all[k++] = v[i][j].id;
    qsort(all, (size_t)total, sizeof(*all), cmp_u64);
    for (k = 1; k < total; k++)
        ck_assert_msg(all[k] != all[k - 1], "id %llu listed twice",
                      (unsigned long long)all[k]);
    for (i = 0; i < nposters; i++) {
        for (j = 0; j < ps[i].nacks; j++) {
            struct ack *a = &ps[i].acks[j];

            found = 0;
            for (k = 0; k < n[a->page]; k++) {
                if (v[a->page][k].id != a->id)
                    continue;
                ck_assert_msg(
                    v[a->page][k].len == a->len &&
                        memcmp(v[a->page][k].start, a->bytes, a->len) == 0,
                    "comment %llu differs from its reply",
                    (unsigned long long)a->id);
                found++;
            }
            ck_assert_msg(found == 1,
                          "acknowledged comment %llu listed %d times",
                          (unsigned long long)a->id, found);
            acked++;
        }
    }
    if (exact)
        ck_assert_int_eq(total, acked);
    free(all);
    for (i = 0; i < NPAGES; i++) {
        free(v[i]);
        folio_client_close(lc[i]);
    }
    return total;
}

#define NPOSTERS 8

START_TEST(test_concurrent_posts)
{
    struct poster ps[NPOSTERS];
    pthread_t th[NPOSTERS];
    pid_t w[8];
    int i;

    /* _i: 0 group commit (the default), 1 a transaction per post */
    start(_i == 0 ? "workers = 4\n"
                  : "workers = 4\ncomments_group_commit = off\n");
    ck_assert_int_eq(e2e_workers(&srv, w, 8), 4);
    memset(ps, 0, sizeof(ps));
    for (i = 0; i < NPOSTERS; i++) {
        ps[i].index = i;
        ps[i].max = 40;
        ck_assert_int_eq(pthread_create(&th[i], NULL, poster_run, &ps[i]), 0);
    }
    for (i = 0; i < NPOSTERS; i++)
        pthread_join(th[i], NULL);
    for (i = 0; i < NPOSTERS; i++) {
        ck_assert_msg(!ps[i].failed, "client %d: %s", i, ps[i].why);
        ck_assert_int_eq(ps[i].nacks, 40);
    }
    ck_assert_int_eq(verify(ps, NPOSTERS, 1), NPOSTERS * 40);
#ifndef E2E_POSTGRES
    /* each worker maps the whole ceiling at its start: never grown */
    ck_assert(!e2e_log_has(&srv, "map grown"));
#endif
    posters_free(ps, NPOSTERS);
    stop_clean();
}
END_TEST

/* ---- the crash test ------------------------------------------------ */

START_TEST(test_crash_keeps_acknowledged)
{
    struct poster ps[NPOSTERS];
    pthread_t th[NPOSTERS];
    atomic_int stop = 0;
    pid_t w[8];
    uint64_t deadline;
    int i, nw, acked, st, listed;
    struct folio_client *c;
    struct folio_reply r;

    start("workers = 3\n");
    nw = e2e_workers(&srv, w, 8);
    ck_assert_int_eq(nw, 3);
    memset(ps, 0, sizeof(ps));
    for (i = 0; i < NPOSTERS; i++) {
        ps[i].index = i;
        ps[i].stop = &stop;
        ps[i].lossy = 1;
        ck_assert_int_eq(pthread_create(&th[i], NULL, poster_run, &ps[i]), 0);
    }
    /* let them post a while, then kill everything mid-post */
    deadline = e2e_deadline(20000);
    do {
        for (i = 0, acked = 0; i < NPOSTERS; i++)
            acked += atomic_load(&ps[i].acked);
    } while (acked < 300 && e2e_wait_more(deadline));
    ck_assert_int_ge(acked, 300);
    ck_assert_int_eq(kill(srv.pid, SIGKILL), 0);
    for (i = 0; i < nw; i++)
        kill(w[i], SIGKILL);
    atomic_store(&stop, 1);
    ck_assert_int_eq(waitpid(srv.pid, &st, 0), srv.pid);
    ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    srv.pid = -1;
    for (i = 0; i < NPOSTERS; i++)
        pthread_join(th[i], NULL);
    for (i = 0; i < NPOSTERS; i++)
        ck_assert_msg(!ps[i].failed, "client %d: %s", i, ps[i].why);
    deadline = e2e_deadline(5000);
    for (i = 0; i < nw; i++)
        while (!e2e_pid_gone(w[i]))
            ck_assert_msg(e2e_wait_more(deadline), "worker %ld lives on",
                          (long)w[i]);

    /* the same data directory, a new foliod */
    ck_assert_int_eq(e2e_restart(&srv, NULL), 0);
    listed = verify(ps, NPOSTERS, 0);
    for (i = 0, acked = 0; i < NPOSTERS; i++)
        acked += ps[i].nacks;
    /* at most one unacknowledged post per client got in */
    ck_assert_int_ge(listed, acked);
    ck_assert_int_le(listed, acked + NPOSTERS);
    /* and it takes posts again, with ids after all of them */
    c = e2e_connect(&srv);
    ck_assert_int_eq(e2e_comment_post(c, pages[0], "after", "the crash", 9, &r),
                     0);
    expect_code(&r, 0, NULL);
    folio_client_close(c);
    posters_free(ps, NPOSTERS);
    stop_clean();
}
END_TEST

/*
 * kill -9 one worker at a time while 8 clients post: a worker may die
 * holding LMDB's write lock (in the middle of a commit); the robust mutex
 * hands it to the next writer, which must carry on.  Every acknowledged
 * comment is there, and posts keep being acknowledged after every kill.
 */
START_TEST(test_worker_killed_while_posting)
{
    struct poster ps[NPOSTERS];
    pthread_t th[NPOSTERS];
    atomic_int stop = 0;
    pid_t w[8];
    uint64_t deadline;
    int i, k, nw, acked, goal = 0;

    start(_i == 0 ? "workers = 2\n"
                  : "workers = 2\ncomments_group_commit = off\n");
    memset(ps, 0, sizeof(ps));
    for (i = 0; i < NPOSTERS; i++) {
        ps[i].index = i;
        ps[i].stop = &stop;
        ps[i].reconnect = 1;
        ck_assert_int_eq(pthread_create(&th[i], NULL, poster_run, &ps[i]), 0);
    }
    for (k = 0; k < 4; k++) {
        /* 100 more acknowledged posts, then kill a worker */
        goal += 100;
        deadline = e2e_deadline(20000);
        do {
            for (i = 0, acked = 0; i < NPOSTERS; i++)
                acked += atomic_load(&ps[i].acked);
        } while (acked < goal && e2e_wait_more(deadline));
        ck_assert_msg(acked >= goal, "posting stalled after kill %d (%d acked)",
                      k, acked);
        if (k == 3)
            break;
        nw = e2e_workers(&srv, w, 8);
        ck_assert_int_ge(nw, 1);
        ck_assert_int_eq(kill(w[k % nw], SIGKILL), 0);
    }
    atomic_store(&stop, 1);
    for (i = 0; i < NPOSTERS; i++)
        pthread_join(th[i], NULL);
    for (i = 0, k = 0; i < NPOSTERS; i++) {
        ck_assert_msg(!ps[i].failed, "client %d: %s", i, ps[i].why);
        k += ps[i].retried;
    }
    printf("e2e_comments: %d posts answered 14 \"not stored\" and sent "
           "again after the kills\n",
           k);
    verify(ps, NPOSTERS, 0);
    posters_free(ps, NPOSTERS);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/*
 * Reloads (HUP) while 8 clients post: the old workers commit what they
 * hold, answer it, and hand the connections over; no post fails, and
 * every acknowledged comment is listed exactly once.
 */
START_TEST(test_reload_while_posting)
{
    struct poster ps[NPOSTERS];
    pthread_t th[NPOSTERS];
    atomic_int stop = 0;
    uint64_t deadline, gen;
    int i, acked, goal = 0;

    start("workers = 2\n");
    memset(ps, 0, sizeof(ps));
    for (i = 0; i < NPOSTERS; i++) {
        ps[i].index = i;
        ps[i].stop = &stop;
        ck_assert_int_eq(pthread_create(&th[i], NULL, poster_run, &ps[i]), 0);
    }
    for (gen = 1; gen <= 3; gen++) {
        goal += 100;
        deadline = e2e_deadline(20000);
        do {
            for (i = 0, acked = 0; i < NPOSTERS; i++)
                acked += atomic_load(&ps[i].acked);
        } while (acked < goal && e2e_wait_more(deadline));
        ck_assert_msg(acked >= goal, "posting stalled in generation %llu",
                      (unsigned long long)gen);
        if (gen == 3)
            break;
        ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
        ck_assert_int_eq(e2e_wait_ready(&srv, gen + 1, E2E_READY_MS), 0);
    }
    atomic_store(&stop, 1);
    for (i = 0; i < NPOSTERS; i++)
        pthread_join(th[i], NULL);
    for (i = 0; i < NPOSTERS; i++)
        ck_assert_msg(!ps[i].failed, "client %d: %s", i, ps[i].why);
    verify(ps, NPOSTERS, 1);
    posters_free(ps, NPOSTERS);
    stop_clean();
}
END_TEST

/* ---- limits -------------------------------------------------------- */

#ifndef E2E_POSTGRES /* LMDB's size ceiling */
START_TEST(test_full_store)
{
    static char body[65536];
    struct folio_client *c;
    struct folio_reply r;
    struct e2e_comment *v;
    int i, ok = 0;

    start(_i == 0 ? "comments_max_size = 1m\n"
                  : "comments_max_size = 1m\ncomments_group_commit = off\n");
    c = e2e_connect(&srv);
    memset(body, 'F', sizeof(body));
    for (i = 0; i < 40; i++) {
        ck_assert_int_eq(
            e2e_comment_post(c, "/full", "me", body, sizeof(body), &r), 0);
        if (r.code != 0)
            break;
        ok++;
    }
    expect_code(&r, FOLIO_ST_RESOURCE_EXHAUSTED, "comments store is full");
    ck_assert_int_gt(ok, 3);
    /* small ones may still fit; the page reads back whole */
    ck_assert_int_eq(e2e_comment_list(c, "/full", &v), ok);
    free(v);
    ck_assert_int_eq(e2e_ping(c), 0);
    folio_client_close(c);
    stop_clean();
}
END_TEST
#endif

/* Pack a comments.post request (or notification) without sending it. */
static uint32_t
queue_post(struct folio_client *c, int notify, const char *path,
           const char *body, size_t body_len)
{
    msgpack_packer *pk;
    uint32_t id = 0;

    pk = folio_client_request(c, notify, "comments.post", 1, &id);
    msgpack_pack_map(pk, 3);
    folio_pack_cstr(pk, "path");
    folio_pack_cstr(pk, path);
    folio_pack_cstr(pk, "author");
    folio_pack_cstr(pk, "pipeliner");
    folio_pack_cstr(pk, "body");
    folio_pack_str(pk, body, body_len);
    return id;
}

static uint32_t
queue_list(struct folio_client *c, const char *path)
{
    msgpack_packer *pk;
    uint32_t id = 0;

    pk = folio_client_request(c, 0, "comments.list", 1, &id);
    folio_pack_cstr(pk, path);
    return id;
}

/* Read the reply to `id`: a list of `n` comments, the last one `body`. */
static void
expect_list(struct folio_client *c, uint32_t id, uint32_t n, const char *body)
{
    struct folio_reply r;
    struct e2e_comment d;
    uint32_t m, i;

    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    ck_assert_uint_eq(r.msgid, id);
    expect_code(&r, 0, NULL);
    ck_assert_int_eq(folio_mp_read_array(&r.result, &m), 0);
    ck_assert_uint_eq(m, n);
    for (i = 0; i < m; i++)
        ck_assert_int_eq(e2e_comment_decode(&r.result, &d), 0);
    if (n > 0)
        ck_assert(folio_mp_str_eq(d.body, d.body_len, body));
}

/*
 * Pipelined on one connection, with group commit: a list after a post
 * sees it (its reply waits, and so does the list), a notification post
 * is stored before the next request runs, and replies keep their order.
 */
START_TEST(test_pipelined_posts)
{
    struct folio_client *c;
    struct folio_reply r;
    uint32_t p1, l1, p2, l2, l3, pg;
    int i;

    start(NULL);
    c = e2e_connect(&srv);
    p1 = queue_post(c, 0, "/pipe", "one", 3);
    l1 = queue_list(c, "/pipe");
    p2 = queue_post(c, 0, "/pipe", "two", 3);
    queue_post(c, 1, "/pipe", "three", 5); /* a notification */
    l2 = queue_list(c, "/pipe");
    folio_client_request(c, 0, "server.ping", 0, &pg);
    for (i = 0; i < 20; i++)
        queue_post(c, 0, "/pipe/many", "x", 1);
    l3 = queue_list(c, "/pipe/many");
    ck_assert_int_eq(folio_client_flush(c), 0);

    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    ck_assert_uint_eq(r.msgid, p1);
    expect_code(&r, 0, NULL);
    expect_list(c, l1, 1, "one");
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    ck_assert_uint_eq(r.msgid, p2);
    expect_code(&r, 0, NULL);
    expect_list(c, l2, 3, "three");
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    ck_assert_uint_eq(r.msgid, pg);
    for (i = 0; i < 20; i++) {
        ck_assert_int_eq(folio_client_reply(c, &r), 1);
        ck_assert_uint_eq(r.msgid, pg + 1 + (uint32_t)i);
        expect_code(&r, 0, NULL);
    }
    expect_list(c, l3, 20, "x");
    folio_client_close(c);
    stop_clean();
}
END_TEST

/*
 * The store fills up under pipelined posts: each reply is a comment or
 * error 8, in order, and the stream stays well framed (a held reply that
 * fails is replaced in place).
 */
#ifndef E2E_POSTGRES /* LMDB's size ceiling */
START_TEST(test_pipelined_full)
{
    static char body[65536];
    struct folio_client *c;
    struct folio_reply r;
    uint32_t first = 0, id, pg;
    int i, ok = 0, full = 0;
    struct e2e_comment *v;

    start("comments_max_size = 1m\n");
    c = e2e_connect(&srv);
    memset(body, 'P', sizeof(body));
    for (i = 0; i < 24; i++) {
        id = queue_post(c, 0, "/pfull", body, sizeof(body));
        if (i == 0)
            first = id;
    }
    folio_client_request(c, 0, "server.ping", 0, &pg);
    ck_assert_int_eq(folio_client_flush(c), 0);
    for (i = 0; i < 24; i++) {
        ck_assert_int_eq(folio_client_reply(c, &r), 1);
        ck_assert_uint_eq(r.msgid, first + (uint32_t)i);
        if (r.code == 0) {
            ck_assert_int_eq(full, 0); /* once one fails, none after fits */
            ok++;
        } else {
            expect_code(&r, FOLIO_ST_RESOURCE_EXHAUSTED, "full");
            full++;
        }
    }
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    ck_assert_uint_eq(r.msgid, pg);
    expect_code(&r, 0, NULL);
    ck_assert_int_gt(ok, 3);
    ck_assert_int_gt(full, 0);
    ck_assert_int_eq(e2e_comment_list(c, "/pfull", &v), ok);
    free(v);
    folio_client_close(c);
    stop_clean();
}
END_TEST
#endif

/*
 * The zero-allocation oracle: warm up, then 10,000 lists of a 50-comment
 * page, and the workers' allocation counter (server.stats) must not move.
 */
START_TEST(test_list_allocates_nothing)
{
    static const char body[] =
        "a comment of an ordinary length, like most comments are";
    struct folio_client *c[4], *a;
    struct folio_reply r;
    double before, after;
    uint32_t n;
    int i, j, k, bad = 0;

    start(NULL);
    for (k = 0; k < 4; k++)
        ck_assert_ptr_nonnull(c[k] = e2e_connect(&srv));
    ck_assert_ptr_nonnull(a = e2e_connect_admin(&srv));
    for (i = 0; i < 50; i++) {
        ck_assert_int_eq(
            e2e_comment_post(c[0], "/zero", "someone", body, strlen(body), &r),
            0);
        expect_code(&r, 0, NULL);
    }
    /*
     * Warm up every connection, on whichever worker it landed, until a
     * whole round allocates nothing: a steady state.  (On PostgreSQL the
     * posts' notifications may reach a worker after its first lists,
     * dropping the page it had cached: that refill allocates, once.)
     */
    before = -1;
    for (j = 0; j < 50; j++) {
        for (k = 0; k < 4; k++)
            for (i = 0; i < 100; i++)
                ck_assert_int_eq(
                    folio_client_call_str(c[k], "comments.list", "/zero", &r),
                    1);
        ck_assert_int_eq(e2e_stats(a, &r), 0);
        after = e2e_stat_num(&r, "totals", "alloc_calls", NULL);
        if (j > 0 && after == before)
            break;
        before = after;
    }
    for (j = 0; j < 2500; j++) {
        for (k = 0; k < 4; k++) {
            if (folio_client_call_str(c[k], "comments.list", "/zero", &r) !=
                    1 ||
                r.code != 0 || folio_mp_read_array(&r.result, &n) != 0 ||
                n != 50)
                bad++;
        }
    }
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    after = e2e_stat_num(&r, "totals", "alloc_calls", NULL);
    ck_assert_int_eq(bad, 0);
    ck_assert_msg(before > 0, "no allocation counted at all");
    ck_assert_msg(after == before,
                  "10,000 comments.list made %.0f heap allocations",
                  after - before);
    for (k = 0; k < 4; k++)
        folio_client_close(c[k]);
    folio_client_close(a);
    stop_clean();
}
END_TEST

#ifndef E2E_POSTGRES
/*
 * Each worker caches a page's encoded list, valid while the store's last
 * transaction id stays the one it was filled at: a post or a delete made
 * through any worker is in the very next list of every connection, on
 * whichever worker, and the cache is used (hits) all the same.
 */
START_TEST(test_cached_lists_never_stale)
{
    enum { MAXC = 32, NPOSTS = 10 };
    struct folio_client *c[MAXC], *a;
    struct folio_reply r;
    struct folio_mp_cur cur;
    struct e2e_comment d, *v;
    uint64_t ids[NPOSTS], deadline;
    double n0 = 0, n1 = 0;
    int i, k, n, nc = 0;

    start("workers = 2\n");
    ck_assert_ptr_nonnull(a = e2e_connect_admin(&srv));
    /*
     * Both workers serve some of the connections.  Accepts are balanced,
     * but a worker that gets no CPU for a few ms (a loaded machine, the
     * sanitizers) leaves its share to the other, which takes one every
     * ACCEPT_DEFER_MS (worker/accept.c): connect until each holds two.
     */
    deadline = e2e_deadline(e2e_bound_ms(5000, 15000));
    for (;;) {
        ck_assert_int_eq(e2e_stats(a, &r), 0);
        n0 = e2e_stat_num(&r, "workers", "#0", "conns_open", NULL);
        n1 = e2e_stat_num(&r, "workers", "#1", "conns_open", NULL);
        if (n0 + n1 >= nc + 1) { /* all accepted (the admin's counted) */
            if ((nc >= 6 && n0 >= 2 && n1 >= 2) || nc == MAXC)
                break;
            ck_assert_ptr_nonnull(c[nc++] = e2e_connect(&srv));
        } else if (!e2e_wait_more(deadline))
            break;
    }
    ck_assert_msg(n0 >= 2 && n1 >= 2,
                  "connections per worker after %d connects: %.0f and %.0f",
                  nc, n0, n1);
    for (k = 0; k < nc; k++)
        for (i = 0; i < 3; i++) {
            ck_assert_int_eq(e2e_comment_list(c[k], "/cached", &v), 0);
            free(v);
        }
    for (i = 0; i < NPOSTS; i++) {
        ck_assert_int_eq(e2e_comment_post(c[i % nc], "/cached", "ann", "hi",
                                          2, &r),
                         0);
        expect_code(&r, 0, NULL);
        cur = r.result;
        ck_assert_int_eq(e2e_comment_decode(&cur, &d), 0);
        ids[i] = d.id;
        for (k = 0; k < nc; k++) {
            n = e2e_comment_list(c[k], "/cached", &v);
            free(v);
            ck_assert_msg(n == i + 1,
                          "after post %d, connection %d lists %d comments",
                          i + 1, k, n);
            /* Twice: the second from the cache. */
            n = e2e_comment_list(c[k], "/cached", &v);
            free(v);
            ck_assert_int_eq(n, i + 1);
        }
    }
    for (i = 0; i < NPOSTS; i++) {
        ck_assert_int_eq(call_delete(a, (int64_t)ids[i], &r), 0);
        expect_code(&r, 0, NULL);
        for (k = 0; k < nc; k++) {
            n = e2e_comment_list(c[k], "/cached", &v);
            free(v);
            ck_assert_msg(n == NPOSTS - i - 1,
                          "after delete %d, connection %d lists %d comments",
                          i + 1, k, n);
        }
    }
    ck_assert_int_eq(e2e_stats(a, &r), 0);
    ck_assert_msg(e2e_stat_num(&r, "totals", "comments_cache_hits", NULL) >=
                      nc * NPOSTS,
                  "%.0f lists from the cache",
                  e2e_stat_num(&r, "totals", "comments_cache_hits", NULL));
    ck_assert(e2e_stat_num(&r, "totals", "comments_cache_misses", NULL) > 0);
    /* Each post and delete moved the store's version: each was seen. */
    ck_assert_msg(e2e_stat_num(&r, "totals", "comments_cache_invalidations",
                               NULL) >= 2 * NPOSTS,
                  "%.0f invalidations counted for %d posts and deletes",
                  e2e_stat_num(&r, "totals", "comments_cache_invalidations",
                               NULL),
                  2 * NPOSTS);
    for (k = 0; k < nc; k++)
        folio_client_close(c[k]);
    folio_client_close(a);
    stop_clean();
}
END_TEST
#endif

#ifdef E2E_POSTGRES
/* foliod --check-config with conf (extra lines); its status, output in out. */
static int
check_config(const char *conf, char *out, size_t len)
{
    char path[300], cmd[1024];
    FILE *f;
    size_t n;
    int st;

    snprintf(path, sizeof(path), "/tmp/folio-pgcheck.%ld.conf", (long)getpid());
    ck_assert_int_eq(e2e_write_file(path, conf), 0);
    snprintf(cmd, sizeof(cmd),
             "%s --check-config -c %s --corpus off --freight-dir off "
             "--catalog off --metrics-listen off --admin-socket off "
             "--data-dir /tmp/folio-pgcheck.%ld 2>&1",
             e2e_foliod(), path, (long)getpid());
    ck_assert_ptr_nonnull(f = popen(cmd, "r"));
    n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    st = pclose(f);
    unlink(path);
    snprintf(cmd, sizeof(cmd), "rm -rf /tmp/folio-pgcheck.%ld", (long)getpid());
    ck_assert_int_eq(system(cmd), 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * The connection string is checked, its password never shown: not by
 * --check-config on a string libpq refuses, not in the log of a server
 * that connected with it.  --check-config says what answers.
 */
START_TEST(test_dsn_checked_never_logged)
{
    char conf[1024], out[4096], dsn[512];
    struct folio_client *c;
    struct folio_reply r;

    ck_assert_int_eq(pg_new_db(&pgc, test_db, sizeof(test_db)), 0);
    pg_dsn(&pgc, test_db, dsn, sizeof(dsn));
    snprintf(conf, sizeof(conf),
             "comments_backend = postgres\ncomments_dsn = \"%s\"\n", dsn);
    ck_assert_int_eq(check_config(conf, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "schema version none yet") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "is OK") != NULL, "%s", out);

    /* libpq cannot parse these: no start, no password in the message */
    ck_assert_int_eq(
        check_config("comments_backend = postgres\n"
                     "comments_dsn = \"password=sekrit bogus=1\"\n",
                     out, sizeof(out)),
        1);
    ck_assert_msg(strstr(out, "invalid connection option \"bogus\"") != NULL,
                  "%s", out);
    ck_assert_msg(strstr(out, "sekrit") == NULL, "%s", out);
    ck_assert_int_eq(
        check_config("comments_backend = postgres\n"
                     "comments_dsn = \"host='x password=sekrit\"\n",
                     out, sizeof(out)),
        1);
    ck_assert_msg(strstr(out, "not a libpq connection string") != NULL, "%s",
                  out);
    ck_assert_msg(strstr(out, "sekrit") == NULL, "%s", out);

    /* a server given a password (trust ignores it) never logs it */
    snprintf(conf, sizeof(conf),
             "comments_backend = postgres\n"
             "comments_dsn = \"%s password=sekrit\"\n",
             dsn);
    ck_assert_int_eq(e2e_start(&srv, conf, NULL), 0);
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    ck_assert_int_eq(e2e_comment_post(c, "/p", "a", "b", 1, &r), 0);
    expect_code(&r, 0, NULL);
    folio_client_close(c);
    ck_assert(e2e_log_has(&srv, "connected (schema version " STR(FOLIO_COMMENTS_PG_SCHEMA) ")"));
    ck_assert(!e2e_log_has(&srv, "sekrit"));
    stop_clean();
    snprintf(conf, sizeof(conf),
             "comments_backend = postgres\ncomments_dsn = \"%s\"\n", dsn);
    ck_assert_int_eq(check_config(conf, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "schema version " STR(FOLIO_COMMENTS_PG_SCHEMA) ",") != NULL, "%s", out);
}
END_TEST
#endif

static Suite *
comments_suite(void)
{
#ifdef E2E_POSTGRES
    Suite *s = suite_create("e2e_comments_pg");
#else
    Suite *s = suite_create("e2e_comments");
#endif
    TCase *tc = tcase_create("comments");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_post_list_delete);
    tcase_add_test(tc, test_replies);
    tcase_add_test(tc, test_bad_params);
    tcase_add_loop_test(tc, test_concurrent_posts, 0, 2);
    tcase_add_test(tc, test_pipelined_posts);
#ifndef E2E_POSTGRES
    tcase_add_test(tc, test_pipelined_full); /* LMDB's size ceiling */
#endif
    tcase_add_test(tc, test_crash_keeps_acknowledged);
    tcase_add_loop_test(tc, test_worker_killed_while_posting, 0, 2);
    tcase_add_test(tc, test_reload_while_posting);
#ifndef E2E_POSTGRES
    tcase_add_loop_test(tc, test_full_store, 0, 2);
#endif
    tcase_add_test(tc, test_list_allocates_nothing);
#ifndef E2E_POSTGRES
    tcase_add_test(tc, test_cached_lists_never_stale);
#endif
#ifdef E2E_POSTGRES
    tcase_add_test(tc, test_dsn_checked_never_logged);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
#ifdef E2E_POSTGRES
    pg_require();
    if (pg_start(&pgc, NULL) != 0)
        return EXIT_FAILURE;
#endif
    return folio_check_run(comments_suite());
}
