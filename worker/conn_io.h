/*
 * conn_io.h - a connection's socket and buffers (conn_io.c): the
 * structures kept for reuse with the buffers they own, reading into the
 * input, writing the output.  Called by conn.c, which decides what a
 * failure or the peer's end means; calls out.c for what a send took.
 */
#ifndef FOLIO_CONN_IO_H
#define FOLIO_CONN_IO_H

struct folio_conn;
struct folio_worker;

/*
 * folio_conn_io_get - a connection structure with its two buffers: one
 * kept from a closed connection (its buffers at their base size), or a
 * new one (zeroed).  NULL: no memory.
 */
struct folio_conn *folio_conn_io_get(struct folio_worker *w);

/*
 * folio_conn_io_put - c (closed, off every list) kept for the next
 * connection, or freed with its buffers when enough are kept or the
 * worker is on its way out.
 */
void folio_conn_io_put(struct folio_worker *w, struct folio_conn *c);

/* folio_conn_io_free - free c and its buffers (exit path). */
void folio_conn_io_free(struct folio_conn *c);

/* folio_conn_io_free_kept - free the structures kept (exit path). */
void folio_conn_io_free_kept(struct folio_worker *w);

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
