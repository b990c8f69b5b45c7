/*
 * e2e_bench_util.h - the built folio-bench as a subprocess of the
 * end-to-end suites (e2e_bench.c, e2e_bench_services.c): start it, read
 * its output with deadlines, and read its JSON summary.
 */
#ifndef FOLIO_E2E_BENCH_UTIL_H
#define FOLIO_E2E_BENCH_UTIL_H

#include <sys/types.h>

#include <stddef.h>

#define BPROC_OUT_MAX (256 * 1024)

/* A running (or finished) folio-bench. */
struct bproc {
    pid_t pid;
    int ofd, efd; /* its stdout and stderr, or -1 at EOF */
    char out[BPROC_OUT_MAX];
    size_t olen;
    char err[BPROC_OUT_MAX];
    size_t elen;
    int status; /* exit status, 128 + signal, or -1 */
};

/*
 * bspawn - start folio-bench ($FOLIO_BENCH or the build's) with `argv`
 * (NULL-terminated, without argv[0]); it dies with the test.
 */
void bspawn(struct bproc *b, const char *const *argv);

/*
 * bspawn_out - run folio-bench with its standard output written to the
 * file `out` (e.g. /dev/full), like brun: its exit status.
 */
int bspawn_out(struct bproc *b, const char *const *argv, const char *out);

/*
 * bpump - read its output until stderr holds `needle` (NULL: until both
 * pipes close) or `timeout_ms` passes.  0 when found (or closed), -1.
 */
int bpump(struct bproc *b, const char *needle, int timeout_ms);

/* bfinish - read the rest, wait for the exit (kill after timeout_ms). */
int bfinish(struct bproc *b, int timeout_ms);

/* brun - bspawn + bfinish (30 s): NULL-terminated arguments, exit status. */
int brun(struct bproc *b, ...);

/* Run folio-bench with the arguments; its exit status must be `want`. */
#define expect_status(b, want, ...)                                            \
    do {                                                                       \
        int st_ = brun((b), __VA_ARGS__, NULL);                                \
        ck_assert_msg(                                                         \
            st_ == (want),                                                     \
            "folio-bench exited %d, not %d; stdout:\n%s\nstderr:\n%s", st_,    \
            (want), (b)->out, (b)->err);                                       \
    } while (0)

/* jnum - the number after the first "key": of a JSON text; NAN if none. */
double jnum(const char *json, const char *key);

/* jnum_in - the number "key" in the flat object "obj":{...}; NAN if none. */
double jnum_in(const char *json, const char *obj, const char *key);

/*
 * jcheck - field `key` of the threshold `name` ("max-p99") in the JSON
 * summary's "thresholds": "limit", "measured", or "passed" (1 or 0);
 * NAN if absent (or null).
 */
double jcheck(const char *json, const char *name, const char *key);

/* json_of - the JSON summary: the last line of its stdout (asserted). */
const char *json_of(const struct bproc *b);

/*
 * assert_counts_add_up - sent = ok + wrong + errors, errors = replies +
 * lost, requests = ok + wrong + replies.
 */
void assert_counts_add_up(const char *j);

/* count_lines_with - occurrences of `needle` in `text`. */
int count_lines_with(const char *text, const char *needle);

#endif
