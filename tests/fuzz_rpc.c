/*
 * fuzz_rpc.c - libFuzzer target: the request path of a worker, whole.
 *
 * The input is one control byte and then the bytes a client sends.  They
 * go through a real connection of a real (masterless) worker: the
 * scanner's framing and limits (worker/conn.c), msgpack-RPC parsing
 * (src/rpc.c), dispatch and every method's handler with the services set
 * up (corpus, freight, stats...), replies packed into the connection's
 * output buffer and sent over a socketpair.  The control byte chooses:
 *   bit 0     the admin socket (admin methods allowed)
 *   bit 1     a slow reader (reads replies only when it cannot send)
 *   bits 2-4  the size of the writes: 1, 4, 16, ... 16384 bytes
 *   bits 5-7  how many bytes come with the connection, already read
 *             (as at a hand-over): 0, 4, 16, ... 4096
 * Findings: a crash or sanitizer report, a reply stream that is not a
 * sequence of well-formed responses, an INTERNAL error, a connection that
 * stalls or is not closed after the client's EOF.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "tests/fuzz_harness.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_setup();
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned ctl;
    size_t chunk, first;

    if (size < 1)
        return 0;
    ctl = data[0];
    chunk = (size_t)1 << (2 * ((ctl >> 2) & 7));
    first = (ctl >> 5) == 0 ? 0 : (size_t)1 << (2 * (ctl >> 5));
    fuzz_conn_run(data + 1, size - 1, first, chunk, ctl & 1, (ctl >> 1) & 1);
    return 0;
}
