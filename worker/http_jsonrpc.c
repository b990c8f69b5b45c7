/*
 * http_jsonrpc.c - the JSON-RPC 2.0 envelope (see http_jsonrpc.h).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "src/buf.h"
#include "src/err.h"
#include "src/json.h"
#include "worker/http_jsonrpc.h"

/* Append a string literal. */
#define PUTL(out, lit) folio_buf_append((out), (lit), sizeof(lit) - 1)

int
folio_jsonrpc_code(int status)
{
    switch (status) {
    case FOLIO_ST_INVALID_ARGUMENT:
        return FOLIO_JSONRPC_INVALID_PARAMS;
    case FOLIO_ST_UNIMPLEMENTED:
        return FOLIO_JSONRPC_METHOD_NOT_FOUND;
    case FOLIO_ST_INTERNAL:
        return FOLIO_JSONRPC_INTERNAL_ERROR;
    default:
        return FOLIO_JSONRPC_SERVER_ERROR - status;
    }
}

/*
 * The next member of an object: its key, and a cursor at its value (*c
 * moves past it).  -1 if the key is not a str (the transcoder's keys all
 * are) or the value is malformed.
 */
static int
member(struct folio_mp_cur *c, const char **k, uint32_t *klen,
       struct folio_mp_cur *value)
{
    if (folio_mp_read_str(c, k, klen) != 0)
        return -1;
    *value = *c;
    return folio_mp_skip(c);
}

int
folio_jsonrpc_read(struct folio_mp_cur *c, struct folio_jsonrpc_call *call,
                   const char **why)
{
    struct folio_mp_cur at;
    const char *k, *s, *bad = NULL;
    uint32_t n, i, klen, slen;
    int version = 0, has_method = 0;

    memset(call, 0, sizeof(*call));
    *why = NULL;
    if (folio_mp_read_map(c, &n) != 0) {
        *why = "a request must be an object";
        if (folio_mp_skip(c) != 0)
            c->p = c->end;
        return FOLIO_JSONRPC_INVALID_REQUEST;
    }
    for (i = 0; i < n; i++) {
        if (member(c, &k, &klen, &at) != 0) {
            c->p = c->end;
            *why = "malformed request";
            return FOLIO_JSONRPC_INVALID_REQUEST;
        }
        if (folio_mp_str_eq(k, klen, "jsonrpc")) {
            version = folio_mp_read_str(&at, &s, &slen) == 0 &&
                      folio_mp_str_eq(s, slen, "2.0");
        } else if (folio_mp_str_eq(k, klen, "method")) {
            has_method =
                folio_mp_read_str(&at, &call->method, &call->method_len) == 0;
            if (!has_method)
                bad = "method must be a string";
        } else if (folio_mp_str_eq(k, klen, "params")) {
            call->params = at;
            if (folio_mp_read_array(&call->params, &call->nparams) == 0) {
                call->by_name = 0;
            } else if (folio_mp_read_map(&at, &call->nparams) == 0) {
                call->by_name = 1; /* params: at the map itself */
            } else {
                bad = "params must be an array or an object";
            }
        } else if (folio_mp_str_eq(k, klen, "id")) {
            switch (folio_mp_type(&at)) {
            case FOLIO_MP_STR:
            case FOLIO_MP_UINT:
            case FOLIO_MP_INT:
            case FOLIO_MP_FLOAT:
            case FOLIO_MP_NIL:
                call->id = at;
                call->has_id = 1;
                break;
            default:
                bad = "id must be a string, a number or null";
                call->has_id = 0;
            }
        }
        /* Other members are not the spec's: ignored. */
    }
    if (bad == NULL && !version)
        bad = "\"jsonrpc\" must be \"2.0\"";
    if (bad == NULL && !has_method)
        bad = "no method";
    if (bad != NULL) {
        *why = bad;
        return FOLIO_JSONRPC_INVALID_REQUEST;
    }
    return 0;
}

#define SIG_MAX_PARAMS 16

/* One param of a signature: its name (none: an unnamed map). */
struct sig_param {
    const char *name;
    size_t len;
    int optional;
};

/* The params of "a:str, b?:{x, y} -> ..."; returns how many, or -1. */
static int
sig_params(const char *sig, struct sig_param *ps)
{
    const char *p = sig, *end = strstr(sig, "->"), *e;
    int n = 0, depth;

    if (end == NULL)
        end = sig + strlen(sig);
    while (p < end) {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        if (p == end)
            break;
        /* The piece ends at a comma outside brackets. */
        for (e = p, depth = 0; e < end && (depth > 0 || *e != ','); e++) {
            if (*e == '{' || *e == '[' || *e == '(')
                depth++;
            else if (*e == '}' || *e == ']' || *e == ')')
                depth--;
        }
        if (n == SIG_MAX_PARAMS)
            return -1;
        if (*p == '{') {
            ps[n].name = NULL;
            ps[n].len = 0;
            ps[n].optional = 0;
        } else {
            ps[n].name = p;
            for (ps[n].len = 0; p + ps[n].len < e && p[ps[n].len] != ':' &&
                                p[ps[n].len] != '?' && p[ps[n].len] != ' ';
                 ps[n].len++)
                ;
            ps[n].optional = p[ps[n].len] == '?';
        }
        n++;
        p = e;
    }
    return n;
}

/* The raw bytes of the value at *c, appended; *c moves past it. */
static int
copy_value(struct folio_buf *out, struct folio_mp_cur *c)
{
    const unsigned char *from = c->p;

    if (folio_mp_skip(c) != 0)
        return FOLIO_EPROTO;
    return folio_buf_append(out, from, (size_t)(c->p - from));
}

