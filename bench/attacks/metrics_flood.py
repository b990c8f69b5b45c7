#!/usr/bin/env python3
# metrics_flood.py - issue 26's flood of the metrics port, against any
# foliod (this build's or an older one: no new option is used), for the
# before/after figures in RELIABILITY.md.  The master runs under
# prlimit --nofile=1024:1024; 1,100 connections each send one header byte
# every 2 s for 17 s (never reconnecting); /healthz is asked every second
# (curl -m 1), a worker is killed at 4 s, SIGHUP sent at 8 s.  Prints the
# master's CPU time, what the log grew by, how many /healthz were
# answered, whether the worker was replaced and the reload completed.
#
#   python3 bench/attacks/metrics_flood.py ./foliod
import os, re, signal, socket, subprocess, sys, tempfile, time
foliod = sys.argv[1]
d = tempfile.mkdtemp(prefix="hm-flood.")
conf = f"""workers = 2
listen = 127.0.0.1:0
admin_socket = {d}/admin.sock
metrics_listen = 127.0.0.1:0
data_dir = {d}/data
ready_file = {d}/ready
corpus = off
"""
os.mkdir(d + "/data")
open(d + "/c.conf", "w").write(conf)
log = open(d + "/log", "w")
p = subprocess.Popen(["prlimit", "--nofile=1024:1024", foliod, "-c", d + "/c.conf", "-f"],
                     stdout=log, stderr=log)
def gen():
    try:
        m = re.search(r"generation (\d+)", open(d + "/ready").read()); return int(m.group(1))
    except Exception: return 0
t = time.time()
while gen() < 1 and time.time() - t < 10: time.sleep(0.05)
port = int(re.search(r"metrics \S+:(\d+)", open(d + "/ready").read()).group(1))
master = p.pid
def children():
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(master)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]
def cpu():
    f = open(f"/proc/{master}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
import resource
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 20000))
socks = []
for i in range(1100):
    s = socket.socket(); s.setblocking(False)
    try: s.connect(("127.0.0.1", port))
    except BlockingIOError: pass
    socks.append(s)
hdr = b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 100
c0, l0, t0 = cpu(), os.path.getsize(d + "/log"), time.time()
asked = answered = 0; killed = None; hup = False; g0 = gen(); k = 0; nextdrip = t0
while time.time() - t0 < 17:
    if time.time() >= nextdrip:
        for s in socks:
            try: s.send(hdr[k:k+1])
            except Exception: pass
        k += 1; nextdrip += 2
    el = time.time() - t0
    if killed is None and el > 4:
        killed = children()[0]; os.kill(killed, signal.SIGKILL)
    if not hup and el > 8:
        os.kill(master, signal.SIGHUP); hup = True
    asked += 1
    r = subprocess.run(["curl", "-s", "-m", "1", f"http://127.0.0.1:{port}/healthz"], capture_output=True, text=True)
    answered += r.stdout.strip() == "ok"
    time.sleep(max(0, 1 - (time.time() - t0 - el)))
c1, l1 = cpu(), os.path.getsize(d + "/log")
kids = children()
print(f"{foliod}: master CPU {c1-c0:.2f} s in {time.time()-t0:.1f} s; log +{l1-l0} bytes "
      f"({sum(1 for _ in open(d + '/log'))} lines); /healthz answered {answered} of {asked}; "
      f"worker replaced: {killed not in kids and len(kids) == 2} ({len(kids)} workers); "
      f"SIGHUP reload done: {gen() > g0} (generation {g0} -> {gen()})")
for s in socks: s.close()
p.terminate(); p.wait(15)
os.system(f"rm -rf {d}")
