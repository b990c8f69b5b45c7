/*
 * signal.c - the master's signals, taken as libevent signal events so the
 * handlers run in loop context (STYLE.md section 8).  Each one is only
 * reported, as the event it is (events.c); decide.c says what it means:
 *   TERM, INT  drain and stop      QUIT  stop now
 *   HUP        reload (or upgrade) USR1  reopen logs (workers too)
 *   USR2       log a counters snapshot
 *   CHLD       reap and respawn
 */
#include "config.h"

#include <signal.h>
#include <string.h>

#include "master/master_int.h"

static const struct {
    int sig;
    int type; /* enum folio_dec_ev_type */
} sigs[] = {
    {SIGTERM, FOLIO_EV_TERM},   {SIGINT, FOLIO_EV_TERM},
    {SIGQUIT, FOLIO_EV_QUIT},   {SIGHUP, FOLIO_EV_HUP},
    {SIGUSR1, FOLIO_EV_REOPEN}, {SIGUSR2, FOLIO_EV_SNAPSHOT},
    {SIGCHLD, FOLIO_EV_CHILD},
};
#define NSIGS (sizeof(sigs) / sizeof(sigs[0]))

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct folio_master *m = arg;
    struct folio_dec_ev ev;
    size_t i;

    for (i = 0; i < NSIGS && sigs[i].sig != (int)sig; i++)
        ;
    if (i == NSIGS)
        return;
    memset(&ev, 0, sizeof(ev));
    ev.type = sigs[i].type;
    ev.slot = -1;
    /* What a SIGHUP asks for depends on it: the binary replaced or not. */
    if (ev.type == FOLIO_EV_HUP)
        ev.changed = folio_upgrade_changed(m);
    folio_ring_post(&m->ring, &ev);
}

int
folio_signals_init(struct folio_master *m)
{
    struct sigaction sa;
    size_t i;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    for (i = 0; i < NSIGS; i++) {
        m->ev_sig[i] = evsignal_new(m->base, sigs[i].sig, on_signal, m);
        if (m->ev_sig[i] == NULL || event_add(m->ev_sig[i], NULL) != 0)
            return -1;
    }
    return 0;
}
