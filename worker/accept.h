/*
 * accept.h - taking new connections off the listening sockets (accept.c):
 * in balance with the other workers, and when descriptors run out.
 * Called by worker.c; calls conn.c (folio_conn_open).
 */
#ifndef FOLIO_ACCEPT_H
#define FOLIO_ACCEPT_H

#include <event2/event.h>

struct folio_worker;

/*
 * folio_accept_setup - before the loop: raise RLIMIT_NOFILE toward what
 * max_connections needs (up to the hard limit; a shortfall is logged),
 * open the spare descriptors, make the balance's timer.  Exits
 * (folio_fatalx) when the timer cannot be made.
 */
void folio_accept_setup(struct folio_worker *w);

/* folio_accept_cb - libevent callback of a listening socket (arg: lsn). */
void folio_accept_cb(evutil_socket_t fd, short what, void *arg);

/*
 * folio_accept_tick - housekeeping (worker.c's tick): listeners paused
 * for want of descriptors watched again (unless stopping or retiring),
 * the spare descriptors reopened, the refusals of the interval logged.
 */
void folio_accept_tick(struct folio_worker *w);

/*
 * folio_accept_fini - exit path: close the spare descriptors, log the
 * refusals not yet told, free the timer.
 */
void folio_accept_fini(struct folio_worker *w);

#endif
