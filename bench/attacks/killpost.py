#!/usr/bin/env python3
"""Issue 26's note: kill -9 workers while 8 clients post, and report every
post not stored (its code and message, when it came, how long it took).
python3 bench/attacks/killpost.py FOLIOD FOLIO KILLS ['EXTRA CONF LINES']:
2 workers, a kill every 0.5-1 s; KILLS 0 posts for 15 s without a kill.
Example: ... 25 'comments_timeout = 100ms\\n'."""
import json, os, socket, struct, subprocess, sys, time, tempfile, threading, random, signal
FOLIOD, FOLIO, KILLS = sys.argv[1], sys.argv[2], int(sys.argv[3])
extra = sys.argv[4] if len(sys.argv) > 4 else ""
d = tempfile.mkdtemp(prefix="folio-killpost.")
port = 20000 + os.getpid() % 20000
adm = d + "/admin.sock"
conf = d + "/foliod.conf"
open(conf, "w").write(
    "listen = 127.0.0.1:%d\nadmin_socket = %s\ndata_dir = %s/data\nworkers = 2\n"
    "corpus = off\nfreight_dir = off\ncatalog = off\nhttp_listen = off\nmetrics_listen = off\n%s" % (port, adm, d, extra.replace("\\n", "\n")))
log = open(d + "/log", "w")
srv = subprocess.Popen([FOLIOD, "-c", conf, "-f"], stdout=log, stderr=log)
def folio(*a):
    return subprocess.run([FOLIO, "-U", adm, "--json"] + list(a), capture_output=True, text=True)
for _ in range(400):
    if folio("ping").returncode == 0: break
    time.sleep(0.05)
def s(b): return bytes([0xa0 | len(b)]) + b if len(b) < 32 else b"\xd9" + bytes([len(b)]) + b
def req(i, m, p): return b"\x94\x00" + bytes([i]) + s(m) + b"\x91" + p
def post(k, n): return req(1, b"comments.post", b"\x83" + s(b"path") + s(b"/k%d" % k) + s(b"author") + s(b"a") + s(b"body") + s(b"post %d %d" % (k, n)))
stop = False
events = []
lock = threading.Lock()
def parse_reply(buf):
    # [1, msgid, error, result]; error nil (0xc0) or [code, msg]
    if len(buf) < 4: return None
    p = 3
    if buf[p] == 0xc0: return (0, "", None)
    if buf[p] == 0x92:
        code = buf[p+1]; p += 2
        t = buf[p]
        if 0xa0 <= t <= 0xbf: l = t & 0x1f; p += 1
        elif t == 0xd9: l = buf[p+1]; p += 2
        elif t == 0xda: l = struct.unpack(">H", buf[p+1:p+3])[0]; p += 3
        else: return (code, "?", None)
        return (code, buf[p:p+l].decode(errors="replace"), None)
    return (-1, repr(buf[:20]), None)
def poster(k):
    n = 0
    c = None
    while not stop:
        try:
            if c is None:
                c = socket.create_connection(("127.0.0.1", port), timeout=30)
            t0 = time.time()
            c.sendall(post(k, n))
            buf = c.recv(65536)
            if not buf: raise OSError("eof")
            dt = time.time() - t0
            r = parse_reply(buf)
            if r and r[0] != 0:
                with lock: events.append((t0, dt, r[0], r[1]))
            n += 1
        except OSError as e:
            c = None
    return
ths = [threading.Thread(target=poster, args=(k,)) for k in range(8)]
for t in ths: t.start()
t_start = time.time()
def workers():
    out = subprocess.run(["pgrep", "-P", str(srv.pid)], capture_output=True, text=True).stdout.split()
    return [int(x) for x in out]
kills = []
for i in range(KILLS):
    time.sleep(0.5 + random.random() * 0.5)
    w = workers()
    if not w: continue
    v = random.choice(w)
    os.kill(v, signal.SIGKILL)
    kills.append((time.time(), v))
if KILLS == 0: time.sleep(15)
time.sleep(7)
stop = True
for t in ths: t.join()
srv.terminate(); srv.wait()
t00 = kills[0][0] if kills else t_start
print("kills:", len(kills))
for k in kills:
    print("kill t=%.2f pid %d" % (k[0] - t00, k[1]))
for e in sorted(events):
    print("t=%.2f dt=%.3f code=%d %s" % (e[0] - t00, e[1], e[2], e[3][:110]))
print("errors:", len(events))
print("log:", d + "/log")
