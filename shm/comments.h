/*
 * comments.h - the comments store: an LMDB environment `comments` under
 * the data directory holding every comment once, already encoded as the
 * msgpack map that comments.list returns, so that listing a page is an
 * array header and a copy of stored bytes (PROTOCOL.md section 3).
 *
 * Every worker opens its own handle after fork (LMDB forbids using an
 * environment across fork()); the master may open one at start to check
 * the data directory, and must close it before it forks.  A handle is used
 * by one thread, or, opened threaded (a worker's), by two: one that reads
 * (folio_comments_list*, _version, _used_bytes, _info) and one that
 * writes (_post*, _delete, _maintain), so that waiting for LMDB's writer
 * lock never stops the reads.  No libevent here: the worker's backend
 * calls these.
 */
#ifndef FOLIO_SHM_COMMENTS_H
#define FOLIO_SHM_COMMENTS_H

#include <stddef.h>
#include <stdint.h>

#include "src/page.h"

struct folio_buf;
struct folio_bytes;

/* The environment under the data directory. */
#define FOLIO_COMMENTS_ENV "comments"

/* Limits of PROTOCOL.md section 3, in bytes. */
#define FOLIO_COMMENTS_PATH_MAX 1024
#define FOLIO_COMMENTS_AUTHOR_MAX 128
#define FOLIO_COMMENTS_BODY_MAX 65536
#define FOLIO_COMMENTS_KEY_MAX 128 /* an idempotency key */

/*
 * How long a post's idempotency key is remembered by default (a retry
 * within it gets the first comment back): comments_key_window in
 * foliod.conf(5), a day, as Stripe's API keeps its keys.
 */
#define FOLIO_COMMENTS_KEY_WINDOW (24ull * 3600 * 1000)

/* What a post is told when its key stored another comment. */
#define FOLIO_COMMENTS_KEY_USED                                                \
    "idempotency_key was used within comments_key_window by a post of "        \
    "another path, author, body or reply_to: a retry must send the same "      \
    "comment, a new comment a new key"

/* A normalized path: a '/' may be added at each end. */
#define FOLIO_COMMENTS_NPATH_MAX (FOLIO_COMMENTS_PATH_MAX + 2)

/* The map starts this large (or as large as the file already is). */
#define FOLIO_COMMENTS_MAP_INIT (1u << 20)
/* Default ceiling of the map: comments_max_size in foliod.conf(5). */
#define FOLIO_COMMENTS_MAX_SIZE_DEFAULT (1ull << 30)

struct folio_comments;

struct folio_comments_opts {
    uint64_t map_init; /* initial map size; 0: FOLIO_COMMENTS_MAP_INIT */
    uint64_t max_size; /* the map never grows past it; 0: the default */
    int threaded; /* a reading thread and a writing one (see above) */
    uint64_t key_window_ms; /* 0: FOLIO_COMMENTS_KEY_WINDOW */
};

/*
 * The writing thread's view of LMDB's writer lock (a worker publishes it
 * for the master's watchdog): `waiting` before each wait for it,
 * `holding` once it has it (nonzero: give it back unwritten, the write
 * fails with FOLIO_ECANCELED), `released` once the transaction is over.
 * Called in the writing thread, from inside _post* and _delete.
 */
struct folio_comments_hooks {
    void (*waiting)(void *arg);
    int (*holding)(void *arg);
    void (*released)(void *arg);
    void *arg;
};

/*
 * A comment as posted: spans, not NUL-terminated, borrowed; and the
 * comment it replies to, if has_reply_to (PROTOCOL.md section 3: one of
 * the same page that is no reply itself, checked when it is stored).
 */
struct folio_comment_in {
    const char *path;
    size_t path_len;
    const char *author;
    size_t author_len;
    const char *body;
    size_t body_len;
    int has_reply_to;
    uint64_t reply_to;
    const char *key; /* the idempotency key; NULL: none */
    size_t key_len;
};

/* What a post with a reply_to that names no such comment is told. */
#define FOLIO_COMMENTS_BAD_REPLY                                               \
    "reply_to must be the id of a comment of the same page that is not a "   \
    "reply itself"

/* Results of folio_comments_text_check. */
enum folio_text_status {
    FOLIO_TEXT_OK = 0,
    FOLIO_TEXT_UTF8 = 1,   /* not valid UTF-8 */
    FOLIO_TEXT_CONTROL = 2 /* a control character that is not allowed */
};

