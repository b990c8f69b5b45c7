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
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include <errno.h>
#include <limits.h>
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
    MDB_txn *rtxn;    /* the read transaction: reset between requests */
    MDB_cursor *rcur; /* on "comments", renewed with rtxn */
    int broken;       /* MDB_PANIC seen: reopen before the next use */
    uint64_t map_init;
    uint64_t max_size;
    uint64_t grows, adopts, reopens;
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

int
folio_comments_text_check(const char *s, size_t len, int body, size_t *at)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    unsigned c, c1;
    int st = FOLIO_TEXT_UTF8;

    while (p < end) {
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
                          FOLIO_COMMENTS_BODY_MAX, 1, err, errlen)) != 0)
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
    int rc, dead = 0;

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
    rc = mdb_txn_begin(cs->env, NULL, 0, &txn);
    if (rc == MDB_MAP_RESIZED) {
        /*
         * Another worker grew the map between our open and now (a worker
         * respawned while others post): adopt its size and go on, or this
         * worker would exit and never be replaced.
         */
        if ((rc = adopt(cs)) == 0)
            rc = mdb_txn_begin(cs->env, NULL, 0, &txn);
    }
    if (rc != 0) {
        lmdb_fail(cs, "mdb_txn_begin", rc, err, errlen);
        goto fail;
    }
    if ((rc = mdb_dbi_open(txn, "comments", MDB_CREATE, &cs->dbi_comments)) !=
            0 ||
        (rc = mdb_dbi_open(txn, "ids", MDB_CREATE, &cs->dbi_ids)) != 0 ||
        (rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &cs->dbi_meta)) != 0) {
        mdb_txn_abort(txn);
        lmdb_fail(cs, "mdb_dbi_open", rc, err, errlen);
        goto fail;
    }
    if ((rc = mdb_txn_commit(txn)) != 0) {
        lmdb_fail(cs, "mdb_txn_commit", rc, err, errlen);
        goto fail;
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
    folio_free(cs->posts);
    folio_free(cs);
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

/*
 * Run fn in a write transaction and commit it (synced), again with a
 * larger map if it filled up.  fn returns 0 or an LMDB/errno code, which
 * aborts the transaction; MDB_NOTFOUND from fn is returned as
 * FOLIO_ENOTFOUND.
 */
static int
write_txn(struct folio_comments *cs, txn_fn fn, void *arg, const char *what,
          char *err, size_t errlen)
{
    MDB_txn *txn;
    int attempt, rc = 0, r;

    if ((r = ensure_open(cs, err, errlen)) != 0)
        return r;
    for (attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
        rc = mdb_txn_begin(cs->env, NULL, 0, &txn);
        if (rc == MDB_MAP_RESIZED) {
            if ((rc = adopt(cs)) != 0)
                break;
            continue;
        }
        if (rc != 0)
            break;
        if ((rc = fn(cs, txn, arg)) != 0)
            mdb_txn_abort(txn);
        else
            rc = mdb_txn_commit(txn); /* frees txn, committed or not */
        if (rc == MDB_MAP_FULL) {
            if ((r = grow(cs, err, errlen)) != 0)
                return r;
            continue;
        }
        break;
    }
    if (rc == 0)
        return 0;
    if (rc == MDB_NOTFOUND)
        return FOLIO_ENOTFOUND;
    if (rc == MDB_MAP_FULL || rc == MDB_MAP_RESIZED) {
        seterr(err, errlen, "comments store: the map keeps filling up");
        return FOLIO_EFULL;
    }
    return write_fail(cs, what, rc, err, errlen);
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

/* Every comment of the batch, in order, in the one transaction. */
static int
post_txn(struct folio_comments *cs, MDB_txn *txn, void *arg)
{
    struct post_arg *a = arg;
    unsigned char idkey[8], next[8];
    MDB_val k, v;
    uint64_t id = 1, now = folio_unix_ms();
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
    a->first = id;
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
        id++;
    }
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
    a.first = 0;
    rc = write_txn(cs, post_txn, &a, "post", err, errlen);
    if (rc == FOLIO_ENOTFOUND && a.bad_reply) {
        seterr(err, errlen, "%s", FOLIO_COMMENTS_BAD_REPLY);
        rc = FOLIO_EINVAL;
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

/* Renew the read transaction, adopting a grown map if LMDB asks. */
static int
rtxn_renew(struct folio_comments *cs)
{
    int rc, tries;

    for (tries = 0;; tries++) {
        rc = mdb_txn_renew(cs->rtxn);
        if (rc != MDB_MAP_RESIZED || tries == 2)
            return rc;
        if ((rc = adopt(cs)) != 0)
            return rc;
    }
}

uint64_t
folio_comments_version(struct folio_comments *cs)
{
    MDB_envinfo info;

    if (cs == NULL || cs->env == NULL || cs->broken ||
        mdb_env_info(cs->env, &info) != 0)
        return 0;
    return ((uint64_t)cs->reopens << 48) ^ (uint64_t)info.me_last_txnid;
}

int
folio_comments_list(struct folio_comments *cs, const char *path, size_t len,
                    struct folio_buf *out, size_t max_bytes, uint32_t *count,
                    char *err, size_t errlen)
{
    char np[FOLIO_COMMENTS_NPATH_MAX];
    unsigned char key[KEY_MAX];
    unsigned char *h;
    size_t nlen, klen, mark = folio_buf_mark(out);
    uint32_t n = 0;
    MDB_val k, v;
    int rc, is_long, res = 0;

    if ((rc = check_field("path", path, len, FOLIO_COMMENTS_PATH_MAX, 0, err,
                          errlen)) != 0)
        return rc;
    if ((rc = ensure_open(cs, err, errlen)) != 0)
        return rc;
    nlen = folio_comments_normalize(path, len, np);
    klen = page_key(np, nlen, key, &is_long);
    memset(key + klen, 0, 8); /* id 0: before the page's first comment */
    if (folio_buf_append(out, "\xdd\0\0\0\0", 5) != 0) {
        seterr(err, errlen, "out of memory");
        return FOLIO_ENOMEM;
    }
    if ((rc = rtxn_renew(cs)) != 0) {
        folio_buf_truncate(out, mark);
        if (rc == MDB_PANIC)
            cs->broken = 1;
        return lmdb_fail(cs, "mdb_txn_renew", rc, err, errlen);
    }
    if ((rc = mdb_cursor_renew(cs->rtxn, cs->rcur)) != 0) {
        mdb_txn_reset(cs->rtxn);
        folio_buf_truncate(out, mark);
        return lmdb_fail(cs, "mdb_cursor_renew", rc, err, errlen);
    }
    k.mv_data = key;
    k.mv_size = klen + 8;
    rc = mdb_cursor_get(cs->rcur, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && k.mv_size == klen + 8 &&
           memcmp(k.mv_data, key, klen) == 0) {
        if (!is_long || stored_path_is(&v, np, nlen)) {
            if (max_bytes != 0 &&
                folio_buf_mark(out) - mark + v.mv_size > max_bytes) {
                seterr(err, errlen,
                       "the page's comments are over %zu bytes: too large "
                       "for one reply",
                       max_bytes);
                res = FOLIO_ETOOBIG;
                break;
            }
            if (folio_buf_append(out, v.mv_data, v.mv_size) != 0) {
                seterr(err, errlen, "out of memory");
                res = FOLIO_ENOMEM;
                break;
            }
            n++;
        }
        rc = mdb_cursor_get(cs->rcur, &k, &v, MDB_NEXT);
    }
    mdb_txn_reset(cs->rtxn);
    if (res == 0 && rc != 0 && rc != MDB_NOTFOUND)
        res = lmdb_fail(cs, "mdb_cursor_get", rc, err, errlen);
    if (res != 0) {
        folio_buf_truncate(out, mark);
        return res;
    }
    h = (unsigned char *)folio_buf_at(out, mark);
    if (n == 0) {
        h[0] = 0x90; /* [] */
        folio_buf_truncate(out, mark + 1);
    } else {
        h[1] = (unsigned char)(n >> 24);
        h[2] = (unsigned char)(n >> 16);
        h[3] = (unsigned char)(n >> 8);
        h[4] = (unsigned char)n;
    }
    if (count != NULL)
        *count = n;
    return 0;
}

/* ---- info ---------------------------------------------------------- */

uint64_t
folio_comments_used_bytes(struct folio_comments *cs)
{
    MDB_envinfo info;
    MDB_stat st;

    if (cs->env == NULL || mdb_env_info(cs->env, &info) != 0 ||
        mdb_env_stat(cs->env, &st) != 0)
        return 0;
    return ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
}

int
folio_comments_info(struct folio_comments *cs, struct folio_comments_info *info)
{
    MDB_val k, v;
    int rc;

    memset(info, 0, sizeof(*info));
    if (ensure_open(cs, NULL, 0) != 0)
        return FOLIO_ESTORE;
    info->map_size = map_size(cs);
    info->max_size = cs->max_size;
    info->grows = cs->grows;
    info->adopts = cs->adopts;
    info->reopens = cs->reopens;
    info->next_id = 1;
    if ((rc = rtxn_renew(cs)) != 0)
        return FOLIO_ESTORE;
    k.mv_data = (void *)next_id_key;
    k.mv_size = sizeof(next_id_key) - 1;
    rc = mdb_get(cs->rtxn, cs->dbi_meta, &k, &v);
    if (rc == 0 && v.mv_size == 8)
        info->next_id = folio_be64_get(v.mv_data);
    mdb_txn_reset(cs->rtxn);
    return rc == 0 || rc == MDB_NOTFOUND ? 0 : FOLIO_ESTORE;
}
