/*
 * json.h - JSON for the server's hot path: JSON text to msgpack (request
 * bodies of foliod's HTTP face) and msgpack to JSON text (its replies),
 * both without allocating: they read spans and write into a struct
 * folio_buf (src/buf.h), which grows only as its owner lets it.
 *
 * The two directions agree: what folio_json_put_mp writes from the
 * transcoder's msgpack transcodes back to the same bytes (fuzz_json
 * checks it).  The text is the folio client's (folio(1), JSON): integers
 * exact over the whole of int64 and uint64, floats as the shortest
 * decimal that reads back to the same value, bin as {"$bin": BASE64}, ext
 * as {"$ext": [TYPE, BASE64]}, a key that is not a str as the JSON text
 * of the key.  Any process; no libevent, no jansson.
 */
#ifndef FOLIO_JSON_H
#define FOLIO_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "src/mp.h"

struct folio_buf;

/* The default nesting limit of a request body (max_depth's default). */
#define FOLIO_JSON_DEPTH 32
/* A number longer than this (as text) is refused rather than rounded. */
#define FOLIO_JSON_NUMBER_MAX 64

/* What was wrong with a JSON text, for the client. */
struct folio_json_err {
    size_t at;     /* byte offset of the problem in the text */
    char msg[160]; /* "invalid JSON at byte 12: expected ':'" */
};

/*
 * folio_json_to_mp - append to `out` the msgpack form of the JSON text
 * p[0..n): exactly one value (RFC 8259; whitespace around it, nothing
 * else), nested at most max_depth deep (clamped to FOLIO_MP_MAX_DEPTH).
 * Strings must be valid UTF-8, raw or escaped (a lone surrogate escape is
 * an error, not U+FFFD); they become str with the smallest header.
 * Numbers without fraction or exponent that fit int64 or uint64 become
 * the smallest msgpack integer; other numbers float 64 (one beyond
 * double's range, or longer than FOLIO_JSON_NUMBER_MAX characters, is an
 * error).  Arrays and objects get 32-bit headers (array 32, map 32: their
 * size is known at their end); keys may repeat, in order.
 * Returns 0; FOLIO_EINVAL (not JSON: *e says where and why); or
 * FOLIO_ETOOBIG / FOLIO_ENOMEM (out cannot grow: e->msg says so).  On
 * error out is as it was.
 */
int folio_json_to_mp(const char *p, size_t n, uint32_t max_depth,
                     struct folio_buf *out, struct folio_json_err *e);

/*
 * Flags of the writers.  FOLIO_JSON_HTML: strings HTML-safe too, & < > "
 * ' written &amp; &lt; &gt; &quot; &#39; in the string's value, so that
 * inserted as HTML it is text, never markup.
 */
#define FOLIO_JSON_HTML 0x01

/*
 * folio_json_put_mp - append the JSON text of the msgpack value at *c,
 * moving *c past it.  indent < 0: compact; else newlines and `indent`
 * spaces a level, as folio(1) prints.  `flags` (FOLIO_JSON_HTML) apply
 * to every string.  Strings that are not UTF-8 keep their valid
 * characters, each stray byte written U+FFFD; NaN and infinities are the
 * strings "NaN", "Infinity", "-Infinity".  Returns 0, FOLIO_EPROTO
 * (malformed msgpack, or nested deeper than FOLIO_MP_MAX_DEPTH; out is
 * then as it was), or out's error.
 */
int folio_json_put_mp(struct folio_buf *out, struct folio_mp_cur *c, int indent,
                      unsigned flags);

/*
 * folio_json_put_str - append s[0..n) as a JSON string (quoted, escaped
 * as folio_json_put_mp does).  Returns 0 or out's error.
 */
int folio_json_put_str(struct folio_buf *out, const char *s, size_t n,
                       unsigned flags);

/* folio_json_put_u64, _i64 - an integer, exactly.  0 or out's error. */
int folio_json_put_u64(struct folio_buf *out, uint64_t v);
int folio_json_put_i64(struct folio_buf *out, int64_t v);

/*
 * folio_json_put_time_ms - Unix milliseconds `ms` as a quoted RFC 3339
 * UTC time, as Go's time.Time marshals: "2006-01-02T15:04:05.12Z" (the
 * fraction without trailing zeros, none when whole).  0 or out's error.
 */
int folio_json_put_time_ms(struct folio_buf *out, int64_t ms);

/*
 * folio_json_key_eq - whether object key k[0..n) names the field `name`
 * (ASCII, NUL-terminated) as Go's encoding/json matches keys to fields:
 * equal under Unicode case folding, so "Body", "BODY" and "body" all
 * name body, and U+212A KELVIN SIGN folds to k, U+017F LONG S to s.
 */
int folio_json_key_eq(const char *k, size_t n, const char *name);

#endif
