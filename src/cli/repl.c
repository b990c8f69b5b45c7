/*
 * repl.c - folio's interactive mode, as redis-cli's: a prompt naming the
 * server, or "not connected> " while it does not answer (each command, or
 * an empty line, tries again); line editing and history (kept in
 * ~/.folio_history) from libedit's own interface (Debian's libedit-dev,
 * histedit.h); Tab completes every word (commands, subcommands, the
 * server's methods after `call`, a command's choices, options); a hint
 * at the right of the line says what the command takes next, as
 * redis-cli's grey hints do (libedit's right prompt, redrawn when a word
 * ends: libedit has no hints of its own); help, clear, quit and exit are
 * the mode's own.  Each other line is a command as on the command line.
 * When standard input is not a terminal, lines are read as they come,
 * with no prompt and no history, so that scripts (and tests) can drive
 * it.  quit or exit, end of input, or Ctrl-C at the prompt leaves.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <histedit.h>

#include "src/cli/cli_int.h"
#include "src/client.h"
#include "src/mp.h"

#define HISTORY_LINES 1000
#define MAX_WORDS 64
#define MAX_METHODS 128

/* The mode's own commands, with what each does, for help and Tab. */
static const char *const own[][2] = {
    {"help", "the commands, or what COMMAND does: help [COMMAND]"},
    {"clear", "clear the screen (Ctrl-L too)"},
    {"quit", "leave (exit, Ctrl-D or Ctrl-C at the prompt too)"},
    {"exit", "leave"},
};
#define NOWN (sizeof(own) / sizeof(own[0]))

struct repl {
    struct cli *session;
    EditLine *el;
    History *hist;
    HistEvent ev;
    const char *histfile;
    int connected; /* the last try reached the server */
    char prompt[FOLIO_ADDR_TEXT + 16];
    char hint[256];
    /* server.methods, fetched at the first need: names and signatures. */
    int methods_tried;
    size_t nmethods;
    char *method[MAX_METHODS], *signature[MAX_METHODS];
};

/* ---- the session's server ---------------------------------------- */

/* The session's line options on a fresh cli, as every line gets them. */
static void
line_cli(const struct cli *session, struct cli *line)
{
    memset(line, 0, sizeof(*line));
    line->addr = session->addr;
    line->addr_from = session->addr_from;
    line->json = session->json;
    line->timeout_s = session->timeout_s;
    line->timeout_ms = session->timeout_ms;
    line->in_repl = 1;
}

/* Whether the session's server answers a connection now (says nothing). */
static int
reachable(struct repl *r)
{
    struct folio_client *c;
    struct cli line;
    char err[256];

    line_cli(r->session, &line);
    if (folio_client_open(folio_cli_target(&line, NULL), line.timeout_ms, &c,
                          err, sizeof(err)) != 0)
        return 0;
    folio_client_close(c);
    return 1;
}

/* server.methods, quietly: names and signatures into r, once. */
static void
fetch_methods(struct repl *r)
{
    struct folio_client *c = NULL;
    struct folio_reply rep;
    struct folio_mp_cur m;
    const char *k, *v;
    uint32_t n, i, kl, vl;
    struct cli line;
    char err[256];

    if (r->methods_tried)
        return;
    r->methods_tried = 1;
    line_cli(r->session, &line);
    if (folio_client_open(folio_cli_target(&line, NULL), line.timeout_ms, &c,
                          err, sizeof(err)) != 0)
        return;
    folio_client_request(c, 0, "server.methods", 0, NULL);
    if (folio_client_flush(c) != 0 || folio_client_reply(c, &rep) != 1 ||
        rep.code != 0)
        goto done;
    m = rep.result;
    if (folio_mp_read_map(&m, &n) != 0)
        goto done;
    for (i = 0; i < n && r->nmethods < MAX_METHODS; i++) {
        if (folio_mp_read_str(&m, &k, &kl) != 0 ||
            folio_mp_read_str(&m, &v, &vl) != 0)
            break;
        r->method[r->nmethods] = strndup(k, kl);
        r->signature[r->nmethods] = strndup(v, vl);
        if (r->method[r->nmethods] == NULL ||
            r->signature[r->nmethods] == NULL) {
            free(r->method[r->nmethods]);
            free(r->signature[r->nmethods]);
            break;
        }
        r->nmethods++;
    }
done:
    /* Not reached: try again at the next need. */
    r->methods_tried = r->nmethods > 0;
    folio_client_close(c);
}

static char *
prompt_text(EditLine *el)
{
    struct repl *r;

    el_get(el, EL_CLIENTDATA, &r);
    return r->prompt;
}

