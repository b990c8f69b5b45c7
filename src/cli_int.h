/*
 * cli_int.h - the folio command-line client's private interfaces: the
 * msgpack <-> JSON mapping (cli_json.c), reading results with the cursor
 * and printing them for people (cli_show.c, cli_stats.c).  Only the
 * client's own files include it.
 */
#ifndef FOLIO_CLI_INT_H
#define FOLIO_CLI_INT_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <msgpack.h>

#include "src/mp.h"

/* Exit statuses (PROTOCOL.md section 5). */
enum {
    FOLIO_CLI_OK = 0,
    FOLIO_CLI_ESERVER = 1, /* the server answered an error */
    FOLIO_CLI_EUSAGE = 2,  /* bad command line, bad JSON */
    FOLIO_CLI_ECONN = 3    /* cannot connect, timed out, connection lost */
};

/*
 * folio_cli_json_emit - write the msgpack value at *c as JSON text to `f`
 * and advance the cursor past it.  indent < 0: compact on one line; else
 * pretty, `indent` spaces per level.  The mapping (folio(1), JSON):
 * integers exactly (all of int64 and uint64), floats in the shortest form
 * that reads back the same (NaN and infinities as the strings "NaN",
 * "Infinity", "-Infinity"), str as a JSON string (bytes that are not
 * UTF-8 become U+FFFD), bin as {"$bin": BASE64}, ext as
 * {"$ext": [TYPE, BASE64]}, map keys that are not str as the compact JSON
 * text of the key.  Returns 0, or -1 if the msgpack is malformed.
 */
int folio_cli_json_emit(FILE *f, struct folio_mp_cur *c, int indent);

/*
 * folio_cli_json_pack - pack a JSON value as msgpack: object -> map,
 * array -> array, string -> str, integer -> int, real -> float 64,
 * true/false/null; an object whose only key is "$bin" (a base64 string) is
 * packed as bin, one whose only key is "$ext" ([TYPE, BASE64]) as ext, so
 * that what folio_cli_json_emit() prints reads back the same.  Returns 0,
 * or -1 with a reason in `why` (bad base64, ext type out of range).
 */
int folio_cli_json_pack(msgpack_packer *pk, const json_t *j, char *why,
                        size_t whylen);

/*
 * Reading a result: each helper looks at a copy of a cursor.
 * folio_cli_get - in the map at `m`, the value of `key`: 0 with *out set,
 * or -1 (not a map, or no such key).
 */
int folio_cli_get(struct folio_mp_cur m, const char *key,
                  struct folio_mp_cur *out);
/* folio_cli_get_num - a number (int, uint or float) at `key` as double: 0 or
 * -1. */
int folio_cli_get_num(struct folio_mp_cur m, const char *key, double *v);
/* folio_cli_get_int - an integer at `key`: 0 or -1. */
int folio_cli_get_int(struct folio_mp_cur m, const char *key, int64_t *v);
/* folio_cli_get_str - a str at `key` (a span): 0 or -1. */
int folio_cli_get_str(struct folio_mp_cur m, const char *key, const char **s,
                      uint32_t *len);
/* folio_cli_num - the number at *c as double, consumed: 0 or -1. */
int folio_cli_num(struct folio_mp_cur *c, double *v);

/* folio_cli_put_text - write a span for a terminal: control bytes but \t as
 * '?'. */
void folio_cli_put_text(FILE *f, const char *s, size_t len);

/* folio_cli_fmt_money - "R$ 1.234,56" from centavos into buf. */
const char *folio_cli_fmt_money(char *buf, size_t len, int64_t cents);
/* folio_cli_fmt_duration - "45s", "3m12s", "2h03m", "3d04h". */
const char *folio_cli_fmt_duration(char *buf, size_t len, double seconds);
/* folio_cli_fmt_bytes - "512 B", "12.3 KiB", "1.2 MiB", "3.4 GiB". */
const char *folio_cli_fmt_bytes(char *buf, size_t len, double bytes);

/*
 * The human printers: each prints the result at `res` to stdout and
 * returns 0, or -1 when the result does not have the expected shape (the
 * caller then prints it as JSON).
 */
int folio_cli_show_count(struct folio_mp_cur res);
/*
 * `offset` is the --offset asked for, to number the lines shown; `limit`
 * the --limit (-1: not given), to say why none is shown.
 */
int folio_cli_show_search(struct folio_mp_cur res, uint64_t offset,
                          int64_t limit);
int folio_cli_show_quote(struct folio_mp_cur res);
int folio_cli_show_comments(struct folio_mp_cur res, const char *path);
int folio_cli_show_comment_posted(struct folio_mp_cur res);
int folio_cli_show_methods(struct folio_mp_cur res);

/*
 * folio_cli_show_stats - the server.stats table.  `prev` is the previous
 * sample (a copy of its bytes) or NULL: with it, REQ/S, CPU% and
 * ALLOC/REQ are computed over the interval between the two samples,
 * otherwise since each process started.
 */
int folio_cli_show_stats(struct folio_mp_cur res,
                         const struct folio_mp_cur *prev);

#endif
