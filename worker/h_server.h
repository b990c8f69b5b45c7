/*
 * h_server.h - handlers of the server.* methods.
 */
#ifndef FOLIO_H_SERVER_H
#define FOLIO_H_SERVER_H

struct folio_call;

int folio_h_server_ping(struct folio_call *call);
int folio_h_server_methods(struct folio_call *call);

#endif
