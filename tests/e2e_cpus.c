/*
 * e2e_cpus.c - `workers = auto` under a real CPU limit (check_cpus.c has
 * the fake cgroup trees): a cgroup made here with a quota of one CPU,
 * foliod started inside it, serves with one worker where the machine
 * offers more; the quota lifted ("max"), with as many as it offers.
 *
 * cgroup v2 (cpu.max) where the unified hierarchy has the cpu controller;
 * else cgroup v1's cpu controller (cpu.cfs_quota_us), as on a hybrid
 * machine where cpu is bound to v1 and v2 cannot have it.  The test says
 * which it used.  It needs root, a writable cgroup file system and two
 * CPUs (a quota cannot lower one): required as a component
 * ("cpu-cgroup", e2e_require_at), so that without them the suite is
 * skipped saying why, and fails when CI is set (CI runs as root on a
 * machine of its own).
 */
#include "config.h"

#include <sys/stat.h>

#include <check.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/check_run.h"
#include "tests/e2e_util.h"

static struct e2e_server srv;

/* The cgroup made for the test, and how to set its quota. */
static struct {
    int v2;             /* cpu.max, or v1's cpu.cfs_quota_us */
    char root[256];     /* the hierarchy's mount */
    char dir[320];      /* the cgroup: root/folio-e2e-PID */
    char why[1024];     /* what was tried, when none could be made */
    char label[32];     /* "cgroup v2 (cpu.max)"... */
} cg;

