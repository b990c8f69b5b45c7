/*
 * selfstat.c - the master's own process_* series, the set every
 * Prometheus client library exports (client_golang's process collector):
 * CPU seconds, resident and virtual memory, open and maximum file
 * descriptors, start time.  Read from getrusage, getrlimit and /proc at
 * each scrape; a value that cannot be read is left out.
 */
#include "config.h"

#include <sys/resource.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "master/master_int.h"

/* X(name, type, help): the series, in the order of the page. */
#define PROCESS_SERIES(X)                                                      \
    X(cpu_seconds_total, "counter",                                            \
      "Total user and system CPU time of the master, in seconds.")             \
    X(resident_memory_bytes, "gauge", "The master's resident memory size.")    \
    X(virtual_memory_bytes, "gauge", "The master's virtual memory size.")      \
    X(open_fds, "gauge", "File descriptors the master has open.")              \
    X(max_fds, "gauge", "The master's limit of open file descriptors.")        \
    X(start_time_seconds, "gauge",                                             \
      "When the master process started, seconds since the Unix epoch.")

enum {
#define ID(name, type, help) P_##name,
    PROCESS_SERIES(ID)
#undef ID
        P_MAX
};

/* Seconds since the epoch at boot, from /proc/stat's btime; 0 unknown. */
static double
boot_time(void)
{
    static double btime;
    char line[256];
    FILE *f;

    if (btime > 0 || (f = fopen("/proc/stat", "re")) == NULL)
        return btime;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "btime ", 6) == 0) {
            btime = strtod(line + 6, NULL);
            break;
        }
    fclose(f);
    return btime;
}

/* The start time, field 22 of /proc/self/stat, in clock ticks since boot. */
static int
start_time(double *out)
{
    char buf[1024], *p;
    size_t n;
    long hz = sysconf(_SC_CLK_TCK);
    int field;
    FILE *f;

    if ((f = fopen("/proc/self/stat", "re")) == NULL)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command may hold spaces and parentheses: go past the last ')'. */
    if ((p = strrchr(buf, ')')) == NULL || hz <= 0 || boot_time() <= 0)
        return -1;
    for (field = 2; field < 22 && p != NULL; field++)
        p = strchr(p + 1, ' ');
    if (p == NULL)
        return -1;
    *out = boot_time() + strtod(p + 1, NULL) / (double)hz;
    return 0;
}

static int
open_fds(double *out)
{
    struct dirent *e;
    DIR *d;
    int n = 0;

    if ((d = opendir("/proc/self/fd")) == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    *out = n - 1; /* the directory's own descriptor */
    return 0;
}

static int
memory(double *rss, double *vsz)
{
    unsigned long long size, resident;
    long page = sysconf(_SC_PAGESIZE);
    FILE *f;
    int n;

    if ((f = fopen("/proc/self/statm", "re")) == NULL)
        return -1;
    n = fscanf(f, "%llu %llu", &size, &resident);
    fclose(f);
    if (n != 2 || page <= 0)
        return -1;
    *rss = (double)resident * (double)page;
    *vsz = (double)size * (double)page;
    return 0;
}

void
folio_metrics_process(struct evbuffer *b)
{
    static const struct {
        const char *name, *type, *help;
    } series[P_MAX] = {
#define ROW(name, type, help) {#name, type, help},
        PROCESS_SERIES(ROW)
#undef ROW
    };
    double v[P_MAX];
    int have[P_MAX] = {0}, i;
    struct rusage ru;
    struct rlimit rl;

    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        v[P_cpu_seconds_total] =
            (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
        have[P_cpu_seconds_total] = 1;
    }
    if (memory(&v[P_resident_memory_bytes], &v[P_virtual_memory_bytes]) == 0)
        have[P_resident_memory_bytes] = have[P_virtual_memory_bytes] = 1;
    have[P_open_fds] = open_fds(&v[P_open_fds]) == 0;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        v[P_max_fds] = (double)rl.rlim_cur;
        have[P_max_fds] = 1;
    }
    have[P_start_time_seconds] = start_time(&v[P_start_time_seconds]) == 0;
    for (i = 0; i < P_MAX; i++) {
        if (!have[i])
            continue;
        evbuffer_add_printf(b,
                            "# HELP process_%s %s\n# TYPE process_%s %s\n"
                            "process_%s %.15g\n",
                            series[i].name, series[i].help, series[i].name,
                            series[i].type, series[i].name, v[i]);
    }
}
