/*
 * eio_shim.c - an LD_PRELOAD library for e2e_faults and e2e_stuck_writer:
 * a disk that fails, or does not answer.  While the file named by
 * $FOLIO_EIO_TRIGGER exists, the calls it names fail with EIO on the
 * comments store's data.mdb (and nothing else):
 *   "sync"   fsync() and fdatasync()
 *   "write"  pwrite(), write() and writev() (LMDB's page writes)
 *   "meta"   pwrite() to a descriptor opened with O_DSYNC (LMDB's meta
 *            page: the last write of a commit)
 *   "slow"   fsync() and fdatasync() succeed, 150 ms late (a slow disk)
 *   "stall"  fsync() and fdatasync() wait while the trigger says so (a
 *            disk that does not answer: the commit in progress keeps
 *            LMDB's writer lock, its meta page not written)
 * Everything else passes through.  Not for sanitizer builds (ASan wants
 * to be the first library loaded).
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <sys/uio.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* 1 if the trigger file exists and names `what`. */
static int
failing(const char *what)
{
    const char *path = getenv("FOLIO_EIO_TRIGGER");
    char buf[32];
    ssize_t n;
    int fd, saved = errno, hit = 0;

    if (path == NULL)
        return 0;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n > 0) {
            buf[n] = '\0';
            hit = strstr(buf, what) != NULL;
        }
    }
    errno = saved;
    return hit;
}

/* 1 if fd is the comments store's data file. */
static int
target(int fd)
{
    static const char tail[] = "/comments/data.mdb";
    char link[64], path[4096];
    ssize_t n;
    int saved = errno;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof(path) - 1);
    errno = saved;
    if (n < (ssize_t)sizeof(tail) - 1)
        return 0;
    path[n] = '\0';
    return strcmp(path + n - (sizeof(tail) - 1), tail) == 0;
}

static int
dsync(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    return fl != -1 && (fl & O_DSYNC) == O_DSYNC;
}

/* The next definition of name (libc's), looked up once. */
#define REAL(name, ret, args)                                                  \
    static ret(*real_##name) args;                                             \
    if (real_##name == NULL)                                                   \
    *(void **)(&real_##name) = dlsym(RTLD_NEXT, #name)

/* A slow disk: a sync takes 150 ms more; a stalled one, until it heals. */
static void
slow_sync(int fd)
{
    struct timespec ts = {0, 150 * 1000 * 1000};

    if (!target(fd))
        return;
    if (failing("slow"))
        while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
            ;
    while (failing("stall")) {
        ts.tv_nsec = 1000 * 1000;
        nanosleep(&ts, NULL);
    }
}

int
fsync(int fd)
{
    REAL(fsync, int, (int));
    if (target(fd) && failing("sync")) {
        errno = EIO;
        return -1;
    }
    slow_sync(fd);
    return real_fsync(fd);
}

int
fdatasync(int fd)
{
    REAL(fdatasync, int, (int));
    if (target(fd) && failing("sync")) {
        errno = EIO;
        return -1;
    }
    slow_sync(fd);
    return real_fdatasync(fd);
}

ssize_t
pwrite(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite, ssize_t, (int, const void *, size_t, off_t));
    if (target(fd) && (failing("write") || (dsync(fd) && failing("meta")))) {
        errno = EIO;
        return -1;
    }
    return real_pwrite(fd, buf, n, off);
}

ssize_t
write(int fd, const void *buf, size_t n)
{
    REAL(write, ssize_t, (int, const void *, size_t));
    if (target(fd) && failing("write")) {
        errno = EIO;
        return -1;
    }
    return real_write(fd, buf, n);
}

ssize_t
writev(int fd, const struct iovec *iov, int cnt)
{
    REAL(writev, ssize_t, (int, const struct iovec *, int));
    if (target(fd) && failing("write")) {
        errno = EIO;
        return -1;
    }
    return real_writev(fd, iov, cnt);
}
