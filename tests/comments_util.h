/*
 * comments_util.h - comments.* calls for the end-to-end suites
 * (e2e_comments, e2e_comments_pg, e2e_hosts): a post, a list decoded into
 * comments.
 */
#ifndef FOLIO_TESTS_COMMENTS_UTIL_H
#define FOLIO_TESTS_COMMENTS_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "src/client.h"
#include "src/mp.h"

/* A decoded comment: spans into the reply it came from. */
struct e2e_comment {
    uint64_t id, created_at;
    const char *path, *author, *body;
    uint32_t path_len, author_len, body_len;
    int has_reply_to;
    uint64_t reply_to;
    const unsigned char *start; /* its encoded bytes */
    size_t len;
};

/*
 * e2e_comment_post - comments.post {path, author, body}; the reply in *r
 * (valid until c's next call).  0, or -1 if no reply came.
 */
int e2e_comment_post(struct folio_client *c, const char *path,
                     const char *author, const char *body, size_t body_len,
                     struct folio_reply *r);

/*
 * e2e_comment_post_key - e2e_comment_post with an idempotency_key (may be
 * NULL: none).
 */
int e2e_comment_post_key(struct folio_client *c, const char *path,
                         const char *author, const char *body, const char *key,
                         struct folio_reply *r);

/*
 * e2e_comment_reply - comments.post of a reply to comment `to`, as
 * e2e_comment_post.
 */
int e2e_comment_reply(struct folio_client *c, const char *path,
                      const char *author, const char *body, uint64_t to,
                      struct folio_reply *r);

/*
 * e2e_comment_decode - decode one comment at c (reply_to last, in a
 * reply); 0, or -1 if it is not one.
 */
int e2e_comment_decode(struct folio_mp_cur *c, struct e2e_comment *d);

/*
 * e2e_comment_list - list `path` into a malloc'd array of comments (spans
 * into the client's buffer: valid until its next call).  Returns the
 * count, -1 on error.
 */
int e2e_comment_list(struct folio_client *c, const char *path,
                     struct e2e_comment **out);

#endif
