#!/bin/sh
# Item 3: a command outlives its sandbox through a fork-and-exit chain that calls setsid in
# each generation. Checked on two exit paths: the command returns (the chain was started in
# the background), and the process running the sandbox is killed with SIGKILL mid-command
# (hx killed). One second later nothing carrying the token may be alive.
. "$(dirname "$0")/lib.sh"
TOKEN=hxrepro-chain-$$-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
CHAIN='import os, sys
while True:
    if os.fork(): os._exit(0)
    os.setsid()'
# A fork chain renews its pid faster than one pgrep pass can read /proc, so a single pgrep may
# miss a live chain: probes/killtok.c scans /proc continuously (-n: count for 1 s; without -n:
# stop and kill for 3 s).
KILLTOK=${KILLTOK:-/tmp/hxprobe/killtok}
count() { "$KILLTOK" -n "$TOKEN" 1; }
reap_chain() { "$KILLTOK" "$TOKEN" 3 >/dev/null; [ "$(count)" -eq 0 ] || echo "WARNING: processes with $TOKEN are still alive" >&2; }
run sh -c "python3 -c '$CHAIN' $TOKEN-a >/dev/null 2>&1 & echo started"
sleep 1
n=$(count); [ "$n" -eq 0 ] && pass "chain gone 1 s after the command returned" || fail "$n chain processes alive 1 s after the command returned"
reap_chain
(cd "$WS" && sandbox sh -c "python3 -c '$CHAIN' $TOKEN-b >/dev/null 2>&1 & sleep 60") &
RUNNER_PID=$!
sleep 0.5
pkill -9 -P "$RUNNER_PID" 2>/dev/null; kill -9 "$RUNNER_PID" 2>/dev/null   # hx (and its direct child) killed
sleep 1
n=$(count); [ "$n" -eq 0 ] && pass "chain gone 1 s after the sandbox's parent was SIGKILLed" || fail "$n chain processes alive 1 s after SIGKILL"
reap_chain
finish
