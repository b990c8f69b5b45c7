/*
 * comments.c - the comments store (see comments.h).
 *
 * One LMDB environment, three databases:
 *   "comments"  page key + 0x00 + big-endian id -> the comment, encoded as
 *               the msgpack map comments.list returns.  A page's comments
 *               are contiguous and in id order, so a list is one cursor
 *               walk copying values.
 *   "ids"       big-endian id -> the comment's key (for comments.delete).
 *   "meta"      "next_id" -> big-endian id of the next post: a counter in
 *               the environment, read and bumped inside the post's write
 *               transaction, so ids increase across every worker.
 *   "keys"      posts' idempotency keys: 'k' + key -> big-endian
 *               created_at, then id, of the comment the key stored; and
 *               't' + big-endian created_at + key -> nothing, oldest
 *               first, which each post walks to forget a few of the keys
 *               past the window (so the keys stay as many as a window's
 *               posts).  A retry is the same comment when encoding it with
 *               the stored id and created_at gives the stored bytes.
 *
 * The page key is the normalized path when it fits LMDB's key limit (511
 * bytes, with the id); a longer path is keyed by its first bytes, 0xff
 * (never in UTF-8, so no short path can share the prefix) and a 64-bit
 * hash of the whole path.  Two long paths with the same prefix and hash
 * would share a key range: listing such a page checks each stored path.
 *
 * Durability: default LMDB flags (no MDB_NOSYNC, MDB_NOMETASYNC or
 * MDB_WRITEMAP): mdb_txn_commit() writes the pages, fdatasync()s them, then
 * writes the meta page through the O_DSYNC descriptor.  A post returns only
 * after that.  The map starts small and doubles when full, up to a ceiling;
 * other processes adopt a grown map when LMDB tells them (MDB_MAP_RESIZED)
 * or when their own smaller map fills up.
 *
 * Threads (opts->threaded, the worker's): the write functions run in one
 * thread (a worker's writer, which may wait in mdb_txn_begin for another
 * process to let go of LMDB's writer lock) and the read functions in
 * another (the worker's loop, which must never wait for it).  LMDB allows
 * that with MDB_NOTLS; what it does not allow is a remap (a map size
 * adopted or grown) or a reopen while another thread is in a transaction.
 * Those are done by the writer alone, between its transactions, under
 * cs->lock, which the reads hold: a read that finds the store needing one
 * says so (FOLIO_EAGAIN) and leaves it to the writer
 * (folio_comments_maintain), rather than remapping under the writer's
 * feet or waiting for it.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lmdb.h>
#include <msgpack.h>

#include "shm/comments.h"
#include "shm/lmdb_check.h"
#include "src/be.h"
#include "src/clock.h"
#include "src/hash.h"
#include "src/alloc.h"
#include "src/buf.h"
#include "src/bytes.h"
#include "src/conf.h"
#include "src/err.h"
#include "src/log.h"
#include "src/mp.h"
#include "src/rpc.h"

#define KEY_SHORT_MAX 480   /* paths up to this long are their own key */
#define KEY_LONG_PREFIX 471 /* longer: 471 bytes, 0xff, 8 hash bytes */
#define PAGE_KEY_MAX (KEY_SHORT_MAX + 1) /* + the 0x00 separator */
#define KEY_MAX (PAGE_KEY_MAX + 8)       /* + the id: 489 <= 511 */
#define MAX_READERS (2 * FOLIO_MAX_WORKERS + 64)
#define WRITE_ATTEMPTS 16
#define DISK_FULL_BYTES (1u << 20) /* less free space: the disk is full */

static const char next_id_key[] = "next_id";

struct folio_comments {
    MDB_env *env;
    MDB_dbi dbi_comments;
    MDB_dbi dbi_ids;
    MDB_dbi dbi_meta;
    MDB_dbi dbi_keys;
    MDB_txn *rtxn;    /* the read transaction: reset between requests */
    MDB_cursor *rcur; /* on "comments", renewed with rtxn */
    int broken;       /* MDB_PANIC seen: reopen before the next use */
    uint64_t map_init;
    uint64_t max_size;
    uint64_t key_window_ms;
    uint64_t grows, adopts, reopens;
    /*
     * Threaded (see above): cs->lock is held by the reads and by the
     * writer's remaps and reopens; need_adopt, set by a read that found
     * the map resized by another process, asks the writer to adopt it.
     */
    int threaded;
    int need_adopt;
    pthread_mutex_t lock;
    struct folio_comments_hooks hooks; /* the writer's; fns may be NULL */
    struct post_one *posts; /* a batch's work area, grown once */
    size_t posts_cap;
    char dir[PATH_MAX];
};

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int adopt(struct folio_comments *cs);

static void
seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- text ---------------------------------------------------------- */

/*
 * Whether the 8 bytes at p are all printable ASCII (0x20-0x7e): each
 * byte less 0x20 and plus 1 keeps its top bit clear exactly then (a byte
 * below 0x20 borrows, 0x7f-0x9f reach 0x80 or more by 1, 0xa0 and above
 * stay there less 0x20).  A borrow or carry out of a bad byte may mark
 * its neighbour too, which only sends the word to the byte-by-byte check.
 */
static inline int
printable8(const unsigned char *p)
{
    uint64_t x;

    memcpy(&x, p, sizeof(x));
    return ((x - 0x2020202020202020ull) | (x + 0x0101010101010101ull)) &
                   0x8080808080808080ull
               ? 0
               : 1;
}

int
folio_comments_text_check(const char *s, size_t len, int body, size_t *at)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    unsigned c, c1;
    int st = FOLIO_TEXT_UTF8;

    while (p < end) {
        /* Paths, names and most text: eight bytes at a time. */
        while (end - p >= 8 && printable8(p))
            p += 8;
        if (p == end)
            break;
        c = *p;
        if (c < 0x80) {
            if ((c < 0x20 || c == 0x7f) &&
                !(body && (c == '\n' || c == '\t'))) {
                st = FOLIO_TEXT_CONTROL;
                goto bad;
            }
            p++;
            continue;
        }
        if (c < 0xc2) /* a continuation byte, or overlong C0/C1 */
            goto bad;
        if (c < 0xe0) {
            if (end - p < 2 || (p[1] & 0xc0) != 0x80)
                goto bad;
            if (c == 0xc2 && p[1] < 0xa0) { /* U+0080..U+009F */
                st = FOLIO_TEXT_CONTROL;
                goto bad;
            }
            p += 2;
            continue;
        }
        if (c < 0xf0) {
            if (end - p < 3)
                goto bad;
            c1 = p[1];
            if (c == 0xe0   ? c1 < 0xa0 || c1 > 0xbf /* overlong */
                : c == 0xed ? c1 < 0x80 || c1 > 0x9f /* surrogates */
                            : (c1 & 0xc0) != 0x80)
                goto bad;
            if ((p[2] & 0xc0) != 0x80)
                goto bad;
            p += 3;
            continue;
        }
        if (c < 0xf5) {
            if (end - p < 4)
                goto bad;
            c1 = p[1];
            if (c == 0xf0   ? c1 < 0x90 || c1 > 0xbf /* overlong */
                : c == 0xf4 ? c1 < 0x80 || c1 > 0x8f /* > U+10FFFF */
                            : (c1 & 0xc0) != 0x80)
                goto bad;
            if ((p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80)
                goto bad;
            p += 4;
            continue;
        }
        goto bad; /* F5..FF: beyond U+10FFFF */
    }
    return FOLIO_TEXT_OK;
bad:
    if (at != NULL)
        *at = (size_t)(p - (const unsigned char *)s);
    return st;
}

