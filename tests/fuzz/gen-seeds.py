#!/usr/bin/env python3
# tests/fuzz/gen-seeds.py - write the seed corpora of the fuzz targets:
# valid requests of every method and the edge cases PROTOCOL.md section 1
# names, in the input format each target reads (see tests/fuzz_*.c).
# Run from the source tree: python3 tests/fuzz/gen-seeds.py
# The seeds are committed; this script says where they came from.
# (tests/fuzz/conf/ is hand-written: the installed foliod.conf, every kind
# of value, quoting and escapes, and one file per kind of error.)
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))


def pack(v):
    """A small msgpack encoder (no dependency): None, bool, int, str,
    bytes, list, dict, and Raw for bytes written as they are."""
    if isinstance(v, Raw):
        return v.b
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v <= 0x7F:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        if 0 <= v <= 0xFF:
            return b"\xcc" + struct.pack(">B", v)
        if 0 <= v <= 0xFFFF:
            return b"\xcd" + struct.pack(">H", v)
        if 0 <= v <= 0xFFFFFFFF:
            return b"\xce" + struct.pack(">I", v)
        if v >= 0:
            return b"\xcf" + struct.pack(">Q", v)
        if v >= -128:
            return b"\xd0" + struct.pack(">b", v)
        if v >= -32768:
            return b"\xd1" + struct.pack(">h", v)
        if v >= -(2**31):
            return b"\xd2" + struct.pack(">i", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        v = v.encode("utf-8", "surrogateescape")
        n = len(v)
        if n < 32:
            return bytes([0xA0 | n]) + v
        if n < 256:
            return b"\xd9" + bytes([n]) + v
        if n < 65536:
            return b"\xda" + struct.pack(">H", n) + v
        return b"\xdb" + struct.pack(">I", n) + v
    if isinstance(v, bytes):
        n = len(v)
        if n < 256:
            return b"\xc4" + bytes([n]) + v
        return b"\xc5" + struct.pack(">H", n) + v
    if isinstance(v, (list, tuple)):
        n = len(v)
        h = bytes([0x90 | n]) if n < 16 else b"\xdc" + struct.pack(">H", n)
        return h + b"".join(pack(x) for x in v)
    if isinstance(v, dict):
        n = len(v)
        h = bytes([0x80 | n]) if n < 16 else b"\xde" + struct.pack(">H", n)
        return h + b"".join(pack(k) + pack(x) for k, x in v.items())
    raise TypeError(type(v))


class Raw:
    def __init__(self, b):
        self.b = b


def req(msgid, method, params):
    return pack([0, msgid, method, params])


def note(method, params):
    return pack([2, method, params])


def write(target, name, data):
    d = os.path.join(HERE, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# Every method's valid calls, as params arrays.
CALLS = [
    ("server.ping", []),
    ("server.methods", []),
    ("server.stats", []),
    ("corpus.match_count", ["hello"]),
    ("corpus.match_count", ["To Be"]),
    ("corpus.search", ["the", {"limit": 3, "offset": 1}]),
    ("corpus.search", ["a", {"limit": 1000}]),
    ("corpus.search", ["world", None]),
    ("corpus.info", []),
    ("freight.quote", ["01310-100", [{"sku": "BOOK-00001", "qty": 2}]]),
    ("freight.quote", [1310100, [{"weight_g": 500, "qty": 1, "length_cm": 30,
                                  "width_cm": 20, "height_cm": 10,
                                  "price_cents": 9990}]]),
    ("freight.quote", ["20040002", [{"sku": "BOOK-00002", "qty": 1},
                                    {"weight_g": 40000, "qty": 3}]]),
    ("freight.quote", ["99999-999", [{"weight_g": 1, "qty": 1}]]),
    ("freight.info", []),
    ("comments.post", [{"path": "/a/b", "author": "ana", "body": "hi\nthere"}]),
    ("comments.list", ["/a/b"]),
    ("comments.list", ["a/b.html"]),
    ("comments.delete", [1]),
]

# ---- fuzz_rpc: control byte, then the client's bytes ----
# control: bit0 admin, bit1 slow reader, bits2-4 write size 4^k, bits5-7
# bytes handed over first (0, 4^k).
ADMIN, SLOW = 1, 2


def ctl(admin=0, slow=0, chunk=7, first=0):
    return bytes([admin | slow << 1 | chunk << 2 | first << 5])


for i, (m, p) in enumerate(CALLS):
    write("rpc", "call-%02d-%s" % (i, m), ctl(ADMIN) + req(i + 1, m, p))
write("rpc", "all-methods-pipelined",
      ctl(ADMIN) + b"".join(req(i, m, p) for i, (m, p) in enumerate(CALLS)))
write("rpc", "all-methods-byte-by-byte",
      ctl(ADMIN, chunk=0, first=1)
      + b"".join(req(i, m, p) for i, (m, p) in enumerate(CALLS)))
write("rpc", "stats-not-admin", ctl() + req(7, "server.stats", []))
write("rpc", "pings-slow-reader",
      ctl(slow=1, chunk=5) + b"".join(req(i, "server.ping", []) for i in range(300)))
write("rpc", "search-slow-reader",
      ctl(slow=1, chunk=6) + b"".join(
          req(i, "corpus.search", ["e", {"limit": 1000}]) for i in range(8)))
write("rpc", "notifications",
      ctl() + note("server.ping", []) + note("no.such", []) +
      note("corpus.search", ["a"]) + req(9, "server.ping", []))
write("rpc", "unknown-method", ctl() + req(1, "no.such", []))
write("rpc", "wrong-arity", ctl() + req(1, "server.ping", [1, 2]))
write("rpc", "params-not-array", ctl() + pack([0, 4242, "server.ping", {}]))
write("rpc", "response-to-server", ctl() + pack([1, 31, [3, "x"], None]))
write("rpc", "msgid-too-big", ctl() + pack([0, 2**32, "server.ping", []]))
write("rpc", "msgid-negative", ctl() + pack([0, -1, "server.ping", []]))
write("rpc", "msgid-2p64-1", ctl() + pack([0, 2**64 - 1, "server.ping", []]))
write("rpc", "search-duplicate-option",
      ctl() + req(1, "corpus.search", ["the", Raw(b"\x82\xa5limit\x01\xa5limit\x02")]))
write("rpc", "search-option-not-utf8",
      ctl() + req(1, "corpus.search", ["the", {"\udcff\udcfe": 1}]))
write("rpc", "search-option-euros",
      ctl() + req(1, "corpus.search", ["hello", {"\u20ac" * 30: 1}]))
write("rpc", "not-array", ctl() + pack(7))
write("rpc", "type-3", ctl() + pack([3, 1, "server.ping", []]))
write("rpc", "str-4gib", ctl() + b"\x94\x00\x05\xdb\xff\xff\xff\xff")
write("rpc", "array-2p32", ctl() + b"\x94\x00\x06\xa1x\xdd\xff\xff\xff\xff")
write("rpc", "map-2p32", ctl() + b"\x94\x00\x06\xa1x\xdf\xff\xff\xff\xff")
write("rpc", "bin-4gib", ctl() + b"\x94\x00\x05\xc6\xff\xff\xff\xff")
write("rpc", "ext-4gib", ctl() + b"\x94\x00\x05\xc9\xff\xff\xff\xff\x01")
write("rpc", "deep-10000", ctl() + b"\x94\x00\x06\xa1x" + b"\x91" * 10000)
write("rpc", "deep-maps", ctl() + b"\x94\x00\x06\xa1x" + b"\x81\xa1k" * 100)
write("rpc", "truncated", ctl() + req(3, "corpus.search", ["to be", {"limit": 3}])[:-4])
write("rpc", "garbage-after-valid",
      ctl() + req(1, "server.ping", []) + b"\xc1\xc1\xc1GET / HTTP/1.1\r\n")
write("rpc", "http-request", ctl() + b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
write("rpc", "c1", ctl() + b"\xc1")
write("rpc", "too-big-message",
      ctl(chunk=6) + req(1, "corpus.match_count", ["x" * 9000]))
write("rpc", "method-binary-name", ctl() + pack([0, 1, "\x00\xff\n", []]))
write("rpc", "method-bin", ctl() + pack([0, 1, b"server.ping", []]))
write("rpc", "fixext-params",
      ctl() + b"\x94\x00\x01\xabserver.ping\x92\xd4\x01\x00\xc7\x01\x02\x00")
write("rpc", "floats-params",
      ctl() + req(1, "corpus.search", ["a", {"limit": 2.5}]))
write("rpc", "handoff-split",
      ctl(first=2, chunk=1) + req(1, "server.ping", []) + req(2, "corpus.info", []))

# ---- fuzz_corpus: mode byte, then a query or a params array ----
for name, q in [("hello", b"hello"), ("to-be", b"to be, or not to be"),
                ("a", b"a"), ("aa", b"aa"), ("newline", b"\n"),
                ("cr", b"\r"), ("utf8", "café".encode()),
                ("high-bytes", b"\xff\xfe"), ("upper", b"WORLD"),
                ("end", b"e\nt"), ("long", b"ab" * 600),
                ("max", b"a" * 1024), ("over", b"a" * 1025), ("empty", b"")]:
    write("corpus", "query-" + name, b"\x00\x02\x05" + q)
write("corpus", "query-limit0", b"\x00\x00\x00a")
write("corpus", "query-offset-past", b"\x00\xff\x10a")
CORPUS_CALLS = [
    (1, ["hello"]), (1, [""]), (1, [7]), (1, ["a" * 1025]), (1, [None]),
    (2, ["the", {"limit": 3, "offset": 1}]), (2, ["a", {"limit": 1000}]),
    (2, ["a", {"limit": 1001}]), (2, ["a", {"offset": 2**63}]),
    (2, ["a", {"bogus": 1}]), (2, ["a", {"limit": -1}]), (2, ["a", []]),
    (2, ["a", None]), (2, ["a", {1: 2}]), (2, ["a", {"limit": 1, "limit": 2}]),
    (3, []),
]
for i, (mode, params) in enumerate(CORPUS_CALLS):
    write("corpus", "call-%02d" % i, bytes([mode]) + pack(params))

# ---- fuzz_freight: mode byte, then params, a CEP, or CSV ----
QUOTES = [
    ["01310-100", [{"sku": "BOOK-00001", "qty": 2}]],
    [1310100, [{"weight_g": 500, "qty": 1, "length_cm": 30, "width_cm": 20,
                "height_cm": 10, "price_cents": 9990}]],
    ["20040002", [{"sku": "BOOK-00002", "qty": 1}, {"weight_g": 4000, "qty": 3}]],
    ["99999-999", [{"weight_g": 1, "qty": 1}]],
    ["01310-100", [{"weight_g": 100000000, "qty": 10000}]],
    ["01310-100", [{"weight_g": 1, "qty": 1, "length_cm": 100000,
                    "width_cm": 100000, "height_cm": 100000}] * 3],
    ["01310-100", [{"weight_g": 1, "qty": 0}]],
    ["01310-100", [{"sku": "NOPE", "qty": 1}]],
    ["01310-100", [{"sku": "BOOK-00001", "qty": 1, "weight_g": 2}]],
    ["01310-100", [{"qty": 1}]],
    ["01310-100", [{"weight_g": 1, "qty": 1, "qty": 2}]],
    ["01310-100", []],
    ["01310-100", [7]],
    ["0131-0100", [{"weight_g": 1, "qty": 1}]],
    [-1, [{"weight_g": 1, "qty": 1}]],
    [100000000, [{"weight_g": 1, "qty": 1}]],
    [None, None],
]
for i, params in enumerate(QUOTES):
    write("freight", "quote-%02d" % i, b"\x00" + pack(params))
for name, cep in [("dash", b"01310-100"), ("plain", b"01310100"),
                  ("short", b"0131010"), ("letters", b"0131o-100"),
                  ("dash-moved", b"0131-0100"), ("nines", b"99999999"),
                  ("empty", b"")]:
    write("freight", "cep-" + name, b"\x01" + cep)
write("freight", "info", b"\x02" + pack([]))
write("freight", "info-extra", b"\x02" + pack([1]))
with open(os.path.join(TOP, "data", "freight", "economy.csv"), "rb") as f:
    head = b"".join(f.readlines()[:12])
write("freight", "csv-table", b"\x03" + head)
write("freight", "csv-table-quoted", b"\x03" + head.replace(b"SP-Capital", b'"SP ""Capital"""'))
with open(os.path.join(TOP, "data", "catalog.csv"), "rb") as f:
    head = b"".join(f.readlines()[:12])
write("freight", "csv-catalog", b"\x04" + head)

# ---- fuzz_comments: mode byte, then text, a path, or params ----
TEXTS = [("ascii", b"hello world"), ("nl-tab", b"a\nb\tc"),
         ("utf8", "café — naïve ☃ 𝄞".encode()), ("c1", b"\xc2\x85"),
         ("del", b"\x7f"), ("nul", b"a\x00b"), ("overlong", b"\xc0\xaf"),
         ("overlong3", b"\xe0\x80\xaf"), ("surrogate", b"\xed\xa0\x80"),
         ("max", b"\xf4\x8f\xbf\xbf"), ("over-max", b"\xf4\x90\x80\x80"),
         ("truncated", b"caf\xc3"), ("f5", b"\xf5\x80\x80\x80"),
         ("bom", b"\xef\xbb\xbfx"), ("cr", b"a\rb")]
for name, t in TEXTS:
    write("comments", "text-" + name, b"\x00" + t)
    write("comments", "body-" + name, b"\x01" + t)
for name, path in [("plain", b"a/b"), ("slash", b"/a/b/"), ("dot", b"a.html"),
                   ("empty", b""), ("root", b"/"), ("long", b"x" * 1100)]:
    write("comments", "path-" + name, b"\x02" + path)
POSTS = [
    [{"path": "/a/b", "author": "ana", "body": "hi\nthere"}],
    [{"path": "a.html", "author": "José", "body": "olá"}],
    [{"path": "p", "author": "x", "body": "y", "extra": [1, {"k": None}]}],
    [{"path": "", "author": "x", "body": "y"}],
    [{"path": "/a", "author": "", "body": "y"}],
    [{"path": "/a", "author": "x", "body": ""}],
    [{"path": "/a", "author": "x" * 129, "body": "y"}],
    [{"path": "/a", "author": "x", "body": "y" * 4000}],
    [{"path": "/a", "author": "x\ny", "body": "y"}],
    [{"path": "/a", "author": "x", "body": "a\x01b"}],
    [{"path": "/a", "author": "x", "body": Raw(b"\xa2\xc3\x28")}],
    [{"path": "/a", "author": "x"}],
    [{"path": 1, "author": "x", "body": "y"}],
    [{1: "a", "author": "x", "body": "y"}],
    [{"path": "/" + "p" * 1023, "author": "x", "body": "y"}],
    [{"path": "/" + "p" * 300 + "q", "author": "x", "body": "long key"}],
    [[]],
    [None],
]
for i, params in enumerate(POSTS):
    write("comments", "post-%02d" % i, b"\x03" + pack(params))
write("comments", "post-dup-key",
      b"\x03\x91\x84\xa4path\xa2/a\xa6author\xa1x\xa4body\xa1y\xa4path\xa2/b")
for i, params in enumerate([["/a/b"], ["a.html"], [""], [7], ["/" + "p" * 1100]]):
    write("comments", "list-%02d" % i, b"\x04" + pack(params))
for i, params in enumerate([[1], [0], [2**64 - 1], [-1], ["1"]]):
    write("comments", "delete-%02d" % i, b"\x05" + pack(params))
