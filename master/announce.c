/*
 * announce.c - what the world outside is told when a generation is
 * ready: the ready file (pid, generation, workers, the addresses as
 * bound: for scripts and tests) and, at the first ready of a detached
 * start, the parent waiting in the terminal (it exits 0 then).  Called by
 * cycle.c for decide.c's READY action, and by main.c at start.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "master/master_int.h"
#include "src/log.h"

int
folio_announce_write_file(const char *path, const char *text)
{
    char tmp[4200];
    size_t len = strlen(text);
    int fd, ok;

    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) ==
        -1)
        return -1;
    ok = write(fd, text, len) == (ssize_t)len;
    if (close(fd) != 0 || !ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

void
folio_announce_open(struct folio_master *m, const char *path)
{
    if (path == NULL || !m->priv.active || m->ready_fd != -1)
        return;
    /*
     * After the drop, the user may not be able to write the file's
     * directory (the rename of an atomic write): keep it open for then.
     */
    if ((m->ready_fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) ==
        -1) {
        folio_log_warn("open(%s)", path);
        return;
    }
    snprintf(m->ready_path, sizeof(m->ready_path), "%s", path);
}

/* Through the descriptor opened before the drop: rewrite it in place. */
static int
write_kept(struct folio_master *m, const char *text)
{
    size_t len = strlen(text);

    if (pwrite(m->ready_fd, text, len, 0) != (ssize_t)len ||
        ftruncate(m->ready_fd, (off_t)len) != 0)
        return -1;
    return 0;
}

static void
write_ready_file(struct folio_master *m)
{
    const struct folio_gen *g = m->cur;
    const char *path = g->cfg.ready_file;
    char text[4096];
    size_t n = 0;
    int i, kept;

    n += (size_t)snprintf(text + n, sizeof(text) - n,
                          "pid %ld\ngeneration %llu\nworkers %d\n",
                          (long)getpid(), (unsigned long long)g->id,
                          g->nworkers);
    for (i = 0; i < g->nlisteners && n < sizeof(text); i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s %s\n",
                              g->listeners[i].admin  ? "admin"
                              : g->listeners[i].http ? "http"
                                                     : "listen",
                              g->listeners[i].name);
    if (m->metrics_name[0] != '\0' && n < sizeof(text))
        snprintf(text + n, sizeof(text) - n, "metrics %s\n", m->metrics_name);
    kept = m->ready_fd != -1 && strcmp(path, m->ready_path) == 0;
    if (folio_announce_write_file(path, text) == 0)
        return;
    if (kept && write_kept(m, text) == 0)
        return;
    folio_log_error("cannot write ready file %s", path);
}

void
folio_announce_ready(struct folio_master *m)
{
    int devnull;

    if (m->cur->cfg.ready_file != NULL)
        write_ready_file(m);
    if (m->ready_pipe == -1)
        return;
    /* Daemon: the parent waiting in the terminal may exit 0 now. */
    if (write(m->ready_pipe, "R", 1) != 1)
        folio_log_warn("telling the parent we are ready");
    close(m->ready_pipe);
    m->ready_pipe = -1;
    folio_log_mirror(-1);
    if ((devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) != -1) {
        if (folio_log_fd() != STDERR_FILENO)
            dup2(devnull, STDERR_FILENO);
        close(devnull);
    }
}