static int
check_field(const char *name, const char *s, size_t len, size_t max, int body,
            char *err, size_t errlen)
{
    size_t at;
    int st;

    if (len < 1 || len > max) {
        seterr(err, errlen, "%s must be 1 to %zu bytes, got %zu", name, max,
               len);
        return FOLIO_EINVAL;
    }
    if ((st = folio_comments_text_check(s, len, body, &at)) != FOLIO_TEXT_OK) {
        seterr(err, errlen, "%s: %s at byte %zu", name,
               st == FOLIO_TEXT_UTF8 ? "invalid UTF-8"
               : body ? "control character other than \\n and \\t"
                      : "control character",
               at);
        return FOLIO_EINVAL;
    }
    return 0;
}

int
folio_comments_path_check(const char *path, size_t len, char *err,
                          size_t errlen)
{
    return check_field("path", path, len, FOLIO_COMMENTS_PATH_MAX, 0, err,
                       errlen);
}

int
folio_comments_validate(const struct folio_comment_in *in, char *err,
                        size_t errlen)
{
    int rc;

    if ((rc = check_field("path", in->path, in->path_len,
                          FOLIO_COMMENTS_PATH_MAX, 0, err, errlen)) != 0 ||
        (rc = check_field("author", in->author, in->author_len,
                          FOLIO_COMMENTS_AUTHOR_MAX, 0, err, errlen)) != 0 ||
        (rc = check_field("body", in->body, in->body_len,
                          FOLIO_COMMENTS_BODY_MAX, 1, err, errlen)) != 0 ||
        (in->key != NULL &&
         (rc = check_field("idempotency_key", in->key, in->key_len,
                           FOLIO_COMMENTS_KEY_MAX, 0, err, errlen)) != 0))
        return rc;
    return 0;
}

/* ---- keys ---------------------------------------------------------- */

/*
 * The page key of normalized path np (n bytes), with its 0x00 separator:
 * returns its length; *is_long tells whether it is a hashed key.  `key`
 * has room for KEY_MAX bytes: the caller appends the id.
 */
static size_t
page_key(const char *np, size_t n, unsigned char *key, int *is_long)
{
    if (n <= KEY_SHORT_MAX) {
        memcpy(key, np, n);
        key[n] = 0x00;
        *is_long = 0;
        return n + 1;
    }
    memcpy(key, np, KEY_LONG_PREFIX);
    key[KEY_LONG_PREFIX] = 0xff;
    folio_be64_put(key + KEY_LONG_PREFIX + 1, folio_fnv1a64(np, n));
    key[KEY_LONG_PREFIX + 9] = 0x00;
    *is_long = 1;
    return KEY_LONG_PREFIX + 10;
}

/* Whether the stored comment v belongs to page np (for hashed keys). */
static int
stored_path_is(const MDB_val *v, const char *np, size_t n)
{
    struct folio_mp_cur c;
    const char *s;
    uint32_t m, len;

    folio_mp_cur_init(&c, v->mv_data, v->mv_size);
    if (folio_mp_read_map(&c, &m) != 0 || folio_mp_skip(&c) != 0 ||
        folio_mp_skip(&c) != 0 || folio_mp_skip(&c) != 0 ||
        folio_mp_read_str(&c, &s, &len) != 0)
        return 0;
    return len == n && memcmp(s, np, n) == 0;
}

/* ---- environment --------------------------------------------------- */

static int
lmdb_fail(struct folio_comments *cs, const char *what, int rc, char *err,
          size_t errlen)
{
    folio_log_errorx("comments store %s: %s: %s", cs->dir, what,
                     mdb_strerror(rc));
    seterr(err, errlen, "comments store: %s: %s", what, mdb_strerror(rc));
    return FOLIO_ESTORE;
}

static void
env_close(struct folio_comments *cs)
{
    if (cs->rcur != NULL)
        mdb_cursor_close(cs->rcur);
    if (cs->rtxn != NULL)
        mdb_txn_abort(cs->rtxn);
    if (cs->env != NULL)
        mdb_env_close(cs->env);
    cs->rcur = NULL;
    cs->rtxn = NULL;
    cs->env = NULL;
}

static uint64_t
map_size(struct folio_comments *cs)
{
    MDB_envinfo info;

    if (mdb_env_info(cs->env, &info) != 0)
        return 0;
    return info.me_mapsize;
}

