/*
 * prof_unwind.c - not a test: the measurement behind the profiler's
 * choice of stack walker (src/prof/prof.c).  A masterless worker (the fuzz
 * harness) serves a mix of real requests (ping, corpus.search,
 * freight.quote, comments.post and .list) in a loop while SIGPROF, at
 * 1000 Hz of CPU time, takes the interrupted stack with each walker:
 *   fp         frame pointers from the interrupted registers
 *   backtrace  glibc's backtrace() (libgcc's DWARF CFI unwinder)
 *   libunwind  unw_init_local2(UNW_INIT_SIGNAL_FRAME) + unw_step
 *              (only in tests/prof-unwind-libunwind: linking libunwind
 *              replaces libgcc's _Unwind_* for the whole process)
 * and reports, per walker, the median time a stack took, the mean depth,
 * and the share of stacks that reach main (a walk that stops early loses
 * the callers: no cumulative time for them).  Also a synthetic loop
 * compiled with frame pointers (this file is) that calls through libc
 * (qsort's comparator, memcpy), the case frame pointers are best at.
 * Usage: tests/prof-unwind [SECONDS]   (bench/profile.sh runs it)
 */
#include "config.h"

#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>

#include <msgpack.h>

#include "src/buf.h"
#include "src/clock.h"
#include "tests/fuzz_harness.h"

#ifdef WITH_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#define MAX_DEPTH 64
#define MAX_SAMPLES 200000

enum walker { W_FP, W_BACKTRACE, W_LIBUNWIND };
static const char *const walker_name[] = {"fp", "backtrace", "libunwind"};

static volatile sig_atomic_t walking;
static enum walker which;
static uint64_t ns[MAX_SAMPLES];
static uint8_t reached[MAX_SAMPLES];
static uint32_t depth[MAX_SAMPLES];
static size_t nsamples;
static uintptr_t stack_lo, stack_hi;

/* Wall time for the run; CPU time of this thread for each stack, so
 * that a busy machine's preemptions do not count. */
static uint64_t
now_ns(void)
{
    return folio_clock_ns(CLOCK_MONOTONIC);
}

static uint64_t
cpu_ns(void)
{
    return folio_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Frame pointers: [rbp] the caller's rbp, [rbp + 8] the return address. */
static int
walk_fp(const ucontext_t *uc, void **pcs)
{
#if defined(__x86_64__)
    uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    int n = 0;

    pcs[n++] = (void *)uc->uc_mcontext.gregs[REG_RIP];
    while (n < MAX_DEPTH && fp >= stack_lo && fp + 16 <= stack_hi &&
           (fp & 7) == 0) {
        const uintptr_t *f = (const uintptr_t *)fp;

        if (f[1] < 4096)
            break;
        pcs[n++] = (void *)f[1];
        if (f[0] <= fp)
            break;
        fp = f[0];
    }
    return n;
#else
    (void)uc;
    (void)pcs;
    return 0;
#endif
}

static int
walk_backtrace(const ucontext_t *uc, void **pcs)
{
    void *buf[MAX_DEPTH + 8];
    int n = backtrace(buf, MAX_DEPTH + 8), i, k = 0;

#if defined(__x86_64__)
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

    for (i = 0; i < n && (uintptr_t)buf[i] != pc; i++)
        ;
    if (i == n)
        i = 2;
#else
    (void)uc;
    i = 2;
#endif
    for (; i < n && k < MAX_DEPTH; i++)
        pcs[k++] = buf[i];
    return k;
}

#ifdef WITH_LIBUNWIND
static int
walk_libunwind(ucontext_t *uc, void **pcs)
{
    unw_cursor_t c;
    unw_word_t ip;
    int n = 0;

    if (unw_init_local2(&c, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0)
        return 0;
    do {
        if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0)
            break;
        pcs[n++] = (void *)ip;
    } while (n < MAX_DEPTH && unw_step(&c) > 0);
    return n;
}
#endif

int main(int argc, char **argv);

/* Whether the walk got back to main(): a return address just past one of
 * its calls (main is short: its code is within 4 KiB of its start). */
static int
reaches_main(void *const *pcs, int n)
{
    uintptr_t lo = (uintptr_t)(void *)main;
    int i;

    for (i = 0; i < n; i++)
        if ((uintptr_t)pcs[i] > lo && (uintptr_t)pcs[i] < lo + 4096)
            return 1;
    return 0;
}

static void
on_prof(int sig, siginfo_t *si, void *ucv)
{
    void *pcs[MAX_DEPTH];
    uint64_t t0;
    int n = 0;

    (void)sig;
    (void)si;
    if (!walking || nsamples >= MAX_SAMPLES)
        return;
    t0 = cpu_ns();
    switch (which) {
    case W_FP:
        n = walk_fp(ucv, pcs);
        break;
    case W_BACKTRACE:
        n = walk_backtrace(ucv, pcs);
        break;
    case W_LIBUNWIND:
#ifdef WITH_LIBUNWIND
        n = walk_libunwind(ucv, pcs);
#endif
        break;
    }
    ns[nsamples] = cpu_ns() - t0;
    depth[nsamples] = (uint32_t)n;
    reached[nsamples] = reaches_main(pcs, n);
    nsamples++;
}

/* ------------------------------------------------------------------ */
/* Workloads                                                           */

static msgpack_sbuffer sb;
static msgpack_packer pk;

static void
pack_str(const char *s)
{
    msgpack_pack_str(&pk, strlen(s));
    msgpack_pack_str_body(&pk, s, strlen(s));
}

static void
call(const char *method, struct folio_buf *out)
{
    fuzz_call(method, sb.data, sb.size, 0, out);
    msgpack_sbuffer_clear(&sb);
}

static void
requests(struct folio_buf *out)
{
    static unsigned posts;
    char body[64];

    msgpack_pack_array(&pk, 0);
    call("server.ping", out);
    msgpack_pack_array(&pk, 2);
    pack_str("the");
    msgpack_pack_map(&pk, 1);
    pack_str("offset");
    msgpack_pack_uint32(&pk, 5);
    call("corpus.search", out);
    msgpack_pack_array(&pk, 2);
    pack_str("01310-100");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 2);
    pack_str("weight_g");
    msgpack_pack_uint32(&pk, 1200);
    pack_str("qty");
    msgpack_pack_uint32(&pk, 2);
    call("freight.quote", out);
    if (++posts % 8 == 0) {
        snprintf(body, sizeof(body), "comment %u", posts);
        msgpack_pack_array(&pk, 1);
        msgpack_pack_map(&pk, 3);
        pack_str("path");
        pack_str("/unwind/");
        pack_str("author");
        pack_str("prof-unwind");
        pack_str("body");
        pack_str(body);
        call("comments.post", out);
    }
    msgpack_pack_array(&pk, 1);
    pack_str("/unwind/");
    call("comments.list", out);
}

