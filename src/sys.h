/*
 * sys.h - the system calls of a worker's hot path (recv, send, sendmsg,
 * epoll_pwait), made directly, not through libc's wrappers: in a process
 * with a second thread (the comments store's writer) libc makes each of
 * them a cancellation point, about 30 instructions around every call
 * (issue 29) for threads nobody cancels, and its generic syscall()
 * another dozen.  The same system calls with the same
 * arguments as libc's, errno set alike.
 */
#ifndef FOLIO_SYS_H
#define FOLIO_SYS_H

#include <sys/socket.h>
#include <sys/syscall.h>

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

/* folio_sys6 - system call `nr` with six arguments: -1 and errno, or it. */
static inline long
folio_sys6(long nr, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long ret;

    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8),
                       "r"(r9)
                     : "rcx", "r11", "memory");
    if ((unsigned long)ret > -4096UL) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
#else
    return syscall(nr, a, b, c, d, e, f);
#endif
}

static inline ssize_t
folio_sys_recv(int fd, void *p, size_t n)
{
    return folio_sys6(SYS_recvfrom, fd, (long)p, (long)n, 0, 0, 0);
}

static inline ssize_t
folio_sys_send(int fd, const void *p, size_t n, int flags)
{
    return folio_sys6(SYS_sendto, fd, (long)p, (long)n, flags, 0, 0);
}

static inline ssize_t
folio_sys_sendmsg(int fd, const struct msghdr *mh, int flags)
{
    return folio_sys6(SYS_sendmsg, fd, (long)mh, flags, 0, 0, 0);
}

#endif