static int
env_open(struct folio_comments *cs, char *err, size_t errlen)
{
    MDB_txn *txn = NULL;
    unsigned fl;
    int rc, dead = 0, create;

    if ((rc = mdb_env_create(&cs->env)) != 0) {
        cs->env = NULL;
        return lmdb_fail(cs, "mdb_env_create", rc, err, errlen);
    }
    if ((rc = mdb_env_set_maxdbs(cs->env, 4)) != 0 ||
        (rc = mdb_env_set_maxreaders(cs->env, MAX_READERS)) != 0) {
        lmdb_fail(cs, "mdb_env_set_maxdbs/maxreaders", rc, err, errlen);
        goto fail;
    }
    /*
     * MDB_NOTLS: the reader slot belongs to our one read transaction, not
     * to the thread, so a write transaction may run while it is reset.
     */
    if ((rc = mdb_env_open(cs->env, cs->dir, MDB_NOTLS, 0640)) != 0) {
        lmdb_fail(cs, "mdb_env_open", rc, err, errlen);
        goto fail;
    }
    /*
     * A data.mdb cut short would be read past its end (SIGBUS in every
     * worker, at every respawn).  It holds what users posted: not rebuilt,
     * refused with what to do.
     */
    {
        char why[256];

        if (folio_lmdb_size_check(cs->env, cs->dir, why, sizeof(why)) != 0) {
            folio_log_errorx("comments store %s: %s", cs->dir, why);
            seterr(err, errlen,
                   "comments store %s: %s (restore it from a backup, or "
                   "move it away to start an empty store)",
                   cs->dir, why);
            goto fail;
        }
    }
    /* The file's recorded size, or LMDB's default for a new one. */
    if (map_size(cs) < cs->map_init &&
        (rc = mdb_env_set_mapsize(cs->env, cs->map_init)) != 0) {
        lmdb_fail(cs, "mdb_env_set_mapsize", rc, err, errlen);
        goto fail;
    }
    if (mdb_env_get_maxkeysize(cs->env) < KEY_MAX) {
        seterr(err, errlen,
               "comments store: LMDB keys are limited to %d "
               "bytes, %d needed",
               mdb_env_get_maxkeysize(cs->env), KEY_MAX);
        rc = -1;
        goto fail;
    }
    /* Slots of readers that died (a worker killed -9) pin old pages. */
    if (mdb_reader_check(cs->env, &dead) == 0 && dead > 0)
        folio_log_notice("comments store %s: cleared %d stale reader%s",
                         cs->dir, dead, dead == 1 ? "" : "s");
    /*
     * The databases: opened in a read transaction when they are all there
     * (a worker, after the master made them: no wait for the writer lock,
     * which a stuck process may hold), created in a write one otherwise.
     */
    for (create = 0; create < 2; create++) {
        rc = mdb_txn_begin(cs->env, NULL, create ? 0 : MDB_RDONLY, &txn);
        if (rc == MDB_MAP_RESIZED) {
            /*
             * Another worker grew the map between our open and now (a
             * worker respawned while others post): adopt its size and go
             * on, or this worker would exit and never be replaced.
             */
            if ((rc = adopt(cs)) == 0)
                rc = mdb_txn_begin(cs->env, NULL, create ? 0 : MDB_RDONLY,
                                   &txn);
        }
        if (rc != 0) {
            lmdb_fail(cs, "mdb_txn_begin", rc, err, errlen);
            goto fail;
        }
        fl = create ? MDB_CREATE : 0;
        if ((rc = mdb_dbi_open(txn, "comments", fl, &cs->dbi_comments)) == 0 &&
            (rc = mdb_dbi_open(txn, "ids", fl, &cs->dbi_ids)) == 0 &&
            (rc = mdb_dbi_open(txn, "meta", fl, &cs->dbi_meta)) == 0)
            rc = mdb_dbi_open(txn, "keys", fl, &cs->dbi_keys);
        if (rc == MDB_NOTFOUND && !create) {
            mdb_txn_abort(txn);
            continue; /* not all there yet: create them */
        }
        if (rc != 0) {
            mdb_txn_abort(txn);
            lmdb_fail(cs, "mdb_dbi_open", rc, err, errlen);
            goto fail;
        }
        if ((rc = mdb_txn_commit(txn)) != 0) {
            lmdb_fail(cs, "mdb_txn_commit", rc, err, errlen);
            goto fail;
        }
        break;
    }
    rc = mdb_txn_begin(cs->env, NULL, MDB_RDONLY, &cs->rtxn);
    if (rc == MDB_MAP_RESIZED && (rc = adopt(cs)) == 0)
        rc = mdb_txn_begin(cs->env, NULL, MDB_RDONLY, &cs->rtxn);
    if (rc != 0) {
        cs->rtxn = NULL;
        lmdb_fail(cs, "mdb_txn_begin(MDB_RDONLY)", rc, err, errlen);
        goto fail;
    }
    if ((rc = mdb_cursor_open(cs->rtxn, cs->dbi_comments, &cs->rcur)) != 0) {
        cs->rcur = NULL;
        lmdb_fail(cs, "mdb_cursor_open", rc, err, errlen);
        goto fail;
    }
    mdb_txn_reset(cs->rtxn);
    cs->broken = 0;
    return 0;
fail:
    env_close(cs);
    return FOLIO_ESTORE;
}

int
folio_comments_open(const char *data_dir,
                    const struct folio_comments_opts *opts,
                    struct folio_comments **out, char *err, size_t errlen)
{
    struct folio_comments *cs;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    int rc;

    *out = NULL;
    if ((cs = folio_calloc(1, sizeof(*cs))) == NULL) {
        seterr(err, errlen, "out of memory");
        return FOLIO_ENOMEM;
    }
    if ((rc = pthread_mutex_init(&cs->lock, NULL)) != 0) {
        seterr(err, errlen, "pthread_mutex_init: %s", strerror(rc));
        folio_free(cs);
        return FOLIO_ESYS;
    }
    if ((size_t)snprintf(cs->dir, sizeof(cs->dir), "%s/" FOLIO_COMMENTS_ENV,
                         data_dir) >= sizeof(cs->dir)) {
        seterr(err, errlen, "data directory name too long: %s", data_dir);
        rc = FOLIO_EINVAL;
        goto fail;
    }
    cs->map_init = opts != NULL && opts->map_init != 0
                       ? opts->map_init
                       : FOLIO_COMMENTS_MAP_INIT;
    cs->max_size = opts != NULL && opts->max_size != 0
                       ? opts->max_size
                       : FOLIO_COMMENTS_MAX_SIZE_DEFAULT;
    cs->threaded = opts != NULL && opts->threaded;
    cs->key_window_ms = opts != NULL && opts->key_window_ms != 0
                            ? opts->key_window_ms
                            : FOLIO_COMMENTS_KEY_WINDOW;
    /* LMDB wants whole pages. */
    cs->max_size -= cs->max_size % page;
    if (cs->max_size < 16 * page)
        cs->max_size = 16 * page;
    cs->map_init -= cs->map_init % page;
    if (cs->map_init < 16 * page)
        cs->map_init = 16 * page;
    if (cs->map_init > cs->max_size)
        cs->map_init = cs->max_size;
    if (mkdir(cs->dir, 0750) == -1 && errno != EEXIST) {
        int e = errno;

        folio_log_error("mkdir(%s)", cs->dir);
        seterr(err, errlen, "cannot create %s: %s", cs->dir, strerror(e));
        rc = FOLIO_ESYS;
        goto fail;
    }
    if ((rc = env_open(cs, err, errlen)) != 0)
        goto fail;
    *out = cs;
    return 0;
fail:
    folio_comments_close(cs);
    return rc;
}

void
folio_comments_close(struct folio_comments *cs)
{
    if (cs == NULL)
        return;
    env_close(cs);
    pthread_mutex_destroy(&cs->lock);
    folio_free(cs->posts);
    folio_free(cs);
}

void
folio_comments_set_hooks(struct folio_comments *cs,
                         const struct folio_comments_hooks *hooks)
{
    if (hooks != NULL)
        cs->hooks = *hooks;
    else
        memset(&cs->hooks, 0, sizeof(cs->hooks));
}

/* After MDB_PANIC the environment is unusable: open it again. */
static int
ensure_open(struct folio_comments *cs, char *err, size_t errlen)
{
    if (cs->env != NULL && !cs->broken)
        return 0;
    env_close(cs);
    folio_log_notice("comments store %s: reopening", cs->dir);
    cs->reopens++;
    return env_open(cs, err, errlen);
}

/* Take the map size another process has committed. */
static int
adopt(struct folio_comments *cs)
{
    int rc;

    if ((rc = mdb_env_set_mapsize(cs->env, 0)) == 0)
        cs->adopts++;
    return rc;
}

/*
 * The map is full: adopt a larger size another process set, or double
 * ours up to the ceiling.  No transaction may be active (the read
 * transaction is always reset outside folio_comments_list).
 */