/* Whether the space-separated list in file `path` holds `word`. */
static int
file_lists(const char *path, const char *word)
{
    char *text = e2e_read_file(path), *p;
    size_t n = strlen(word);
    int found = 0;

    for (p = text; p != NULL && (p = strstr(p, word)) != NULL; p += n)
        if ((p == text || p[-1] == ' ') &&
            (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
            found = 1;
    free(text);
    return found;
}

/* Make cg.dir in the unified hierarchy with the cpu controller: 0 or -1. */
static int
make_v2(void)
{
    char path[400];

    snprintf(cg.root, sizeof(cg.root), "/sys/fs/cgroup");
    snprintf(path, sizeof(path), "%s/cgroup.controllers", cg.root);
    if (access(path, F_OK) != 0)
        snprintf(cg.root, sizeof(cg.root), "/sys/fs/cgroup/unified");
    snprintf(path, sizeof(path), "%s/cgroup.controllers", cg.root);
    if (access(path, F_OK) != 0) {
        snprintf(cg.why, sizeof(cg.why), "no cgroup v2 hierarchy");
        return -1;
    }
    if (!file_lists(path, "cpu")) {
        snprintf(cg.why, sizeof(cg.why),
                 "cgroup v2 at %s has no cpu controller (bound to v1)",
                 cg.root);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/cgroup.subtree_control", cg.root);
    if (!file_lists(path, "cpu") && e2e_write_file(path, "+cpu") != 0) {
        snprintf(cg.why, sizeof(cg.why), "cannot enable cpu in %s: %s", path,
                 strerror(errno));
        return -1;
    }
    snprintf(cg.dir, sizeof(cg.dir), "%s/folio-e2e-%ld", cg.root,
             (long)getpid());
    if (mkdir(cg.dir, 0755) != 0 && errno != EEXIST) {
        snprintf(cg.why, sizeof(cg.why), "mkdir %s: %s", cg.dir,
                 strerror(errno));
        return -1;
    }
    cg.v2 = 1;
    snprintf(cg.label, sizeof(cg.label), "cgroup v2 (cpu.max)");
    return 0;
}

/* The same in cgroup v1's cpu hierarchy. */
static int
make_v1(void)
{
    static const char *const mounts[] = {"/sys/fs/cgroup/cpu",
                                         "/sys/fs/cgroup/cpu,cpuacct"};
    char path[400], v2why[256];
    size_t i;

    snprintf(v2why, sizeof(v2why), "%.200s", cg.why);
    for (i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
        snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", mounts[i]);
        if (access(path, F_OK) == 0)
            break;
    }
    if (i == sizeof(mounts) / sizeof(mounts[0])) {
        snprintf(cg.why, sizeof(cg.why), "%s; no cgroup v1 cpu hierarchy",
                 v2why);
        return -1;
    }
    snprintf(cg.root, sizeof(cg.root), "%s", mounts[i]);
    snprintf(cg.dir, sizeof(cg.dir), "%s/folio-e2e-%ld", cg.root,
             (long)getpid());
    if (mkdir(cg.dir, 0755) != 0 && errno != EEXIST) {
        snprintf(cg.why, sizeof(cg.why), "%s; mkdir %s: %s", v2why, cg.dir,
                 strerror(errno));
        return -1;
    }
    cg.v2 = 0;
    snprintf(cg.label, sizeof(cg.label), "cgroup v1 (cpu.cfs_quota_us)");
    return 0;
}

/* The quota: `cpus` CPUs (0: none). 0 or -1. */
static int
set_quota(int cpus)
{
    char path[400], text[64];

    if (cg.v2) {
        snprintf(path, sizeof(path), "%s/cpu.max", cg.dir);
        if (cpus > 0)
            snprintf(text, sizeof(text), "%d 100000\n", cpus * 100000);
        else
            snprintf(text, sizeof(text), "max 100000\n");
        return e2e_write_file(path, text);
    }
    snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", cg.dir);
    if (e2e_write_file(path, "100000\n") != 0)
        return -1;
    snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", cg.dir);
    snprintf(text, sizeof(text), "%d\n", cpus > 0 ? cpus * 100000 : -1);
    return e2e_write_file(path, text);
}

/* Move this process into dir (a cgroup): 0 or -1. */
static int
enter(const char *dir)
{
    char path[400], pid[32];

    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    return e2e_write_file(path, pid);
}

/* Remove the cgroup, once the processes in it are gone (bounded). */
static void
remove_cgroup(void)
{
    uint64_t deadline = e2e_deadline(5000);

    if (cg.dir[0] == '\0')
        return;
    enter(cg.root);
    while (rmdir(cg.dir) != 0 && errno == EBUSY && e2e_wait_more(deadline))
        ;
}

static int
cpus_offered(void)
{
    cpu_set_t set;

    return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                        : 0;
}

/* Start foliod (workers = auto) inside the cgroup, with a quota. */
static int
start_limited(int cpus)
{
    int rc;

    ck_assert_int_eq(set_quota(cpus), 0);
    ck_assert_msg(enter(cg.dir) == 0, "cannot enter %s: %s", cg.dir,
                  strerror(errno));
    rc = e2e_start(&srv, "workers = auto\n", NULL);
    ck_assert_int_eq(enter(cg.root), 0); /* the test itself leaves it */
    ck_assert_msg(rc == 0, "foliod did not start in %s", cg.dir);
    return (int)e2e_server_stat(&srv, "server", "workers", NULL);
}

START_TEST(test_auto_under_quota)
{
    int offered = cpus_offered(), n;
    pid_t pids[64];

    /* One CPU of quota: one worker, where more are offered. */
    n = start_limited(1);
    printf("e2e_cpus: %s, quota 1 CPU, %d offered: %d worker(s)\n", cg.label,
           offered, n);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(e2e_workers(&srv, pids, 64), 1);
    ck_assert_int_eq(e2e_stop(&srv), 0);
    /* No quota: as many as offered (up to the limit of workers). */
    n = start_limited(0);
    printf("e2e_cpus: %s, no quota: %d worker(s)\n", cg.label, n);
    ck_assert_int_eq(n, offered);
    ck_assert_int_eq(e2e_stop(&srv), 0);
    /* A quota over what is offered changes nothing. */
    n = start_limited(offered + 1);
    ck_assert_int_eq(n, offered);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("e2e_cpus");
    TCase *tc = tcase_create("auto");
    const char *have = NULL;
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0); /* the figures, from the forked case */
    if (geteuid() != 0)
        snprintf(cg.why, sizeof(cg.why), "not root");
    else if (cpus_offered() < 2)
        snprintf(cg.why, sizeof(cg.why),
                 "%d CPU offered: a quota cannot lower it", cpus_offered());
    else if (make_v2() == 0 || make_v1() == 0)
        have = cg.label;
    atexit(remove_cgroup);
    e2e_require_at("cpu-cgroup", have, cg.why);
    printf("e2e_cpus: a cgroup of its own, %s: %s\n", cg.label, cg.dir);
    if (!cg.v2)
        printf("e2e_cpus: not cgroup v2: %s\n", cg.why);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_auto_under_quota);
    suite_add_tcase(s, tc);
    rc = folio_check_run(s);
    return rc;
}
