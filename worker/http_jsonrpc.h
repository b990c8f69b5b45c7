/*
 * http_jsonrpc.h - JSON-RPC 2.0 (https://www.jsonrpc.org/specification)
 * for POST /rpc: every msgpack-RPC method, one curl away.  The body,
 * transcoded to msgpack (folio_json_to_mp), is one request object or a
 * batch (an array of them); each call runs through the same dispatch as
 * a msgpack-RPC request, and its result or error is written back as a
 * response object.  These functions read the envelope and write the
 * responses; the connection runs the calls.  Worker only.
 *
 * Errors: the standard codes for what JSON-RPC itself defines, ours
 * (PROTOCOL.md section 2) in error.data as {"code": N, "status": NAME}:
 *   -32700 parse error        the body is not JSON
 *   -32600 invalid request    not a request object (or an empty batch)
 *   -32601 method not found   UNIMPLEMENTED (12)
 *   -32602 invalid params     INVALID_ARGUMENT (3), and wrong params by name
 *   -32603 internal error     INTERNAL (13)
 *   -32000 - code             every other status: NOT_FOUND -32005,
 *                             PERMISSION_DENIED -32007, RESOURCE_EXHAUSTED
 *                             -32008, OUT_OF_RANGE -32011, UNAVAILABLE -32014
 */
#ifndef FOLIO_HTTP_JSONRPC_H
#define FOLIO_HTTP_JSONRPC_H

#include <stddef.h>
#include <stdint.h>

#include "src/mp.h"

struct folio_buf;

#define FOLIO_JSONRPC_PARSE_ERROR -32700
#define FOLIO_JSONRPC_INVALID_REQUEST -32600
#define FOLIO_JSONRPC_METHOD_NOT_FOUND -32601
#define FOLIO_JSONRPC_INVALID_PARAMS -32602
#define FOLIO_JSONRPC_INTERNAL_ERROR -32603
#define FOLIO_JSONRPC_SERVER_ERROR -32000

/* One call of a request (or batch), read: cursors into its msgpack. */
struct folio_jsonrpc_call {
    const char *method;
    uint32_t method_len;
    struct folio_mp_cur params; /* array: at its first element; object:
                                   at the map (by_name) */
    uint32_t nparams;           /* array elements, or object pairs */
    int by_name;
    struct folio_mp_cur id; /* at the id's value, when has_id */
    int has_id;             /* else a notification: no response */
};

/*
 * folio_jsonrpc_code - the JSON-RPC error code for one of our status
 * codes (PROTOCOL.md section 2), as the table above maps them.
 */
int folio_jsonrpc_code(int status);

/*
 * folio_jsonrpc_read - read the request object at *c, moving *c past it.
 * Returns 0, or FOLIO_JSONRPC_INVALID_REQUEST with a static *why: then
 * call->has_id tells whether its id could be read (to answer it; else
 * the answer's id is null).  A request's "id" must be a string, a
 * number or null ({"id": null} is a request, answered with id null);
 * "params", if there, an array or an object; "jsonrpc" "2.0".
 */
int folio_jsonrpc_read(struct folio_mp_cur *c, struct folio_jsonrpc_call *call,
                       const char **why);

/*
 * folio_jsonrpc_by_name - params given by name (call->by_name), put in
 * the order of the method's one-line signature ("query:str, opts?:{...}
 * -> int"): appended to `out` as the elements of the params array
 * (their count in *nparams; no array header).  A signature whose one
 * param is an unnamed map ("{path:str, ...} -> comment") takes the
 * object itself.  Returns 0, or FOLIO_JSONRPC_INVALID_PARAMS with a
 * message in `err` (a name the method does not take, a required one
 * missing, an optional one given after a missing one), or out's error.
 */
int folio_jsonrpc_by_name(const char *signature,
                          const struct folio_jsonrpc_call *call,
                          struct folio_buf *out, uint32_t *nparams, char *err,
                          size_t errlen);

/*
 * folio_jsonrpc_put_result - append {"jsonrpc":"2.0","result":R,"id":ID}:
 * R the msgpack value at *result (moved past it), ID the value at *id
 * (NULL: null).  Returns 0, FOLIO_EPROTO (out as it was) or out's error.
 */
int folio_jsonrpc_put_result(struct folio_buf *out,
                             const struct folio_mp_cur *id,
                             struct folio_mp_cur *result);

/*
 * folio_jsonrpc_put_error - append {"jsonrpc":"2.0","error":{"code":
 * jcode,"message":msg,"data":{"code":status,"status":NAME}},"id":ID}
 * (data only when status != 0), ID as above.  0 or out's error.
 */
int folio_jsonrpc_put_error(struct folio_buf *out,
                            const struct folio_mp_cur *id, int jcode,
                            const char *msg, size_t len, int status);

#endif