static void
set_prompt(struct repl *r)
{
    struct cli line;

    line_cli(r->session, &line);
    if (r->connected)
        snprintf(r->prompt, sizeof(r->prompt), "folio %s> ",
                 folio_cli_shown(folio_cli_target(&line, NULL)));
    else
        snprintf(r->prompt, sizeof(r->prompt), "not connected> ");
}

/* ---- the words of a line ------------------------------------------- */

/*
 * A line as words, split at blanks (quotes are not undone: enough to
 * know the command and count its arguments).  *trailing is 1 when the
 * line ends with a blank: the last word is complete.
 */
static int
split(const char *line, size_t len, char words[][128], int *trailing)
{
    size_t i = 0, w;
    int n = 0;

    *trailing = 1;
    while (i < len && n < MAX_WORDS) {
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i == len)
            break;
        for (w = 0; i < len && line[i] != ' ' && line[i] != '\t'; i++)
            if (w < 127)
                words[n][w++] = line[i];
        words[n++][w] = '\0';
        *trailing = i < len;
    }
    return n;
}

/* Whether option w takes a value (the next word): cli.c's options. */
static int
is_valued(const char *w)
{
    const char *shorts, *p;
    const struct option *o = folio_cli_options(&shorts);

    if (w[0] != '-' || w[1] == '\0')
        return 0;
    if (strcmp(w, "-h") == 0)
        return 1; /* redis-cli's -h HOST, as a line's first words mostly */
    if (w[1] != '-')
        return w[2] == '\0' &&
               ((p = strchr(shorts + 1, w[1])) != NULL && p[1] == ':');
    for (; o->name != NULL; o++)
        if (strcmp(w + 2, o->name) == 0)
            return o->has_arg == required_argument;
    return 0;
}

/*
 * The command of words[0..n): the index of its name (options and their
 * values skipped), or n if there is none yet.
 */
static int
command_at(char words[][128], int n)
{
    int i;

    for (i = 0; i < n; i++) {
        if (words[i][0] != '-')
            return i;
        if (is_valued(words[i]) && strchr(words[i], '=') == NULL)
            i++;
    }
    return n;
}

/* The table's row named `name` (and `sub`), or NULL. */
static const struct cmd *
find(const char *name, const char *sub)
{
    size_t i, n;
    const struct cmd *t = folio_cli_commands(&n);

    for (i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0 &&
            (t[i].sub == NULL || (sub != NULL && strcmp(t[i].sub, sub) == 0)))
            return &t[i];
    return NULL;
}

static int
is_group(const char *name)
{
    size_t i, n;
    const struct cmd *t = folio_cli_commands(&n);

    for (i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0 && t[i].sub != NULL)
            return 1;
    return 0;
}

/*
 * The usage of c after its name, as tokens ("[--limit N]" one token):
 * into tok[], their count returned.
 */
static int
usage_tokens(const struct cmd *c, char tok[][128], int max)
{
    const char *p = c->usage;
    int n = 0, depth;
    size_t w;

    p += strlen(c->name);
    if (c->sub != NULL)
        p += 1 + strlen(c->sub);
    while (*p != '\0' && n < max) {
        while (*p == ' ')
            p++;
        if (*p == '\0')
            break;
        for (w = 0, depth = 0; *p != '\0' && (depth > 0 || *p != ' '); p++) {
            depth += *p == '[' ? 1 : *p == ']' ? -1 : 0;
            if (w < 127)
                tok[n][w++] = *p;
        }
        tok[n++][w] = '\0';
    }
    return n;
}

/* ---- Tab ----------------------------------------------------------- */

#define NOWNWORDS 32

struct matches {
    const char *word[MAX_METHODS + 64];
    char own[NOWNWORDS][64]; /* words made here ("cpu" of "cpu|heap") */
    size_t n, nown;
};

static void
add(struct matches *m, const char *prefix, const char *w)
{
    size_t i;

    if (strncmp(w, prefix, strlen(prefix)) != 0 ||
        m->n >= sizeof(m->word) / sizeof(m->word[0]))
        return;
    for (i = 0; i < m->n; i++)
        if (strcmp(m->word[i], w) == 0)
            return;
    m->word[m->n++] = w;
}

/* The choices "a|b|c" of a usage token, as words. */
static void
add_choices(struct matches *m, const char *prefix, const char *tok)
{
    const char *p = tok, *e;

    if (strchr(tok, '|') == NULL || tok[0] == '[')
        return;
    while (*p != '\0' && m->nown < NOWNWORDS) {
        e = p + strcspn(p, "|");
        snprintf(m->own[m->nown], sizeof(m->own[0]), "%.*s", (int)(e - p), p);
        add(m, prefix, m->own[m->nown++]);
        p = *e == '|' ? e + 1 : e;
    }
}

