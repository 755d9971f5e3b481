#!/bin/sh
# Item 5: Unix sockets of programs hx did not start: pathname sockets outside the workspace
# (in $HOME, in a tmux-like /tmp/tmux-UID-like folder, in /run/user/UID when it can be made),
# and an abstract socket. Only $ALLOW_SOCKET (sandbox.allow_sockets) may be reached.
. "$(dirname "$0")/lib.sh"
TMUXLIKE=$(mktemp -d /tmp/hxrepro-tmux.XXXXXX)
RUNDIR="" MADE_RUNDIR=""
if [ -d "/run/user/$(id -u)" ]; then RUNDIR=/run/user/$(id -u)
elif [ -w /run/user ]; then RUNDIR=/run/user/$(id -u); mkdir "$RUNDIR" && MADE_RUNDIR=$RUNDIR; fi
SOCKS="$OUT/home.sock $TMUXLIKE/default ${RUNDIR:+$RUNDIR/hxrepro-bus-$$} @hxrepro-abstract-$$"
ALLOW_SOCKET=$OUT/allowed.sock
python3 - $SOCKS "$ALLOW_SOCKET" <<'PY' &
import os, socket, sys, threading, time
def serve(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\0" + name[1:] if name.startswith("@") else name); s.listen(8)
    while True:
        c, _ = s.accept(); c.sendall(b"hello from " + name.encode()); c.close()
for n in sys.argv[1:]: threading.Thread(target=serve, args=(n,), daemon=True).start()
time.sleep(60)
PY
BG="$BG $!"
sleep 0.5
run python3 - $SOCKS "$ALLOW_SOCKET" > "$OUT/attack" 2>&1 <<'PY'
import socket, sys
for n in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(1)
    try:
        s.connect("\0" + n[1:] if n.startswith("@") else n); print("CONNECTED", n, s.recv(64))
    except OSError as e:
        print("refused", n, e.strerror)
PY
cat "$OUT/attack"
for n in $SOCKS; do
  grep -q "^CONNECTED $n " "$OUT/attack" && fail "reached $n" || pass "did not reach $n"
done
grep -q "^CONNECTED $ALLOW_SOCKET " "$OUT/attack" && pass "reached the allowed $ALLOW_SOCKET" || fail "did not reach the allowed $ALLOW_SOCKET"
rm -rf "$TMUXLIKE" ${RUNDIR:+"$RUNDIR/hxrepro-bus-$$"}
[ -n "$MADE_RUNDIR" ] && rmdir "$MADE_RUNDIR"
finish
