/*
 * title.c - process titles (see title.h).  The arguments and the
 * environment are contiguous in memory: [argv[0], end of the last
 * environment string).  Once both are copied elsewhere, that whole area
 * is the title's; the kernel shows it as /proc/PID/cmdline.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/alloc.h"
#include "src/title.h"

extern char **environ;

static char *area;      /* argv[0]'s memory, or NULL: titles off */
static size_t area_len; /* bytes up to the end of the last contiguous string */
/*
 * The copies, each in one block: an environment string that unsetenv()
 * drops from environ stays reachable (LeakSanitizer sees no leak).
 */
static char *strings;

char **
folio_title_init(int argc, char **argv)
{
    char **copy, **env, *end, *p;
    size_t n, bytes = 0;
    int i;

    if (argc < 1 || argv[0] == NULL || area != NULL)
        return argv;
    for (n = 0; environ[n] != NULL; n++)
        bytes += strlen(environ[n]) + 1;
    for (i = 0; i < argc; i++)
        bytes += strlen(argv[i]) + 1;
    copy = folio_calloc((size_t)argc + 1, sizeof(*copy));
    env = folio_calloc(n + 1, sizeof(*env));
    strings = folio_malloc(bytes);
    if (copy == NULL || env == NULL || strings == NULL) {
        folio_free(copy);
        folio_free(env);
        folio_free(strings);
        strings = NULL;
        return argv;
    }
    /* The area: every string that follows the previous one directly. */
    end = argv[0];
    for (i = 0; i < argc; i++)
        if (argv[i] == end)
            end = argv[i] + strlen(argv[i]) + 1;
    for (i = 0; environ[i] != NULL; i++)
        if (environ[i] == end)
            end = environ[i] + strlen(environ[i]) + 1;
    p = strings;
    for (i = 0; i < argc; i++) {
        copy[i] = strcpy(p, argv[i]);
        p += strlen(p) + 1;
    }
    for (i = 0; environ[i] != NULL; i++) {
        env[i] = strcpy(p, environ[i]);
        p += strlen(p) + 1;
    }
    environ = env;
    /* glibc's messages name the program through these: keep them whole. */
    program_invocation_name = copy[0];
    if ((program_invocation_short_name = strrchr(copy[0], '/')) != NULL)
        program_invocation_short_name++;
    else
        program_invocation_short_name = copy[0];
    area = argv[0];
    area_len = (size_t)(end - argv[0]);
    return copy;
}

void
folio_title_set(const char *fmt, ...)
{
    va_list ap;
    int n;

    if (area == NULL || area_len < 2)
        return;
    va_start(ap, fmt);
    n = vsnprintf(area, area_len, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    /* The rest is NUL: ps(1) shows the title alone. */
    if ((size_t)n < area_len)
        memset(area + n, '\0', area_len - (size_t)n);
}