static void
add_commands(struct matches *m, const char *prefix)
{
    const char *const *names = folio_cli_command_names();
    size_t i;

    for (i = 0; names[i] != NULL; i++)
        add(m, prefix, names[i]);
    for (i = 0; i < NOWN; i++)
        add(m, prefix, own[i][0]);
}

/* cli.c's long options, "--json"... (made here: the table has no dashes). */
static void
add_options(struct matches *m, const char *prefix)
{
    const char *shorts;
    const struct option *o = folio_cli_options(&shorts);

    for (; o->name != NULL && m->nown < NOWNWORDS; o++) {
        snprintf(m->own[m->nown], sizeof(m->own[0]), "--%s", o->name);
        add(m, prefix, m->own[m->nown++]);
    }
}

/* What may come at the end of the line before the cursor. */
static void
candidates(struct repl *r, char words[][128], int n, int trailing,
           struct matches *m)
{
    const char *prefix = trailing || n == 0 ? "" : words[n - 1];
    int done = trailing ? n : n - 1, at = command_at(words, done), arg;
    char tok[16][128];
    const struct cmd *c;
    size_t i, n2, nt;

    if (prefix[0] == '-') {
        add_options(m, prefix);
        return;
    }
    if (done > 0 && is_valued(words[done - 1]))
        return; /* the value of an option: nothing to offer */
    if (at == done) {
        add_commands(m, prefix);
        return;
    }
    arg = done - at - 1; /* the argument being typed, from 0 */
    if (is_group(words[at])) {
        const struct cmd *t = folio_cli_commands(&n2);

        if (arg == 0)
            for (i = 0; i < n2; i++)
                if (strcmp(t[i].name, words[at]) == 0)
                    add(m, prefix, t[i].sub);
        return;
    }
    if (strcmp(words[at], "help") == 0) {
        if (arg == 0)
            add_commands(m, prefix);
        return;
    }
    if (strcmp(words[at], "call") == 0) {
        if (arg == 0) {
            fetch_methods(r);
            for (i = 0; i < r->nmethods; i++)
                add(m, prefix, r->method[i]);
        }
        return;
    }
    if ((c = find(words[at], NULL)) == NULL)
        return;
    nt = (size_t)usage_tokens(c, tok, 16);
    if ((size_t)arg < nt)
        add_choices(m, prefix, tok[arg]);
}

static void
list_matches(const struct matches *m)
{
    size_t i, col = 0, w;

    putchar('\n');
    for (i = 0; i < m->n; i++) {
        w = strlen(m->word[i]) + 2;
        if (col > 0 && col + w > 78) {
            putchar('\n');
            col = 0;
        }
        printf("%s  ", m->word[i]);
        col += w;
    }
    putchar('\n');
    fflush(stdout);
}

static unsigned char
complete(EditLine *el, int ch)
{
    const LineInfo *li = el_line(el);
    char words[MAX_WORDS][128], add_text[256];
    struct matches m;
    struct repl *r;
    size_t plen, common, i;
    int n, trailing;

    (void)ch;
    el_get(el, EL_CLIENTDATA, &r);
    memset(&m, 0, sizeof(m));
    n = split(li->buffer, (size_t)(li->cursor - li->buffer), words, &trailing);
    candidates(r, words, n, trailing, &m);
    if (m.n == 0)
        return CC_REFRESH_BEEP;
    plen = trailing || n == 0 ? 0 : strlen(words[n - 1]);
    /* What every match shares past what is typed. */
    common = strlen(m.word[0]);
    for (i = 1; i < m.n; i++) {
        size_t k = 0;

        while (k < common && m.word[i][k] == m.word[0][k])
            k++;
        common = k;
    }
    if (m.n == 1) {
        /* A method's family ("corpus.") goes on; a word ends. */
        snprintf(add_text, sizeof(add_text), "%s%s", m.word[0] + plen,
                 m.word[0][strlen(m.word[0]) - 1] == '.' ? "" : " ");
        el_insertstr(el, add_text);
        return CC_REFRESH;
    }
    if (common > plen) {
        snprintf(add_text, sizeof(add_text), "%.*s", (int)(common - plen),
                 m.word[0] + plen);
        el_insertstr(el, add_text);
        return CC_REFRESH;
    }
    list_matches(&m);
    return CC_REDISPLAY;
}

/* ---- hints ---------------------------------------------------------- */

