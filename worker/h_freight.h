/*
 * h_freight.h - handlers of the freight.* methods and the freight
 * service's per-worker set-up (opening the LMDB environment read-only).
 */
#ifndef FOLIO_H_FREIGHT_H
#define FOLIO_H_FREIGHT_H

struct folio_call;
struct folio_worker;

int folio_h_freight_info(struct folio_call *call);
int folio_h_freight_quote(struct folio_call *call);

/*
 * folio_h_freight_init - after fork: open the environment `freight` under
 * the data directory if the master imported tables for this generation.
 * Returns 0 (tables or none), or a FOLIO_E* (the worker cannot start).
 */
int folio_h_freight_init(struct folio_worker *w);
void folio_h_freight_fini(struct folio_worker *w);

#endif
