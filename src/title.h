/*
 * title.h - process titles, as ps(1) and /proc/PID/cmdline show them:
 * "foliod: master (generation 3)", "foliod: worker 1 (generation 3)".
 * The title overwrites the memory of argv (and of the environment after
 * it, moved to the heap first), as nginx's ngx_setproctitle and
 * PostgreSQL's ps_status.c do; the process's name (comm, what pidof and
 * pgrep match) stays "foliod".
 */
#ifndef FOLIO_TITLE_H
#define FOLIO_TITLE_H

/*
 * folio_title_init - once, first thing in main(), before anything keeps a
 * pointer into argv or environ: copies the arguments and the environment
 * to the heap (environ then points at the copy) so that their memory can
 * hold a title.  Returns the copy of argv, NULL-terminated, which the
 * program uses from then on (argv's own strings are overwritten by the
 * first folio_title_set); argv itself if there is no memory (titles are
 * then off).  The copy lives until exit.
 */
char **folio_title_init(int argc, char **argv);

/*
 * folio_title_set - the process's title, printf-style, cut to the room
 * argv and the environment had.  A no-op before folio_title_init.  Any
 * process after folio_title_init (a forked worker sets its own); not
 * async-signal-safe.
 */
void folio_title_set(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

#endif
