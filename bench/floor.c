/*
 * floor - the server that does nothing: the anchor every server in
 * bench/ping.sh is measured against.  epoll, level-triggered as libevent
 * uses it; one read per ready connection; for every complete request of
 * the fixed size in what it holds, the fixed reply, all of them in one
 * write.  No parsing, no allocation, no counters: what is left is the
 * kernel's cost of this pattern (wake-up, read, write) and the loop's.
 * In one process, or in N forked over one listening socket (the process
 * models of foliod -w 1 and of its default), which take connections in
 * balance as foliod's workers do.  The request and reply bytes
 * are given with folio-bench's escapes (escape.h), so that the same
 * floor stands in for server.ping over msgpack-RPC and for PING over RESP.
 * A benchmark tool, not a product: see bench/ping.sh.
 */
#include "config.h"

#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <sched.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/escape.h"
#include "src/addr.h"

#define READ_BYTES 16384 /* what one read takes at most (Redis's, foliod's) */
#define MAX_EVENTS 1024
#define MAX_PROCS 256
#define DEFER_MS 1 /* a process ahead leaves new connections, as foliod */

static const char usage_text[] =
    "usage: floor [--listen ADDR] [--procs N] [--ready-file PATH] "
    "REQUEST REPLY\n"
    "  REQUEST, REPLY  bytes, with the escapes \\r \\n \\t \\0 \\\\ \\xHH\n"
    "  --listen ADDR   where to listen (default 127.0.0.1:0)\n"
    "  --procs N       processes forked over the one listening socket "
    "(default 1:\n"
    "                  the first process serves alone)\n"
    "  --ready-file P  once listening, write \"pid PID\", \"workers N\", "
    "\"listen ADDR\",\n"
    "                  \"request_bytes N\", \"reply_bytes N\" there (by "
    "rename); the\n"
    "                  listen line goes to stdout too\n"
    "  --linger-us N   an experiment: spin N us after each wake-up that "
    "served\n"
    "                  (bigger batches, N us more latency; default 0)\n"
    "  --yield         an experiment: sched_yield(2) after each wake-up that "
    "served,\n"
    "                  before the next poll (the CPU to a client that shares "
    "it)\n"
    "  --nap-us N      an experiment: sleep N us (nanosleep, 1 us of timer "
    "slack)\n"
    "                  after each wake-up that served, before the next poll\n"
    "  --batch         an experiment: run under SCHED_BATCH (a wake-up does "
    "not\n"
    "                  preempt what runs on the CPU)\n";

static size_t req_len, rep_len;
static char *replies; /* the reply, as many times as one read can ask */
static size_t max_replies;
static unsigned short *partial; /* per descriptor: bytes of a request begun */
static size_t npartial;
/*
 * With N processes: each one's open connections (shared), so that one
 * holding more than the least loaded other (by one, and an eighth) leaves
 * the listening socket to them for DEFER_MS, then takes one whatever the
 * balance: foliod's rule (worker/accept.c).  Touched at accept and close
 * only, never per request.
 */
static _Atomic int *conns;
static int nprocs = 1, me;
static int deferred; /* the listening socket is out of this epoll set */
static long linger_ns; /* --linger-us: a wait before the next poll */
/*
 * --yield: after a wake-up that served, give the CPU to whatever else is
 * runnable on it (on shared cores: the client) before polling again; the
 * client's requests then find the floor awake, not asleep in epoll, and
 * come to it in bigger batches.  An experiment, off by default: with a
 * busy neighbour that is not a client, each yield can wait its slice.
 */
static int yield;
/*
 * --nap-us: after a wake-up that served, sleep that long before polling
 * again: the CPU to the client as --yield gives it, but for a bounded
 * time whoever else is runnable (a sleeper's wake-up preempts a hog as a
 * request's does).  An experiment, off by default.
 */
static struct timespec nap;
static struct timespec deferred_at;

static long
ms_since(const struct timespec *t)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - t->tv_sec) * 1000 +
           (now.tv_nsec - t->tv_nsec) / 1000000;
}

/*
 * Write all n bytes.  The socket is non-blocking; when it is full (a
 * client that reads nothing while it sends, never the benchmark's), the
 * process waits for it: the floor keeps no output.
 */
static int
write_all(int fd, const char *p, size_t n)
{
    struct pollfd pfd = {fd, POLLOUT, 0};
    ssize_t w;

    while (n > 0) {
        if ((w = write(fd, p, n)) > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && errno == EAGAIN) {
            if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
                return -1;
        } else if (w < 0 && errno != EINTR) {
            return -1;
        }
    }
    return 0;
}