static int
grow(struct folio_comments *cs, char *err, size_t errlen)
{
    uint64_t before = map_size(cs), want;
    int rc;

    if ((rc = mdb_env_set_mapsize(cs->env, 0)) != 0)
        goto fail;
    if (map_size(cs) > before) {
        cs->adopts++;
        return 0;
    }
    if (before >= cs->max_size) {
        mdb_env_set_mapsize(cs->env, before);
        folio_log_warnx("comments store %s: full at %llu bytes "
                        "(comments_max_size)",
                        cs->dir, (unsigned long long)before);
        seterr(err, errlen,
               "the comments store is full (%llu bytes, comments_max_size)",
               (unsigned long long)before);
        return FOLIO_EFULL;
    }
    want = before > cs->max_size / 2 ? cs->max_size : before * 2;
    if ((rc = mdb_env_set_mapsize(cs->env, want)) != 0)
        goto fail;
    cs->grows++;
    folio_log_notice("comments store %s: map grown from %llu to %llu bytes",
                     cs->dir, (unsigned long long)before,
                     (unsigned long long)want);
    return 0;
fail:
    folio_log_errorx("comments store %s: mdb_env_set_mapsize: %s", cs->dir,
                     mdb_strerror(rc));
    seterr(err, errlen, "cannot grow the comments store: %s", mdb_strerror(rc));
    return FOLIO_EFULL;
}

/* Whether the file system of the store has (almost) no room left. */
static int
disk_full(struct folio_comments *cs)
{
    struct statvfs sv;

    if (statvfs(cs->dir, &sv) != 0)
        return 0;
    return (uint64_t)sv.f_bavail * sv.f_frsize < DISK_FULL_BYTES;
}

/* An LMDB failure of a write, as a FOLIO_E* with a message for the client. */
static int
write_fail(struct folio_comments *cs, const char *what, int rc, char *err,
           size_t errlen)
{
    /*
     * LMDB reports a short write as EIO: that is what a full file system
     * looks like (ENOSPC is lost).  Tell it apart: it is exhaustion (8),
     * not a failure (13), and it ends when space returns.
     */
    if (rc == EIO && disk_full(cs))
        rc = ENOSPC;
    switch (rc) {
    case ENOMEM:
        seterr(err, errlen, "out of memory");
        return FOLIO_ENOMEM;
    case ENOSPC:
    case EDQUOT:
        folio_log_errorx("comments store %s: %s: %s", cs->dir, what,
                         mdb_strerror(rc));
        seterr(err, errlen, "comments store: %s", mdb_strerror(rc));
        return FOLIO_EFULL;
    case MDB_PANIC:
        cs->broken = 1;
        break;
    default:
        break;
    }
    return lmdb_fail(cs, what, rc, err, errlen);
}

typedef int (*txn_fn)(struct folio_comments *cs, MDB_txn *txn, void *arg);

/* The writer's hooks (folio_comments_set_hooks), when it has them. */
static void
hook_waiting(struct folio_comments *cs)
{
    if (cs->hooks.waiting != NULL)
        cs->hooks.waiting(cs->hooks.arg);
}

static int
hook_holding(struct folio_comments *cs)
{
    return cs->hooks.holding != NULL ? cs->hooks.holding(cs->hooks.arg) : 0;
}

static void
hook_released(struct folio_comments *cs)
{
    if (cs->hooks.released != NULL)
        cs->hooks.released(cs->hooks.arg);
}

/* The writer's remaps and reopens, with the reads kept out (cs->lock). */
static int
locked_open(struct folio_comments *cs, char *err, size_t errlen)
{
    int rc;

    if (cs->env != NULL && !cs->broken)
        return 0;
    pthread_mutex_lock(&cs->lock);
    rc = ensure_open(cs, err, errlen);
    pthread_mutex_unlock(&cs->lock);
    return rc;
}

static int
locked_adopt(struct folio_comments *cs)
{
    int rc;

    pthread_mutex_lock(&cs->lock);
    rc = adopt(cs);
    cs->need_adopt = 0;
    pthread_mutex_unlock(&cs->lock);
    return rc;
}

static int
locked_grow(struct folio_comments *cs, char *err, size_t errlen)
{
    int rc;

    pthread_mutex_lock(&cs->lock);
    rc = grow(cs, err, errlen);
    pthread_mutex_unlock(&cs->lock);
    return rc;
}

/*
 * Run fn in a write transaction and commit it (synced), again with a
 * larger map if it filled up.  fn returns 0 or an LMDB/errno code, which
 * aborts the transaction (MDB_NOTFOUND from fn is returned as
 * FOLIO_ENOTFOUND).  The hooks say when it waits for LMDB's writer lock and when it holds it;
 * the holding hook may refuse the lock it was given (FOLIO_ECANCELED:
 * nothing written).
 */
static int
write_txn(struct folio_comments *cs, txn_fn fn, void *arg, const char *what,
          char *err, size_t errlen)
{
    MDB_txn *txn;
    int attempt, rc = 0, r;

    if ((r = locked_open(cs, err, errlen)) != 0)
        return r;
    for (attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
        hook_waiting(cs);
        rc = mdb_txn_begin(cs->env, NULL, 0, &txn);
        if (rc == MDB_MAP_RESIZED) {
            if ((rc = locked_adopt(cs)) != 0)
                break;
            continue;
        }
        if (rc != 0)
            break;
        if (hook_holding(cs) != 0) {
            mdb_txn_abort(txn);
            hook_released(cs);
            seterr(err, errlen, "cancelled before it was written");
            return FOLIO_ECANCELED;
        }
        if ((rc = fn(cs, txn, arg)) != 0)
            mdb_txn_abort(txn);
        else
            rc = mdb_txn_commit(txn); /* frees txn, committed or not */
        if (rc == MDB_MAP_FULL) {
            if ((r = locked_grow(cs, err, errlen)) != 0) {
                hook_released(cs);
                return r;
            }
            continue;
        }
        break;
    }
    hook_released(cs);
    if (rc == 0)
        return 0;
    if (rc == MDB_NOTFOUND)
        return FOLIO_ENOTFOUND;
    if (rc == MDB_MAP_FULL || rc == MDB_MAP_RESIZED) {
        seterr(err, errlen, "comments store: the map keeps filling up");
        return FOLIO_EFULL;
    }
    pthread_mutex_lock(&cs->lock); /* MDB_PANIC marks it broken */
    rc = write_fail(cs, what, rc, err, errlen);
    pthread_mutex_unlock(&cs->lock);
    return rc;
}

int
folio_comments_maintain(struct folio_comments *cs, char *err, size_t errlen)
{
    int rc;

    pthread_mutex_lock(&cs->lock);
    rc = ensure_open(cs, err, errlen);
    if (rc == 0 && cs->need_adopt && (rc = adopt(cs)) != 0)
        rc = lmdb_fail(cs, "mdb_env_set_mapsize", rc, err, errlen);
    cs->need_adopt = 0;
    pthread_mutex_unlock(&cs->lock);
    return rc;
}

/* ---- post ---------------------------------------------------------- */

struct post_one {
    const struct folio_comment_in *in;
    char np[FOLIO_COMMENTS_NPATH_MAX]; /* normalized path */
    size_t nlen;
    unsigned char key[KEY_MAX];
    size_t klen; /* page key with its separator */
    int is_long; /* a hashed key */
};

