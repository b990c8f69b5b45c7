#!/usr/bin/env python3
"""Issue 26 attack 2: another process holds the LMDB comments store's
writer lock (holdlock, standing for a worker stopped mid-commit) while
posts arrive on both workers (worker_timeout 2s, comments_timeout 1s).
Pings on fresh connections for 8 s; the log's hung lines counted."""
import os, socket, struct, subprocess, sys, time, tempfile, select
FOLIOD, FOLIO = sys.argv[1], sys.argv[2]
d = tempfile.mkdtemp(prefix="hh-stuck.")
port = 20000 + os.getpid() % 20000
adm = d + "/admin.sock"; conf = d + "/foliod.conf"
open(conf, "w").write(
    "listen = 127.0.0.1:%d\nadmin_socket = %s\ndata_dir = %s/data\nworkers = 2\n"
    "corpus = off\nfreight_dir = off\ncatalog = off\nworker_timeout = 2s\ncomments_timeout = 1s\n" % (port, adm, d))
log = open(d + "/log", "w")
srv = subprocess.Popen([FOLIOD, "-c", conf, "-f"], stdout=log, stderr=log)
for _ in range(200):
    if subprocess.run([FOLIO, "-U", adm, "ping"], capture_output=True).returncode == 0: break
    time.sleep(0.05)
def s(b): return bytes([0xa0 | len(b)]) + b
def req(i, m, p): return b"\x94\x00" + bytes([i]) + s(m) + p
post = req(1, b"comments.post", b"\x91\x83" + s(b"path") + s(b"/p") + s(b"author") + s(b"a") + s(b"body") + s(b"hello"))
ping = req(2, b"server.ping", b"\x90")
subprocess.run([FOLIO, "-H", "127.0.0.1:%d" % port, "comments", "post", "/p", "a", "first"], capture_output=True)
h = subprocess.Popen([os.environ.get("HOLDLOCK", sys.path[0] + "/holdlock"), d + "/data/comments"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
assert h.stdout.readline().strip() == b"holding"
posters = []
for i in range(8):
    k = socket.create_connection(("127.0.0.1", port)); k.sendall(post); posters.append((k, time.time()))
fails = 0; lat = []; t0 = time.time()
while time.time() - t0 < 8:
    t1 = time.time()
    try:
        k = socket.create_connection(("127.0.0.1", port), timeout=3); k.settimeout(3)
        k.sendall(ping); k.recv(100); k.close(); lat.append((time.time() - t1) * 1000)
    except OSError:
        fails += 1
    time.sleep(0.01)
answers = {}
for k, ts in posters:
    k.settimeout(0.1)
    try:
        b = k.recv(4096)
        code = "ok" if len(b) > 3 and b[3] == 0xc0 else ("error" if b else "closed")
        if code == "error" and b"held by another process" in b: code = "14 lock held elsewhere"
        elif code == "error" and b"\x0e" in b[:8]: code = "14"
    except socket.timeout: code = "no answer"
    except OSError: code = "reset"
    answers[code] = answers.get(code, 0) + 1
h.stdin.close(); h.wait()
hung = sum("hung:" in l for l in open(d + "/log"))
print("%s: lock held elsewhere 8 s, 8 posts on 2 workers: pings %d answered, %d failed, max %.0f ms; "
      "posts: %s; workers taken for hung: %d"
      % (os.path.basename(os.path.dirname(FOLIOD)), len(lat), fails, max(lat) if lat else 0, answers, hung))
srv.terminate(); srv.wait()
subprocess.run(["rm", "-rf", d])
