/*
 * suggest.h - "did you mean": the known word nearest a misspelt one, for
 * the messages of foliod (options, configuration keys) and folio
 * (commands, subcommands, options).
 */
#ifndef FOLIO_SUGGEST_H
#define FOLIO_SUGGEST_H

#include <stddef.h>

/*
 * folio_suggest - among the `n` words of `known` (NULL entries skipped),
 * the one closest to `word` by edit distance (a swap of two neighbours
 * counts one), if it is close enough to be a slip: at most 1 edit for a
 * word of up to 4 letters, 2 up to 8, 3 beyond; NULL if none is, or if
 * two are equally close.  `-` and `_` are the same letter.  Borrowed:
 * points into `known`.
 */
const char *folio_suggest(const char *word, const char *const *known,
                          size_t n);

#endif