struct post_arg {
    struct post_one *p;
    size_t n;
    struct folio_buf *out;
    size_t mark;
    size_t *ends;   /* end of comment i in out (may be NULL) */
    int *codes;     /* each one's outcome (may be NULL) */
    int bad_reply;  /* without codes: the batch failed on a reply_to */
    int key_used;   /* without codes: ... on an idempotency key */
    uint64_t first; /* id of the first */
};

/* Whether the stored comment v is a reply (has a reply_to that is not nil). */
static int
stored_is_reply(const MDB_val *v)
{
    struct folio_mp_cur c;
    const char *k;
    uint32_t m, i, klen;

    folio_mp_cur_init(&c, v->mv_data, v->mv_size);
    if (folio_mp_read_map(&c, &m) != 0)
        return 1; /* not a comment: nothing to reply to */
    for (i = 0; i < m; i++) {
        if (folio_mp_read_str(&c, &k, &klen) != 0)
            return 1;
        if (folio_mp_str_eq(k, klen, "reply_to"))
            return folio_mp_read_nil(&c) != 0;
        if (folio_mp_skip(&c) != 0)
            return 1;
    }
    return 0;
}

/*
 * Whether post p may reply to its reply_to, in txn: a comment stored
 * under p's page key (and, for a hashed key, p's very path) that is no
 * reply itself.  0, MDB_NOTFOUND (it may not), or an LMDB error.
 */
static int
reply_ok(struct folio_comments *cs, MDB_txn *txn, const struct post_one *p)
{
    unsigned char idkey[8];
    MDB_val k, v;
    int rc;

    folio_be64_put(idkey, p->in->reply_to);
    k.mv_data = idkey;
    k.mv_size = 8;
    if ((rc = mdb_get(txn, cs->dbi_ids, &k, &v)) != 0)
        return rc;
    if (v.mv_size != p->klen + 8 || memcmp(v.mv_data, p->key, p->klen) != 0)
        return MDB_NOTFOUND; /* another page's */
    k = v;
    if ((rc = mdb_get(txn, cs->dbi_comments, &k, &v)) != 0)
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    if (stored_is_reply(&v) ||
        (p->is_long && !stored_path_is(&v, p->np, p->nlen)))
        return MDB_NOTFOUND;
    return 0;
}

int
folio_comments_encode_tail(struct folio_buf *out, const char *np, size_t nlen,
                           const struct folio_comment_in *in,
                           uint64_t created_at)
{
    msgpack_packer pk;

    msgpack_packer_init(&pk, out, folio_buf_pack_write);
    if (msgpack_pack_str_with_body(&pk, "path", 4) != 0 ||
        folio_pack_str(&pk, np, nlen) != 0 ||
        msgpack_pack_str_with_body(&pk, "author", 6) != 0 ||
        folio_pack_str(&pk, in->author, in->author_len) != 0 ||
        msgpack_pack_str_with_body(&pk, "body", 4) != 0 ||
        folio_pack_str(&pk, in->body, in->body_len) != 0 ||
        msgpack_pack_str_with_body(&pk, "created_at", 10) != 0 ||
        msgpack_pack_uint64(&pk, created_at) != 0)
        return -1;
    if (in->has_reply_to &&
        (msgpack_pack_str_with_body(&pk, "reply_to", 8) != 0 ||
         msgpack_pack_uint64(&pk, in->reply_to) != 0))
        return -1;
    return 0;
}

static int
encode(struct folio_buf *out, uint64_t id, const char *np, size_t nlen,
       const struct folio_comment_in *in, uint64_t created_at)
{
    msgpack_packer pk;

    msgpack_packer_init(&pk, out, folio_buf_pack_write);
    if (msgpack_pack_map(&pk, in->has_reply_to ? 6 : 5) != 0 ||
        msgpack_pack_str_with_body(&pk, "id", 2) != 0 ||
        msgpack_pack_uint64(&pk, id) != 0)
        return -1;
    return folio_comments_encode_tail(out, np, nlen, in, created_at);
}

/* ---- idempotency keys ---------------------------------------------- */

#define KEYREC_MAX (1 + 8 + FOLIO_COMMENTS_KEY_MAX) /* 't', created_at, key */
#define PRUNE_ROUND 16 /* expired keys collected per cursor walk */

/* 'k' + the key of post p in rec: its length. */
static size_t
key_rec(const struct folio_comment_in *in, unsigned char *rec)
{
    rec[0] = 'k';
    memcpy(rec + 1, in->key, in->key_len);
    return 1 + in->key_len;
}

/*
 * The comment stored under post p's key within the window: 0 with *id,
 * *at and *v (the stored comment), or MDB_NOTFOUND (none: never used,
 * past the window, or its comment deleted since), or an LMDB error.
 */
static int
key_find(struct folio_comments *cs, MDB_txn *txn, const struct post_one *p,
         uint64_t now, uint64_t *id, uint64_t *at, MDB_val *v)
{
    unsigned char rec[KEYREC_MAX], idkey[8];
    MDB_val k;
    int rc;

    k.mv_data = rec;
    k.mv_size = key_rec(p->in, rec);
    if ((rc = mdb_get(txn, cs->dbi_keys, &k, v)) != 0)
        return rc;
    if (v->mv_size != 16)
        return MDB_CORRUPTED;
    *at = folio_be64_get(v->mv_data);
    *id = folio_be64_get((const unsigned char *)v->mv_data + 8);
    if (*at + cs->key_window_ms <= now)
        return MDB_NOTFOUND; /* forgotten, though not pruned yet */
    folio_be64_put(idkey, *id);
    k.mv_data = idkey;
    k.mv_size = 8;
    if ((rc = mdb_get(txn, cs->dbi_ids, &k, &k)) != 0)
        return rc;
    if ((rc = mdb_get(txn, cs->dbi_comments, &k, v)) != 0)
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    return 0;
}

/* Remember post p's key: it stored comment id at `at`. */
static int
key_put(struct folio_comments *cs, MDB_txn *txn, const struct post_one *p,
        uint64_t id, uint64_t at)
{
    unsigned char rec[KEYREC_MAX], val[16];
    MDB_val k, v;
    int rc;

    k.mv_data = rec;
    k.mv_size = key_rec(p->in, rec);
    folio_be64_put(val, at);
    folio_be64_put(val + 8, id);
    v.mv_data = val;
    v.mv_size = 16;
    if ((rc = mdb_put(txn, cs->dbi_keys, &k, &v, 0)) != 0)
        return rc;
    rec[0] = 't';
    folio_be64_put(rec + 1, at);
    memcpy(rec + 9, p->in->key, p->in->key_len);
    k.mv_size = 9 + p->in->key_len;
    v.mv_size = 0;
    return mdb_put(txn, cs->dbi_keys, &k, &v, 0);
}

/*
 * Forget up to `budget` keys past the window, oldest first: each 't'
 * record, and its 'k' record unless a later post took the key again.
 * Collected by a cursor, then deleted (no delete under the cursor).
 */
