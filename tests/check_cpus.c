/*
 * check_cpus.c - `workers = auto`'s CPU count under cgroup limits
 * (src/cpus.h), on fake cgroup trees built in a temporary directory: the
 * process's own v1 quota (not the hierarchy root's), and every v2
 * cpu.max from its cgroup up to the root.
 */
#include "config.h"

#include <sys/stat.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/cpus.h"
#include "tests/check_run.h"

static char root[256];

static void
put(const char *rel, const char *text)
{
    char path[1024], dir[1024], *p;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    snprintf(dir, sizeof(dir), "%s", path);
    for (p = dir + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        mkdir(dir, 0755);
        *p = '/';
    }
    ck_assert_ptr_nonnull(f = fopen(path, "w"));
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

static int
quota(const char *self)
{
    char path[512];

    put("self", self);
    snprintf(path, sizeof(path), "%s/self", root);
    return folio_cpu_quota(root, path);
}

static void
setup(void)
{
    snprintf(root, sizeof(root), "%s/folio-cg.XXXXXX",
             getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(root));
}

static void
teardown(void)
{
    char cmd[512];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_v2_every_level)
{
    put("cgroup.controllers", "cpu memory\n");
    put("a/cpu.max", "max 100000\n");
    put("a/b/cpu.max", "300000 100000\n");
    put("a/b/c/cpu.max", "max 100000\n");
    /* The leaf says nothing; its parent allows 3. */
    ck_assert_int_eq(quota("0::/a/b/c\n"), 3);
    /* A tighter grandparent wins, whatever the levels below say. */
    put("a/cpu.max", "150000 100000\n");
    ck_assert_int_eq(quota("0::/a/b/c\n"), 2);
    /* Under one CPU is one. */
    put("a/b/c/cpu.max", "20000 100000\n");
    ck_assert_int_eq(quota("0::/a/b/c\n"), 1);
    /* No limit anywhere. */
    put("a/cpu.max", "max 100000\n");
    put("a/b/cpu.max", "max 100000\n");
    put("a/b/c/cpu.max", "max 100000\n");
    ck_assert_int_eq(quota("0::/a/b/c\n"), 0);
    /* The root cgroup itself. */
    ck_assert_int_eq(quota("0::/\n"), 0);
}
END_TEST

START_TEST(test_v2_path_not_visible)
{
    /* A container without a cgroup namespace: its own cgroup is the root. */
    put("cgroup.controllers", "cpu\n");
    put("cpu.max", "200000 100000\n");
    ck_assert_int_eq(quota("0::/system.slice/docker-1234.scope\n"), 2);
}
END_TEST

START_TEST(test_v1_own_cgroup)
{
    /* The hierarchy's root has no quota; the process's cgroup has one. */
    put("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    put("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    put("cpu,cpuacct/user.slice/foliod/cpu.cfs_quota_us", "250000\n");
    put("cpu,cpuacct/user.slice/foliod/cpu.cfs_period_us", "100000\n");
    ck_assert_int_eq(quota("12:memory:/user.slice\n"
                           "4:cpu,cpuacct:/user.slice/foliod\n"
                           "1:name=systemd:/user.slice\n"),
                     3);
    /* Not visible (a container): the mount's root is its cgroup. */
    put("cpu,cpuacct/cpu.cfs_quota_us", "100000\n");
    ck_assert_int_eq(quota("4:cpu,cpuacct:/docker/abc\n"), 1);
}
END_TEST

START_TEST(test_hybrid_tightest)
{
    /* v1 cpu controller and a v2 tree beside it: the smaller limit. */
    put("cpu/x/cpu.cfs_quota_us", "400000\n");
    put("cpu/x/cpu.cfs_period_us", "100000\n");
    put("unified/x/cpu.max", "200000 100000\n");
    ck_assert_int_eq(quota("3:cpu:/x\n0::/x\n"), 2);
}
END_TEST

START_TEST(test_count_bounds)
{
    int n = folio_cpu_count();

    ck_assert_int_ge(n, 1);
    ck_assert_int_le(n, (int)sysconf(_SC_NPROCESSORS_ONLN));
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("cpus");
    TCase *tc = tcase_create("cgroups");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_v2_every_level);
    tcase_add_test(tc, test_v2_path_not_visible);
    tcase_add_test(tc, test_v1_own_cgroup);
    tcase_add_test(tc, test_hybrid_tightest);
    tcase_add_test(tc, test_count_bounds);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
