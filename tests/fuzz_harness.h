/*
 * fuzz_harness.h - a worker without a master, for the libFuzzer targets
 * (tests/fuzz_*.c) and their replay under the normal compiler
 * (tests/fuzz_replay.c).
 *
 * fuzz_setup() builds what a worker has when its loop starts: the
 * configuration, a stats slot in a real stats region, an event base, a
 * small corpus image, the freight tables shipped in data/ imported into a
 * temporary LMDB environment, and every service initialized through
 * folio_services[] as folio_worker_main() does.  The temporary directory
 * and everything else are released at exit, so LeakSanitizer sees a clean
 * heap.  Then a target either feeds bytes to a real connection
 * (fuzz_conn_run: worker/conn.c's framing, limits and backpressure, over a
 * socketpair) or dispatches one request (fuzz_call), and checks that what
 * the server wrote is a sequence of well-formed msgpack-RPC responses.
 */
#ifndef FOLIO_FUZZ_HARNESS_H
#define FOLIO_FUZZ_HARNESS_H

#include <stddef.h>
#include <stdint.h>

struct folio_worker;
struct folio_buf;

/* The fixture corpus: its files, for targets that check counts. */
struct fuzz_corpus_file {
    const char *name;
    const char *text;
    size_t len;
};
extern const struct fuzz_corpus_file fuzz_corpus_files[];
extern const unsigned fuzz_ncorpus_files;

/*
 * fuzz_config - a setting of foliod.conf(5) for the worker, applied over
 * the harness's own when fuzz_setup() runs (call it before).
 */
void fuzz_config(const char *key, const char *value);

/*
 * fuzz_service_restart - stop service `name` (its fini), remove
 * DATA_DIR/subdir if subdir is not NULL, and start it again (its init):
 * for instance an empty comments store once a fuzzer has filled it.
 */
void fuzz_service_restart(const char *name, const char *subdir);

/*
 * fuzz_setup - set the worker up once (later calls do nothing).  Aborts
 * with a message if it cannot: a harness that runs without its services
 * would fuzz nothing.  Returns the worker.
 */
struct folio_worker *fuzz_setup(void);

struct folio_corpus;

/* fuzz_corpus - the fixture corpus's image (after fuzz_setup). */
const struct folio_corpus *fuzz_corpus(void);

/*
 * fuzz_ref_text - an independent reading of s[0..n) by RFC 3629, written
 * from the RFC (decode each sequence, then refuse overlong forms,
 * surrogates and values over U+10FFFF), then the control characters
 * PROTOCOL.md names (U+0000..U+001F, U+007F, U+0080..U+009F; '\n' and
 * '\t' allowed when body is set).  Returns a folio_text_status
 * (shm/comments.h), *at the offset of the first offending byte: the
 * oracle for every check of text the server makes or writes.
 */
int fuzz_ref_text(const uint8_t *s, size_t n, int body, size_t *at);

/* fuzz_tmpdir - the harness's temporary directory (after fuzz_setup). */
const char *fuzz_tmpdir(void);

/*
 * fuzz_call - dispatch one request for `method` whose params are the
 * msgpack array in p[0..len) (bytes that are not one complete array within
 * the limits are ignored: the framing never lets them through).  The
 * reply is checked (fuzz_check_replies) and left in *out (reset first).
 * Returns the reply's error code (0: success), or -1 if nothing was
 * dispatched.
 */
int fuzz_call(const char *method, const void *p, size_t len, int admin,
              struct folio_buf *out);

/*
 * fuzz_dispatch - fuzz_call without the reset and the check: a request
 * (or a notification) whose reply is appended to *out as the connection
 * code would.  Returns 0, or -1 if p[0..len) is not a params array.
 */
int fuzz_dispatch(const char *method, const void *p, size_t len, int notify,
                  int admin, struct folio_buf *out);

/* fuzz_dispatch_on - fuzz_dispatch for connection c (its held replies). */
struct folio_conn;
int fuzz_dispatch_on(struct folio_conn *c, const char *method, const void *p,
                     size_t len, int notify, int admin, struct folio_buf *out);

/*
 * fuzz_conn_run - open a connection on the worker and send it `len`
 * bytes: the first `first` bytes as bytes already read (as at a hand-over),
 * the rest through the socket in chunks of `chunk` bytes, reading replies
 * only at the end when `slow_reader` is set (so the server meets a full
 * socket and its output backpressure), then end the stream and run the
 * loop until the connection closes or has nothing left to do.  Every reply
 * is checked.  Returns the number of replies.
 */
size_t fuzz_conn_run(const void *p, size_t len, size_t first, size_t chunk,
                     int admin, int slow_reader);

/*
 * fuzz_check_replies - abort (a finding) unless p[0..len) is a sequence
 * of complete msgpack-RPC responses [1, msgid, nil, result] or
 * [1, msgid, [code, message], nil] with a code PROTOCOL.md section 2
 * knows.  Returns how many there are; *first_code gets the first reply's
 * error code (may be NULL).
 */
size_t fuzz_check_replies(const void *p, size_t len, int *first_code);

/* fuzz_fail - report a broken invariant; abort (libFuzzer keeps the input). */
void fuzz_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

#endif