static int
key_prune(struct folio_comments *cs, MDB_txn *txn, uint64_t now, size_t budget)
{
    unsigned char recs[PRUNE_ROUND][KEYREC_MAX];
    size_t lens[PRUNE_ROUND], n, i;
    MDB_cursor *cur;
    MDB_val k, v;
    int rc;

    while (budget > 0) {
        if ((rc = mdb_cursor_open(txn, cs->dbi_keys, &cur)) != 0)
            return rc;
        k.mv_data = (void *)"t";
        k.mv_size = 1;
        n = 0;
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        while (rc == 0 && n < PRUNE_ROUND && n < budget && k.mv_size > 9 &&
               k.mv_size <= KEYREC_MAX &&
               ((const unsigned char *)k.mv_data)[0] == 't' &&
               folio_be64_get((const unsigned char *)k.mv_data + 1) +
                       cs->key_window_ms <=
                   now) {
            memcpy(recs[n], k.mv_data, k.mv_size);
            lens[n++] = k.mv_size;
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        }
        mdb_cursor_close(cur);
        if (rc != 0 && rc != MDB_NOTFOUND)
            return rc;
        for (i = 0; i < n; i++) {
            unsigned char kr[KEYREC_MAX];

            k.mv_data = recs[i];
            k.mv_size = lens[i];
            if ((rc = mdb_del(txn, cs->dbi_keys, &k, NULL)) != 0)
                return rc;
            kr[0] = 'k';
            memcpy(kr + 1, recs[i] + 9, lens[i] - 9);
            k.mv_data = kr;
            k.mv_size = lens[i] - 8;
            rc = mdb_get(txn, cs->dbi_keys, &k, &v);
            if (rc == 0 && v.mv_size == 16 &&
                memcmp(v.mv_data, recs[i] + 1, 8) == 0)
                rc = mdb_del(txn, cs->dbi_keys, &k, NULL);
            if (rc != 0 && rc != MDB_NOTFOUND)
                return rc;
        }
        if (n < PRUNE_ROUND)
            break;
        budget -= n;
    }
    return 0;
}

/*
 * Post p carries a key that stored a comment within the window: append
 * that comment (0: p is done), or fail (FOLIO_EKEYUSED: another comment);
 * MDB_NOTFOUND: no such key, store p; else an LMDB error or ENOMEM.
 */
static int
key_replay(struct folio_comments *cs, MDB_txn *txn, struct post_arg *a,
           const struct post_one *p, uint64_t now, uint64_t *id_out)
{
    uint64_t id, at;
    size_t start = folio_buf_mark(a->out);
    MDB_val v;
    int rc;

    if ((rc = key_find(cs, txn, p, now, &id, &at, &v)) != 0)
        return rc;
    if (encode(a->out, id, p->np, p->nlen, p->in, at) != 0)
        return ENOMEM;
    if (folio_buf_mark(a->out) - start == v.mv_size &&
        memcmp(folio_buf_at(a->out, start), v.mv_data, v.mv_size) == 0) {
        *id_out = id;
        return 0; /* the same comment: answered with the stored one */
    }
    folio_buf_truncate(a->out, start);
    return FOLIO_EKEYUSED;
}

/* Every comment of the batch, in order, in the one transaction. */
static int
post_txn(struct folio_comments *cs, MDB_txn *txn, void *arg)
{
    struct post_arg *a = arg;
    unsigned char idkey[8], next[8];
    MDB_val k, v;
    uint64_t id = 1, kid = 0, now = folio_unix_ms();
    size_t i, start;
    int rc;

    k.mv_data = (void *)next_id_key;
    k.mv_size = sizeof(next_id_key) - 1;
    rc = mdb_get(txn, cs->dbi_meta, &k, &v);
    if (rc == 0) {
        if (v.mv_size != 8)
            return MDB_CORRUPTED;
        id = folio_be64_get(v.mv_data);
    } else if (rc != MDB_NOTFOUND) {
        return rc;
    }
    if (id == 0 || id > UINT64_MAX - a->n)
        return MDB_CORRUPTED;
    a->first = 0;
    folio_buf_truncate(a->out, a->mark);
    for (i = 0; i < a->n; i++) {
        struct post_one *p = &a->p[i];

        if (a->codes != NULL)
            a->codes[i] = 0;
        if (p->in->has_reply_to && (rc = reply_ok(cs, txn, p)) != 0) {
            if (rc != MDB_NOTFOUND)
                return rc;
            if (a->codes == NULL) {
                a->bad_reply = 1;
                return MDB_NOTFOUND;
            }
            a->codes[i] = FOLIO_EINVAL; /* not stored; the others are */
            if (a->ends != NULL)
                a->ends[i] = folio_buf_mark(a->out);
            continue;
        }
        if (p->in->key != NULL &&
            (rc = key_replay(cs, txn, a, p, now, &kid)) != MDB_NOTFOUND) {
            if (rc == FOLIO_EKEYUSED && a->codes == NULL) {
                a->key_used = 1;
                return MDB_NOTFOUND;
            }
            if (rc == FOLIO_EKEYUSED)
                a->codes[i] = FOLIO_EKEYUSED; /* not stored */
            else if (rc != 0)
                return rc;
            else if (a->first == 0)
                a->first = kid;
            if (a->ends != NULL)
                a->ends[i] = folio_buf_mark(a->out);
            continue;
        }
        start = folio_buf_mark(a->out);
        if (encode(a->out, id, p->np, p->nlen, p->in, now) != 0)
            return ENOMEM;
        if (a->ends != NULL)
            a->ends[i] = folio_buf_mark(a->out);
        folio_be64_put(p->key + p->klen, id);
        k.mv_data = p->key;
        k.mv_size = p->klen + 8;
        v.mv_data = folio_buf_at(a->out, start);
        v.mv_size = folio_buf_mark(a->out) - start;
        if ((rc = mdb_put(txn, cs->dbi_comments, &k, &v, MDB_NOOVERWRITE)) != 0)
            return rc;
        folio_be64_put(idkey, id);
        v = k;
        k.mv_data = idkey;
        k.mv_size = 8;
        /* Ids only grow: append, no search. */
        if ((rc = mdb_put(txn, cs->dbi_ids, &k, &v, MDB_APPEND)) != 0)
            return rc;
        if (p->in->key != NULL && (rc = key_put(cs, txn, p, id, now)) != 0)
            return rc;
        if (a->first == 0)
            a->first = id;
        id++;
    }
    /* Forget more keys than the batch remembers, so they never pile up. */
    if ((rc = key_prune(cs, txn, now, a->n + PRUNE_ROUND)) != 0)
        return rc;
    folio_be64_put(next, id);
    k.mv_data = (void *)next_id_key;
    k.mv_size = sizeof(next_id_key) - 1;
    v.mv_data = next;
    v.mv_size = 8;
    return mdb_put(txn, cs->dbi_meta, &k, &v, 0);
}

