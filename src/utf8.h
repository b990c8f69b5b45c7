/*
 * utf8.h - UTF-8 as RFC 3629 defines it, for what foliod writes back to
 * clients (error messages that quote a request's bytes) and what the
 * folio client prints.
 */
#ifndef FOLIO_UTF8_H
#define FOLIO_UTF8_H

#include <stddef.h>

/*
 * folio_utf8_len - the length (1..4) of the valid UTF-8 sequence at
 * p[0..n), n >= 1: no overlong form, no surrogate, nothing above
 * U+10FFFF, not cut short; 0 if p does not start one.  Any process.
 */
size_t folio_utf8_len(const unsigned char *p, size_t n);

/*
 * folio_utf8_quote - bytes of a request fit to quote in a message: valid
 * UTF-8 is kept as it is, except that control characters (U+0000..U+001F,
 * U+007F, U+0080..U+009F) and bytes that are not UTF-8 are written \xNN
 * (each byte) and a backslash \\; cut at a character, never inside one,
 * to at most cap - 1 bytes, the last three "..." when cut.  The result is
 * valid UTF-8 and NUL-terminated.  cap >= 8.  Returns out.
 */
const char *folio_utf8_quote(const char *s, size_t len, char *out, size_t cap);

#endif
