/*
 * client.h - a blocking msgpack-RPC client with time-outs, for the folio
 * command-line tool and the tests.  Not for the server: it allocates.
 */
#ifndef FOLIO_CLIENT_H
#define FOLIO_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "src/buf.h"
#include "src/mp.h"

struct folio_client {
    int fd;
    int timeout_ms;       /* each send and each receive; < 0: none */
    uint32_t next_msgid;
    struct folio_buf in;  /* received bytes */
    size_t in_msg;        /* bytes of the last message returned */
    struct folio_mp_scan scan;
    msgpack_sbuffer out;  /* the request being built */
    msgpack_packer pk;
};

/* A response, spans valid until the next receive. */
struct folio_reply {
    uint32_t msgid;
    int code;               /* 0: success, else the error's code */
    const char *message;    /* the error's message (span), or NULL */
    uint32_t message_len;
    struct folio_mp_cur result;
    struct folio_mp_cur error; /* the raw error value */
};

/*
 * folio_client_open - connect to `addr` (HOST:PORT, [V6]:PORT or
 * unix:PATH, or a bare path starting with '/').  Returns 0, or a
 * FOLIO_E* with a message in err: FOLIO_EINVAL (bad address),
 * FOLIO_ETIMEDOUT, FOLIO_ESYS (cannot connect; errno says why).
 */
int folio_client_open(const char *addr, int timeout_ms,
                      struct folio_client **out, char *err, size_t errlen);

/* folio_client_close - disconnect and free; accepts NULL. */
void folio_client_close(struct folio_client *c);

/*
 * folio_client_request - start a request (or notification): returns the
 * packer, the caller packs exactly `nparams` values, then sends with
 * folio_client_flush().  *msgid receives the request's msgid.
 */
msgpack_packer *folio_client_request(struct folio_client *c, int notify,
                                     const char *method, uint32_t nparams,
                                     uint32_t *msgid);

/* folio_client_flush - send what was packed.  0, FOLIO_ETIMEDOUT or FOLIO_ESYS. */
int folio_client_flush(struct folio_client *c);

/* folio_client_send_raw - send bytes as they are (tests of bad input). */
int folio_client_send_raw(struct folio_client *c, const void *p, size_t len);

/*
 * folio_client_recv - the next complete msgpack object from the server.
 * Returns 1 with *msg and *len set (valid until the next call), 0 when the
 * server closed the connection, FOLIO_ETIMEDOUT, FOLIO_EPROTO or FOLIO_ESYS.
 */
int folio_client_recv(struct folio_client *c, const char **msg, size_t *len);

/*
 * folio_client_reply - receive the next message as a response.  Returns
 * 1, 0 (closed), or a negative FOLIO_E* (FOLIO_EPROTO: not a response).
 */
int folio_client_reply(struct folio_client *c, struct folio_reply *r);

/*
 * folio_client_call0 - call a method without params and wait for its
 * reply.  Returns as folio_client_reply; a reply to another msgid is
 * FOLIO_EPROTO.
 */
int folio_client_call0(struct folio_client *c, const char *method,
                       struct folio_reply *r);

/* folio_client_call_str - call a method with one str param. */
int folio_client_call_str(struct folio_client *c, const char *method,
                          const char *arg, struct folio_reply *r);

#endif