/*
 * folio_comments_text_check - whether s[0..len) is valid UTF-8 (RFC 3629:
 * no overlong forms, no surrogates, nothing above U+10FFFF, no truncated
 * sequence) free of control characters (U+0000..U+001F, U+007F and
 * U+0080..U+009F), except '\n' and '\t' when `body` is non-zero.
 * Returns a folio_text_status; *at (may be NULL) receives the offset of
 * the first offending byte.  Any process.
 */
int folio_comments_text_check(const char *s, size_t len, int body, size_t *at);

/* folio_comments_normalize: src/page.h (the client shows paths so too). */

/*
 * folio_comments_path_check - the path rule of folio_comments_validate
 * alone (comments.list): 1..1024 bytes of valid UTF-8 with no control
 * character.  Returns 0, or FOLIO_EINVAL with a message in `err`.
 */
int folio_comments_path_check(const char *path, size_t len, char *err,
                              size_t errlen);

/*
 * folio_comments_validate - check a post against PROTOCOL.md: path 1..1024,
 * author 1..128, body 1..65536 bytes, idempotency key (if any) 1..128,
 * valid UTF-8, no control characters (body: '\n' and '\t' allowed).  Returns 0,
 * or FOLIO_EINVAL with a message for the client in `err`.
 */
int folio_comments_validate(const struct folio_comment_in *in, char *err,
                            size_t errlen);

/*
 * folio_comments_encode_tail - append to `out` what follows the id in a
 * stored comment: the keys and values "path" (np, normalized), "author",
 * "body", "created_at" and, for a reply, "reply_to" of the map
 * comments.list returns (5 entries, 6 for a reply), whose first entry is
 * "id".  Another store (the PostgreSQL backend) puts its own map header
 * and id in front.  Returns 0, or -1 if `out` cannot grow.
 */
int folio_comments_encode_tail(struct folio_buf *out, const char *np,
                               size_t nlen, const struct folio_comment_in *in,
                               uint64_t created_at);

/*
 * folio_comments_open - open (creating if needed) the environment in
 * `data_dir`/comments.  `opts` may be NULL.  Worker: after fork, once;
 * master: only to check the directory, closed before any fork.  On success
 * *out is owned by the caller (folio_comments_close).  Returns 0,
 * FOLIO_ENOMEM, FOLIO_ESYS (the directory; logged) or FOLIO_ESTORE (LMDB;
 * logged), with a message in `err`.
 */
int folio_comments_open(const char *data_dir,
                        const struct folio_comments_opts *opts,
                        struct folio_comments **out, char *err, size_t errlen);

/* folio_comments_close - release the handle; accepts NULL. */
void folio_comments_close(struct folio_comments *cs);

/*
 * folio_comments_set_hooks - the writing thread's hooks (copied; NULL:
 * none).  Before the writes start.
 */
void folio_comments_set_hooks(struct folio_comments *cs,
                              const struct folio_comments_hooks *hooks);

/*
 * folio_comments_maintain - the writing thread, between its writes:
 * reopen the store if a failure broke it (MDB_PANIC), adopt the map
 * size another process set if a read asked for it (a read that finds
 * either returns FOLIO_EAGAIN, threaded).  Returns 0 or FOLIO_ESTORE.
 */
int folio_comments_maintain(struct folio_comments *cs, char *err,
                            size_t errlen);

/*
 * folio_comments_post - validate and store one comment in its own write
 * transaction, durably committed (synced) before this returns; the id is
 * the next of a counter kept in the environment, so ids increase across
 * every process.  Appends the stored comment (msgpack map {"id", "path",
 * "author", "body", "created_at", "reply_to"?}) to `out`, and sets *id
 * (may be NULL).  Grows the map when it fills up, up to the configured
 * ceiling.  A post with an idempotency key (in->key) under which a
 * comment still stored was posted within the window stores nothing: that
 * comment is appended (the first one's id and created_at), or, if it is
 * not the same comment (path, author, body, reply_to), FOLIO_EKEYUSED with
 * FOLIO_COMMENTS_KEY_USED.  Each post forgets a few keys past the window.
 * Returns 0; FOLIO_EINVAL (bad input, or a reply_to that is not
 * a comment of the page that is no reply: FOLIO_COMMENTS_BAD_REPLY),
 * FOLIO_EFULL (ceiling reached or disk full), FOLIO_ENOMEM (out cannot
 * grow) or FOLIO_ESTORE (logged), each with a message in `err`; on error
 * `out` is as it was.
 */
int folio_comments_post(struct folio_comments *cs,
                        const struct folio_comment_in *in,
                        struct folio_buf *out, uint64_t *id, char *err,
                        size_t errlen);