/*
 * What the command of the line takes next, for the right prompt: its
 * subcommands, or the rest of its usage once the arguments typed are
 * dropped (optional and repeated ones stay); a method's signature after
 * `call METHOD`.  Empty while a word is being typed.
 */
static void
make_hint(struct repl *r, const char *line, size_t len)
{
    char words[MAX_WORDS][128], tok[16][128];
    int n, trailing, at, args, nt, i, skip;
    const struct cmd *c;
    size_t k, used = 0;

    r->hint[0] = '\0';
    n = split(line, len, words, &trailing);
    if (n == 0 || !trailing || (at = command_at(words, n)) == n)
        return;
    args = n - at - 1;
    if (is_group(words[at])) {
        size_t nc;
        const struct cmd *t = folio_cli_commands(&nc);

        if (args == 0) {
            for (k = 0; k < nc && used < sizeof(r->hint); k++)
                if (strcmp(t[k].name, words[at]) == 0)
                    used +=
                        (size_t)snprintf(r->hint + used, sizeof(r->hint) - used,
                                         "%s%s", used > 0 ? "|" : "", t[k].sub);
            return;
        }
        c = find(words[at], words[at + 1]);
        args--;
    } else {
        c = find(words[at], NULL);
    }
    if (c == NULL)
        return;
    if (strcmp(c->name, "call") == 0 && args == 1) {
        fetch_methods(r);
        for (k = 0; k < r->nmethods; k++)
            if (strcmp(r->method[k], words[at + 1]) == 0)
                snprintf(r->hint, sizeof(r->hint), "[JSON-PARAMS] %s",
                         r->signature[k]);
        if (r->hint[0] != '\0')
            return;
    }
    nt = usage_tokens(c, tok, 16);
    /* The arguments typed take the leading tokens, up to a repeated one
     * (ITEM...) or the optional ones ([--limit N]). */
    for (skip = 0; skip < args && skip < nt && tok[skip][0] != '[' &&
                   strstr(tok[skip], "...") == NULL;
         skip++)
        ;
    for (i = skip; i < nt && used < sizeof(r->hint); i++)
        used += (size_t)snprintf(r->hint + used, sizeof(r->hint) - used, "%s%s",
                                 used > 0 ? " " : "", tok[i]);
}

static char *
hint_text(EditLine *el)
{
    const LineInfo *li = el_line(el);
    struct repl *r;

    el_get(el, EL_CLIENTDATA, &r);
    make_hint(r, li->buffer, (size_t)(li->lastchar - li->buffer));
    return r->hint;
}

/* Space: a word ends; the line is redrawn, and with it the hint. */
static unsigned char
space(EditLine *el, int ch)
{
    (void)ch;
    el_insertstr(el, " ");
    return CC_REFRESH;
}

/* ---- the mode's own commands -------------------------------------- */

static void
help(void)
{
    size_t i, n;
    const struct cmd *t = folio_cli_commands(&n);

    puts("Commands, as on the command line without \"folio\" and its "
         "options:");
    for (i = 0; i < n; i++)
        if (strcmp(t[i].name, "help") != 0)
            printf("  %s\n", t[i].usage);
    puts("\nAnd the interactive mode's own:");
    for (i = 0; i < NOWN; i++)
        printf("  %-6s %s\n", own[i][0], own[i][1]);
    puts("\nA line may start with options: --json ping, -r 3 -i 1 ping, "
         "--latency.\nTab completes commands, subcommands, methods (call), "
         "choices and options;\nthe hint at the right says what a command "
         "takes next.  help COMMAND for more.");
}

/* A line of the mode's own (help alone, clear, help quit...): 1 if it was. */
static int
own_line(int argc, char **argv)
{
    size_t i;

    if (strcmp(argv[0], "help") == 0 && argc == 1) {
        help();
        return 1;
    }
    if (strcmp(argv[0], "clear") == 0 && argc == 1) {
        if (isatty(STDOUT_FILENO))
            fputs("\033[H\033[2J", stdout);
        return 1;
    }
    if (strcmp(argv[0], "help") == 0 && argc == 2)
        for (i = 0; i < NOWN; i++)
            if (strcmp(argv[1], own[i][0]) == 0 &&
                strcmp(argv[1], "help") != 0) {
                printf("%s: %s\n", own[i][0], own[i][1]);
                return 1;
            }
    return 0;
}

/* ---- the loop ------------------------------------------------------- */

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

