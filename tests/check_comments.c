/*
 * check_comments.c - the comments store without a server: path
 * normalization, every validation limit at its edge, UTF-8 and control
 * characters, the stored encoding, list order and page boundaries, delete,
 * persistence across close/reopen, map growth (also across processes), a
 * full store, and zero allocations per list.
 */
#include "config.h"

#include <sys/wait.h>

#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shm/comments.h"
#include "src/alloc.h"
#include "src/buf.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/mp.h"
#include "tests/check_run.h"

static char dir[256];
static char err[512];

/*
 * Allocations counted so far (src/alloc.c interposes the malloc family, so
 * LMDB's and libc's count too), and whether they include libc's (not in
 * sanitizer builds).
 */
static uint64_t
allocs(int *complete)
{
    *complete = folio_alloc_interposed();
    return atomic_load(&folio_alloc_current()->ac_calls);
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    remove(path);
    return 0;
}

static void
setup(void)
{
    snprintf(dir, sizeof(dir), "%s/check-comments.XXXXXX",
             getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void
teardown(void)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A store; keys remembered window_ms (0: the default). */
static struct folio_comments *
open_store_window(uint64_t map_init, uint64_t max_size, uint64_t window_ms)
{
    struct folio_comments_opts o = {map_init, max_size, 0, window_ms};
    struct folio_comments *cs;
    int rc = folio_comments_open(dir, &o, &cs, err, sizeof(err));

    ck_assert_msg(rc == 0, "open: %s", err);
    return cs;
}

static struct folio_comments *
open_store(uint64_t map_init, uint64_t max_size)
{
    return open_store_window(map_init, max_size, 0);
}

static struct folio_comment_in
comment(const char *path, const char *author, const char *body)
{
    struct folio_comment_in in;

    memset(&in, 0, sizeof(in));
    in.path = path;
    in.path_len = strlen(path);
    in.author = author;
    in.author_len = strlen(author);
    in.body = body;
    in.body_len = strlen(body);
    return in;
}

/* Post; returns the id; the encoded comment is left in `out`. */
static uint64_t
post(struct folio_comments *cs, const char *path, const char *author,
     const char *body, struct folio_buf *out)
{
    struct folio_comment_in in = comment(path, author, body);
    uint64_t id = 0;
    int rc = folio_comments_post(cs, &in, out, &id, err, sizeof(err));

    ck_assert_msg(rc == 0, "post: %d %s", rc, err);
    ck_assert_uint_gt(id, 0);
    return id;
}

static uint64_t
post1(struct folio_comments *cs, const char *path, const char *body)
{
    struct folio_buf b;
    uint64_t id;

    ck_assert_int_eq(folio_buf_init(&b, 256, 0), 0);
    id = post(cs, path, "someone", body, &b);
    folio_buf_free(&b);
    return id;
}

/* A decoded comment: spans into the buffer it came from. */
struct dc {
    uint64_t id, created_at;
    const char *path, *author, *body;
    uint32_t path_len, author_len, body_len;
};

static void
decode(struct folio_mp_cur *c, struct dc *d)
{
    static const char *const keys[5] = {"id", "path", "author", "body",
                                        "created_at"};
    const char *k;
    uint32_t n, len, i;

    ck_assert_int_eq(folio_mp_read_map(c, &n), 0);
    ck_assert_uint_eq(n, 5);
    for (i = 0; i < 5; i++) {
        ck_assert_int_eq(folio_mp_read_str(c, &k, &len), 0);
        ck_assert_msg(folio_mp_str_eq(k, len, keys[i]), "key %u is %.*s", i,
                      (int)len, k);
        switch (i) {
        case 0:
            ck_assert_int_eq(folio_mp_read_uint(c, &d->id), 0);
            break;
        case 1:
            ck_assert_int_eq(folio_mp_read_str(c, &d->path, &d->path_len), 0);
            break;
        case 2:
            ck_assert_int_eq(folio_mp_read_str(c, &d->author, &d->author_len),
                             0);
            break;
        case 3:
            ck_assert_int_eq(folio_mp_read_str(c, &d->body, &d->body_len), 0);
            break;
        default:
            ck_assert_int_eq(folio_mp_read_uint(c, &d->created_at), 0);
        }
    }
}

/* List page `path` into b; returns the count and leaves a cursor. */
static uint32_t
list(struct folio_comments *cs, const char *path, struct folio_buf *b,
     struct folio_mp_cur *c)
{
    uint32_t n = 0, m;
    int rc;

    folio_buf_reset(b);
    rc =
        folio_comments_list(cs, path, strlen(path), b, 0, &n, err, sizeof(err));
    ck_assert_msg(rc == 0, "list: %d %s", rc, err);
    folio_mp_cur_init(c, b->b_data, b->b_len);
    ck_assert_int_eq(folio_mp_read_array(c, &m), 0);
    ck_assert_uint_eq(m, n);
    return n;
}

/* ---- normalization ------------------------------------------------- */

static void
expect_norm(const char *in, const char *want)
{
    char out[FOLIO_COMMENTS_NPATH_MAX];
    size_t n = folio_comments_normalize(in, strlen(in), out);

    ck_assert_msg(n == strlen(want) && memcmp(out, want, n) == 0,
                  "normalize(%s) = %.*s, want %s", in, (int)n, out, want);
}

START_TEST(test_normalize)
{
    /* mouthful's own cases */
    expect_norm("/test/1/2/3", "/test/1/2/3/");
    expect_norm("/test/1/2/3/", "/test/1/2/3/");
    expect_norm("test/1/2/3/", "/test/1/2/3/");
    expect_norm("test/1/2/3", "/test/1/2/3/");
    expect_norm("/test/1/2/index.html", "/test/1/2/index.html");
    expect_norm("test/1/2/index.html", "/test/1/2/index.html");
    /* the edges */
    expect_norm("a", "/a/");
    expect_norm("/", "/");
    expect_norm("//", "//");
    expect_norm(".", "/.");
    expect_norm("/a.b/c", "/a.b/c"); /* a '.' anywhere: no trailing '/' */
    expect_norm("a.", "/a.");
    expect_norm("/a/b//", "/a/b//");
}
END_TEST

START_TEST(test_normalize_longest)
{
    char in[FOLIO_COMMENTS_PATH_MAX], out[FOLIO_COMMENTS_NPATH_MAX];

    memset(in, 'x', sizeof(in));
    ck_assert_uint_eq(folio_comments_normalize(in, sizeof(in), out),
                      FOLIO_COMMENTS_NPATH_MAX);
    ck_assert_int_eq(out[0], '/');
    ck_assert_int_eq(out[FOLIO_COMMENTS_NPATH_MAX - 1], '/');
}
END_TEST

/* ---- validation ---------------------------------------------------- */

static int
validate_sizes(size_t p, size_t a, size_t b)
{
    static char buf[FOLIO_COMMENTS_BODY_MAX + 2];
    struct folio_comment_in in = {0};

    memset(buf, 'x', sizeof(buf));
    in.path = buf;
    in.path_len = p;
    in.author = buf;
    in.author_len = a;
    in.body = buf;
    in.body_len = b;
    return folio_comments_validate(&in, err, sizeof(err));
}

START_TEST(test_limits)
{
    ck_assert_int_eq(validate_sizes(1, 1, 1), 0);
    ck_assert_int_eq(validate_sizes(1024, 128, 65536), 0);

    ck_assert_int_eq(validate_sizes(0, 1, 1), FOLIO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "path must be 1 to 1024 bytes, got 0"));
    ck_assert_int_eq(validate_sizes(1025, 1, 1), FOLIO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "got 1025"));

    ck_assert_int_eq(validate_sizes(1, 0, 1), FOLIO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "author must be 1 to 128 bytes"));
    ck_assert_int_eq(validate_sizes(1, 129, 1), FOLIO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "author"));

    ck_assert_int_eq(validate_sizes(1, 1, 0), FOLIO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "body must be 1 to 65536 bytes"));
    ck_assert_int_eq(validate_sizes(1, 1, 65537), FOLIO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "got 65537"));
}
END_TEST

