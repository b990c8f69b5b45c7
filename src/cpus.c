/*
 * cpus.c - usable CPUs (see cpus.h).  cgroup v1 keeps the CFS quota of a
 * cgroup in cpu.cfs_quota_us and cpu.cfs_period_us of the cpu controller's
 * hierarchy; cgroup v2 in one cpu.max ("QUOTA PERIOD" or "max PERIOD")
 * per cgroup, and a parent's limit bounds all of its children, so every
 * level counts.
 */
#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/conf.h"
#include "src/cpus.h"

#define PATH_MAX_LEN 4096

/* Read the first line of a small file; 0 on success. */
static int
read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "re");
    int ok;

    if (f == NULL)
        return -1;
    ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok ? 0 : -1;
}

/* CPUs of quota/period, rounded up; 0 for no limit. */
static int
cpus_of(long long quota, long long period)
{
    if (quota <= 0 || period <= 0)
        return 0;
    return (int)((quota + period - 1) / period);
}

/* The smaller limit, where 0 is none. */
static int
tighter(int a, int b)
{
    if (a == 0)
        return b;
    if (b == 0)
        return a;
    return a < b ? a : b;
}

/* v2: cpu.max of dir, 0 if absent or "max". */
static int
v2_limit(const char *dir)
{
    char path[2 * PATH_MAX_LEN + 16], line[128], *p;
    long long quota, period;

    snprintf(path, sizeof(path), "%s/cpu.max", dir);
    if (read_line(path, line, sizeof(line)) != 0 ||
        strncmp(line, "max", 3) == 0)
        return 0;
    quota = strtoll(line, &p, 10);
    period = strtoll(p, NULL, 10);
    return cpus_of(quota, period);
}

/* Drop the last component of a cgroup path ("/a/b" -> "/a", "/a" -> ""). */
static int
parent(char *path)
{
    char *slash = strrchr(path, '/');

    if (slash == NULL || path[0] == '\0')
        return -1;
    *slash = '\0';
    return 0;
}

/* v2: the tightest cpu.max from cgroup `cg` up to the root. */
static int
v2_quota(const char *root, const char *cg)
{
    char unified[PATH_MAX_LEN], dir[2 * PATH_MAX_LEN], path[PATH_MAX_LEN],
        probe[PATH_MAX_LEN + 32];
    int n = 0;

    /* Unified at the root, or beside v1 hierarchies (hybrid). */
    snprintf(probe, sizeof(probe), "%s/cgroup.controllers", root);
    if (access(probe, F_OK) == 0)
        snprintf(unified, sizeof(unified), "%s", root);
    else
        snprintf(unified, sizeof(unified), "%s/unified", root);
    snprintf(path, sizeof(path), "%s", strcmp(cg, "/") == 0 ? "" : cg);
    for (;;) {
        snprintf(dir, sizeof(dir), "%s%s", unified, path);
        n = tighter(n, v2_limit(dir));
        if (path[0] == '\0' || parent(path) != 0)
            break;
    }
    return n;
}

/* v1: the CFS quota of the cpu cgroup `cg` in hierarchy `ctrls`. */
static int
v1_quota(const char *root, const char *ctrls, const char *cg)
{
    const char *mounts[2] = {ctrls, "cpu"};
    char path[PATH_MAX_LEN], dir[2 * PATH_MAX_LEN], file[2 * PATH_MAX_LEN + 32],
        line[128];
    long long quota, period;
    int i;

    /* Its own cgroup; where that path is not visible, the mount's root. */
    for (i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s", strcmp(cg, "/") == 0 ? "" : cg);
        for (;;) {
            snprintf(dir, sizeof(dir), "%s/%s%s", root, mounts[i], path);
            snprintf(file, sizeof(file), "%s/cpu.cfs_quota_us", dir);
            if (read_line(file, line, sizeof(line)) == 0) {
                quota = strtoll(line, NULL, 10);
                snprintf(file, sizeof(file), "%s/cpu.cfs_period_us", dir);
                if (read_line(file, line, sizeof(line)) != 0)
                    return 0;
                period = strtoll(line, NULL, 10);
                return cpus_of(quota, period);
            }
            if (path[0] == '\0')
                break;
            /* Not visible: a container's view, rooted at its own cgroup. */
            path[0] = '\0';
        }
    }
    return 0;
}

/* Whether the comma-separated list `ctrls` names controller `name`. */
static int
has_controller(const char *ctrls, const char *name)
{
    size_t n = strlen(name);
    const char *p = ctrls;

    for (;;) {
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
        if ((p = strchr(p, ',')) == NULL)
            return 0;
        p++;
    }
}

int
folio_cpu_quota(const char *root, const char *self)
{
    char line[PATH_MAX_LEN + 256], *ctrls, *cg;
    FILE *f;
    int n = 0;

    if ((f = fopen(self, "re")) == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        /* "ID:CONTROLLERS:PATH"; v2 is "0::PATH". */
        if ((ctrls = strchr(line, ':')) == NULL ||
            (cg = strchr(ctrls + 1, ':')) == NULL)
            continue;
        *ctrls++ = '\0';
        *cg++ = '\0';
        if (cg[0] != '/')
            continue;
        if (strcmp(line, "0") == 0 && ctrls[0] == '\0')
            n = tighter(n, v2_quota(root, cg));
        else if (has_controller(ctrls, "cpu"))
            n = tighter(n, v1_quota(root, ctrls, cg));
    }
    fclose(f);
    return n;
}

int
folio_cpu_count(void)
{
    int n = 0, q;
#ifdef HAVE_SCHED_GETAFFINITY
    cpu_set_t set;

    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        n = CPU_COUNT(&set);
#endif
    if (n <= 0)
        n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if ((q = folio_cpu_quota("/sys/fs/cgroup", "/proc/self/cgroup")) > 0 &&
        q < n)
        n = q;
    if (n > FOLIO_MAX_WORKERS)
        n = FOLIO_MAX_WORKERS;
    return n > 0 ? n : 1;
}
