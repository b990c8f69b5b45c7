/*
 * err.h - error codes shared by every module, and the RPC status codes of
 * PROTOCOL.md section 2 (gRPC's canonical codes).
 * Functions return 0 or a negative FOLIO_E*; folio_strerror() names them.
 */
#ifndef FOLIO_ERR_H
#define FOLIO_ERR_H

enum {
    FOLIO_OK = 0,
    FOLIO_ENOMEM = -1,    /* allocation failed */
    FOLIO_EINVAL = -2,    /* bad argument or malformed input */
    FOLIO_ENOTFOUND = -3, /* no such thing */
    FOLIO_ESYS = -4,      /* a system call failed; errno was logged */
    FOLIO_ESTORE = -5,    /* LMDB failed; the LMDB error was logged */
    FOLIO_ECORRUPT = -6,  /* data failed a consistency check */
    FOLIO_ETOOBIG = -7,   /* over a configured limit */
    FOLIO_EAGAIN = -8,    /* not yet: more input needed */
    FOLIO_ECONFIG = -9,   /* bad configuration */
    FOLIO_EPROTO = -10,   /* malformed msgpack or msgpack-RPC */
    FOLIO_ETIMEDOUT = -11,
    FOLIO_EFULL = -12,    /* storage full */
    FOLIO_ECANCELED = -13, /* given up on before it was done: nothing done */
    FOLIO_EKEYUSED = -14   /* an idempotency key another request used */
};

/* RPC status codes (PROTOCOL.md section 2). */
enum folio_status {
    FOLIO_ST_OK = 0,
    FOLIO_ST_INVALID_ARGUMENT = 3,
    FOLIO_ST_NOT_FOUND = 5,
    FOLIO_ST_PERMISSION_DENIED = 7,
    FOLIO_ST_RESOURCE_EXHAUSTED = 8,
    FOLIO_ST_FAILED_PRECONDITION = 9,
    FOLIO_ST_OUT_OF_RANGE = 11,
    FOLIO_ST_UNIMPLEMENTED = 12,
    FOLIO_ST_INTERNAL = 13,
    FOLIO_ST_UNAVAILABLE = 14
};
#define FOLIO_ST_MAX 17 /* status codes are 0..16 */

/* Process exit codes: a worker exiting FOLIO_EXIT_FATAL is not respawned. */
#define FOLIO_EXIT_OK 0
#define FOLIO_EXIT_FAILURE 1
#define FOLIO_EXIT_FATAL 2

/*
 * folio_strerror - a static, human-readable name for a FOLIO_E* code.
 * Never returns NULL.
 */
const char *folio_strerror(int err);

/*
 * folio_status_name - gRPC's name of an RPC status code ("NOT_FOUND"), or
 * "UNKNOWN" for a code outside the table.  Never returns NULL.
 */
const char *folio_status_name(int code);

#endif
