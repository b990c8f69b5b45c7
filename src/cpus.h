/*
 * cpus.h - how many CPUs this process may use, for `workers = auto`:
 * its affinity mask, bounded by the CPU quota of the cgroups it runs in
 * (what a container or a systemd CPUQuota= gives it).
 */
#ifndef FOLIO_CPUS_H
#define FOLIO_CPUS_H

/*
 * folio_cpu_quota - the CPUs a cgroup CPU limit leaves a process, as a
 * whole number rounded up (quota / period): the smallest of the cgroup v1
 * CFS quota of its own cpu cgroup and of every cgroup v2 cpu.max from its
 * cgroup up to the root.  `root` is where the cgroup file systems are
 * mounted ("/sys/fs/cgroup"), `self` the process's list of cgroups
 * ("/proc/self/cgroup"); both are parameters so that a test can give a
 * tree of its own.  A cgroup path that is not visible under root (a
 * container without a cgroup namespace) is looked up in its visible
 * ancestors.  Returns 0 when no limit applies or nothing can be read.
 * Any process; reads files only.
 */
int folio_cpu_quota(const char *root, const char *self);

/*
 * folio_cpu_count - the CPUs this process may use: its affinity mask,
 * bounded by folio_cpu_quota("/sys/fs/cgroup", "/proc/self/cgroup"),
 * then by FOLIO_MAX_WORKERS.  At least 1.
 */
int folio_cpu_count(void);

#endif