int
folio_comments_post_batch(struct folio_comments *cs,
                          const struct folio_comment_in *in, size_t n,
                          struct folio_buf *out, size_t *ends, int *codes,
                          uint64_t *first, char *err, size_t errlen)
{
    struct post_one *p;
    struct post_arg a;
    size_t i;
    int rc;

    if (n == 0)
        return 0;
    if (n > cs->posts_cap) { /* grown once to the largest batch */
        if ((p = folio_realloc(cs->posts, n * sizeof(*p))) == NULL) {
            seterr(err, errlen, "out of memory");
            return FOLIO_ENOMEM;
        }
        cs->posts = p;
        cs->posts_cap = n;
    }
    p = cs->posts;
    for (i = 0; i < n; i++) {
        if ((rc = folio_comments_validate(&in[i], err, errlen)) != 0)
            return rc;
        p[i].in = &in[i];
        p[i].nlen =
            folio_comments_normalize(in[i].path, in[i].path_len, p[i].np);
        p[i].klen = page_key(p[i].np, p[i].nlen, p[i].key, &p[i].is_long);
    }
    a.p = p;
    a.n = n;
    a.out = out;
    a.mark = folio_buf_mark(out);
    a.ends = ends;
    a.codes = codes;
    a.bad_reply = 0;
    a.key_used = 0;
    a.first = 0;
    rc = write_txn(cs, post_txn, &a, "post", err, errlen);
    if (rc == FOLIO_ENOTFOUND && a.bad_reply) {
        seterr(err, errlen, "%s", FOLIO_COMMENTS_BAD_REPLY);
        rc = FOLIO_EINVAL;
    } else if (rc == FOLIO_ENOTFOUND && a.key_used) {
        seterr(err, errlen, "%s", FOLIO_COMMENTS_KEY_USED);
        rc = FOLIO_EKEYUSED;
    }
    if (rc != 0)
        folio_buf_truncate(out, a.mark);
    else if (first != NULL)
        *first = a.first;
    return rc;
}

int
folio_comments_post(struct folio_comments *cs,
                    const struct folio_comment_in *in, struct folio_buf *out,
                    uint64_t *id, char *err, size_t errlen)
{
    return folio_comments_post_batch(cs, in, 1, out, NULL, NULL, id, err,
                                     errlen);
}

/* ---- delete -------------------------------------------------------- */

static int
delete_txn(struct folio_comments *cs, MDB_txn *txn, void *arg)
{
    unsigned char idkey[8], key[KEY_MAX];
    MDB_val k, v;
    int rc;

    folio_be64_put(idkey, *(const uint64_t *)arg);
    k.mv_data = idkey;
    k.mv_size = 8;
    if ((rc = mdb_get(txn, cs->dbi_ids, &k, &v)) != 0)
        return rc;
    if (v.mv_size > sizeof(key) || v.mv_size < 9)
        return MDB_CORRUPTED;
    memcpy(key, v.mv_data, v.mv_size); /* v points into a page we change */
    v.mv_data = key;
    if ((rc = mdb_del(txn, cs->dbi_comments, &v, NULL)) != 0)
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    return mdb_del(txn, cs->dbi_ids, &k, NULL);
}

int
folio_comments_delete(struct folio_comments *cs, uint64_t id, char *err,
                      size_t errlen)
{
    int rc = write_txn(cs, delete_txn, &id, "delete", err, errlen);

    if (rc == FOLIO_ENOTFOUND)
        seterr(err, errlen, "no comment with id %llu", (unsigned long long)id);
    return rc;
}

/* ---- list ---------------------------------------------------------- */

/*
 * Renew the read transaction, adopting a grown map if LMDB asks (and,
 * threaded, asking the writer to: need_adopt, MDB_MAP_RESIZED returned).
 */
static int
rtxn_renew(struct folio_comments *cs)
{
    int rc, tries;

    for (tries = 0;; tries++) {
        rc = mdb_txn_renew(cs->rtxn);
        if (rc != MDB_MAP_RESIZED || tries == 2)
            return rc;
        if (cs->threaded) {
            cs->need_adopt = 1;
            return rc;
        }
        if ((rc = adopt(cs)) != 0)
            return rc;
    }
}

uint64_t
folio_comments_version(struct folio_comments *cs)
{
    MDB_envinfo info;
    uint64_t v = 0;

    if (cs == NULL)
        return 0;
    pthread_mutex_lock(&cs->lock);
    if (cs->env != NULL && !cs->broken && mdb_env_info(cs->env, &info) == 0)
        v = ((uint64_t)cs->reopens << 48) ^ (uint64_t)info.me_last_txnid;
    pthread_mutex_unlock(&cs->lock);
    return v;
}

/*
 * Walk page np's comments in the renewed read transaction: their sizes
 * summed into *size (with the array header), and appended to `out` after
 * its header when out is not NULL.  Returns 0, FOLIO_ETOOBIG (over
 * max_bytes), FOLIO_ENOMEM or FOLIO_ESTORE, with a message in err.
 */
static int
page_walk(struct folio_comments *cs, const char *np, size_t nlen,
          struct folio_buf *out, size_t max_bytes, size_t *size,
          uint32_t *count, char *err, size_t errlen)
{
    unsigned char key[KEY_MAX];
    size_t klen, total = 5; /* the header of a non-empty array */
    uint32_t n = 0;
    MDB_val k, v;
    int rc, is_long;

    klen = page_key(np, nlen, key, &is_long);
    memset(key + klen, 0, 8); /* id 0: before the page's first comment */
    if ((rc = mdb_cursor_renew(cs->rtxn, cs->rcur)) != 0)
        return lmdb_fail(cs, "mdb_cursor_renew", rc, err, errlen);
    k.mv_data = key;
    k.mv_size = klen + 8;
    rc = mdb_cursor_get(cs->rcur, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && k.mv_size == klen + 8 &&
           memcmp(k.mv_data, key, klen) == 0) {
        if (!is_long || stored_path_is(&v, np, nlen)) {
            if (max_bytes != 0 && total + v.mv_size > max_bytes) {
                seterr(err, errlen,
                       "the page's comments are over %zu bytes: too large "
                       "for one reply",
                       max_bytes);
                return FOLIO_ETOOBIG;
            }
            if (out != NULL && folio_buf_append(out, v.mv_data, v.mv_size)) {
                seterr(err, errlen, "out of memory");
                return FOLIO_ENOMEM;
            }
            total += v.mv_size;
            n++;
        }
        rc = mdb_cursor_get(cs->rcur, &k, &v, MDB_NEXT);
    }
    if (rc != 0 && rc != MDB_NOTFOUND)
        return lmdb_fail(cs, "mdb_cursor_get", rc, err, errlen);
    *size = n == 0 ? 1 : total; /* [] is one byte */
    if (count != NULL)
        *count = n;
    return 0;
}

/* The array header of n comments at h (5 bytes; 1 for []). */
static void
page_header(unsigned char *h, uint32_t n)
{
    if (n == 0) {
        h[0] = 0x90; /* [] */
        return;
    }
    h[0] = 0xdd;
    h[1] = (unsigned char)(n >> 24);
    h[2] = (unsigned char)(n >> 16);
    h[3] = (unsigned char)(n >> 8);
    h[4] = (unsigned char)n;
}

