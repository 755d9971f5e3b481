#!/bin/sh
# Item 7 (network = false): no IPv4/IPv6 traffic may leave, UDP included, and loopback servers
# outside are unreachable: plain connect, TCP Fast Open (sendto MSG_FASTOPEN), MPTCP
# (socket(AF_INET, SOCK_STREAM, 262)), UDP, IPv6. Servers started inside still work.
# Only loopback addresses are used.
. "$(dirname "$0")/lib.sh"
PORT=$((20000 + $$ % 20000))
python3 - "$PORT" "$OUT/got" <<'PY' &
import socket, sys, threading, time
port, log = int(sys.argv[1]), sys.argv[2]
def note(s):
    with open(log, "a") as f: f.write(s + "\n")
def tcp(fam, addr):
    s = socket.socket(fam, socket.SOCK_STREAM); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port)); s.listen(16)
    while True:
        c, _ = s.accept(); c.settimeout(1)
        try: note("tcp %s accepted, got %r" % (addr, c.recv(64)))
        except OSError: note("tcp %s accepted, got nothing" % addr)
        c.close()
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", port + 1))
    while True: note("udp got %r" % (s.recv(64),))
threading.Thread(target=tcp, args=(socket.AF_INET, "127.0.0.1"), daemon=True).start()
threading.Thread(target=tcp, args=(socket.AF_INET6, "::1"), daemon=True).start()
threading.Thread(target=udp, daemon=True).start()
time.sleep(60)
PY
BG="$BG $!"
sleep 0.5
run python3 - "$PORT" > "$OUT/attack" 2>&1 <<'PY'
import socket, sys, threading
port = int(sys.argv[1])
def attempt(what, f):
    try: f(); print("SENT", what)
    except OSError as e: print("refused", what, e.strerror)
def plain():
    s = socket.socket(); s.settimeout(1); s.connect(("127.0.0.1", port)); s.sendall(b"plain")
def tfo():   # blocking: without a cookie the kernel completes the handshake, then sends
    s = socket.socket(); s.sendto(b"fastopen", socket.MSG_FASTOPEN, ("127.0.0.1", port))
def mptcp():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); s.settimeout(1); s.connect(("127.0.0.1", port)); s.sendall(b"mptcp")
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"udp", ("127.0.0.1", port + 1))
def v6():
    s = socket.socket(socket.AF_INET6); s.settimeout(1); s.connect(("::1", port)); s.sendall(b"ipv6")
for w, f in [("connect", plain), ("fastopen", tfo), ("mptcp", mptcp), ("udp", udp), ("ipv6", v6)]: attempt(w, f)
def inside():   # a server of the command's own, on loopback
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
    threading.Thread(target=lambda: srv.accept()[0].sendall(b"ok"), daemon=True).start()
    c = socket.socket(); c.settimeout(1); c.connect(srv.getsockname()); assert c.recv(2) == b"ok"
attempt("inside-loopback", inside)
PY
cat "$OUT/attack"; sleep 0.5
touch "$OUT/got"; cat "$OUT/got"
for w in plain fastopen mptcp udp ipv6; do
  grep -q "b'$w'" "$OUT/got" && fail "data delivered outside by $w" || pass "nothing delivered by $w"
done
n=$(grep -c accepted "$OUT/got"); [ "$n" -eq 0 ] && pass "no connection accepted outside" || fail "$n connections accepted outside"

grep -q "SENT inside-loopback" "$OUT/attack" && pass "a loopback server inside the sandbox works" || fail "a loopback server inside the sandbox does not work"
finish
