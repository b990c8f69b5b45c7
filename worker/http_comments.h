/*
 * http_comments.h - the comments service as mouthful's HTTP API shows it
 * (vkuznecovas/mouthful: api/router.go, db/model/comment.go,
 * api/model/createCommentBody.go and createCommentResponse.go), over the
 * msgpack of comments.list and comments.post: the one handler serves both
 * faces, these functions only translate.
 *
 * A stored comment {"id", "path", "author", "body", "created_at",
 * "reply_to"?} becomes mouthful's Comment as Go marshals it:
 *   {"Id": id, "ThreadId": path, "Body": body (HTML-safe), "Author": author,
 *    "Confirmed": true, "CreatedAt": RFC 3339, "ReplyTo": id}
 * Id and ReplyTo are numbers (folio's ids; mouthful's are UUID strings,
 * which its widget only compares and sends back), ThreadId the thread's
 * normalized path (folio keys threads by it), Confirmed true (no
 * moderation queue), DeletedAt and ReplyTo left out when nil, as Go's
 * omitempty does (folio deletes comments outright: no DeletedAt ever).
 * Body is HTML-escaped (FOLIO_JSON_HTML): mouthful's widget inserts it as
 * HTML, and mouthful renders markdown then sanitizes it; folio escapes,
 * so any markup in a comment shows as text.  Worker only.
 */
#ifndef FOLIO_HTTP_COMMENTS_H
#define FOLIO_HTTP_COMMENTS_H

#include <stddef.h>
#include <stdint.h>

#include "src/mp.h"

struct folio_buf;

/* A stored comment, read: spans into its msgpack, borrowed. */
struct folio_comment_view {
    uint64_t id;
    const char *path;
    uint32_t path_len;
    const char *author;
    uint32_t author_len;
    const char *body;
    uint32_t body_len;
    uint64_t created_at; /* Unix ms */
    uint64_t reply_to;   /* valid when has_reply_to */
    int has_reply_to;
};

/*
 * folio_http_comment_read - read the stored comment (a msgpack map) at
 * *c, moving *c past it.  Keys in any order; unknown keys are skipped; a
 * nil reply_to is none.  Returns 0, or FOLIO_EPROTO (not a comment: a key
 * missing or of the wrong type).
 */
int folio_http_comment_read(struct folio_mp_cur *c,
                            struct folio_comment_view *v);

/* folio_http_comment_json - append mouthful's Comment object for *v. */
int folio_http_comment_json(struct folio_buf *out,
                            const struct folio_comment_view *v);

/*
 * folio_http_comments_json - append the body of mouthful's GET
 * /v1/comments: the JSON array of the comments.list result mp[0..len)
 * (a msgpack array of stored comments).  *count (may be NULL) is its
 * length: mouthful answers 404 for an empty thread.  Returns 0,
 * FOLIO_EPROTO (out as it was) or out's error.
 */
int folio_http_comments_json(struct folio_buf *out, const void *mp, size_t len,
                             uint32_t *count);

/*
 * A POST /v1/comments body as mouthful's CreateCommentBody reads it:
 * spans into the msgpack form of the JSON (folio_json_to_mp), borrowed.
 */
struct folio_http_comment_post {
    const char *path, *author, *body, *email;
    uint32_t path_len, author_len, body_len, email_len;
    int has_path, has_author, has_body;
    int has_email; /* a string: the honeypot is filled */
    int has_reply_to;
    uint64_t reply_to;
};

/*
 * folio_http_comment_post_read - read the JSON body's msgpack form
 * mp[0..len) as Go's encoding/json fills CreateCommentBody: an object;
 * keys "path", "body", "author", "email", "replyTo" matched
 * case-insensitively (folio_json_key_eq: the widget sends Body, Author,
 * Path, ReplyTo, the case study lowercase), the last of a repeated key
 * winning, other keys ignored; path, body and author strings, email a
 * string or null; replyTo a non-negative integer, a string of decimal
 * digits, or null (none).  A missing path, body or author reads as
 * empty, as in Go (the handler refuses empty ones).  Returns 0, or
 * FOLIO_EINVAL with a message in `err`.
 */
int folio_http_comment_post_read(const void *mp, size_t len,
                                 struct folio_http_comment_post *p, char *err,
                                 size_t errlen);

/*
 * folio_http_comment_post_params - append the params of the comments.post
 * call the body asks for: the one map {"path", "author", "body",
 * "reply_to"?, "idempotency_key"?} (key: key[0..klen), klen 0 for none),
 * without the params array's header (one param).  0 or out's error.
 */
int folio_http_comment_post_params(struct folio_buf *out,
                                   const struct folio_http_comment_post *p,
                                   const char *key, size_t klen);

/*
 * folio_http_comment_created_json - append mouthful's CreateCommentResponse
 * for the stored comment *v: {"id", "path", "body" (HTML-safe), "author",
 * "email"? (email[0..elen) when has_email), "replyTo"?}.
 */
int folio_http_comment_created_json(struct folio_buf *out,
                                    const struct folio_comment_view *v,
                                    int has_email, const char *email,
                                    size_t elen);

#endif
