# Run INSIDE the sandbox (cwd = the workspace): tries to undo the read-only mounts, directly
# and from a nested user + mount namespace (where the mounts are locked). Every line must
# say "refused"; prints the errno otherwise. python3 escape-mounts.py
import ctypes, os, sys, functools
print = functools.partial(print, flush=True)
libc = ctypes.CDLL(None, use_errno=True)
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MNT_DETACH = 1, 32, 4096, 16384, 2
CLONE_NEWNS, CLONE_NEWUSER = 0x20000, 0x10000000
def try_(what, rc):
    e = ctypes.get_errno()
    print(("ESCAPED " if rc == 0 else "refused ") + what + ("" if rc == 0 else " (%s)" % os.strerror(e)))
def attempts(tag):
    try_(tag + "umount .git/config", libc.umount2(b".git/config", MNT_DETACH))
    try_(tag + "remount .git/config rw", libc.mount(None, b".git/config", None, MS_REMOUNT | MS_BIND, None))
    try_(tag + "remount / rw", libc.mount(None, b"/", None, MS_REMOUNT | MS_BIND, None))
    os.makedirs("/tmp/esc", exist_ok=True)
    rc = libc.mount(os.path.expanduser("~").encode(), b"/tmp/esc", None, MS_BIND | MS_REC, None)
    if rc == 0:
        try_(tag + "bind ~ then remount the bind rw", libc.mount(None, b"/tmp/esc", None, MS_REMOUNT | MS_BIND, None))
        try:
            open("/tmp/esc/.hxrepro-escape", "w").write("x"); print("ESCAPED " + tag + "wrote ~ through a new bind")
        except OSError as e: print("refused " + tag + "write ~ through a new bind (%s)" % e.strerror)
    else:
        try_(tag + "bind ~", rc)
attempts("")
pid = os.fork()
if pid == 0:
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        try_("nested: unshare(user|mount)", -1); os._exit(0)
    open("/proc/self/setgroups", "w").write("deny")
    open("/proc/self/uid_map", "w").write("0 %d 1" % uid); open("/proc/self/gid_map", "w").write("0 %d 1" % gid)
    print("nested user+mount namespace made (root in it, with capabilities)")
    attempts("nested: ")
    os._exit(0)
os.waitpid(pid, 0)
