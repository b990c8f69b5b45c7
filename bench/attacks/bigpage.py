#!/usr/bin/env python3
"""Issue 26 attack 1: 60 comments of 65 KB on one page, then N connections
that each pipeline 3 comments.list of it and never read (with "http" as a
4th argument: 3 GET /v1/comments of it, on the HTTP face).  Samples the one
worker's RSS (/proc) and output_bytes/heap_inuse (folio stats --json)."""
import json, os, socket, struct, subprocess, sys, time, tempfile
FOLIOD, FOLIO, N = sys.argv[1], sys.argv[2], int(sys.argv[3])
HTTP = len(sys.argv) > 4 and sys.argv[4] == "http"
d = tempfile.mkdtemp(prefix="hh-bigpage.")
port = 20000 + os.getpid() % 20000
adm = d + "/admin.sock"
conf = d + "/foliod.conf"
open(conf, "w").write(
    "listen = 127.0.0.1:%d\nadmin_socket = %s\ndata_dir = %s/data\nworkers = 1\n"
    "corpus = off\nfreight_dir = off\ncatalog = off\nhttp_listen = 127.0.0.1:%d\n"
    "metrics_listen = off\n" % (port, adm, d, port + 1))
log = open(d + "/log", "w")
srv = subprocess.Popen([FOLIOD, "-c", conf, "-f"], stdout=log, stderr=log)
def folio(*a):
    return subprocess.run([FOLIO, "-U", adm, "--json"] + list(a), capture_output=True, text=True)
for _ in range(200):
    if folio("ping").returncode == 0: break
    time.sleep(0.05)
def s(b): return bytes([0xa0 | len(b)]) + b if len(b) < 32 else b"\xda" + struct.pack(">H", len(b)) + b
def req(i, m, p): return b"\x94\x00" + bytes([i]) + s(m) + b"\x91" + p
c = socket.create_connection(("127.0.0.1", port))
for i in range(60):
    body = bytes([97 + i % 26]) * 65000
    c.sendall(req(1, b"comments.post", b"\x83" + s(b"path") + s(b"/big") + s(b"author") + s(b"a") + s(b"body") + s(body)))
    got = b""
    while len(got) < 65000: got += c.recv(1 << 20)
c.close()
def worker_pid():
    r = folio("--timeout", "30", "call", "server.stats")
    if r.returncode != 0 or not r.stdout.strip():
        raise SystemExit("server.stats failed: %s %s" % (r.stdout[:200], r.stderr[:300]))
    st = json.loads(r.stdout)
    return st["workers"][0]["pid"], st["workers"][0]
try:
    pid, _ = worker_pid()
except SystemExit:
    srv.terminate(); srv.wait(); raise
def rss(pid):
    for l in open("/proc/%d/status" % pid):
        if l.startswith("VmRSS"): return int(l.split()[1])
lists = b"".join(req(i + 1, b"comments.list", s(b"/big")) for i in range(3))
if HTTP:
    lists = b"GET /v1/comments?uri=/big HTTP/1.1\r\nHost: folio\r\n\r\n" * 3
before = rss(pid)
socks = []
for i in range(N):
    k = socket.socket(); k.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    k.connect(("127.0.0.1", port + 1 if HTTP else port)); k.sendall(lists); socks.append(k)
peak_rss = peak_out = peak_heap = 0
t0 = time.time()
lat = []
while time.time() - t0 < 10:
    _, w = worker_pid()
    peak_rss = max(peak_rss, rss(pid)); peak_out = max(peak_out, w.get("output_bytes", 0))
    peak_heap = max(peak_heap, w.get("heap_inuse", 0))
    t1 = time.time(); subprocess.run([FOLIO, "-H", "127.0.0.1:%d" % port, "ping"], capture_output=True)
    lat.append((time.time() - t1) * 1000)
    time.sleep(0.2)
ping = "folio ping (a process each) max %.0f ms of %d" % (max(lat), len(lat))
print("%s: %d connections x 3 %s of a %.1f MB page, unread: worker RSS %d kB before, peak %d kB; "
      "output_bytes peak %.1f MB (max_output_total 32 MiB); heap_inuse peak %.1f MB; ping: %s"
      % (os.path.basename(os.path.dirname(FOLIOD)) or FOLIOD, N, "GETs" if HTTP else "lists", 60 * 65060 / 1e6, before, peak_rss, peak_out / 1e6, peak_heap / 1e6, ping))
for k in socks: k.close()
srv.terminate(); srv.wait()
subprocess.run(["rm", "-rf", d])
