/*
 * repl.c - folio's interactive mode, as redis-cli's: a prompt with
 * line editing, history (kept in ~/.folio_history) and completion of
 * command names, from libedit (Debian's libedit-dev, through its
 * readline interface); each line is a command as on the command line.
 * When standard input is not a terminal, lines are read as they come,
 * with no prompt and no history, so that scripts (and tests) can drive
 * it.  "quit" or "exit", end of input, or Ctrl-C at the prompt leaves.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>

#include "src/cli/cli_int.h"

#define HISTORY_LINES 1000

/* The words a line starts with: the commands (cli.c's), then ours. */
static const char *const *completion_words;
static const char *const own_words[] = {"quit", "exit", NULL};

/* The words that start with `text`, one per call (readline's protocol). */
static char *
complete_word(const char *text, int state)
{
    static const char *const *list;
    static size_t i, len;
    const char *w;

    if (state == 0) {
        list = completion_words;
        i = 0;
        len = strlen(text);
    }
    for (;;) {
        if ((w = list[i]) == NULL) {
            if (list == own_words)
                return NULL;
            list = own_words;
            i = 0;
            continue;
        }
        i++;
        if (strncmp(w, text, len) == 0)
            return strdup(w);
    }
}

/* Complete the first word of a line (a command) only. */
static char **
complete(const char *text, int start, int end)
{
    (void)end;
    rl_attempted_completion_over = 1; /* no file names */
    return start == 0 ? rl_completion_matches(text, complete_word) : NULL;
}

/* The history file: $FOLIO_HISTFILE ("" or /dev/null: none), else ~. */
static const char *
history_file(char *buf, size_t len)
{
    const char *p = getenv("FOLIO_HISTFILE"), *home;

    if (p != NULL)
        return *p == '\0' || strcmp(p, "/dev/null") == 0 ? NULL : p;
    if ((home = getenv("HOME")) == NULL || *home == '\0')
        return NULL;
    snprintf(buf, len, "%s/.folio_history", home);
    return buf;
}

/* One line of input: malloc'ed, without its newline; NULL at the end. */
static char *
next_line(int tty, const char *prompt)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;

    if (tty)
        return readline(prompt);
    errno = 0;
    if ((n = getline(&line, &cap, stdin)) < 0) {
        free(line);
        return NULL;
    }
    if (n > 0 && line[n - 1] == '\n')
        line[n - 1] = '\0';
    return line;
}

/*
 * Read lines (with `prompt`, libedit's editing and history, and
 * completion of `words`, when standard input is a terminal; plainly
 * otherwise), split each into words and call run(arg, argc, argv) on
 * it; "quit", "exit" or the end of input stops.  Returns the status of
 * the last command.
 */
static int
repl(const char *prompt, const char *const *words,
     int (*run)(void *arg, int argc, char **argv), void *arg)
{
    int tty = isatty(STDIN_FILENO), st = FOLIO_CLI_OK, argc, rc;
    char hbuf[4096], *line, **argv;
    const char *hist = NULL;

    if (tty) {
        completion_words = words;
        rl_readline_name = "folio";
        rl_attempted_completion_function = complete;
        using_history();
        stifle_history(HISTORY_LINES);
        if ((hist = history_file(hbuf, sizeof(hbuf))) != NULL)
            read_history(hist);
    }
    while ((line = next_line(tty, prompt)) != NULL) {
        rc = folio_cli_words(line, &argv, &argc);
        if (tty && line[strspn(line, " \t")] != '\0') {
            add_history(line);
            if (hist != NULL)
                write_history(hist); /* each line: a kill loses none */
        }
        free(line);
        if (rc == -1) {
            fprintf(stderr, "folio: out of memory\n");
            return FOLIO_CLI_ECONN;
        }
        if (rc == -2) {
            fprintf(stderr, "folio: a quote that does not end\n");
            st = FOLIO_CLI_EUSAGE;
            continue;
        }
        if (argc == 0 || argv[0][0] == '#') {
            folio_cli_words_free(argv);
            continue;
        }
        if (strcmp(argv[0], "quit") == 0 || strcmp(argv[0], "exit") == 0) {
            folio_cli_words_free(argv);
            break;
        }
        st = run(arg, argc, argv);
        folio_cli_words_free(argv);
        fflush(stdout);
    }
    if (tty && line == NULL)
        putchar('\n'); /* after the prompt that Ctrl-D ended */
    return st;
}

/* A line of the interactive mode: a command line of its own. */
static int
repl_line(void *arg, int argc, char **argv)
{
    const struct cli *session = arg;
    struct cli line;
    char **av;
    int st;

    if ((av = calloc((size_t)argc + 2, sizeof(*av))) == NULL) {
        fprintf(stderr, "folio: out of memory\n");
        return FOLIO_CLI_ECONN;
    }
    av[0] = (char *)(uintptr_t) "folio";
    memcpy(av + 1, argv, (size_t)argc * sizeof(*av));
    /* The session's address, timeout and --json; the rest per line. */
    memset(&line, 0, sizeof(line));
    line.addr = session->addr;
    line.json = session->json;
    line.timeout_s = session->timeout_s;
    line.in_repl = 1;
    st = folio_cli_run_args(&line, argc + 1, av);
    free(av);
    return st;
}

int
folio_cli_interactive(struct cli *cli)
{
    char prompt[FOLIO_ADDR_TEXT + 16];

    cli->admin = 0;
    snprintf(prompt, sizeof(prompt), "folio %s> ",
             folio_cli_shown(folio_cli_target(cli)));
    return repl(prompt, folio_cli_command_names(), repl_line, cli);
}