/* Frame pointers everywhere here; libc's qsort and memcpy in between. */
static int
cmp16(const void *a, const void *b)
{
    return memcmp(a, b, 16);
}

__attribute__((noinline)) static void
synthetic(void)
{
    static char buf[1 << 15], copy[1 << 15];
    size_t i;

    for (i = 0; i < sizeof(buf); i++)
        buf[i] = (char)(i * 2654435761u >> 13);
    qsort(buf, sizeof(buf) / 16, 16, cmp16);
    memcpy(copy, buf, sizeof(buf));
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}


static void
measure(enum walker w, int synth, double seconds)
{
    struct itimerval it = {{0, 1000}, {0, 1000}}, off = {{0, 0}, {0, 0}};
    struct folio_buf out;
    uint64_t t0, sum_depth = 0;
    size_t i, nreached = 0;

    memset(&out, 0, sizeof(out));
    which = w;
    nsamples = 0;
    walking = 1;
    setitimer(ITIMER_PROF, &it, NULL);
    t0 = now_ns();
    while ((double)(now_ns() - t0) < seconds * 1e9) {
        if (synth)
            synthetic();
        else
            requests(&out);
    }
    setitimer(ITIMER_PROF, &off, NULL);
    walking = 0;
    folio_buf_free(&out);
    for (i = 0; i < nsamples; i++) {
        sum_depth += depth[i];
        nreached += reached[i];
    }
    qsort(ns, nsamples, sizeof(ns[0]), cmp_u64);
    printf("%-9s  %-9s  %6zu stacks  %8.2f us/stack (median)  depth %5.1f  "
           "reach main %5.1f%%\n",
           synth ? "synthetic" : "foliod", walker_name[w], nsamples,
           nsamples ? (double)ns[nsamples / 2] / 1e3 : 0.0,
           nsamples ? (double)sum_depth / (double)nsamples : 0.0,
           nsamples ? 100.0 * (double)nreached / (double)nsamples : 0.0);
    fflush(stdout);
}

int
main(int argc, char **argv)
{
    struct sigaction sa;
    double seconds = argc > 1 ? atof(argv[1]) : 3;
    void *warm[4];
    char here;
    int synth;

    stack_hi = (uintptr_t)&here + 65536;
    stack_lo = (uintptr_t)&here - (8u << 20);
    fuzz_setup();
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    backtrace(warm, 4); /* loads libgcc_s, once */
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_prof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    for (synth = 0; synth < 2; synth++) {
#ifdef WITH_LIBUNWIND
        measure(W_LIBUNWIND, synth, seconds);
#else
        measure(W_FP, synth, seconds);
        measure(W_BACKTRACE, synth, seconds);
#endif
    }
    msgpack_sbuffer_destroy(&sb);
    return 0;
}