int
folio_jsonrpc_by_name(const char *signature,
                      const struct folio_jsonrpc_call *call,
                      struct folio_buf *out, uint32_t *nparams, char *err,
                      size_t errlen)
{
    struct sig_param ps[SIG_MAX_PARAMS];
    struct folio_mp_cur c, v;
    size_t mark = folio_buf_mark(out);
    const char *k;
    uint32_t n, i, klen;
    int np, j, found, gap = -1, rc;

    *nparams = 0;
    if ((np = sig_params(signature, ps)) < 0) {
        snprintf(err, errlen, "this method's params cannot be named");
        return FOLIO_JSONRPC_INVALID_PARAMS;
    }
    c = call->params;
    if (np == 1 && ps[0].name == NULL) {
        /* comments.post: the object is the one map param. */
        if ((rc = copy_value(out, &c)) != 0)
            return rc;
        *nparams = 1;
        return 0;
    }
    /* Every name given must be one of the method's. */
    if (folio_mp_read_map(&c, &n) != 0)
        return FOLIO_EPROTO;
    for (i = 0; i < n; i++) {
        if (folio_mp_read_str(&c, &k, &klen) != 0 || folio_mp_skip(&c) != 0)
            return FOLIO_EPROTO;
        for (j = 0; j < np; j++)
            if (ps[j].name != NULL && ps[j].len == klen &&
                memcmp(ps[j].name, k, klen) == 0)
                break;
        if (j == np) {
            snprintf(err, errlen, "unknown param \"%.*s\"",
                     klen > 64 ? 64 : (int)klen, k);
            return FOLIO_JSONRPC_INVALID_PARAMS;
        }
    }
    /* Then, in the signature's order, the value of each (the last one
       given, if a name repeats). */
    for (j = 0; j < np; j++) {
        struct folio_mp_cur last = {NULL, NULL};

        c = call->params;
        (void)folio_mp_read_map(&c, &n);
        for (i = 0, found = 0; i < n; i++) {
            (void)folio_mp_read_str(&c, &k, &klen);
            v = c;
            (void)folio_mp_skip(&c);
            if (ps[j].name != NULL && ps[j].len == klen &&
                memcmp(ps[j].name, k, klen) == 0) {
                last = v;
                found = 1;
            }
        }
        if (!found) {
            if (!ps[j].optional) {
                folio_buf_truncate(out, mark);
                snprintf(err, errlen, "missing param \"%.*s\"", (int)ps[j].len,
                         ps[j].name != NULL ? ps[j].name : "");
                return FOLIO_JSONRPC_INVALID_PARAMS;
            }
            if (gap < 0)
                gap = j;
            continue;
        }
        if (gap >= 0) {
            folio_buf_truncate(out, mark);
            snprintf(err, errlen, "param \"%.*s\" given without \"%.*s\"",
                     (int)ps[j].len, ps[j].name, (int)ps[gap].len,
                     ps[gap].name);
            return FOLIO_JSONRPC_INVALID_PARAMS;
        }
        if ((rc = copy_value(out, &last)) != 0) {
            folio_buf_truncate(out, mark);
            return rc;
        }
        (*nparams)++;
    }
    return 0;
}

static int
put_id(struct folio_buf *out, const struct folio_mp_cur *id)
{
    struct folio_mp_cur c;

    if (id == NULL)
        return PUTL(out, "null");
    c = *id;
    return folio_json_put_mp(out, &c, -1, 0);
}

int
folio_jsonrpc_put_result(struct folio_buf *out, const struct folio_mp_cur *id,
                         struct folio_mp_cur *result)
{
    size_t mark = folio_buf_mark(out);
    int rc;

    if ((rc = PUTL(out, "{\"jsonrpc\":\"2.0\",\"result\":")) != 0 ||
        (rc = folio_json_put_mp(out, result, -1, 0)) != 0 ||
        (rc = PUTL(out, ",\"id\":")) != 0 || (rc = put_id(out, id)) != 0 ||
        (rc = PUTL(out, "}")) != 0)
        folio_buf_truncate(out, mark);
    return rc;
}

int
folio_jsonrpc_put_error(struct folio_buf *out, const struct folio_mp_cur *id,
                        int jcode, const char *msg, size_t len, int status)
{
    size_t mark = folio_buf_mark(out);
    char num[64];
    int rc, k;

    k = snprintf(num, sizeof(num), "%d", jcode);
    if ((rc = PUTL(out, "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":")) != 0 ||
        (rc = folio_buf_append(out, num, (size_t)k)) != 0 ||
        (rc = PUTL(out, ",\"message\":")) != 0 ||
        (rc = folio_json_put_str(out, msg, len, 0)) != 0)
        goto fail;
    if (status != 0) {
        k = snprintf(num, sizeof(num),
                     ",\"data\":{\"code\":%d,\"status\":", status);
        if ((rc = folio_buf_append(out, num, (size_t)k)) != 0 ||
            (rc = folio_json_put_str(out, folio_status_name(status),
                                     strlen(folio_status_name(status)), 0)) !=
                0 ||
            (rc = PUTL(out, "}")) != 0)
            goto fail;
    }
    if ((rc = PUTL(out, "},\"id\":")) != 0 || (rc = put_id(out, id)) != 0 ||
        (rc = PUTL(out, "}")) != 0)
        goto fail;
    return 0;
fail:
    folio_buf_truncate(out, mark);
    return rc;
}
