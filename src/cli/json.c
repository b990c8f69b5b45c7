/*
 * json.c - the folio client's mapping between msgpack and JSON (see
 * cli_int.h and folio(1), JSON).  msgpack -> JSON text is written straight
 * from the cursor, so every integer (all of uint64 too) is printed exactly;
 * JSON -> msgpack walks a jansson tree.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/cli/cli_int.h"
#include "src/rpc.h"
#include "src/utf8.h"

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void
put_base64(FILE *f, const unsigned char *p, size_t n)
{
    uint32_t v;

    for (; n >= 3; p += 3, n -= 3) {
        v = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
        fputc(b64_alphabet[v >> 18], f);
        fputc(b64_alphabet[v >> 12 & 63], f);
        fputc(b64_alphabet[v >> 6 & 63], f);
        fputc(b64_alphabet[v & 63], f);
    }
    if (n > 0) {
        v = (uint32_t)p[0] << 16 | (n == 2 ? (uint32_t)p[1] << 8 : 0);
        fputc(b64_alphabet[v >> 18], f);
        fputc(b64_alphabet[v >> 12 & 63], f);
        fputc(n == 2 ? b64_alphabet[v >> 6 & 63] : '=', f);
        fputc('=', f);
    }
}

static int
b64_value(unsigned char ch)
{
    const char *p;

    if (ch == '\0' || (p = strchr(b64_alphabet, ch)) == NULL)
        return -1;
    return (int)(p - b64_alphabet);
}

/*
 * Decode standard base64 (padding optional) into out, which has room for
 * n * 3 / 4 bytes.  Returns the length, or -1 if it is not base64.
 */
static long
b64_decode(const char *s, size_t n, unsigned char *out)
{
    uint32_t acc = 0;
    size_t i, o = 0;
    int bits = 0, v, pad = 0;

    while (n > 0 && s[n - 1] == '=' && pad < 2) {
        n--;
        pad++;
    }
    if (pad > 0 && (n + (size_t)pad) % 4 != 0)
        return -1;
    for (i = 0; i < n; i++) {
        if ((v = b64_value((unsigned char)s[i])) < 0)
            return -1;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    /* One leftover character, or leftover bits set: not canonical. */
    if (bits >= 6 || (acc & ((1u << bits) - 1)) != 0)
        return -1;
    return (long)o;
}

static void
put_string(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, len;

    fputc('"', f);
    while (i < n) {
        switch (p[i]) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\b':
            fputs("\\b", f);
            break;
        case '\f':
            fputs("\\f", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        default:
            if (p[i] < 0x20) {
                fprintf(f, "\\u%04x", p[i]);
                break;
            }
            if ((len = folio_utf8_len(p + i, n - i)) == 0) {
                fputs("\xef\xbf\xbd", f); /* U+FFFD for a stray byte */
                break;
            }
            fwrite(p + i, 1, len, f);
            i += len;
            continue;
        }
        i++;
    }
    fputc('"', f);
}

/* The shortest decimal that reads back as the same float or double. */
static void
put_real(FILE *f, double d, int is32)
{
    char buf[40];
    int prec;

    if (isnan(d)) {
        fputs("\"NaN\"", f);
        return;
    }
    if (isinf(d)) {
        fputs(d > 0 ? "\"Infinity\"" : "\"-Infinity\"", f);
        return;
    }
    for (prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, d);
        if (is32 ? strtof(buf, NULL) == (float)d : strtod(buf, NULL) == d)
            break;
    }
    /* Keep it a real: 2 is printed 2.0. */
    if (strspn(buf, "-0123456789") == strlen(buf))
        strcat(buf, ".0");
    fputs(buf, f);
}

static void
newline(FILE *f, int indent, int level)
{
    int i;

    if (indent < 0)
        return;
    fputc('\n', f);
    for (i = 0; i < indent * level; i++)
        fputc(' ', f);
}

static int emit(FILE *f, struct folio_mp_cur *c, int indent, int level);

/* A map key that is not a str: the compact JSON text of the key. */
static int
emit_key(FILE *f, struct folio_mp_cur *c)
{
    const char *s;
    uint32_t len;
    char *text = NULL;
    size_t tlen = 0;
    FILE *m;
    int rc;

    if (folio_mp_read_str(c, &s, &len) == 0) {
        put_string(f, s, len);
        return 0;
    }
    if ((m = open_memstream(&text, &tlen)) == NULL)
        return -1;
    rc = emit(m, c, -1, 0);
    if (fclose(m) != 0)
        rc = -1;
    if (rc == 0)
        put_string(f, text, tlen);
    free(text);
    return rc;
}

