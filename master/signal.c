/*
 * signal.c - the master's signals, taken as libevent signal events so the
 * handlers run in loop context (STYLE.md section 8).  Each one is only
 * reported (events.c); cycle.c decides what it means:
 *   TERM, INT  drain and stop      QUIT  stop now
 *   HUP        reload (or upgrade) USR1  reopen logs (workers too)
 *   USR2       log a counters snapshot
 *   CHLD       reap and respawn
 */
#include "config.h"

#include <signal.h>
#include <string.h>

#include "master/master_int.h"

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct folio_master *m = arg;

    folio_mq_post(&m->mq, FOLIO_MEV_SIGNAL, (int)sig, 0);
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
