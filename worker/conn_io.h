/*
 * conn_io.h - a connection's socket and buffers (conn_io.c): the
 * structures kept for reuse with the buffers they own, reading into the
 * input, writing the output.  Called by conn.c, which decides what a
 * failure or the peer's end means; calls out.c for what a send took.
 */
#ifndef FOLIO_CONN_IO_H
#define FOLIO_CONN_IO_H

#include "worker/worker_int.h"

/*
 * folio_conn_io_get - a connection structure, without buffers (they come
 * with its first bytes: folio_conn_io_attach): one kept from a closed
 * connection, or a new one (zeroed).  NULL: no memory.
 */
struct folio_conn *folio_conn_io_get(struct folio_worker *w);

/*
 * folio_conn_io_put - c (closed, off every list) kept for the next
 * connection, its buffers to the worker's pool; or freed when enough are
 * kept or the worker is on its way out.
 */
void folio_conn_io_put(struct folio_worker *w, struct folio_conn *c);

/* folio_conn_io_free - free c and its buffers (exit path). */
void folio_conn_io_free(struct folio_conn *c);

/* folio_conn_io_free_kept - free the structures and buffers kept (exit). */
void folio_conn_io_free_kept(struct folio_worker *w);

/*
 * folio_conn_io_attach - give c its two buffers if it gave them back
 * (folio_conn_io_idle): from the worker's pool, or new.  Returns 0, or -1
 * when there is no memory (close c).  c has both or neither.
 */
int folio_conn_io_attach_slow(struct folio_conn *c);

static inline int
folio_conn_io_attach(struct folio_conn *c)
{
    return c->in.b_data != NULL ? 0 : folio_conn_io_attach_slow(c);
}

/*
 * folio_conn_io_idle - c waits for its client, its input answered, its
 * output written, nothing reserved: its buffers go to the worker's pool,
 * unless one has grown past its base size (folio_conn_sweep shrinks it
 * once c has been quiet a while, then calls this again).
 */
void folio_conn_io_idle(struct folio_conn *c);

/*
 * folio_conn_io_trim - from the housekeeping tick: every POOL_TRIM_MS,
 * free the pool's buffers that no connection took since the last time.
 */
void folio_conn_io_trim(struct folio_worker *w);

/*
 * folio_conn_io_read - read once into c's input, with room for at least
 * what it reads at a time, more toward a large message its header
 * announced.  Returns 1 if bytes came, 0 if none (at the peer's end:
 * CONN_EOF set, reading stopped), -1 if the socket failed or there is no
 * memory for the message (logged): close c.
 */
int folio_conn_io_read(struct folio_conn *c);

/*
 * folio_conn_io_write - send what c's output holds (its buffer, and the
 * pages it points at), as far as the socket takes it; while some is
 * left, the write event is added (CONN_WRITING) and send_timeout runs
 * from the first time the socket was full, or once c has sent its share
 * of a turn (64 KiB).  Returns 0 when all is written, 1 when some is
 * left for the write event, -1 if the socket failed: close c; with
 * FOLIO_IO_FREED or'd in (not to -1) when a page sent whole made room
 * that others wait for (out.c).
 */
#define FOLIO_IO_FREED 2
int folio_conn_io_write(struct folio_conn *c);

#endif