/*
 * Check path, take cs->lock, open the store if needed, renew the read
 * transaction; on success the caller ends with list_end.  Threaded, a
 * store that needs a reopen or a remap is left to the writer:
 * FOLIO_EAGAIN.
 */
static int
list_begin(struct folio_comments *cs, const char *path, size_t len,
           char *np, size_t *nlen, char *err, size_t errlen)
{
    int rc;

    if ((rc = check_field("path", path, len, FOLIO_COMMENTS_PATH_MAX, 0, err,
                          errlen)) != 0)
        return rc;
    pthread_mutex_lock(&cs->lock);
    if (cs->threaded && (cs->env == NULL || cs->broken)) {
        seterr(err, errlen, "the comments store is being reopened after a "
                            "failure: try again");
        rc = FOLIO_EAGAIN;
        goto fail;
    }
    if ((rc = ensure_open(cs, err, errlen)) != 0)
        goto fail;
    *nlen = folio_comments_normalize(path, len, np);
    if ((rc = rtxn_renew(cs)) != 0) {
        if (rc == MDB_MAP_RESIZED && cs->threaded) {
            seterr(err, errlen, "the comments store was resized by another "
                                "process: try again");
            rc = FOLIO_EAGAIN;
            goto fail;
        }
        if (rc == MDB_PANIC)
            cs->broken = 1;
        rc = lmdb_fail(cs, "mdb_txn_renew", rc, err, errlen);
        goto fail;
    }
    return 0;
fail:
    pthread_mutex_unlock(&cs->lock);
    return rc;
}

/* After list_begin: reset the read transaction, let the writer in. */
static void
list_end(struct folio_comments *cs)
{
    mdb_txn_reset(cs->rtxn);
    pthread_mutex_unlock(&cs->lock);
}

int
folio_comments_list(struct folio_comments *cs, const char *path, size_t len,
                    struct folio_buf *out, size_t max_bytes, uint32_t *count,
                    char *err, size_t errlen)
{
    char np[FOLIO_COMMENTS_NPATH_MAX];
    size_t nlen, size, mark = folio_buf_mark(out);
    uint32_t n = 0;
    int rc;

    if ((rc = list_begin(cs, path, len, np, &nlen, err, errlen)) != 0)
        return rc;
    if (folio_buf_append(out, "\xdd\0\0\0\0", 5) != 0) {
        list_end(cs);
        seterr(err, errlen, "out of memory");
        return FOLIO_ENOMEM;
    }
    rc = page_walk(cs, np, nlen, out, max_bytes, &size, &n, err, errlen);
    list_end(cs);
    if (rc != 0) {
        folio_buf_truncate(out, mark);
        return rc;
    }
    page_header((unsigned char *)folio_buf_at(out, mark), n);
    if (n == 0)
        folio_buf_truncate(out, mark + 1);
    if (count != NULL)
        *count = n;
    return 0;
}

int
folio_comments_list_size(struct folio_comments *cs, const char *path,
                         size_t len, size_t max_bytes, size_t *size, char *err,
                         size_t errlen)
{
    char np[FOLIO_COMMENTS_NPATH_MAX];
    size_t nlen;
    int rc;

    if ((rc = list_begin(cs, path, len, np, &nlen, err, errlen)) != 0)
        return rc;
    rc = page_walk(cs, np, nlen, NULL, max_bytes, size, NULL, err, errlen);
    list_end(cs);
    return rc;
}

int
folio_comments_list_bytes(struct folio_comments *cs, const char *path,
                          size_t len, size_t max_bytes,
                          struct folio_bytes **out, char *err, size_t errlen)
{
    char np[FOLIO_COMMENTS_NPATH_MAX];
    struct folio_bytes *b = NULL;
    struct folio_buf v;
    size_t nlen, size;
    uint32_t n;
    int rc;

    *out = NULL;
    if ((rc = list_begin(cs, path, len, np, &nlen, err, errlen)) != 0)
        return rc;
    /* Sized, then filled, in one transaction: the same comments twice. */
    if ((rc = page_walk(cs, np, nlen, NULL, max_bytes, &size, &n, err,
                        errlen)) != 0)
        goto done;
    if (folio_bytes_new(size, &b) != 0) {
        seterr(err, errlen, "out of memory");
        rc = FOLIO_ENOMEM;
        goto done;
    }
    page_header((unsigned char *)b->fb_data, n);
    if (n > 0) {
        /* A buffer over the block that cannot grow: never reallocated. */
        memset(&v, 0, sizeof(v));
        v.b_data = b->fb_data;
        v.b_len = 5;
        v.b_cap = v.b_base = v.b_max = size;
        rc = page_walk(cs, np, nlen, &v, max_bytes, &size, NULL, err, errlen);
        if (rc == 0 && v.b_len != b->fb_len)
            rc = lmdb_fail(cs, "the page changed within its transaction",
                           MDB_CORRUPTED, err, errlen);
    }
done:
    list_end(cs);
    if (rc != 0) {
        folio_bytes_unref(b);
        return rc;
    }
    *out = b;
    return 0;
}

/* ---- info ---------------------------------------------------------- */

uint64_t
folio_comments_used_bytes(struct folio_comments *cs)
{
    MDB_envinfo info;
    MDB_stat st;
    uint64_t n = 0;

    pthread_mutex_lock(&cs->lock);
    if (cs->env != NULL && mdb_env_info(cs->env, &info) == 0 &&
        mdb_env_stat(cs->env, &st) == 0)
        n = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
    pthread_mutex_unlock(&cs->lock);
    return n;
}

int
folio_comments_info(struct folio_comments *cs, struct folio_comments_info *info)
{
    MDB_val k, v;
    int rc;

    memset(info, 0, sizeof(*info));
    pthread_mutex_lock(&cs->lock);
    if ((cs->threaded && (cs->env == NULL || cs->broken)) ||
        ensure_open(cs, NULL, 0) != 0) {
        pthread_mutex_unlock(&cs->lock);
        return FOLIO_ESTORE;
    }
    info->map_size = map_size(cs);
    info->max_size = cs->max_size;
    info->grows = cs->grows;
    info->adopts = cs->adopts;
    info->reopens = cs->reopens;
    info->next_id = 1;
    if ((rc = rtxn_renew(cs)) != 0) {
        pthread_mutex_unlock(&cs->lock);
        return FOLIO_ESTORE;
    }
    k.mv_data = (void *)next_id_key;
    k.mv_size = sizeof(next_id_key) - 1;
    rc = mdb_get(cs->rtxn, cs->dbi_meta, &k, &v);
    if (rc == 0 && v.mv_size == 8)
        info->next_id = folio_be64_get(v.mv_data);
    {
        MDB_stat st;

        if (mdb_stat(cs->rtxn, cs->dbi_keys, &st) == 0)
            info->keys = st.ms_entries / 2; /* a 'k' and a 't' record each */
    }
    list_end(cs);
    return rc == 0 || rc == MDB_NOTFOUND ? 0 : FOLIO_ESTORE;
}
