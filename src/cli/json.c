/*
 * json.c - the folio client's mapping between msgpack and JSON (see
 * cli_int.h and folio(1), JSON).  msgpack -> JSON text is the server's
 * writer (src/json.h), straight from the cursor, so every integer (all of
 * uint64 too) is printed exactly; JSON -> msgpack walks a jansson tree.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/buf.h"
#include "src/cli/cli_int.h"
#include "src/json.h"
#include "src/rpc.h"

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

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

/* The server's writer (src/json.c), into a buffer, then to f. */
int
folio_cli_json_emit(FILE *f, struct folio_mp_cur *c, int indent)
{
    struct folio_buf b;
    int rc;

    if (folio_buf_init(&b, 4096, 0) != 0)
        return -1;
    rc = folio_json_put_mp(&b, c, indent, 0);
    if (rc == 0 && fwrite(folio_buf_at(&b, 0), 1, folio_buf_pending(&b), f) !=
                       folio_buf_pending(&b))
        rc = -1;
    folio_buf_free(&b);
    return rc == 0 ? 0 : -1;
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
