/*
 * err.c - names of folio's error codes and of the RPC status codes.
 */
#include "config.h"

#include "src/err.h"

const char *
folio_strerror(int err)
{
    switch (err) {
    case FOLIO_OK:
        return "success";
    case FOLIO_ENOMEM:
        return "out of memory";
    case FOLIO_EINVAL:
        return "invalid argument";
    case FOLIO_ENOTFOUND:
        return "not found";
    case FOLIO_ESYS:
        return "system call failed";
    case FOLIO_ESTORE:
        return "storage error";
    case FOLIO_ECORRUPT:
        return "data corrupt";
    case FOLIO_ETOOBIG:
        return "over the limit";
    case FOLIO_EAGAIN:
        return "incomplete";
    case FOLIO_ECONFIG:
        return "bad configuration";
    case FOLIO_EPROTO:
        return "protocol error";
    case FOLIO_ETIMEDOUT:
        return "timed out";
    case FOLIO_ECANCELED:
        return "cancelled";
    case FOLIO_EFULL:
        return "storage full";
    case FOLIO_EKEYUSED:
        return "idempotency key used by another request";
    }
    return "unknown error";
}

const char *
folio_status_name(int code)
{
    static const char *const names[FOLIO_ST_MAX] = {
        "OK",           "CANCELLED",         "UNKNOWN",
        "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
        "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION", "ABORTED",     "OUT_OF_RANGE",
        "UNIMPLEMENTED", "INTERNAL",          "UNAVAILABLE",
        "DATA_LOSS",    "UNAUTHENTICATED",
    };

    if (code < 0 || code >= FOLIO_ST_MAX)
        return "UNKNOWN";
    return names[code];
}
