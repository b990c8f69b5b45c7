/*
 * help.h - what each command of folio does, for `folio help CMD` and
 * `folio CMD --help`: the text after its usage line.  Included by cli.c
 * alone, into its table of commands.
 */
#ifndef FOLIO_CLI_HELP_H
#define FOLIO_CLI_HELP_H

#define H_COUNT                                                                \
    "The number of lines of the corpus that contain QUERY, ASCII case\n"       \
    "ignored, as shakesapp counts them (corpus.match_count).\n\n"              \
    "  folio count 'to be, or not to be'        # 1\n"
#define H_SEARCH                                                               \
    "The lines of the corpus that contain QUERY (corpus.search), each as\n"    \
    "WORK:LINE: TEXT, then how many lines match.  --limit N shows at most N\n" \
    "(default 10, at most 1000; 0: the count alone), --offset N skips the\n"   \
    "first N.\n\n"                                                             \
    "  folio search insolence --limit 3\n"
#define H_QUOTE                                                                \
    "Every carrier's price and delivery time for a cart to a CEP\n"            \
    "(freight.quote), cheapest first.  CEP is NNNNN-NNN or NNNNNNNN;\n"        \
    "an ITEM is SKU[:QTY] (weight, size and price from the catalog) or\n"      \
    "WEIGHTg[/LxWxH][:QTY] (grams, centimetres); QTY is 1 by default.\n\n"     \
    "  folio quote 01310-100 BOOK-00001:2 1200g/30x20x10\n"
#define H_COMMENTS_LIST                                                        \
    "The comments of the page PATH, oldest first (comments.list).  Paths\n"    \
    "are normalized as mouthful does: blog/post and /blog/post/ are one\n"     \
    "page, and that page is the one named.\n\n"                                \
    "  folio comments list /blog/hello\n"
#define H_COMMENTS_POST                                                        \
    "Post a comment by AUTHOR on the page PATH (comments.post); it is on\n"    \
    "disk when folio prints it.  BODY '-' is read from standard input.\n"      \
    "It carries an idempotency key (a random one, or --idempotency-key\n"      \
    "KEY) and is sent again, up to --retries N times (default 5; 0: once,\n"   \
    "no key), when the server is unavailable or the connection fails\n"        \
    "before the answer: a retry gets the comment stored first, never a\n"      \
    "second one.\n\n"                                                          \
    "  folio comments post /blog/hello alice 'Nice post!'\n"
#define H_COMMENTS_DELETE                                                      \
    "Delete the comment ID (comments.delete): an admin method, sent to the\n"  \
    "admin socket (-U SOCKET, else $FOLIO_ADMIN).\n\n"                         \
    "  folio -U /tmp/folio/admin.sock comments delete 7\n"
#define H_STATS                                                                \
    "The server's counters (server.stats), from the admin socket (-U\n"        \
    "SOCKET, else $FOLIO_ADMIN): a row per worker process (requests,\n"        \
    "req/s, CPU%, allocations per request, heap, connections), the totals,\n"  \
    "and each method's calls, errors and latency.  --watch SEC shows them\n"   \
    "again every SEC seconds, with rates over the interval, until Ctrl-C.\n\n" \
    "  folio -U /tmp/folio/admin.sock stats --watch 2\n"
#define H_PING                                                                 \
    "server.ping, and how long the answer took.  folio --latency pings on\n"   \
    "and on (min, avg, max, then a histogram).\n\n"                            \
    "  folio ping                  # pong from 127.0.0.1:7788 in 0.05 ms\n"    \
    "  folio -r 5 -i 1 ping        # five times, a second apart\n"
#define H_METHODS                                                              \
    "The methods the server serves and their signatures (server.methods).\n"
#define H_CALL                                                                 \
    "Call METHOD with JSON-PARAMS, a JSON array of the params (another\n"      \
    "value is the one param; '-' reads them from standard input), and print\n" \
    "the result as JSON.  {\"$bin\": BASE64} packs a bin, {\"$ext\": [TYPE,\n" \
    "BASE64]} an ext.  Admin methods go to the admin socket.\n\n"              \
    "  folio call corpus.search '[\"hello\", {\"limit\": 1}]'\n"
#define H_HELP                                                                 \
    "The options and the commands, or what COMMAND does.\n\n"                  \
    "  folio help quote\n"

#endif