static int
editor_open(struct repl *r, char *hbuf, size_t hlen)
{
    if ((r->el = el_init("folio", stdin, stdout, stderr)) == NULL ||
        (r->hist = history_init()) == NULL)
        return -1;
    history(r->hist, &r->ev, H_SETSIZE, HISTORY_LINES);
    if ((r->histfile = history_file(hbuf, hlen)) != NULL)
        history(r->hist, &r->ev, H_LOAD, r->histfile);
    el_set(r->el, EL_CLIENTDATA, r);
    el_set(r->el, EL_EDITOR, "emacs");
    el_set(r->el, EL_SIGNAL, 1);
    el_set(r->el, EL_HIST, history, r->hist);
    el_set(r->el, EL_PROMPT, prompt_text);
    el_set(r->el, EL_RPROMPT, hint_text);
    /* el_wset: el_set's EL_ADDFN copies the names and never frees them. */
    el_wset(r->el, EL_ADDFN, L"folio-complete", L"complete the word", complete);
    el_set(r->el, EL_BIND, "^I", "folio-complete", NULL);
    el_wset(r->el, EL_ADDFN, L"folio-space", L"a space, and the hint", space);
    el_set(r->el, EL_BIND, " ", "folio-space", NULL);
    el_source(r->el, NULL); /* ~/.editrc */
    return 0;
}

static void
editor_close(struct repl *r)
{
    size_t i;

    if (r->el != NULL)
        el_end(r->el);
    if (r->hist != NULL)
        history_end(r->hist);
    for (i = 0; i < r->nmethods; i++) {
        free(r->method[i]);
        free(r->signature[i]);
    }
}

/* One line of input: malloc'ed, without its newline; NULL at the end. */
static char *
next_line(struct repl *r)
{
    const char *s;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int count;

    if (r->el != NULL) {
        if ((s = el_gets(r->el, &count)) == NULL || count <= 0)
            return NULL;
        n = (ssize_t)strcspn(s, "\n");
        return strndup(s, (size_t)n);
    }
    errno = 0;
    if ((n = getline(&line, &cap, stdin)) < 0) {
        free(line);
        return NULL;
    }
    if (n > 0 && line[n - 1] == '\n')
        line[n - 1] = '\0';
    return line;
}

/* A line of the interactive mode: a command line of its own. */
static int
run_line(struct repl *r, int argc, char **argv)
{
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
    line_cli(r->session, &line);
    st = folio_cli_run_args(&line, argc + 1, av);
    free(av);
    /* What the session's server did, for the prompt (not the admin
     * socket's, nor a line that never got to it). */
    if (!line.admin && line.target != NULL)
        r->connected = st != FOLIO_CLI_ECONN;
    return st;
}

int
folio_cli_interactive(struct cli *cli)
{
    int tty = isatty(STDIN_FILENO), st = FOLIO_CLI_OK, argc, rc;
    char hbuf[4096], *line, **argv;
    struct repl r;

    memset(&r, 0, sizeof(r));
    cli->admin = 0;
    r.session = cli;
    if (tty && editor_open(&r, hbuf, sizeof(hbuf)) != 0) {
        editor_close(&r);
        memset(&r, 0, sizeof(r));
        r.session = cli;
    }
    if (r.el != NULL) {
        r.connected = reachable(&r);
        set_prompt(&r);
    }
    while ((line = next_line(&r)) != NULL) {
        rc = folio_cli_words(line, &argv, &argc);
        if (r.el != NULL && line[strspn(line, " \t")] != '\0') {
            history(r.hist, &r.ev, H_ENTER, line);
            if (r.histfile != NULL) /* each line: a kill loses none */
                history(r.hist, &r.ev, H_SAVE, r.histfile);
        }
        free(line);
        if (rc == -1) {
            fprintf(stderr, "folio: out of memory\n");
            st = FOLIO_CLI_ECONN;
            break;
        }
        if (rc == -2) {
            fprintf(stderr, "folio: a quote that does not end\n");
            st = FOLIO_CLI_EUSAGE;
            continue;
        }
        if (argc == 0 || argv[0][0] == '#') {
            folio_cli_words_free(argv);
            /* An empty line while the server is away: try it again. */
            if (r.el != NULL && !r.connected) {
                r.connected = reachable(&r);
                set_prompt(&r);
            }
            continue;
        }
        if (strcmp(argv[0], "quit") == 0 || strcmp(argv[0], "exit") == 0) {
            folio_cli_words_free(argv);
            break;
        }
        if (own_line(argc, argv))
            st = FOLIO_CLI_OK;
        else
            st = run_line(&r, argc, argv);
        folio_cli_words_free(argv);
        fflush(stdout);
        if (r.el != NULL)
            set_prompt(&r);
    }
    if (r.el != NULL && line == NULL)
        putchar('\n'); /* after the prompt that Ctrl-D ended */
    editor_close(&r);
    return st;
}
