#!/bin/sh
# Runs every reproduction with one runner: RUNNER=runners/pod.sh sh run-all.sh
# (07-network.sh is left out for runners/pod-network.sh, which allows the network).
cd "$(dirname "$0")" || exit 1
total_p=0 total_f=0
for t in 0[1-7]-*.sh; do
  case "$RUNNER:$t" in *pod-network.sh:07-*) continue ;; esac
  echo "=== $t"
  out=$(timeout 120 sh "$t" 2>&1); echo "$out" | grep -E '^(PASS|FAIL)'
  line=$(echo "$out" | tail -1); echo "$line"
  p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p'); f=$(echo "$line" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
  [ -z "$p" ] && { p=0; f=1; echo "FAIL: $t printed no result line"; }
  total_p=$((total_p + p)); total_f=$((total_f + f))
done
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]
