#!/usr/bin/env python3
# tests/fuzz/gen-seeds-http.py - write the seed corpora of the HTTP face's
# fuzz targets: tests/fuzz/http/ (a connection's bytes for fuzz_http.c:
# one byte choosing the read size, then requests) and tests/fuzz/json/
# (request bodies for fuzz_json.c), and their dictionaries.  The requests
# are the ones the case studies' clients send (curl, hey, mouthful's
# widget, JMeter) and the hostile ones the issue names.
# Run from the source tree: python3 tests/fuzz/gen-seeds-http.py
# The seeds are committed; this script says where they came from.
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def req(method, target, headers=(), body=b"", version="HTTP/1.1"):
    if isinstance(body, str):
        body = body.encode()
    lines = ["%s %s %s" % (method, target, version)]
    lines += ["%s: %s" % h for h in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


HOST = ("Host", "localhost:7780")
BATCH = ('[{"jsonrpc":"2.0","method":"server.ping","id":1},'
         '{"jsonrpc":"2.0","method":"corpus.info","id":"b"}]')
CASE_STUDY = '{"path": "/test","body": "this is just a test","author": "vik"}'
WIDGET = ('{"Body":"Nice post!","Author":"reader","Path":"/blog/post.html",'
          '"ReplyTo":null}')

http = {
    "curl-get": req("GET", "/v1/comments?uri=/test", [
        HOST, ("User-Agent", "curl/7.88.1"), ("Accept", "*/*")]),
    "curl-post": req("POST", "/v1/comments", [
        HOST, ("User-Agent", "curl/7.88.1"), ("content-type",
                                               "application/json"),
        ("Content-Length", str(len(CASE_STUDY)))], CASE_STUDY),
    "hey-keepalive": req("GET", "/v1/comments?uri=/test", [
        HOST, ("User-Agent", "hey/0.0.1"), ("Accept-Encoding", "gzip")]) * 3,
    "widget-post": req("POST", "/v1/comments", [
        HOST, ("Origin", "http://blog.example"),
        ("Content-Type", "text/plain;charset=UTF-8"),
        ("Content-Length", str(len(WIDGET)))], WIDGET),
    "preflight": req("OPTIONS", "/v1/comments", [
        HOST, ("Origin", "http://blog.example"),
        ("Access-Control-Request-Method", "POST"),
        ("Access-Control-Request-Headers", "content-type,idempotency-key")]),
    "status-10": req("GET", "/status", [], version="HTTP/1.0"),
    "status-10-keepalive": req("GET", "/status", [
        ("Connection", "Keep-Alive")], version="HTTP/1.0"),
    "close": req("GET", "/status", [HOST, ("Connection", "close")]),
    "rpc-batch": req("POST", "/rpc", [HOST, ("Content-Length",
                                             str(len(BATCH)))], BATCH),
    "freight-get": req("GET", "/v1/freight/quote?cep=01310-100&sku=SKU-1:2"
                       "&sku=SKU-2:1", [HOST]),
    "search": req("GET", "/v1/corpus/search?q=to+be&limit=5&offset=1",
                  [HOST]),
    "absolute": req("GET", "http://localhost:7780/status?x=%41", [HOST]),
    "asterisk": req("OPTIONS", "*", [HOST]),
    "chunked": req("POST", "/rpc", [HOST, ("Transfer-Encoding", "chunked")],
                   "1a;ext=1\r\n" '{"jsonrpc":"2.0","method":"'
                   "\r\n1c\r\n" 'server.ping","params":[],"id"'
                   "\r\n3\r\n:1}\r\n0\r\nX-Trailer: t\r\n\r\n"),
    "chunked-lf": b"POST / HTTP/1.1\nHost: h\nTransfer-Encoding: chunked\n\n"
                  b"3\nabc\n0\n\n",
    "expect": req("POST", "/v1/comments", [
        HOST, ("Expect", "100-continue"),
        ("Content-Length", str(len(CASE_STUDY)))], CASE_STUDY),
    "idempotency": req("POST", "/v1/comments", [
        HOST, ("Idempotency-Key", "9f1c-2b"),
        ("Content-Length", str(len(CASE_STUDY)))], CASE_STUDY),
    "leading-crlf": b"\r\n\r\n" + req("GET", "/status", [HOST]),
    "smuggle-cl-te": req("POST", "/", [HOST, ("Content-Length", "4"),
                                       ("Transfer-Encoding", "chunked")],
                         "0\r\n\r\n"),
    "smuggle-te-cl": req("POST", "/", [HOST, ("Transfer-Encoding", "chunked"),
                                       ("Content-Length", "4")], "0\r\n\r\n"),
    "two-cl": req("POST", "/", [HOST, ("Content-Length", "1"),
                                ("Content-Length", "2")], "ab"),
    "bad-cl": req("POST", "/", [HOST, ("Content-Length", "1x")], "a"),
    "te-gzip": req("POST", "/", [HOST, ("Transfer-Encoding", "gzip")]),
    "te-10": req("POST", "/", [("Transfer-Encoding", "chunked")], "0\r\n\r\n",
                 version="HTTP/1.0"),
    "obs-fold": b"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n  b\r\n\r\n",
    "space-colon": b"GET / HTTP/1.1\r\nHost : h\r\n\r\n",
    "bare-cr": b"GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n",
    "no-host": req("GET", "/", []),
    "http2": req("GET", "/", [HOST], version="HTTP/2.0"),
    "long-uri": req("GET", "/" + "a" * 300, [HOST]),
    "many-headers": req("GET", "/", [HOST] + [("X-%d" % i, "v")
                                              for i in range(20)]),
    "big-header": req("GET", "/", [HOST, ("X", "v" * 1100)]),
    "big-body": req("POST", "/", [HOST, ("Content-Length", "4096")],
                    "x" * 4096),
    "chunk-overflow": req("POST", "/", [HOST, ("Transfer-Encoding",
                                               "chunked")],
                          "ffffffffffffffffff\r\n"),
    "slow-one-byte": b"G",
    "garbage": bytes(range(256)),
}
for name, data in http.items():
    # The first byte chooses the size of each read: 1 and 7 bytes.
    write("http", name, b"\x00" + data)
    write("http", name + "-7", b"\x06" + data)

json = {
    "case-study": CASE_STUDY,
    "widget": WIDGET,
    "widget-reply": '{"Body":"+1","Author":"a","Path":"/p","ReplyTo":"12",'
                    '"Email":null}',
    "honeypot": '{"path":"/p","body":"spam","author":"bot",'
                '"email":"bot@example.com"}',
    "repeated": '{"body":"a","Body":"b","BODY":"c"}',
    "xss": '{"path":"/p","author":"x","body":"<script>alert(1)</script>'
           '<img src=x onerror=alert(2)> & \' \\""}',
    "rpc": '{"jsonrpc":"2.0","method":"corpus.match_count",'
           '"params":["hello"],"id":1}',
    "rpc-named": '{"jsonrpc":"2.0","method":"corpus.search","params":'
                 '{"query":"to be","opts":{"limit":2}},"id":"x"}',
    "rpc-batch": '[{"jsonrpc":"2.0","method":"server.ping","id":1},'
                 '{"jsonrpc":"2.0","method":"server.ping"},5,[],'
                 '{"jsonrpc":"1.0","method":1,"id":[1]}]',
    "freight": '{"cep":"01310-100","items":[{"sku":"SKU-1","qty":2},'
               '{"weight_g":1500,"qty":1,"length_cm":30,"width_cm":20,'
               '"height_cm":10,"price_cents":12990}]}',
    "numbers": '[0,-0,1,-1,127,128,-32,-33,255,256,65535,65536,4294967295,'
               '4294967296,9223372036854775807,-9223372036854775808,'
               '18446744073709551615,18446744073709551616,1.5,-2.25e-3,1E400,'
               '0.1,1e-400,3.141592653589793]',
    "strings": '["","\\"\\\\\\/\\b\\f\\n\\r\\t","\\u0000\\u00e9\\u20ac",'
               '"\\ud83d\\ude00","caf\u00e9","\\u2028"]',
    "lone-surrogate": '"\\ud800"',
    "deep": "[" * 20 + "]" * 20,
    "bad-utf8": b'"\xff\xc0\xaf\xed\xa0\x80"',
    "literals": '[true,false,null]',
    "trailing": '{"a":1} x',
    "empty": "",
}
for name, data in json.items():
    write("json", name, data)


def dict_entry(tok):
    """A libFuzzer dictionary line: backslash, quote and xNN escapes."""
    out = ""
    for ch in tok:
        if ch in '\\"':
            out += "\\" + ch
        elif " " <= ch <= "~":
            out += ch
        else:
            out += "\\x%02x" % ord(ch)
    return '"%s"\n' % out


with open(os.path.join(HERE, "http.dict"), "w") as f:
    for tok in ["GET ", "POST ", "OPTIONS ", "HEAD ", " HTTP/1.1\r\n",
                " HTTP/1.0\r\n", "\r\n", "\r\n\r\n", "Host: ",
                "Content-Length: ", "Transfer-Encoding: chunked",
                "Connection: close", "Connection: keep-alive",
                "Expect: 100-continue", "Origin: ", "Idempotency-Key: ",
                "0\r\n\r\n", "%2F", "?uri=", "&", "http://"]:
        f.write(dict_entry(tok))
with open(os.path.join(HERE, "json.dict"), "w") as f:
    for tok in ["{", "}", "[", "]", ":", ",", "true", "false", "null",
                '"', "\\u", "\\ud800", "\\udc00", "1e", ".", "-",
                '"jsonrpc"', '"2.0"', '"method"', '"params"', '"id"',
                '"path"', '"Body"', '"author"', '"replyTo"', '"email"']:
        f.write(dict_entry(tok))
