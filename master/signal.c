/*
 * signal.c - the master's signals, taken as libevent signal events so the
 * handlers run in loop context (STYLE.md section 8):
 *   TERM, INT  drain and stop      QUIT  stop now
 *   HUP        reload              USR1  reopen logs (workers too)
 *   USR2       log a counters snapshot
 *   CHLD       reap and respawn
 */
#include "config.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "master/master_int.h"
#include "src/log.h"

#define KILL_GRACE_MS 2000

static void
on_stop_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct folio_master *m = arg;
    int i, n = 0;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (m->procs[i].pid != 0)
            n++;
    if (n > 0)
        folio_log_warnx("shutdown deadline: killing %d workers", n);
    folio_proc_signal_all(m, SIGKILL);
}

void
folio_stop(struct folio_master *m, int quit)
{
    struct timeval tv;
    struct folio_gen *g;
    uint32_t ms;
    int i, j;

    if (m->stopping && (!quit || m->quitting))
        return;
    if (quit) {
        m->quitting = 1;
        folio_log_notice("quitting now");
    } else {
        folio_log_notice("stopping: draining connections");
    }
    if (!m->stopping)
        folio_notify("STOPPING=1\nSTATUS=%s",
                     quit ? "quitting now" : "draining connections");
    m->stopping = 1;
    for (i = 0; i < FOLIO_MAX_WORKERS; i++)
        if (m->idx[i].ev_respawn != NULL)
            evtimer_del(m->idx[i].ev_respawn);
    /* Refuse new connections as soon as the workers close theirs. */
    for (j = 0; j < 2; j++) {
        g = j == 0 ? m->cur : m->next;
        if (g == NULL)
            continue;
        for (i = 0; i < g->nlisteners; i++) {
            if (g->listeners[i].fd != -1) {
                close(g->listeners[i].fd);
                g->listeners[i].fd = -1;
            }
        }
    }
    if (quit) {
        folio_proc_signal_all(m, SIGKILL);
    } else {
        folio_proc_signal_all(m, SIGTERM);
        ms = (m->cur != NULL ? m->cur->cfg.shutdown_timeout_ms : 10000) +
             KILL_GRACE_MS;
        tv.tv_sec = ms / 1000;
        tv.tv_usec = (ms % 1000) * 1000;
        if (m->ev_deadline != NULL)
            event_free(m->ev_deadline);
        m->ev_deadline = evtimer_new(m->base, on_stop_deadline, m);
        if (m->ev_deadline != NULL)
            evtimer_add(m->ev_deadline, &tv);
    }
    folio_master_check_done(m);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct folio_master *m = arg;

    switch (sig) {
    case SIGTERM:
    case SIGINT:
        folio_stop(m, 0);
        break;
    case SIGQUIT:
        folio_stop(m, 1);
        break;
    case SIGHUP:
        folio_reload_start(m);
        break;
    case SIGUSR1:
        folio_log_reopen();
        folio_proc_signal_all(m, SIGUSR1);
        break;
    case SIGUSR2:
        folio_stats_log_snapshot(m);
        break;
    case SIGCHLD:
        folio_proc_reap(m);
        break;
    }
}

int
folio_signals_init(struct folio_master *m)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGQUIT, SIGHUP,
                               SIGUSR1, SIGUSR2, SIGCHLD};
    struct sigaction sa;
    size_t i;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        m->ev_sig[i] = evsignal_new(m->base, sigs[i], on_signal, m);
        if (m->ev_sig[i] == NULL || event_add(m->ev_sig[i], NULL) != 0)
            return -1;
    }
    return 0;
}
