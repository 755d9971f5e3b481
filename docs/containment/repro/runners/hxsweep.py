# hx's exit cleanup as built (src/process/cleanup.rs), for the "today" runner: become a child
# subreaper, run the command, and when it returns (hx exits) kill every descendant found
# through /proc: killpg of each group but our own, kill of each pid, 5 ms pause, until none is
# left or END_WAIT (2 s) has passed; then reap. Usage: python3 hxsweep.py CMD...
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
child = os.fork()
if child == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status = os.waitpid(child, 0)
def scan():
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit(): continue
        try: stat = open("/proc/%s/stat" % d).read()
        except OSError: continue
        rest = stat.rsplit(")", 1)[1].split()
        out.append((int(d), int(rest[1]), int(rest[2]), rest[0]))
    return out
me, own = os.getpid(), os.getpgrp()
deadline = time.monotonic() + 2.0
while True:
    procs = scan(); kids = {}
    for p in procs: kids.setdefault(p[1], []).append(p)
    live, todo = [], [me]
    while todo:
        for c in kids.get(todo.pop(), []):
            live.append(c); todo.append(c[0])
    live = [p for p in live if p[3] not in "ZX"]
    if not live or time.monotonic() >= deadline: break
    for g in {p[2] for p in live if p[2] > 1 and p[2] != own}:
        try: os.killpg(g, signal.SIGKILL)
        except OSError: pass
    for p in live:
        try: os.kill(p[0], signal.SIGKILL)
        except OSError: pass
    time.sleep(0.005)
if live: print("hxsweep: %d descendants still alive after the 2 s sweep" % len(live), file=sys.stderr)
while True:
    try:
        if os.waitpid(-1, os.WNOHANG) == (0, 0): break
    except ChildProcessError: break
sys.exit(os.waitstatus_to_exitcode(status) & 0xff)
