/*
 * page.h - the page paths of the comments service (PROTOCOL.md section
 * 3), normalized as mouthful does.  A rule of the protocol, which both
 * ends apply: the store (shm/comments.c) keys pages by it, the worker's
 * backends look pages up by it (through shm/comments.h), and the folio
 * client shows the page it asked about by it.  So it is in the core,
 * beside the codec: the client may include src/ only.
 */
#ifndef FOLIO_PAGE_H
#define FOLIO_PAGE_H

#include <stddef.h>
#include <string.h>

/*
 * folio_comments_normalize - mouthful's path normalization: prepend '/'
 * if the path does not start with one; append '/' if it contains no '.'
 * and does not already end with '/'.  `out` has room for len + 2 bytes;
 * returns the normalized length.  Does not validate.  Any process.
 */
static inline size_t
folio_comments_normalize(const char *path, size_t len, char *out)
{
    size_t n = 0;

    if (len == 0 || path[0] != '/')
        out[n++] = '/';
    memcpy(out + n, path, len);
    n += len;
    if (memchr(path, '.', len) == NULL && out[n - 1] != '/')
        out[n++] = '/';
    return n;
}

#endif
