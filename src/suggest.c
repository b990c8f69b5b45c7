/*
 * suggest.c - the nearest known word to a misspelt one (suggest.h), by
 * the optimal string alignment distance (Levenshtein's, with a swap of
 * neighbours as one edit: "cuont" is one edit from "count").
 */
#include "config.h"

#include <ctype.h>
#include <string.h>

#include "src/suggest.h"

#define MAXLEN 64

static int
same(char a, char b)
{
    if (a == '_')
        a = '-';
    if (b == '_')
        b = '-';
    return tolower((unsigned char)a) == tolower((unsigned char)b);
}

static size_t
min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;

    return m < c ? m : c;
}

/* The distance of a and b, or MAXLEN when either is too long to weigh. */
static size_t
distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), i, j, cost;
    size_t d[MAXLEN + 1][MAXLEN + 1];

    if (la > MAXLEN || lb > MAXLEN)
        return MAXLEN;
    for (i = 0; i <= la; i++)
        d[i][0] = i;
    for (j = 0; j <= lb; j++)
        d[0][j] = j;
    for (i = 1; i <= la; i++) {
        for (j = 1; j <= lb; j++) {
            cost = same(a[i - 1], b[j - 1]) ? 0 : 1;
            d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1,
                           d[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) &&
                same(a[i - 2], b[j - 1]) && d[i - 2][j - 2] + 1 < d[i][j])
                d[i][j] = d[i - 2][j - 2] + 1;
        }
    }
    return d[la][lb];
}

const char *
folio_suggest(const char *word, const char *const *known, size_t n)
{
    size_t len = strlen(word), best = MAXLEN, dist, i, allowed;
    const char *pick = NULL;
    int tie = 0;

    allowed = len <= 4 ? 1 : len <= 8 ? 2 : 3;
    for (i = 0; i < n; i++) {
        if (known[i] == NULL)
            continue;
        dist = distance(word, known[i]);
        if (dist < best) {
            best = dist;
            pick = known[i];
            tie = 0;
        } else if (dist == best && pick != NULL && strcmp(pick, known[i]) != 0)
            tie = 1;
    }
    return pick != NULL && best <= allowed && best > 0 && !tie ? pick : NULL;
}
