/*
 * addr.h - listen and connect addresses: "HOST:PORT", "[V6ADDR]:PORT",
 * "*:PORT" (every IPv4 address), "unix:PATH" (PROTOCOL.md section 1), and
 * the short forms people type: "PORT" (the loopback's), "HOST" (a
 * default port).
 * Used by foliod to bind, by folio and folio-bench to connect.
 */
#ifndef FOLIO_ADDR_H
#define FOLIO_ADDR_H

#include <sys/socket.h>
#include <sys/un.h>

#include <stdint.h>

#define FOLIO_ADDR_TEXT 128 /* room for any formatted address */

struct folio_addr {
    struct sockaddr_storage sa;
    socklen_t salen;
    int family; /* AF_INET, AF_INET6 or AF_UNIX */
};

/*
 * folio_addr_expand - the full form ("HOST:PORT", "[V6ADDR]:PORT" or
 * "unix:PATH") of an address as a person types it, into `out` (outlen
 * bytes; FOLIO_ADDR_TEXT + 8 is room for any): a PORT alone is
 * 127.0.0.1:PORT, the loopback, as every default of foliod is and as
 * redis binds a bare `port` (a bare port opens nothing wider than the
 * default did; "*:PORT" is every IPv4 address); a HOST or [V6ADDR] alone
 * takes `default_port` (-1: a port is required).  The port is checked;
 * nothing is resolved.  Returns 0, or FOLIO_EINVAL with a message in
 * `why` that says what is wrong ("the port 'abc' is not a number").
 */
int folio_addr_expand(const char *s, int default_port, char *out,
                      size_t outlen, char *why, size_t whylen);

/*
 * folio_addr_parse - parse `s`, in any form folio_addr_expand takes with no
 * default port (so a PORT alone is 127.0.0.1:PORT).  Host names are resolved (getaddrinfo: use
 * at start-up only).  Returns 0, or FOLIO_EINVAL with a message in `why`
 * (`whylen` bytes).
 */
int folio_addr_parse(const char *s, struct folio_addr *out, char *why,
                     size_t whylen);

/* folio_addr_format - "127.0.0.1:7788", "[::1]:7788" or "unix:/path". */
const char *folio_addr_format(const struct sockaddr *sa, socklen_t len,
                              char *buf, size_t buflen);

/*
 * folio_addr_pack - a peer's address in three words, what a stats slot
 * holds with one atomic store each: the family and port (and an IPv4
 * address) in w[0], an IPv6 address in w[1] and w[2].  A Unix socket's
 * peer has no address: only its family.  All zero for none.
 */
void folio_addr_pack(const struct sockaddr *sa, socklen_t len, uint64_t w[3]);

/*
 * folio_addr_packed_format - a packed address as folio_addr_format writes
 * it ("127.0.0.1:40404", "[::1]:40404"; "unix" for a local peer; "" for
 * none).  Returns buf.
 */
const char *folio_addr_packed_format(const uint64_t w[3], char *buf,
                                     size_t buflen);

/*
 * folio_addr_listen - a non-blocking, close-on-exec socket bound to `a`
 * and listening.  A stale Unix socket file (nobody accepting) is replaced;
 * a live one is an error.  `mode` (if not 0) is applied to a Unix socket
 * file.  Returns the fd, or -1 with errno set and `why` naming the call.
 */
int folio_addr_listen(const struct folio_addr *a, int backlog, int mode,
                      char *why, size_t whylen);

/*
 * folio_addr_connect - a connected, blocking socket, within timeout_ms
 * (< 0: no limit).  TCP_NODELAY on TCP.  Returns the fd or -1 with errno
 * set (ETIMEDOUT on time-out).
 */
int folio_addr_connect(const struct folio_addr *a, int timeout_ms);

/* folio_addr_port - the TCP port, or 0 for a Unix socket. */
int folio_addr_port(const struct folio_addr *a);

#endif