static void
expect_text(const char *s, size_t len, int body, int want, size_t want_at)
{
    size_t at = (size_t)-1;
    int st = folio_comments_text_check(s, len, body, &at);

    ck_assert_msg(st == want, "text %zu bytes (body %d): %d, want %d", len,
                  body, st, want);
    if (want != FOLIO_TEXT_OK)
        ck_assert_msg(at == want_at, "offset %zu, want %zu", at, want_at);
}

#define OK(s) expect_text(s, sizeof(s) - 1, 0, FOLIO_TEXT_OK, 0)
#define BAD8(s, at) expect_text(s, sizeof(s) - 1, 0, FOLIO_TEXT_UTF8, at)

START_TEST(test_utf8_valid)
{
    OK("plain ascii ~");
    OK("h\xc3\xa9llo");     /* U+00E9 */
    OK("\xc2\xa0");         /* U+00A0, first after the C1 block */
    OK("\xdf\xbf");         /* U+07FF */
    OK("\xe0\xa0\x80");     /* U+0800, shortest 3-byte */
    OK("\xe2\x82\xac");     /* U+20AC euro */
    OK("\xed\x9f\xbf");     /* U+D7FF, just below surrogates */
    OK("\xee\x80\x80");     /* U+E000, just above */
    OK("\xef\xbf\xbf");     /* U+FFFF (a noncharacter: allowed) */
    OK("\xf0\x90\x80\x80"); /* U+10000, shortest 4-byte */
    OK("\xf0\x9d\x84\x9e"); /* U+1D11E */
    OK("\xf4\x8f\xbf\xbf"); /* U+10FFFF, the last */
}
END_TEST

/*
 * Every byte value at every offset of plain text, as the byte-by-byte
 * rule has it: the check's eight-bytes-at-a-time path finds the same
 * first bad byte (and its kind) wherever it falls in a word.
 */
START_TEST(test_text_every_byte_every_offset)
{
    char s[24];
    unsigned b;
    size_t pos, len;
    int body, want;

    for (body = 0; body <= 1; body++)
        for (len = 1; len <= sizeof(s); len++)
            for (pos = 0; pos < len; pos++)
                for (b = 0; b < 256; b++) {
                    memset(s, 'a', sizeof(s));
                    s[pos] = (char)b;
                    if ((b >= 0x20 && b < 0x7f) ||
                        (body && (b == '\n' || b == '\t')))
                        want = FOLIO_TEXT_OK;
                    else if (b < 0x20 || b == 0x7f)
                        want = FOLIO_TEXT_CONTROL;
                    else
                        want = FOLIO_TEXT_UTF8; /* alone, or before 'a' */
                    expect_text(s, len, body, want, pos);
                }
}
END_TEST

START_TEST(test_utf8_invalid)
{
    /* overlong forms */
    BAD8("a\xc0\x80", 1);
    BAD8("\xc1\xbf", 0);
    BAD8("ab\xe0\x80\x80", 2);
    BAD8("\xe0\x9f\xbf", 0);
    BAD8("\xf0\x80\x80\x80", 0);
    BAD8("\xf0\x8f\xbf\xbf", 0);
    /* surrogates U+D800..U+DFFF */
    BAD8("\xed\xa0\x80", 0);
    BAD8("x\xed\xbf\xbf", 1);
    /* above U+10FFFF */
    BAD8("\xf4\x90\x80\x80", 0);
    BAD8("\xf5\x80\x80\x80", 0);
    BAD8("\xf8\x88\x80\x80\x80", 0);
    BAD8("\xff", 0);
    BAD8("\xfe", 0);
    /* truncated sequences, at the end and before other bytes */
    BAD8("abc\xc3", 3);
    BAD8("\xe2\x82", 0);
    BAD8("\xf0\x9f\x98", 0);
    BAD8("\xe2\x28\xa1", 0);
    BAD8("\xc3(", 0);
    BAD8("\xf0\x9f\x98(", 0);
    /* a lone continuation byte */
    BAD8("ok\x80", 2);
    BAD8("\xbf", 0);
}
END_TEST

START_TEST(test_controls)
{
    /* not in a path or an author */
    expect_text("a\nb", 3, 0, FOLIO_TEXT_CONTROL, 1);
    expect_text("a\tb", 3, 0, FOLIO_TEXT_CONTROL, 1);
    expect_text("\x01", 1, 0, FOLIO_TEXT_CONTROL, 0);
    expect_text("ab\0", 3, 0, FOLIO_TEXT_CONTROL, 2);
    expect_text("a\x7f", 2, 0, FOLIO_TEXT_CONTROL, 1);
    expect_text("\xc2\x85", 2, 0, FOLIO_TEXT_CONTROL, 0); /* NEL, C1 */
    expect_text("\xc2\x9f", 2, 0, FOLIO_TEXT_CONTROL, 0);
    /* a body may hold \n and \t, nothing else */
    expect_text("line\n\tindented\n", 15, 1, FOLIO_TEXT_OK, 0);
    expect_text("crlf\r\n", 6, 1, FOLIO_TEXT_CONTROL, 4);
    expect_text("x\x1b[0m", 5, 1, FOLIO_TEXT_CONTROL, 1);
    expect_text("\xc2\x80", 2, 1, FOLIO_TEXT_CONTROL, 0);
    expect_text("\x7f", 1, 1, FOLIO_TEXT_CONTROL, 0);
}
END_TEST

