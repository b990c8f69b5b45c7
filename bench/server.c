/*
 * server.c - what the server spent: its CPU time, requests and heap
 * allocations, read before and after a run.  server.stats over the admin
 * socket gives all three (its "totals" map); the CPU time of the server's
 * processes also comes from /proc (--server-pid: the master and every
 * descendant), which is more current.  The reader takes what is there and
 * leaves the rest unknown: server.stats may lack a field, or the method.
 */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "src/client.h"
#include "src/mp.h"

/* A number of any msgpack type (int, uint, float); -1 if not one. */
static double
read_number(struct folio_mp_cur *c)
{
    uint64_t u;
    int64_t i;
    double d;

    if (folio_mp_read_uint(c, &u) == 0)
        return (double)u;
    if (folio_mp_read_int(c, &i) == 0)
        return (double)i;
    if (folio_mp_read_float(c, &d) == 0)
        return d;
    folio_mp_skip(c);
    return -1;
}

struct fields {
    double requests, cpu_user_s, cpu_sys_s, cpu_user_us, cpu_sys_us,
        alloc_calls;
    int found;
};

/* Read the numbers we know from map `c` (n entries); descend "totals". */
static int
read_map(struct folio_mp_cur *c, uint32_t n, struct fields *f, int depth)
{
    const char *k;
    uint32_t klen, sub;
    double *slot;

    while (n-- > 0) {
        if (folio_mp_read_str(c, &k, &klen) != 0) {
            if (folio_mp_skip(c) != 0 || folio_mp_skip(c) != 0)
                return -1;
            continue;
        }
        if (depth == 0 && folio_mp_str_eq(k, klen, "totals") &&
            folio_mp_read_map(c, &sub) == 0) {
            if (read_map(c, sub, f, 1) != 0)
                return -1;
            continue;
        }
        slot = folio_mp_str_eq(k, klen, "requests")      ? &f->requests
               : folio_mp_str_eq(k, klen, "cpu_user_s")  ? &f->cpu_user_s
               : folio_mp_str_eq(k, klen, "cpu_sys_s")   ? &f->cpu_sys_s
               : folio_mp_str_eq(k, klen, "cpu_user_us") ? &f->cpu_user_us
               : folio_mp_str_eq(k, klen, "cpu_sys_us")  ? &f->cpu_sys_us
               : folio_mp_str_eq(k, klen, "alloc_calls") ? &f->alloc_calls
                                                         : NULL;
        /* "totals" wins over a top-level field of the same name. */
        if (slot != NULL && (depth == 1 || *slot < 0)) {
            *slot = read_number(c);
            f->found = 1;
        } else if (folio_mp_skip(c) != 0) {
            return -1;
        }
    }
    return 0;
}

static int
from_stats(const char *admin, struct bench_server_snap *s)
{
    struct folio_client *c = NULL;
    struct folio_reply rep;
    struct fields f = {-1, -1, -1, -1, -1, -1, 0};
    char addr[FOLIO_ADDR_TEXT + 8], err[256];
    uint32_t n;
    int rc;

    /* The admin socket is a Unix socket: "PATH" or "unix:PATH". */
    snprintf(addr, sizeof(addr), "%s%s",
             strncmp(admin, "unix:", 5) == 0 ? "" : "unix:", admin);
    if (folio_client_open(addr, 5000, &c, err, sizeof(err)) != 0) {
        snprintf(s->why, sizeof(s->why), "%s", err);
        return -1;
    }
    rc = folio_client_call0(c, "server.stats", &rep);
    if (rc != 1) {
        snprintf(s->why, sizeof(s->why), "server.stats: %s",
                 rc == 0 ? "connection closed" : folio_strerror(rc));
        goto fail;
    }
    if (rep.code != 0) {
        snprintf(s->why, sizeof(s->why), "server.stats: error %d: %.*s",
                 rep.code, (int)rep.message_len,
                 rep.message != NULL ? rep.message : "");
        goto fail;
    }
    if (folio_mp_read_map(&rep.result, &n) != 0 ||
        read_map(&rep.result, n, &f, 0) != 0 || !f.found) {
        snprintf(s->why, sizeof(s->why),
                 "server.stats: no totals in the reply");
        goto fail;
    }
    folio_client_close(c);
    s->ok = 1;
    s->from_stats = 1;
    s->requests = f.requests;
    if (f.cpu_user_s < 0 && f.cpu_user_us >= 0)
        f.cpu_user_s = f.cpu_user_us / 1e6;
    if (f.cpu_sys_s < 0 && f.cpu_sys_us >= 0)
        f.cpu_sys_s = f.cpu_sys_us / 1e6;
    s->cpu_s =
        f.cpu_user_s >= 0 && f.cpu_sys_s >= 0 ? f.cpu_user_s + f.cpu_sys_s : -1;
    s->alloc_calls = f.alloc_calls;
    return 0;
fail:
    folio_client_close(c);
    return -1;
}

