/*
 * hostile.h - what the hostile-client suites (e2e_hostile.c: the input
 * side; e2e_hostile_output.c: the output side, the operator's way in, the
 * errors' own bytes) share: one server `srv`, a well-behaved client that
 * pings from a thread throughout an attack and must be answered every
 * time, none of its pings held for seconds, and the memory of the worker
 * measured before, during and after.  The latency figures are printed,
 * not asserted: bench/hostile.sh reports them.  Set E2E_VALGRIND=1 (the
 * Valgrind run, RELIABILITY.md) to relax the bounds, which are
 * meaningless under Valgrind.
 */
#ifndef FOLIO_TESTS_HOSTILE_H
#define FOLIO_TESTS_HOSTILE_H

#include <sys/types.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "src/client.h"
#include "tests/e2e_util.h"

/* The server under attack: one per test (start, then e2e_stop). */
extern struct e2e_server srv;

/* start - start srv with configuration lines `conf` (asserts it runs). */
void start(const char *conf);

/*
 * watch_bound_ms - what no ping of the good client may take: 5 s (10 s
 * sanitized), a generous bound on a shared machine, which still catches
 * a worker starved for seconds (6.5 s before the 1 ms share existed).
 */
int watch_bound_ms(void);

/* check_memory - whether memory bounds mean anything (plain builds). */
int check_memory(void);

/* ---- the well-behaved client ---- */

#define MAX_SAMPLES 20000

struct watch {
    pthread_t th;
    struct folio_client *c;
    atomic_int stop;
    atomic_int pause;  /* asked: no new ping until it is cleared */
    atomic_int paused; /* answered: no ping in flight */
    unsigned long pings, failures;
    uint64_t max_us;
    uint32_t lat_us[MAX_SAMPLES];
};

struct mem {
    long rss_kb, peak_kb;
    double heap, heap_peak;
    struct folio_client *admin; /* NULL: no heap samples during the attack */
};

/* watch_start - connect the good client and start its pinging thread. */
void watch_start(struct watch *w);

/*
 * watch_stop - stop it: it must have been answered every time (20 pings
 * at least), none over watch_bound_ms; prints its latency figures, p50,
 * p99 and max ("hostile: WHAT: good client: ...": bench/hostile.sh).
 */
void watch_stop(struct watch *w, const char *what);

/*
 * watch_pause - hold the good client between two pings (returns once none
 * is in flight), while the test itself stops the server: a ping waiting
 * out the test's own stop says nothing of the attack.  watch_resume lets
 * it go on.
 */
void watch_pause(struct watch *w);
void watch_resume(struct watch *w);

/* cmp_u32 - qsort's comparison of uint32_t. */
int cmp_u32(const void *a, const void *b);

/* ---- memory of the one worker ---- */

/* the_worker - the pid of srv's one worker (asserts there is one). */
pid_t the_worker(void);

/* rss_kb - VmRSS of pid in kB, -1 if unknown. */
long rss_kb(pid_t pid);

/*
 * mem_before - before the attack.  sample_heap: keep an admin connection
 * (m->admin) to sample heap_inuse during the attack too (it takes one of
 * the worker's admin connections).
 */
void mem_before(struct mem *m, int sample_heap);

/* mem_sample - a sample during the attack. */
void mem_sample(struct mem *m);

/*
 * mem_after - after the attack: print the figures; the peak may grow by
 * at most peak_mb, what stays by at most keep_mb (checked in plain builds).
 */
void mem_after(struct mem *b, const char *what, long peak_mb, long keep_mb);

/* ---- raw connections ---- */

/* raw_connect_rcvbuf - a non-blocking TCP connection to srv, its receive
 * buffer set (no autotuning) if rcvbuf > 0. */
int raw_connect_rcvbuf(int rcvbuf);

/* raw_connect_to - raw_connect_rcvbuf to addr (HOST:PORT: srv.http). */
int raw_connect_to(const char *addr, int rcvbuf);

/* raw_connect - raw_connect_rcvbuf(0). */
int raw_connect(void);

/*
 * raw_connect_nowait - a non-blocking connect to srv, not waited for (it
 * may complete later, or be refused): -1 if it failed at once.
 */
int raw_connect_nowait(void);

/*
 * raw_closed - whether the server has closed fd: reads (and discards)
 * what is there; 1 on EOF or reset, 0 if still open after timeout_ms.
 */
int raw_closed(int fd, int timeout_ms);

/* expect_error - the next reply on c is error `code` for msgid `id`. */
void expect_error(struct folio_client *c, uint32_t id, int code,
                  const char *text);

/* expect_close - the server closes c; returns the replies before. */
int expect_close(struct folio_client *c);

#endif
