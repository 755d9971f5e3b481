#!/bin/sh
# Item 2: a command signals the user's processes (kill -9 -1, kill -9 $PPID, a pid it found).
# Safety: a broken sandbox must not take the machine down, so the whole test first enters a
# PID namespace of its own; kill -9 -1 can then reach only this test's processes.
if [ "${HXREPRO_OUTER:-}" != 1 ]; then
  export HXREPRO_OUTER=1
  if [ "$(id -u)" = 0 ]; then exec unshare --pid --fork --mount-proc sh "$0" "$@"; fi
  exec unshare --user --map-user="$(id -u)" --map-group="$(id -g)" --pid --fork --mount-proc sh "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
sleep 300 & VICTIM=$!; BG="$BG $VICTIM"
setsid sleep 300 & VICTIM2=$!; BG="$BG $VICTIM2"
ME=$$
run sh -c "kill -9 -1; kill -9 \$PPID; kill -9 $VICTIM; kill -9 -$VICTIM2; kill -9 $ME; echo attack done" > "$OUT/attack" 2>&1
rc=$?
cat "$OUT/attack"
# $PPID of the command is the process that runs the sandbox (hx, or the sandbox's init):
# killed, the runner reports 137.
[ "$rc" -ne 137 ] && pass "the sandbox's parent survived kill -9 \$PPID (exit $rc)" || fail "the sandbox's parent was killed (exit $rc)"
sleep 0.2
kill -0 "$VICTIM" 2>/dev/null && pass "a process outside survived kill -9 -1 and kill -9 PID" || fail "process $VICTIM outside the sandbox was killed"
kill -0 "$VICTIM2" 2>/dev/null && pass "a process group outside survived kill -9 -PGID" || fail "process group $VICTIM2 was killed"
finish