static void
drop(int fd)
{
    partial[fd] = 0;
    close(fd); /* and out of the epoll set */
    if (nprocs > 1)
        atomic_fetch_sub_explicit(&conns[me], 1, memory_order_relaxed);
}

static int
ahead(void)
{
    int i, n, least = -1;

    for (i = 0; i < nprocs; i++) {
        if (i == me)
            continue;
        n = atomic_load_explicit(&conns[i], memory_order_relaxed);
        if (least < 0 || n < least)
            least = n;
    }
    return atomic_load_explicit(&conns[me], memory_order_relaxed) >
           least + 1 + least / 8;
}

/*
 * --linger-us: spin on the clock for linger_ns after a wake-up that
 * served, so that more requests are waiting at the next read (bigger
 * batches, fewer system calls a request) at the price of that much
 * latency: an experiment, not the floor (off by default).
 */
static void
linger(void)
{
    struct timespec t0, now;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &now);
    while ((now.tv_sec - t0.tv_sec) * 1000000000L +
               (now.tv_nsec - t0.tv_nsec) <
           linger_ns);
}

/* One connection is ready: one read, the replies to what it completes. */
static void
serve(int fd, char *buf)
{
    size_t have, k, chunk;
    ssize_t n;

    n = read(fd, buf, READ_BYTES);
    if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EINTR))
            drop(fd);
        return;
    }
    have = partial[fd] + (size_t)n;
    k = have / req_len;
    partial[fd] = (unsigned short)(have % req_len);
    while (k > 0) {
        chunk = k < max_replies ? k : max_replies;
        if (write_all(fd, replies, chunk * rep_len) != 0) {
            drop(fd);
            return;
        }
        k -= chunk;
    }
}

/* One connection from the listening socket, if another process left one. */
static void
take(int ep, int lfd, int force)
{
    struct epoll_event ev;
    int fd, one = 1;

    if (nprocs > 1 && !force && ahead()) {
        epoll_ctl(ep, EPOLL_CTL_DEL, lfd, NULL);
        deferred = 1;
        clock_gettime(CLOCK_MONOTONIC, &deferred_at);
        return;
    }
    if ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) < 0)
        return;
    if (nprocs > 1)
        atomic_fetch_add_explicit(&conns[me], 1, memory_order_relaxed);
    if ((size_t)fd >= npartial) {
        close(fd);
        return;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    partial[fd] = 0;
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
        close(fd);
}

static void
loop(int lfd)
{
    static char buf[READ_BYTES];
    struct epoll_event evs[MAX_EVENTS], ev;
    int ep, n, i;

    if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        perror("floor: epoll_create1");
        exit(1);
    }
    ev.events = EPOLLIN;
    ev.data.fd = lfd;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) != 0) {
        perror("floor: epoll_ctl");
        exit(1);
    }
    for (;;) {
        n = epoll_wait(ep, evs, MAX_EVENTS, deferred ? DEFER_MS : -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("floor: epoll_wait");
            exit(1);
        }
        /* The clock is read only while the socket is left to others. */
        if (deferred && (n == 0 || ms_since(&deferred_at) >= DEFER_MS)) {
            /* Its time is up: one connection, whatever the balance. */
            deferred = 0;
            ev.events = EPOLLIN;
            ev.data.fd = lfd;
            epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
            take(ep, lfd, 1);
        }
        for (i = 0; i < n; i++) {
            if (evs[i].data.fd == lfd)
                take(ep, lfd, 0);
            else
                serve(evs[i].data.fd, buf);
        }
        if (n > 0) { /* the experiments, after a wake-up that served */
            if (linger_ns > 0)
                linger();
            if (yield)
                sched_yield();
            if (nap.tv_nsec > 0)
                nanosleep(&nap, NULL);
        }
    }
}