/*
 * folio_comments_post_batch - folio_comments_post for n comments in ONE
 * write transaction and one synced commit (group commit), in the order
 * given, with increasing ids (*first, may be NULL: the first one's, or
 * for a retry with a key, the id it is answered with).
 * Comment i is appended to `out` ending at ends[i] (ends may be NULL).
 * With `codes` (may be NULL), a comment whose reply_to is bad is not
 * stored (codes[i] = FOLIO_EINVAL, nothing appended for it) nor is one
 * whose key names another comment (FOLIO_EKEYUSED), and the others are;
 * the others' codes[i] = 0.  Without it, a bad reply_to
 * fails the batch.  Returns as folio_comments_post; FOLIO_EINVAL names
 * the first comment that fails validation (none is stored then);
 * FOLIO_ECANCELED when the writer's holding hook gave the lock back
 * (nothing stored).
 */
int folio_comments_post_batch(struct folio_comments *cs,
                              const struct folio_comment_in *in, size_t n,
                              struct folio_buf *out, size_t *ends, int *codes,
                              uint64_t *first, char *err, size_t errlen);

/*
 * folio_comments_version - what names the store's contents now: the id
 * of its last committed transaction (by any process), mixed with how
 * often this handle reopened the store; 0 when it cannot tell (closed,
 * broken).  Equal non-zero versions saw the same comments, so a list
 * taken while the version was v may be served again while it still is
 * (a list read after v may be newer than v, never older).  No lock, no
 * transaction: LMDB's meta page, from the map.
 */
uint64_t folio_comments_version(struct folio_comments *cs);

/*
 * folio_comments_list - append to `out` a msgpack array of the comments of
 * page `path` (normalized as by post), oldest first: the stored bytes
 * copied as they are, behind a 5-byte array header (0x90 for an empty
 * page).  Uses the handle's read transaction (reset, renewed) and cursor
 * (renewed): allocates nothing unless `out` has to grow.  `max_bytes`
 * bounds the array (0: no bound); *count (may be NULL) is its length.
 * Returns 0; FOLIO_EINVAL (bad path), FOLIO_ETOOBIG (over max_bytes),
 * FOLIO_ENOMEM or FOLIO_ESTORE (logged), each with a message in `err`; on
 * error `out` is as it was.
 */
int folio_comments_list(struct folio_comments *cs, const char *path, size_t len,
                        struct folio_buf *out, size_t max_bytes,
                        uint32_t *count, char *err, size_t errlen);

/*
 * folio_comments_list_size - the length of page `path`'s comments.list
 * reply (as folio_comments_list would append it) into *size, by a walk of
 * its records that copies nothing.  Returns as folio_comments_list.
 */
int folio_comments_list_size(struct folio_comments *cs, const char *path,
                             size_t len, size_t max_bytes, size_t *size,
                             char *err, size_t errlen);

/*
 * folio_comments_list_bytes - page `path`'s comments.list reply as a new
 * block of shared bytes (src/bytes.h; *out holds the one reference), of
 * exactly its size: sized, then filled, in one read transaction.  Returns
 * as folio_comments_list.
 */
int folio_comments_list_bytes(struct folio_comments *cs, const char *path,
                              size_t len, size_t max_bytes,
                              struct folio_bytes **out, char *err,
                              size_t errlen);

/*
 * folio_comments_delete - remove comment `id`, durably.  Returns 0,
 * FOLIO_ENOTFOUND, FOLIO_EFULL or FOLIO_ESTORE (logged), with a message
 * in `err`.
 */
int folio_comments_delete(struct folio_comments *cs, uint64_t id, char *err,
                          size_t errlen);

/* Counters of one handle, for tests and logs. */
struct folio_comments_info {
    uint64_t map_size; /* this handle's current map */
    uint64_t max_size; /* ceiling */
    uint64_t grows;    /* times this handle grew the map */
    uint64_t adopts;   /* times it adopted a size another process set */
    uint64_t reopens;  /* times it reopened after an LMDB panic */
    uint64_t next_id;  /* the id the next post will get */
    uint64_t keys;     /* idempotency keys remembered */
};

/*
 * folio_comments_used_bytes - the bytes of the store in use: its pages up
 * to the last one written (LMDB's high-water mark, free pages inside it
 * included), which comments_max_size bounds.  Reads no transaction,
 * allocates nothing; 0 if the store is not open.
 */
uint64_t folio_comments_used_bytes(struct folio_comments *cs);

/* folio_comments_info - fill *info.  Returns 0 or FOLIO_ESTORE. */
int folio_comments_info(struct folio_comments *cs,
                        struct folio_comments_info *info);

#endif