/*
 * CPU time of pid and, recursively, its children, in ns: the sum of
 * every thread's run time from /proc/PID/task/TID/schedstat (exact, where
 * /proc/PID/stat counts clock ticks), or from stat's utime + stime where
 * schedstat is missing.  -1 if pid does not exist.
 */
static long long
proc_cpu_ns(pid_t pid, int depth)
{
    char path[128], buf[1024], *p;
    unsigned long long run;
    unsigned long ut, st;
    long long total = 0, sched = 0, t;
    long child, hz;
    int have_sched = 1;
    FILE *f;
    DIR *d;
    struct dirent *de;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    if (fgets(buf, sizeof(buf), f) == NULL) {
        fclose(f);
        return -1;
    }
    fclose(f);
    /* Fields after the command name, which may hold spaces: state is 3rd. */
    if ((p = strrchr(buf, ')')) == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
               &ut, &st) != 2)
        return -1;
    hz = sysconf(_SC_CLK_TCK);
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    if ((d = opendir(path)) == NULL)
        return (long long)(ut + st) * (1000000000LL / (hz > 0 ? hz : 100));
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%.20s/schedstat",
                 (int)pid, de->d_name);
        if (have_sched && (f = fopen(path, "r")) != NULL) {
            if (fscanf(f, "%llu", &run) == 1)
                sched += (long long)run;
            else
                have_sched = 0;
            fclose(f);
        } else {
            have_sched = 0;
        }
        if (depth > 8)
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%.20s/children", (int)pid,
                 de->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        while (fscanf(f, "%ld", &child) == 1)
            if ((t = proc_cpu_ns((pid_t)child, depth + 1)) > 0)
                total += t;
        fclose(f);
    }
    closedir(d);
    total += have_sched ? sched
                        : (long long)(ut + st) *
                              (1000000000LL / (hz > 0 ? hz : 100));
    return total;
}

void
folio_bench_server_snap(const struct bench_opts *o, struct bench_server_snap *s)
{
    long long ns = -1;
    struct timespec ts;

    memset(s, 0, sizeof(*s));
    s->requests = s->cpu_s = s->alloc_calls = -1;
    /* Every thread's, those that have ended too (not so in /proc's tasks). */
    s->client_cpu_s = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0
                          ? (double)ts.tv_sec + (double)ts.tv_nsec / 1e9
                          : -1;
    if (o->admin != NULL)
        from_stats(o->admin, s);
    /*
     * /proc's CPU time is exact (schedstat); server.stats' is what
     * each worker last sampled (every 100 ms): prefer /proc when we may.
     */
    if (o->server_pid > 0 && (ns = proc_cpu_ns(o->server_pid, 0)) < 0)
        snprintf(s->why + strlen(s->why), sizeof(s->why) - strlen(s->why),
                 "%s/proc/%d: no such process", s->why[0] ? "; " : "",
                 (int)o->server_pid);
    if (ns >= 0) {
        s->cpu_s = (double)ns / 1e9;
        s->cpu_from_proc = 1;
        s->ok = 1;
    }
}

int
folio_bench_server_check(const struct bench_opts *o, char *why, size_t whylen)
{
    struct bench_server_snap s;

    memset(&s, 0, sizeof(s));
    if (o->admin != NULL && from_stats(o->admin, &s) != 0) {
        snprintf(why, whylen,
                 "--admin %s: %s (the admin socket is foliod's "
                 "--admin-socket)",
                 o->admin, s.why);
        return -1;
    }
    if (o->server_pid > 0 && proc_cpu_ns(o->server_pid, 0) < 0) {
        snprintf(why, whylen, "--server-pid %d: no such process",
                 (int)o->server_pid);
        return -1;
    }
    return 0;
}
