#!/bin/sh
# Item 1: a command opens terminal devices (/dev/pts/*, /dev/tty*, /dev/console) and reads
# the keystrokes typed into another tab. The victim is a pseudo-terminal held open outside
# the sandbox, whose master "types" KEYSTROKE into it every 50 ms.
. "$(dirname "$0")/lib.sh"
python3 - "$OUT/victim" <<'PY' &
import os, pty, sys, time
m, s = pty.openpty()
open(sys.argv[1], "w").write(os.ttyname(s))
os.chmod(os.ttyname(s), 0o620)
for _ in range(600):
    os.write(m, b"KEYSTROKE\n"); time.sleep(0.05)
PY
BG="$BG $!"
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$OUT/victim" ] && break; sleep 0.1; done
VICTIM=$(cat "$OUT/victim")
run python3 - "$VICTIM" > "$OUT/attack" 2>&1 <<'PY'
import glob, os, select, sys
paths = [sys.argv[1]] + sorted(glob.glob("/dev/pts/[0-9]*")) + ["/dev/tty", "/dev/console"] \
    + sorted(glob.glob("/dev/tty[0-9]*"))[:8] + sorted(glob.glob("/dev/ttyS*"))[:2] \
    + sorted(glob.glob("/dev/input/event*"))[:4] + sorted(glob.glob("/dev/vcs*"))[:2]
for p in dict.fromkeys(paths):
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as e:
        print("refused", p, e.strerror); continue
    got = b""
    if select.select([fd], [], [], 0.3)[0]:
        try: got = os.read(fd, 64)
        except OSError: pass
    print("OPENED", p, "read:", got)
PY
cat "$OUT/attack"
if grep -q "OPENED.*KEYSTROKE" "$OUT/attack"; then fail "read keystrokes typed into $VICTIM"; else pass "no keystrokes read from $VICTIM"; fi
if grep -q "^OPENED" "$OUT/attack"; then fail "opened a terminal device: $(grep ^OPENED "$OUT/attack" | cut -d' ' -f2 | tr '\n' ' ')"; else pass "no terminal device opened"; fi
finish