static int
write_ready(const char *path, int procs, const char *addr)
{
    char tmp[4096];
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if ((f = fopen(tmp, "w")) == NULL)
        return -1;
    fprintf(
        f,
        "pid %ld\nworkers %d\nlisten %s\nrequest_bytes %zu\nreply_bytes %zu\n",
        (long)getpid(), procs, addr, req_len, rep_len);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return -1;
    return 0;
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"procs", required_argument, NULL, 'p'},
        {"ready-file", required_argument, NULL, 'r'},
        {"linger-us", required_argument, NULL, 'L'},
        {"yield", no_argument, NULL, 'Y'},
        {"nap-us", required_argument, NULL, 'N'},
        {"batch", no_argument, NULL, 'B'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *listen_at = "127.0.0.1:0", *ready = NULL;
    const char *request, *reply;
    struct folio_addr a;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    struct rlimit rl;
    char why[256], name[FOLIO_ADDR_TEXT], *end;
    int procs = 1, lfd, opt, i;
    size_t k;
    long v;

    while ((opt = getopt_long(argc, argv, "l:p:r:L:YN:Bh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'l':
            listen_at = optarg;
            break;
        case 'p':
            v = strtol(optarg, &end, 10);
            if (*end != '\0' || v < 1 || v > MAX_PROCS) {
                fprintf(stderr, "floor: --procs %s is not 1 to %d\n", optarg,
                        MAX_PROCS);
                return 2;
            }
            procs = (int)v;
            break;
        case 'r':
            ready = optarg;
            break;
        case 'L':
            v = strtol(optarg, &end, 10);
            if (*end != '\0' || v < 0 || v > 1000000) {
                fprintf(stderr, "floor: --linger-us %s is not 0 to 1000000\n",
                        optarg);
                return 2;
            }
            linger_ns = v * 1000;
            break;
        case 'Y':
            yield = 1;
            break;
        case 'B': {
            struct sched_param sp = {0};

            if (sched_setscheduler(0, SCHED_BATCH, &sp) != 0) {
                perror("floor: sched_setscheduler(SCHED_BATCH)");
                return 2;
            }
            break;
        }
        case 'N':
            v = strtol(optarg, &end, 10);
            if (*end != '\0' || v < 0 || v > 999999) {
                fprintf(stderr, "floor: --nap-us %s is not 0 to 999999\n",
                        optarg);
                return 2;
            }
            nap.tv_nsec = v * 1000;
            /* The timer's default slack (50 us) would be most of a nap. */
            if (v > 0)
                (void)prctl(PR_SET_TIMERSLACK, 1000UL);
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            fputs(usage_text, stderr);
            return 2;
        }
    }
    if (argc - optind != 2) {
        fputs(usage_text, stderr);
        return 2;
    }
    if ((request = folio_bench_unescape(argv[optind], &req_len)) == NULL ||
        (reply = folio_bench_unescape(argv[optind + 1], &rep_len)) == NULL ||
        req_len == 0 || req_len > 65535 || rep_len == 0) {
        fprintf(stderr, "floor: REQUEST (1 to 65535 bytes) and REPLY (at "
                        "least 1) with the escapes \\r \\n \\t \\0 \\\\ "
                        "\\xHH\n");
        return 2;
    }
    /* Everything the loop needs, made now: it allocates nothing. */
    max_replies = READ_BYTES / req_len + 1;
    if ((replies = malloc(max_replies * rep_len)) == NULL) {
        perror("floor: malloc");
        return 1;
    }
    for (k = 0; k < max_replies; k++)
        memcpy(replies + k * rep_len, reply, rep_len);
    npartial =
        getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
            ? (size_t)rl.rlim_cur
            : 65536;
    if ((partial = calloc(npartial, sizeof(*partial))) == NULL) {
        perror("floor: calloc");
        return 1;
    }

    if (folio_addr_parse(listen_at, &a, why, sizeof(why)) != 0) {
        fprintf(stderr, "floor: %s\n", why);
        return 2;
    }
    if ((lfd = folio_addr_listen(&a, 4096, 0, why, sizeof(why))) < 0) {
        fprintf(stderr, "floor: %s: %s\n", why, strerror(errno));
        return 1;
    }
    if (getsockname(lfd, (struct sockaddr *)&ss, &sl) != 0) {
        perror("floor: getsockname");
        return 1;
    }
    folio_addr_format((struct sockaddr *)&ss, sl, name, sizeof(name));
    signal(SIGPIPE, SIG_IGN);

    if (procs > 1) {
        nprocs = procs;
        conns = mmap(NULL, sizeof(*conns) * (size_t)procs,
                     PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (conns == MAP_FAILED) {
            perror("floor: mmap");
            return 1;
        }
        for (i = 0; i < procs; i++) {
            switch (fork()) {
            case -1:
                perror("floor: fork");
                return 1;
            case 0:
                /* Gone with the parent, however it ends. */
                prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                if (getppid() == 1)
                    _exit(0);
                me = i;
                loop(lfd);
                _exit(1);
            default:
                break;
            }
        }
    }
    printf("listen %s\n", name);
    fflush(stdout);
    if (ready != NULL && write_ready(ready, procs, name) != 0) {
        fprintf(stderr, "floor: cannot write %s: %s\n", ready, strerror(errno));
        return 1;
    }
    if (procs == 1)
        loop(lfd);
    /* The parent serves nothing: it waits for its processes. */
    while (wait(NULL) > 0 || errno == EINTR)
        ;
    return 1;
}
