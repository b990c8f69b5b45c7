/*
 * words.c - a line of folio's interactive mode split into words as
 * a POSIX shell splits a simple command: blanks between words, '...'
 * taken literally, "..." with \" \\ \$ \` escapes, a backslash outside
 * quotes escaping the next character.  No expansion of any kind.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "src/cli/cli_int.h"

int
folio_cli_words(const char *line, char ***out, int *n)
{
    size_t len = strlen(line);
    char *buf, **words, *o;
    const char *p = line;
    int nw = 0, in_word;

    *out = NULL;
    *n = 0;
    /* At most len / 2 + 1 words; with a NUL each, they fit in 2 len + 2. */
    if ((words = calloc(len / 2 + 2, sizeof(*words))) == NULL)
        return -1;
    if ((buf = malloc(2 * len + 2)) == NULL) {
        free(words);
        return -1;
    }
    o = buf;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (*p == '\0')
            break;
        words[nw++] = o;
        in_word = 1;
        while (in_word && *p != '\0') {
            switch (*p) {
            case ' ':
            case '\t':
            case '\n':
            case '\r':
                in_word = 0;
                break;
            case '\'':
                for (p++; *p != '\'' && *p != '\0'; p++)
                    *o++ = *p;
                if (*p == '\0')
                    goto unterminated;
                p++;
                break;
            case '"':
                for (p++; *p != '"' && *p != '\0'; p++) {
                    if (*p == '\\' && strchr("\"\\$`", p[1]) != NULL &&
                        p[1] != '\0')
                        p++;
                    *o++ = *p;
                }
                if (*p == '\0')
                    goto unterminated;
                p++;
                break;
            case '\\':
                if (p[1] != '\0')
                    p++;
                *o++ = *p++;
                break;
            default:
                *o++ = *p++;
                break;
            }
        }
        *o++ = '\0';
    }
    words[nw] = NULL;
    if (nw == 0) {
        free(buf);
        free(words);
        return 0;
    }
    *out = words;
    *n = nw;
    return 0;
unterminated:
    free(buf);
    free(words);
    return -2;
}

void
folio_cli_words_free(char **words)
{
    if (words != NULL)
        free(words[0]);
    free(words);
}
