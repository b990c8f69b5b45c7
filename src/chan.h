/*
 * chan.h - the master <-> worker channel: a SOCK_SEQPACKET socketpair
 * carrying small typed messages, optionally with one file descriptor
 * (SCM_RIGHTS).  Connections move between workers over it at reload, with
 * any bytes already read from them, so no request is lost.
 */
#ifndef FOLIO_CHAN_H
#define FOLIO_CHAN_H

#include <stddef.h>
#include <stdint.h>

#define FOLIO_CHAN_MAX_DATA 65536

enum folio_chan_type {
    FOLIO_CHAN_READY = 1,   /* W->M: the worker accepts connections */
    FOLIO_CHAN_RETIRE,      /* M->W: hand connections back, then exit */
    FOLIO_CHAN_HANDOFF,     /* W->M: a connection (fd + unread bytes) */
    FOLIO_CHAN_ADOPT,       /* M->W: serve this connection */
    FOLIO_CHAN_RECYCLE,     /* W->M: max_requests_per_worker reached */
    FOLIO_CHAN_PROFILE,     /* M->W: take a profile (struct folio_chan_profile) */
    FOLIO_CHAN_PROFILE_DONE /* W->M: a profile: fd, struct folio_chan_profile_done */
};

/*
 * FOLIO_CHAN_PROFILE's data; ch_arg carries the request's id, which the
 * answer repeats.  A CPU profile is answered `cp_seconds` later, a heap
 * one at once.  The answer passes a file (a memfd) holding the gzipped
 * profile.proto, or no file and the reason in cd_error.
 */
enum folio_chan_profile_kind {
    FOLIO_PROFILE_CPU = 0,
    FOLIO_PROFILE_HEAP,
    FOLIO_PROFILE_ALLOCS
};

#define FOLIO_CHAN_PROFILE_RESET 0x01 /* allocs: forget them once taken */

struct folio_chan_profile {
    uint32_t cp_kind;    /* enum folio_chan_profile_kind */
    uint32_t cp_seconds; /* CPU: how long */
    uint32_t cp_hz;      /* CPU: samples per second */
    uint32_t cp_flags;   /* FOLIO_CHAN_PROFILE_RESET */
};

struct folio_chan_profile_done {
    int32_t cd_status; /* 0, or a FOLIO_E* code */
    char cd_error[244];
    uint64_t cd_loop_ns; /* the worker's loop spent on it; 0: unknown */
};

#define FOLIO_CHAN_F_ADMIN 0x01 /* the connection came in on the admin socket */
#define FOLIO_CHAN_F_HTTP 0x02  /* on an HTTP listener (http_listen) */

struct folio_chan_hdr {
    uint32_t ch_type;
    uint32_t ch_flags;
    uint32_t ch_len;  /* bytes of data following the header */
    uint32_t ch_arg;
};

/*
 * folio_chan_pair - a socketpair for one worker: fds[0] the master's end,
 * fds[1] the worker's.  Both close-on-exec.  Returns 0 or FOLIO_ESYS.
 */
int folio_chan_pair(int fds[2]);

/*
 * folio_chan_send - send header + `len` bytes of data (+ `passfd` unless
 * -1).  Returns 0 or FOLIO_ESYS (errno set: EAGAIN if the peer is full).
 */
int folio_chan_send(int fd, uint32_t type, uint32_t flags, uint32_t arg,
                    const void *data, size_t len, int passfd);

/*
 * folio_chan_recv - receive one message; its data (at most `cap` bytes)
 * goes to `data`, a passed fd to *passfd (-1 if none).  Returns 1 for a
 * message, 0 at EOF (the peer is gone), FOLIO_EAGAIN when none is
 * waiting, FOLIO_EPROTO for a malformed one, FOLIO_ESYS otherwise.
 */
int folio_chan_recv(int fd, struct folio_chan_hdr *h, void *data, size_t cap,
                    int *passfd);

#endif
