/*
 * h_stats.h - the server.stats handler.
 */
#ifndef FOLIO_H_STATS_H
#define FOLIO_H_STATS_H

struct folio_call;

int folio_h_server_stats(struct folio_call *call);

#endif