static int
emit(FILE *f, struct folio_mp_cur *c, int indent, int level)
{
    const char *s;
    uint32_t n, i;
    uint64_t u;
    int64_t v;
    double d;
    int8_t type;
    int b, is32;

    switch (folio_mp_type(c)) {
    case FOLIO_MP_NIL:
        folio_mp_read_nil(c);
        fputs("null", f);
        return 0;
    case FOLIO_MP_BOOL:
        folio_mp_read_bool(c, &b);
        fputs(b ? "true" : "false", f);
        return 0;
    case FOLIO_MP_UINT:
        if (folio_mp_read_uint(c, &u) != 0)
            return -1;
        fprintf(f, "%" PRIu64, u);
        return 0;
    case FOLIO_MP_INT:
        if (folio_mp_read_int(c, &v) != 0)
            return -1;
        fprintf(f, "%" PRId64, v);
        return 0;
    case FOLIO_MP_FLOAT:
        is32 = *c->p == 0xca;
        if (folio_mp_read_float(c, &d) != 0)
            return -1;
        put_real(f, d, is32);
        return 0;
    case FOLIO_MP_STR:
        if (folio_mp_read_str(c, &s, &n) != 0)
            return -1;
        put_string(f, s, n);
        return 0;
    case FOLIO_MP_BIN:
        if (folio_mp_read_bin(c, &s, &n) != 0)
            return -1;
        fputs(indent < 0 ? "{\"$bin\":\"" : "{\"$bin\": \"", f);
        put_base64(f, (const unsigned char *)s, n);
        fputs("\"}", f);
        return 0;
    case FOLIO_MP_EXT:
        if (folio_mp_read_ext(c, &type, &s, &n) != 0)
            return -1;
        fprintf(f, indent < 0 ? "{\"$ext\":[%d,\"" : "{\"$ext\": [%d, \"",
                type);
        put_base64(f, (const unsigned char *)s, n);
        fputs("\"]}", f);
        return 0;
    case FOLIO_MP_ARRAY:
        if (folio_mp_read_array(c, &n) != 0)
            return -1;
        fputc('[', f);
        for (i = 0; i < n; i++) {
            if (i > 0)
                fputc(',', f);
            newline(f, indent, level + 1);
            if (emit(f, c, indent, level + 1) != 0)
                return -1;
        }
        if (n > 0)
            newline(f, indent, level);
        fputc(']', f);
        return 0;
    case FOLIO_MP_MAP:
        if (folio_mp_read_map(c, &n) != 0)
            return -1;
        fputc('{', f);
        for (i = 0; i < n; i++) {
            if (i > 0)
                fputc(',', f);
            newline(f, indent, level + 1);
            if (emit_key(f, c) != 0)
                return -1;
            fputs(indent < 0 ? ":" : ": ", f);
            if (emit(f, c, indent, level + 1) != 0)
                return -1;
        }
        if (n > 0)
            newline(f, indent, level);
        fputc('}', f);
        return 0;
    case FOLIO_MP_NONE:
        break;
    }
    return -1;
}

int
folio_cli_json_emit(FILE *f, struct folio_mp_cur *c, int indent)
{
    return emit(f, c, indent, 0);
}

/* {"$bin": BASE64} and {"$ext": [TYPE, BASE64]}: 1 if packed, 0 if j is
 * an ordinary object, -1 on a malformed one. */
static int
pack_special(msgpack_packer *pk, json_t *j, char *why, size_t whylen)
{
    const char *key = json_object_iter_key(json_object_iter(j));
    json_t *v = json_object_iter_value(json_object_iter(j)), *t, *d;
    unsigned char *buf;
    json_int_t type = 0;
    long n;

    if (strcmp(key, "$bin") == 0) {
        d = v;
    } else if (strcmp(key, "$ext") == 0) {
        t = json_array_get(v, 0);
        d = json_array_get(v, 1);
        if (json_array_size(v) != 2 || !json_is_integer(t) ||
            (type = json_integer_value(t)) < -128 || type > 127) {
            snprintf(why, whylen,
                     "$ext: expected [TYPE, BASE64] with a "
                     "TYPE of -128..127");
            return -1;
        }
    } else {
        return 0;
    }
    if (!json_is_string(d)) {
        snprintf(why, whylen, "%s: expected a base64 string", key);
        return -1;
    }
    if ((buf = malloc(json_string_length(d) * 3 / 4 + 1)) == NULL) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    if ((n = b64_decode(json_string_value(d), json_string_length(d), buf)) <
        0) {
        snprintf(why, whylen, "%s: '%s' is not base64", key,
                 json_string_value(d));
        free(buf);
        return -1;
    }
    if (key[1] == 'b') {
        msgpack_pack_bin(pk, (size_t)n);
        msgpack_pack_bin_body(pk, buf, (size_t)n);
    } else {
        msgpack_pack_ext(pk, (size_t)n, (int8_t)type);
        msgpack_pack_ext_body(pk, buf, (size_t)n);
    }
    free(buf);
    return 1;
}

int
folio_cli_json_pack(msgpack_packer *pk, const json_t *cj, char *why,
                    size_t whylen)
{
    json_t *j = (json_t *)cj, *v; /* jansson's iterators are not const */
    const char *key;
    size_t i, klen;
    int rc;

    switch (json_typeof(j)) {
    case JSON_OBJECT:
        if (json_object_size(j) == 1 &&
            (rc = pack_special(pk, j, why, whylen)) != 0)
            return rc < 0 ? -1 : 0;
        msgpack_pack_map(pk, json_object_size(j));
        json_object_keylen_foreach(j, key, klen, v)
        {
            folio_pack_str(pk, key, klen);
            if (folio_cli_json_pack(pk, v, why, whylen) != 0)
                return -1;
        }
        return 0;
    case JSON_ARRAY:
        msgpack_pack_array(pk, json_array_size(j));
        for (i = 0; i < json_array_size(j); i++)
            if (folio_cli_json_pack(pk, json_array_get(j, i), why, whylen) != 0)
                return -1;
        return 0;
    case JSON_STRING:
        return folio_pack_str(pk, json_string_value(j), json_string_length(j));
    case JSON_INTEGER:
        return msgpack_pack_int64(pk, json_integer_value(j));
    case JSON_REAL:
        return msgpack_pack_double(pk, json_real_value(j));
    case JSON_TRUE:
        return msgpack_pack_true(pk);
    case JSON_FALSE:
        return msgpack_pack_false(pk);
    case JSON_NULL:
        return msgpack_pack_nil(pk);
    }
    snprintf(why, whylen, "unknown JSON type");
    return -1;
}