START_TEST(test_validate_messages)
{
    struct folio_comment_in in = comment("/p", "me", "hi");

    in.author = "m\xc3";
    in.author_len = 2;
    ck_assert_int_eq(folio_comments_validate(&in, err, sizeof(err)),
                     FOLIO_EINVAL);
    ck_assert_str_eq(err, "author: invalid UTF-8 at byte 1");
    in = comment("/p\n", "me", "hi");
    ck_assert_int_eq(folio_comments_validate(&in, err, sizeof(err)),
                     FOLIO_EINVAL);
    ck_assert_str_eq(err, "path: control character at byte 2");
    in = comment("/p", "me", "a\rb");
    ck_assert_int_eq(folio_comments_validate(&in, err, sizeof(err)),
                     FOLIO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "body: control character"));
    in = comment("/p", "me", "two\nlines\tand a tab");
    ck_assert_int_eq(folio_comments_validate(&in, err, sizeof(err)), 0);
}
END_TEST

/* ---- the store ----------------------------------------------------- */

START_TEST(test_post_encoding)
{
    struct folio_comments *cs = open_store(0, 0);
    struct folio_buf b;
    struct folio_mp_cur c;
    struct dc d;
    uint64_t before, after, id;

    ck_assert_int_eq(folio_buf_init(&b, 16, 0), 0);
    folio_buf_append(&b, "HEAD", 4); /* the post appends after this */
    before = (uint64_t)time(NULL) * 1000;
    id = post(cs, "blog/post", "Ann \xc3\x89", "first!\nsecond line", &b);
    after = (uint64_t)time(NULL) * 1000 + 1000;
    ck_assert_uint_eq(id, 1);
    ck_assert_int_eq(memcmp(b.b_data, "HEAD", 4), 0);
    folio_mp_cur_init(&c, b.b_data + 4, b.b_len - 4);
    decode(&c, &d);
    ck_assert_ptr_eq(c.p, c.end); /* exactly one map */
    ck_assert_uint_eq(d.id, 1);
    ck_assert(folio_mp_str_eq(d.path, d.path_len, "/blog/post/"));
    ck_assert(folio_mp_str_eq(d.author, d.author_len, "Ann \xc3\x89"));
    ck_assert(folio_mp_str_eq(d.body, d.body_len, "first!\nsecond line"));
    ck_assert_uint_ge(d.created_at, before);
    ck_assert_uint_le(d.created_at, after);
    /* the next gets the next id */
    folio_buf_reset(&b);
    ck_assert_uint_eq(post(cs, "/x.html", "b", "c", &b), 2);
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

/*
 * Post and list into a buffer whose first bytes were already sent (b_off
 * > 0) and that must make room while the comment is appended: the buffer
 * moves its pending bytes to the front (as a connection's output does for
 * a client that reads slowly).  The stored comment and the listed page
 * are what they would be in an empty buffer.
 */
START_TEST(test_post_and_list_after_compaction)
{
    struct folio_comments *cs = open_store(0, 0);
    struct folio_buf b, ref;
    struct folio_mp_cur c;
    struct dc d;
    char body[300];
    size_t off;
    uint32_t n;
    int i;

    memset(body, 'x', sizeof(body) - 1);
    body[sizeof(body) - 1] = '\0';
    for (i = 0; i < 2; i++) {
        /* 600 bytes, 500 of them sent: the post's append must compact */
        ck_assert_int_eq(folio_buf_init(&b, 600, 0), 0);
        memset(b.b_data, 'p', 600);
        b.b_len = 600;
        folio_buf_consume(&b, 500);
        off = folio_buf_pending(&b);
        post(cs, "/compaction", "a", body, &b);
        ck_assert_int_eq(memcmp(b.b_data + b.b_off, "pppp", 4), 0);
        folio_mp_cur_init(&c, b.b_data + b.b_off + off,
                          folio_buf_pending(&b) - off);
        decode(&c, &d);
        ck_assert_ptr_eq(c.p, c.end);
        ck_assert_uint_eq(d.id, (uint64_t)i + 1);
        ck_assert(folio_mp_str_eq(d.body, d.body_len, body));
        folio_buf_free(&b);
    }
    /* the page, listed into an empty buffer and into a compacting one */
    ck_assert_int_eq(folio_buf_init(&ref, 64, 0), 0);
    ck_assert_int_eq(folio_comments_list(cs, "/compaction", 11, &ref, 0, &n,
                                         err, sizeof(err)),
                     0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(folio_buf_init(&b, 600, 0), 0);
    memset(b.b_data, 'p', 600);
    b.b_len = 600;
    folio_buf_consume(&b, 500);
    off = folio_buf_pending(&b);
    ck_assert_int_eq(folio_comments_list(cs, "/compaction", 11, &b, 0, &n,
                                         err, sizeof(err)),
                     0);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(folio_buf_pending(&b) - off, ref.b_len);
    ck_assert_int_eq(memcmp(b.b_data + b.b_off + off, ref.b_data, ref.b_len),
                     0);
    folio_buf_free(&b);
    folio_buf_free(&ref);
    folio_comments_close(cs);
}
END_TEST

START_TEST(test_post_invalid_leaves_out)
{
    struct folio_comments *cs = open_store(0, 0);
    struct folio_comment_in in = comment("", "a", "b");
    struct folio_comments_info info;
    struct folio_buf b;

    ck_assert_int_eq(folio_buf_init(&b, 16, 0), 0);
    folio_buf_append(&b, "xy", 2);
    ck_assert_int_eq(folio_comments_post(cs, &in, &b, NULL, err, sizeof(err)),
                     FOLIO_EINVAL);
    ck_assert_uint_eq(b.b_len, 2);
    ck_assert_int_eq(folio_comments_info(cs, &info), 0);
    ck_assert_uint_eq(info.next_id, 1); /* no id spent */
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

START_TEST(test_list_order_and_bytes)
{
    struct folio_comments *cs = open_store(0, 0);
    struct folio_buf posted[6], b;
    struct folio_mp_cur c;
    static const char *const pages[6] = {"/a", "a/",      "/a/b",
                                         "a",  "/a.html", "/a/"};
    const unsigned char *start;
    struct dc d;
    uint32_t n, i, j;

    ck_assert_int_eq(folio_buf_init(&b, 64, 0), 0);
    for (i = 0; i < 6; i++) {
        ck_assert_int_eq(folio_buf_init(&posted[i], 64, 0), 0);
        post(cs, pages[i], "x", "body", &posted[i]);
    }
    /* "/a", "a/", "a", "/a/" are one page: ids 1, 2, 4, 6 in order */
    n = list(cs, "/a/", &b, &c);
    ck_assert_uint_eq(n, 4);
    {
        static const unsigned want[4] = {0, 1, 3, 5};

        for (j = 0; j < 4; j++) {
            start = c.p;
            decode(&c, &d);
            ck_assert_uint_eq(d.id, want[j] + 1);
            /* the stored bytes are exactly what post returned */
            ck_assert_uint_eq((size_t)(c.p - start), posted[want[j]].b_len);
            ck_assert_int_eq(
                memcmp(start, posted[want[j]].b_data, posted[want[j]].b_len),
                0);
        }
    }
    ck_assert_ptr_eq(c.p, c.end);
    ck_assert_uint_eq(list(cs, "a", &b, &c), 4);
    ck_assert_uint_eq(list(cs, "/a/b", &b, &c), 1);
    ck_assert_uint_eq(list(cs, "/a.html", &b, &c), 1);
    ck_assert_uint_eq(list(cs, "/a.htm", &b, &c), 0);
    ck_assert_uint_eq(list(cs, "/", &b, &c), 0);
    /* an empty page is the one-byte [] */
    ck_assert_uint_eq(b.b_len, 1);
    ck_assert_int_eq((unsigned char)b.b_data[0], 0x90);
    for (i = 0; i < 6; i++)
        folio_buf_free(&posted[i]);
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

START_TEST(test_post_batch)
{
    struct folio_comments *cs = open_store(0, 0);
    struct folio_comments_info info;
    struct folio_comment_in in[5];
    struct folio_buf b;
    struct folio_mp_cur c;
    struct dc d;
    size_t ends[5];
    uint64_t first = 0;
    int i;

    in[0] = comment("/b1", "a", "zero");
    in[1] = comment("/b2", "b", "one");
    in[2] = comment("b1", "c", "two");
    in[3] = comment("/b3.html", "d", "three");
    in[4] = comment("/b1/", "e", "four");
    post1(cs, "/before", "x");
    ck_assert_int_eq(folio_buf_init(&b, 16, 0), 0);
    ck_assert_int_eq(folio_comments_post_batch(cs, in, 5, &b, ends, NULL, &first,
                                               err, sizeof(err)),
                     0);
    ck_assert_uint_eq(first, 2);
    /* each comment where ends[] says, ids consecutive, in order */
    folio_mp_cur_init(&c, b.b_data, b.b_len);
    for (i = 0; i < 5; i++) {
        decode(&c, &d);
        ck_assert_uint_eq(d.id, first + (uint64_t)i);
        ck_assert_uint_eq((size_t)((const char *)c.p - b.b_data), ends[i]);
        ck_assert(folio_mp_str_eq(d.body, d.body_len, in[i].body));
    }
    ck_assert_uint_eq(list(cs, "/b1/", &b, &c), 3);
    decode(&c, &d);
    ck_assert_uint_eq(d.id, 2);
    decode(&c, &d);
    ck_assert_uint_eq(d.id, 4);
    decode(&c, &d);
    ck_assert_uint_eq(d.id, 6);
    /* all or nothing: one bad comment stores none and spends no id */
    in[3].body_len = 0;
    folio_buf_reset(&b);
    ck_assert_int_eq(folio_comments_post_batch(cs, in, 5, &b, ends, NULL, &first,
                                               err, sizeof(err)),
                     FOLIO_EINVAL);
    ck_assert_uint_eq(b.b_len, 0);
    ck_assert_int_eq(folio_comments_info(cs, &info), 0);
    ck_assert_uint_eq(info.next_id, 7);
    ck_assert_uint_eq(list(cs, "/b1/", &b, &c), 3);
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

static struct folio_comment_in
keyed(const char *path, const char *body, const char *key)
{
    struct folio_comment_in in = comment(path, "k", body);

    in.key = key;
    in.key_len = strlen(key);
    return in;
}

/* A retry with the key gets the first comment, stored once. */
START_TEST(test_key_retry)
{
    struct folio_comments *cs = open_store(0, 0);
    struct folio_comments_info info;
    struct folio_comment_in in = keyed("/k", "once", "key-1"), in2;
    struct folio_buf first, again, b;
    struct folio_mp_cur c;
    uint64_t id = 0, id2 = 0;
    int codes[3];
    size_t ends[3];

    ck_assert_int_eq(folio_buf_init(&first, 16, 0), 0);
    ck_assert_int_eq(folio_buf_init(&again, 16, 0), 0);
    ck_assert_int_eq(folio_buf_init(&b, 16, 0), 0);
    ck_assert_int_eq(
        folio_comments_post(cs, &in, &first, &id, err, sizeof(err)), 0);
    post1(cs, "/k", "between"); /* the clock and the ids move on */
    ck_assert_int_eq(
        folio_comments_post(cs, &in, &again, &id2, err, sizeof(err)), 0);
    /* the same id and created_at: the very bytes stored */
    ck_assert_uint_eq(id2, id);
    ck_assert_uint_eq(again.b_len, first.b_len);
    ck_assert_int_eq(memcmp(again.b_data, first.b_data, first.b_len), 0);
    ck_assert_uint_eq(list(cs, "/k", &b, &c), 2);
    ck_assert_int_eq(folio_comments_info(cs, &info), 0);
    ck_assert_uint_eq(info.keys, 1);
    ck_assert_uint_eq(info.next_id, id + 2);
    /* the key with another comment: refused, nothing stored */
    in2 = keyed("/k", "another body", "key-1");
    folio_buf_reset(&again);
    ck_assert_int_eq(
        folio_comments_post(cs, &in2, &again, NULL, err, sizeof(err)),
        FOLIO_EKEYUSED);
    ck_assert_str_eq(err, FOLIO_COMMENTS_KEY_USED);
    ck_assert_uint_eq(again.b_len, 0);
    in2 = keyed("/other", "once", "key-1");
    ck_assert_int_eq(
        folio_comments_post(cs, &in2, &again, NULL, err, sizeof(err)),
        FOLIO_EKEYUSED);
    /* in a batch: the one refused, the others stored or answered */
    {
        struct folio_comment_in bat[3];

        bat[0] = keyed("/k", "new", "key-2");
        bat[1] = keyed("/k", "another body", "key-1");
        bat[2] = keyed("/k", "new", "key-2"); /* twice in one batch */
        folio_buf_reset(&again);
        ck_assert_int_eq(folio_comments_post_batch(cs, bat, 3, &again, ends,
                                                   codes, NULL, err,
                                                   sizeof(err)),
                         0);
        ck_assert_int_eq(codes[0], 0);
        ck_assert_int_eq(codes[1], FOLIO_EKEYUSED);
        ck_assert_int_eq(codes[2], 0);
        ck_assert_uint_eq(ends[1], ends[0]);
        ck_assert_uint_eq(ends[2] - ends[1], ends[0]);
        ck_assert_int_eq(memcmp(again.b_data, again.b_data + ends[1], ends[0]),
                         0);
    }
    ck_assert_uint_eq(list(cs, "/k", &b, &c), 3);
    /* bad keys */
    in2 = keyed("/k", "x", "");
    ck_assert_int_eq(
        folio_comments_post(cs, &in2, &again, NULL, err, sizeof(err)),
        FOLIO_EINVAL);
    ck_assert_msg(strstr(err, "idempotency_key must be 1 to 128") != NULL, "%s",
                  err);
    {
        char big[130];

        memset(big, 'a', 129);
        big[129] = '\0';
        in2 = keyed("/k", "x", big);
        ck_assert_int_eq(
            folio_comments_post(cs, &in2, &again, NULL, err, sizeof(err)),
            FOLIO_EINVAL);
        in2 = keyed("/k", "x", "bad\x01key");
        ck_assert_int_eq(
            folio_comments_post(cs, &in2, &again, NULL, err, sizeof(err)),
            FOLIO_EINVAL);
        ck_assert_msg(strstr(err, "idempotency_key: control") != NULL, "%s",
                      err);
    }
    /* a deleted comment's key stores anew */
    ck_assert_int_eq(folio_comments_delete(cs, id, err, sizeof(err)), 0);
    folio_buf_reset(&again);
    ck_assert_int_eq(
        folio_comments_post(cs, &in, &again, &id2, err, sizeof(err)), 0);
    ck_assert_uint_gt(id2, id);
    folio_buf_free(&first);
    folio_buf_free(&again);
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

/* Past the window a key is forgotten: stored anew, and pruned. */
START_TEST(test_key_window)
{
    enum { WINDOW = 300 };
    struct folio_comments *cs = open_store_window(0, 0, WINDOW);
    struct folio_comments_info info;
    struct folio_comment_in in = keyed("/w", "body", "key-w"), many[100];
    struct folio_buf b;
    uint64_t id = 0, id2 = 0, t = folio_unix_ms();
    char keys[100][16];
    int i;

    ck_assert_int_eq(folio_buf_init(&b, 16, 0), 0);
    for (i = 0; i < 100; i++) {
        snprintf(keys[i], sizeof(keys[i]), "many-%d", i);
        many[i] = keyed("/w/many", "x", keys[i]);
    }
    ck_assert_int_eq(folio_comments_post_batch(cs, many, 100, &b, NULL, NULL,
                                               NULL, err, sizeof(err)),
                     0);
    ck_assert_int_eq(folio_comments_post(cs, &in, &b, &id, err, sizeof(err)),
                     0);
    ck_assert_int_eq(folio_comments_info(cs, &info), 0);
    if (folio_unix_ms() < t + WINDOW) /* else some went already */
        ck_assert_uint_eq(info.keys, 101);
    /* the window is the clock's: let it pass (a short spin) */
    t = folio_unix_ms();
    while (folio_unix_ms() < t + WINDOW + 10)
        ;
    ck_assert_int_eq(folio_comments_post(cs, &in, &b, &id2, err, sizeof(err)),
                     0);
    ck_assert_uint_gt(id2, id);
    /* each post forgets more keys than it adds: a few posts, all gone */
    for (i = 0; i < 8; i++) {
        struct folio_comment_in k = comment("/w/plain", "x", "y");

        ck_assert_int_eq(
            folio_comments_post(cs, &k, &b, NULL, err, sizeof(err)), 0);
    }
    ck_assert_int_eq(folio_comments_info(cs, &info), 0);
    ck_assert_uint_le(info.keys, 1); /* the last one, if still within */
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

/* A batch that fills the map is retried whole after growing it. */
START_TEST(test_post_batch_grows)
{
    struct folio_comments *cs = open_store(0, 64 << 20);
    struct folio_comments_info info;
    struct folio_comment_in in[40];
    struct folio_buf b;
    struct folio_mp_cur c;
    struct dc d;
    char *body = malloc(60001);
    uint32_t i;

    memset(body, 'B', 60000);
    body[60000] = '\0';
    for (i = 0; i < 40; i++)
        in[i] = comment("/batch/big", "x", body);
    ck_assert_int_eq(folio_buf_init(&b, 16, 0), 0);
    ck_assert_int_eq(
        folio_comments_post_batch(cs, in, 40, &b, NULL, NULL, NULL, err,
                                  sizeof(err)),
        0);
    ck_assert_int_eq(folio_comments_info(cs, &info), 0);
    ck_assert_uint_gt(info.grows, 0);
    ck_assert_uint_eq(info.next_id, 41);
    ck_assert_uint_eq(list(cs, "/batch/big", &b, &c), 40);
    for (i = 0; i < 40; i++) {
        decode(&c, &d);
        ck_assert_uint_eq(d.id, i + 1); /* each stored once */
    }
    free(body);
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

/*
 * Replies (PROTOCOL.md section 3): one level, same page; stored with the
 * comment and listed with it; a bad one refused alone in a batch.
 */
START_TEST(test_replies)
{
    struct folio_comments *cs = open_store(0, 0);
    struct folio_comments_info info;
    struct folio_comment_in in, batch[3];
    struct folio_buf b;
    struct folio_mp_cur c;
    const char *k;
    uint32_t n, klen, i;
    uint64_t top, other, v, id = 0;
    size_t ends[3];
    int codes[3];

    ck_assert_int_eq(folio_buf_init(&b, 256, 0), 0);
    top = post1(cs, "/t", "top");
    other = post1(cs, "/elsewhere", "other page");
    in = comment("t", "r", "a reply");
    in.has_reply_to = 1;
    in.reply_to = top;
    ck_assert_int_eq(folio_comments_post(cs, &in, &b, &id, err, sizeof(err)),
                     0);
    /* The stored reply: six entries, reply_to last. */
    folio_mp_cur_init(&c, b.b_data, b.b_len);
    ck_assert_int_eq(folio_mp_read_map(&c, &n), 0);
    ck_assert_uint_eq(n, 6);
    for (i = 0; i < 10; i++)
        ck_assert_int_eq(folio_mp_skip(&c), 0);
    ck_assert_int_eq(folio_mp_read_str(&c, &k, &klen), 0);
    ck_assert(folio_mp_str_eq(k, klen, "reply_to"));
    ck_assert_int_eq(folio_mp_read_uint(&c, &v), 0);
    ck_assert_uint_eq(v, top);
    /* Listed as stored. */
    ck_assert_uint_eq(list(cs, "/t/", &b, &c), 2);
    /* Refused: another page's comment, a reply, no such comment. */
    in.reply_to = other;
    ck_assert_int_eq(folio_comments_post(cs, &in, &b, NULL, err, sizeof(err)),
                     FOLIO_EINVAL);
    ck_assert_str_eq(err, FOLIO_COMMENTS_BAD_REPLY);
    in.reply_to = id;
    ck_assert_int_eq(folio_comments_post(cs, &in, &b, NULL, err, sizeof(err)),
                     FOLIO_EINVAL);
    in.reply_to = 999;
    ck_assert_int_eq(folio_comments_post(cs, &in, &b, NULL, err, sizeof(err)),
                     FOLIO_EINVAL);
    ck_assert_int_eq(folio_comments_info(cs, &info), 0);
    ck_assert_uint_eq(info.next_id, id + 1); /* no id spent */
    /* In a batch with codes: the bad one alone is left out. */
    batch[0] = comment("/t/", "a", "fine");
    batch[1] = comment("/t/", "b", "bad");
    batch[1].has_reply_to = 1;
    batch[1].reply_to = id;
    batch[2] = comment("/t/", "c", "fine reply");
    batch[2].has_reply_to = 1;
    batch[2].reply_to = top;
    folio_buf_reset(&b);
    ck_assert_int_eq(folio_comments_post_batch(cs, batch, 3, &b, ends, codes,
                                               NULL, err, sizeof(err)),
                     0);
    ck_assert_int_eq(codes[0], 0);
    ck_assert_int_eq(codes[1], FOLIO_EINVAL);
    ck_assert_int_eq(codes[2], 0);
    ck_assert_uint_eq(ends[1], ends[0]); /* nothing for the bad one */
    ck_assert_uint_eq(list(cs, "/t/", &b, &c), 4);
    /* Without codes, the batch fails whole. */
    folio_buf_reset(&b);
    ck_assert_int_eq(folio_comments_post_batch(cs, batch, 3, &b, ends, NULL,
                                               NULL, err, sizeof(err)),
                     FOLIO_EINVAL);
    ck_assert_uint_eq(b.b_len, 0);
    ck_assert_uint_eq(list(cs, "/t/", &b, &c), 4);
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

START_TEST(test_list_invalid_path)
{
    struct folio_comments *cs = open_store(0, 0);
    struct folio_buf b;
    char big[FOLIO_COMMENTS_PATH_MAX + 1];

    memset(big, 'p', sizeof(big));
    ck_assert_int_eq(folio_buf_init(&b, 64, 0), 0);
    ck_assert_int_eq(
        folio_comments_list(cs, "", 0, &b, 0, NULL, err, sizeof(err)),
        FOLIO_EINVAL);
    ck_assert_int_eq(folio_comments_list(cs, big, sizeof(big), &b, 0, NULL, err,
                                         sizeof(err)),
                     FOLIO_EINVAL);
    ck_assert_int_eq(folio_comments_list(cs, "/\xed\xa0\x80", 4, &b, 0, NULL,
                                         err, sizeof(err)),
                     FOLIO_EINVAL);
    ck_assert_uint_eq(b.b_len, 0);
    ck_assert_int_eq(folio_comments_list(cs, big, sizeof(big) - 1, &b, 0, NULL,
                                         err, sizeof(err)),
                     0);
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

START_TEST(test_long_paths)
{
    struct folio_comments *cs = open_store(0, 0);
    char p1[1025], p2[1025], p3[482], p4[482];
    struct folio_buf b;
    struct folio_mp_cur c;
    struct dc d;
    uint64_t id1, id2;

    /* 1024-byte paths that share 1000 bytes: hashed keys, distinct pages */
    memset(p1, 'q', 1024);
    p1[0] = '/';
    p1[1024] = '\0';
    memcpy(p2, p1, sizeof(p1));
    p2[1010] = 'r';
    id1 = post1(cs, p1, "one");
    id2 = post1(cs, p2, "two");
    post1(cs, p1, "three");
    ck_assert_int_eq(folio_buf_init(&b, 64, 0), 0);
    ck_assert_uint_eq(list(cs, p1, &b, &c), 2);
    decode(&c, &d);
    ck_assert_uint_eq(d.id, id1);
    ck_assert_uint_eq(d.path_len, 1025); /* normalized: trailing '/' */
    ck_assert_uint_eq(list(cs, p2, &b, &c), 1);
    decode(&c, &d);
    ck_assert_uint_eq(d.id, id2);
    /* around the short/hashed boundary (480 bytes normalized) */
    memset(p3, 'z', sizeof(p3));
    p3[0] = '/';
    p3[479] = '/';
    p3[480] = '\0'; /* 480 bytes, ends with '/': a plain key */
    memcpy(p4, p3, sizeof(p3));
    p4[480] = '/';
    p4[481] = '\0'; /* 481 bytes: hashed */
    post1(cs, p3, "480");
    post1(cs, p4, "481");
    ck_assert_uint_eq(list(cs, p3, &b, &c), 1);
    decode(&c, &d);
    ck_assert(folio_mp_str_eq(d.body, d.body_len, "480"));
    ck_assert_uint_eq(list(cs, p4, &b, &c), 1);
    decode(&c, &d);
    ck_assert(folio_mp_str_eq(d.body, d.body_len, "481"));
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

START_TEST(test_delete)
{
    struct folio_comments *cs = open_store(0, 0);
    struct folio_buf b;
    struct folio_mp_cur c;
    struct dc d;
    uint64_t a, m, z;

    a = post1(cs, "/p", "a");
    m = post1(cs, "/p", "m");
    z = post1(cs, "/p", "z");
    ck_assert_int_eq(folio_comments_delete(cs, m, err, sizeof(err)), 0);
    ck_assert_int_eq(folio_comments_delete(cs, m, err, sizeof(err)),
                     FOLIO_ENOTFOUND);
    ck_assert_str_eq(err, "no comment with id 2");
    ck_assert_int_eq(folio_comments_delete(cs, 999, err, sizeof(err)),
                     FOLIO_ENOTFOUND);
    ck_assert_int_eq(folio_comments_delete(cs, 0, err, sizeof(err)),
                     FOLIO_ENOTFOUND);
    ck_assert_int_eq(folio_buf_init(&b, 64, 0), 0);
    ck_assert_uint_eq(list(cs, "/p", &b, &c), 2);
    decode(&c, &d);
    ck_assert_uint_eq(d.id, a);
    decode(&c, &d);
    ck_assert_uint_eq(d.id, z);
    /* deleting the newest does not give its id back */
    ck_assert_int_eq(folio_comments_delete(cs, z, err, sizeof(err)), 0);
    ck_assert_uint_eq(post1(cs, "/p", "new"), z + 1);
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

START_TEST(test_persistence)
{
    struct folio_comments *cs = open_store(0, 0);
    struct folio_buf b1, b2;
    struct folio_mp_cur c;
    int i;

    for (i = 0; i < 50; i++)
        post1(cs, i % 2 ? "/odd" : "/even", "persist me");
    ck_assert_int_eq(folio_comments_delete(cs, 3, err, sizeof(err)), 0);
    ck_assert_int_eq(folio_buf_init(&b1, 64, 0), 0);
    ck_assert_int_eq(folio_buf_init(&b2, 64, 0), 0);
    ck_assert_uint_eq(list(cs, "/even", &b1, &c), 24);
    folio_comments_close(cs);

    cs = open_store(0, 0);
    ck_assert_uint_eq(list(cs, "/even", &b2, &c), 24);
    ck_assert_uint_eq(b1.b_len, b2.b_len);
    ck_assert_int_eq(memcmp(b1.b_data, b2.b_data, b1.b_len), 0);
    ck_assert_uint_eq(list(cs, "/odd", &b2, &c), 25);
    ck_assert_uint_eq(post1(cs, "/even", "after"), 51);
    folio_buf_free(&b1);
    folio_buf_free(&b2);
    folio_comments_close(cs);
}
END_TEST

START_TEST(test_map_grows)
{
    struct folio_comments *cs = open_store(0, 64 << 20);
    struct folio_comments_info info;
    struct folio_buf b;
    struct folio_mp_cur c;
    struct dc d;
    char *body = malloc(10001);
    uint32_t n, i;

    memset(body, 'g', 10000);
    body[10000] = '\0';
    for (i = 0; i < 300; i++)
        post1(cs, "/big", body);
    ck_assert_int_eq(folio_comments_info(cs, &info), 0);
    ck_assert_uint_gt(info.grows, 0);
    ck_assert_uint_gt(info.map_size, 300 * 10000);
    ck_assert_uint_eq(info.next_id, 301);
    ck_assert_int_eq(folio_buf_init(&b, 64, 0), 0);
    n = list(cs, "/big", &b, &c);
    ck_assert_uint_eq(n, 300);
    for (i = 0; i < n; i++) {
        decode(&c, &d);
        ck_assert_uint_eq(d.id, i + 1);
        ck_assert_uint_eq(d.body_len, 10000);
    }
    free(body);
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

START_TEST(test_full)
{
    struct folio_comments *cs = open_store(0, 1 << 20);
    struct folio_comment_in in;
    struct folio_buf b;
    struct folio_mp_cur c;
    char *body = malloc(FOLIO_COMMENTS_BODY_MAX);
    uint64_t id;
    int i, rc = 0, posted = 0;

    memset(body, 'f', FOLIO_COMMENTS_BODY_MAX);
    in = comment("/full", "x", "");
    in.body = body;
    in.body_len = FOLIO_COMMENTS_BODY_MAX;
    ck_assert_int_eq(folio_buf_init(&b, 64, 0), 0);
    for (i = 0; i < 40; i++) {
        folio_buf_reset(&b);
        rc = folio_comments_post(cs, &in, &b, &id, err, sizeof(err));
        if (rc != 0)
            break;
        posted++;
    }
    ck_assert_int_eq(rc, FOLIO_EFULL);
    ck_assert_ptr_nonnull(strstr(err, "full"));
    ck_assert_uint_eq(b.b_len, 0);
    ck_assert_int_gt(posted, 5);
    /* what was stored is intact and still listed */
    ck_assert_uint_eq(list(cs, "/full", &b, &c), (uint32_t)posted);
    folio_comments_close(cs);
    /* a higher ceiling lets posts in again */
    cs = open_store(0, 4 << 20);
    folio_buf_reset(&b);
    ck_assert_int_eq(folio_comments_post(cs, &in, &b, &id, err, sizeof(err)),
                     0);
    ck_assert_uint_eq(id, (uint64_t)posted + 1);
    free(body);
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

START_TEST(test_too_big_for_reply)
{
    struct folio_comments *cs = open_store(0, 0);
    struct folio_buf b;
    uint32_t n;
    int i;

    for (i = 0; i < 10; i++)
        post1(cs, "/many", "0123456789012345678901234567890123456789");
    ck_assert_int_eq(folio_buf_init(&b, 64, 0), 0);
    folio_buf_append(&b, "k", 1);
    ck_assert_int_eq(
        folio_comments_list(cs, "/many", 5, &b, 300, &n, err, sizeof(err)),
        FOLIO_ETOOBIG);
    ck_assert_uint_eq(b.b_len, 1);
    ck_assert_int_eq(
        folio_comments_list(cs, "/many", 5, &b, 100000, &n, err, sizeof(err)),
        0);
    ck_assert_uint_eq(n, 10);
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

/*
 * Another process grows the map while this one holds a smaller one: the
 * list adopts the new size (MDB_MAP_RESIZED), and so does the next post.
 */
START_TEST(test_grow_in_other_process)
{
    struct folio_comments *cs;
    struct folio_comments_info info;
    struct folio_buf b;
    struct folio_mp_cur c;
    int st;
    pid_t pid;

    cs = open_store(0, 64 << 20);
    post1(cs, "/shared", "from the parent");
    pid = fork();
    ck_assert_int_ne(pid, -1);
    if (pid == 0) {
        /* never use the parent's environment after fork: open our own */
        struct folio_comments *mine;
        struct folio_comments_opts o = {0, 64 << 20, 0, 0};
        char *body = malloc(20000);
        int i;

        memset(body, 'c', 19999);
        body[19999] = '\0';
        if (folio_comments_open(dir, &o, &mine, err, sizeof(err)) != 0)
            _exit(1);
        for (i = 0; i < 100; i++) {
            struct folio_comment_in in = comment("/shared", "child", body);
            struct folio_buf ob;

            folio_buf_init(&ob, 64, 0);
            if (folio_comments_post(mine, &in, &ob, NULL, err, sizeof(err)) !=
                0)
                _exit(2);
            folio_buf_free(&ob);
        }
        folio_comments_close(mine);
        free(body);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
    ck_assert_int_eq(folio_buf_init(&b, 64, 0), 0);
    ck_assert_uint_eq(list(cs, "/shared", &b, &c), 101);
    ck_assert_uint_eq(post1(cs, "/shared", "parent again"), 102);
    ck_assert_int_eq(folio_comments_info(cs, &info), 0);
    ck_assert_uint_gt(info.adopts, 0);
    ck_assert_uint_gt(info.map_size, 100 * 20000);
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

START_TEST(test_list_allocates_nothing)
{
    struct folio_comments *cs = open_store(0, 0);
    struct folio_buf b;
    uint64_t calls, after;
    uint32_t n;
    int i, complete, bad;

    for (i = 0; i < 50; i++)
        post1(cs, "/page", "a comment of ordinary length, about so long.");
    ck_assert_int_eq(folio_buf_init(&b, 16384, 0), 0);
    for (i = 0; i < 10; i++) { /* warm up */
        folio_buf_reset(&b);
        folio_comments_list(cs, "/page", 5, &b, 0, &n, err, sizeof(err));
    }
    calls = allocs(&complete);
    /* no ck_assert in the loop: Check allocates for each */
    for (i = 0, bad = 0; i < 10000; i++) {
        folio_buf_reset(&b);
        bad += folio_comments_list(cs, "/page", 5, &b, 0, &n, err,
                                   sizeof(err)) != 0 ||
               n != 50;
    }
    after = allocs(&complete);
    ck_assert_uint_gt(calls, 0); /* opening the store was counted */
    ck_assert_int_eq(bad, 0);
    ck_assert_msg(after == calls, "10000 lists allocated %llu times",
                  (unsigned long long)(after - calls));
    if (!complete)
        fprintf(stderr, "check_comments: libc's allocations not counted in "
                        "this build\n");
    /* and the counter does move when something allocates */
    folio_buf_free(&b);
    ck_assert_uint_gt(post1(cs, "/page", "one more"), 50);
    ck_assert_uint_gt(allocs(&complete), calls);
    folio_comments_close(cs);
}
END_TEST

START_TEST(test_open_bad_dir)
{
    struct folio_comments *cs;
    char bad[300];

    snprintf(bad, sizeof(bad), "%s/not-a-dir", dir);
    ck_assert_int_eq(close(creat(bad, 0600)), 0);
    ck_assert_int_ne(folio_comments_open(bad, NULL, &cs, err, sizeof(err)), 0);
    ck_assert_ptr_null(cs);
    ck_assert_ptr_nonnull(strstr(err, "not-a-dir"));
}
END_TEST

/*
 * A data.mdb cut short: refused at open with a clear reason (reading it
 * would be SIGBUS past the end of the file), never rebuilt (it holds
 * what users posted); whole again, it opens with every comment.
 */
START_TEST(test_open_truncated)
{
    struct folio_comments *cs = open_store(0, 0);
    char path[400], copy[420];
    struct stat st;
    struct folio_buf b;
    struct folio_mp_cur c;
    int i;

    for (i = 0; i < 200; i++)
        post1(cs, "/t", "a comment long enough to take some pages of the "
                        "store, a comment long enough to take some pages");
    folio_comments_close(cs);
    snprintf(path, sizeof(path), "%s/comments/data.mdb", dir);
    snprintf(copy, sizeof(copy), "%s/data.mdb.whole", dir);
    ck_assert_int_eq(link(path, copy), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(unlink(path), 0);
    {
        /* A copy cut short. */
        FILE *in = fopen(copy, "rb"), *o = fopen(path, "wb");
        char buf[4096];
        off_t left = st.st_size / 2;
        size_t n;

        ck_assert(in != NULL && o != NULL);
        while (left > 0 && (n = fread(buf, 1, sizeof(buf), in)) > 0) {
            fwrite(buf, 1, n, o);
            left -= (off_t)n;
        }
        fclose(in);
        ck_assert_int_eq(fclose(o), 0);
    }
    ck_assert_int_eq(folio_comments_open(dir, NULL, &cs, err, sizeof(err)),
                     FOLIO_ESTORE);
    ck_assert_ptr_null(cs);
    ck_assert_msg(strstr(err, "truncated") != NULL, "%s", err);
    ck_assert_msg(strstr(err, "restore it from a backup") != NULL, "%s", err);
    ck_assert_int_eq(rename(copy, path), 0);
    cs = open_store(0, 0);
    ck_assert_int_eq(folio_buf_init(&b, 64, 0), 0);
    ck_assert_uint_eq(list(cs, "/t", &b, &c), 200);
    folio_buf_free(&b);
    folio_comments_close(cs);
}
END_TEST

static Suite *
comments_suite(void)
{
    Suite *s = suite_create("comments");
    TCase *text = tcase_create("text");
    TCase *store = tcase_create("store");

    tcase_add_test(text, test_normalize);
    tcase_add_test(text, test_normalize_longest);
    tcase_add_test(text, test_limits);
    tcase_add_test(text, test_utf8_valid);
    tcase_add_test(text, test_text_every_byte_every_offset);
    tcase_add_test(text, test_utf8_invalid);
    tcase_add_test(text, test_controls);
    tcase_add_test(text, test_validate_messages);
    suite_add_tcase(s, text);

    tcase_add_checked_fixture(store, setup, teardown);
    tcase_set_timeout(store, 60);
    tcase_add_test(store, test_post_encoding);
    tcase_add_test(store, test_post_invalid_leaves_out);
    tcase_add_test(store, test_post_and_list_after_compaction);
    tcase_add_test(store, test_post_batch);
    tcase_add_test(store, test_post_batch_grows);
    tcase_add_test(store, test_key_retry);
    tcase_add_test(store, test_key_window);
    tcase_add_test(store, test_replies);
    tcase_add_test(store, test_list_order_and_bytes);
    tcase_add_test(store, test_list_invalid_path);
    tcase_add_test(store, test_long_paths);
    tcase_add_test(store, test_delete);
    tcase_add_test(store, test_persistence);
    tcase_add_test(store, test_map_grows);
    tcase_add_test(store, test_full);
    tcase_add_test(store, test_too_big_for_reply);
    tcase_add_test(store, test_grow_in_other_process);
    tcase_add_test(store, test_list_allocates_nothing);
    tcase_add_test(store, test_open_bad_dir);
    tcase_add_test(store, test_open_truncated);
    suite_add_tcase(s, store);
    return s;
}

int
main(void)
{
    return folio_check_run(comments_suite());
}
