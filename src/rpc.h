/*
 * rpc.h - msgpack-RPC messages (PROTOCOL.md section 1) over the scanner,
 * cursor and msgpack-c's packer.
 *   request       [0, msgid, method, params]
 *   response      [1, msgid, error, result]
 *   notification  [2, method, params]
 */
#ifndef FOLIO_RPC_H
#define FOLIO_RPC_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "src/mp.h"

enum folio_rpc_type {
    FOLIO_RPC_REQUEST = 0,
    FOLIO_RPC_RESPONSE = 1,
    FOLIO_RPC_NOTIFY = 2
};

/*
 * A msgid as the client wrote it: its msgpack encoding, an integer, in
 * the client's bytes.  The error reply to a request that is bad (its
 * msgid out of range too) echoes it, so the client can match it.
 */
struct folio_rpc_id {
    const char *raw;
    size_t len;
};

struct folio_rpc_msg {
    int type;
    int has_msgid; /* an integer msgid could be read (even if the rest is
                      bad, or it is out of range): id is set */
    uint32_t msgid;       /* valid when parsing succeeded */
    struct folio_rpc_id id;
    const char *method; /* request, notification: span, not NUL-terminated;
                         * sent as str or as bin, read alike */
    uint32_t method_len;
    uint32_t nparams;         /* elements of params */
    struct folio_mp_cur params; /* positioned after the params array header */
    struct folio_mp_cur error;  /* response: the error value */
    struct folio_mp_cur result; /* response: the result value */
};

/*
 * folio_rpc_frame - folio_mp_scan (mp.h) for a stream of msgpack-RPC
 * messages: when a message begins with the envelope every client sends
 * ([0, msgid, method, params] with a fixint or uint 8/16/32 msgid, a
 * fixstr or str 8 method, a fixarray of params), the envelope is taken
 * in one step and the scanner goes on from the params; anything else is
 * the scanner's from the start.  The same results and scan state as
 * folio_mp_scan on the same bytes.
 */
int folio_rpc_frame(struct folio_mp_scan *st, const void *p, size_t len);

/*
 * folio_rpc_parse - split one complete msgpack object (as the scanner
 * found it) into a msgpack-RPC message.  Returns 0, or FOLIO_EPROTO with
 * *why a static explanation; m->has_msgid tells whether a reply can be sent.
 * Spans in *m point into `p`.
 */
int folio_rpc_parse(const void *p, size_t len, struct folio_rpc_msg *m,
                    const char **why);

/*
 * folio_rpc_read_msgid - read the msgid at cursor c: 0 with *msgid set
 * when it is an unsigned 32-bit integer, FOLIO_ETOOBIG for any other
 * integer (-1, 2^32, 2^64 - 1), FOLIO_EPROTO if it is no integer.  *id
 * spans its encoding whenever it is an integer; c moves past it then.
 */
int folio_rpc_read_msgid(struct folio_mp_cur *c, uint32_t *msgid,
                         struct folio_rpc_id *id);

/*
 * folio_rpc_pack_error_id - an error response to the msgid as sent:
 * [1, id, [code, message], nil].
 */
int folio_rpc_pack_error_id(msgpack_packer *pk, const struct folio_rpc_id *id,
                            int code, const char *msg, size_t len);

/* Start a response: packs [1, msgid, nil, and the caller packs the result. */
int folio_rpc_pack_result_head(msgpack_packer *pk, uint32_t msgid);

/*
 * folio_rpc_pack_error - pack a whole error response
 * [1, msgid, [code, message], nil].
 */
int folio_rpc_pack_error(msgpack_packer *pk, uint32_t msgid, int code,
                         const char *msg, size_t len);

/*
 * folio_rpc_pack_request_head - [0, msgid, method, and an array header of
 * nparams: the caller packs the params.  msgid is ignored for
 * notifications (notify != 0): [2, method, [params...]].
 */
int folio_rpc_pack_request_head(msgpack_packer *pk, int notify, uint32_t msgid,
                                const char *method, uint32_t nparams);

/* folio_pack_cstr - pack a NUL-terminated string. */
int folio_pack_cstr(msgpack_packer *pk, const char *s);

/* folio_pack_str - pack a span as str. */
int folio_pack_str(msgpack_packer *pk, const char *s, size_t len);

#endif
