#!/bin/sh
# Per-call cost of each mechanism: `bench N CMD` (fork + exec + wait of CMD, N times).
# Three rounds, the cases interleaved, so the machine's load hits all of them alike.
# Needs the probes built in $P (see README.md) and a workspace $WS with a .git.
P=${P:-/tmp/hxprobe}; WS=${WS:-$P/ws}; N=${N:-100}; HX=${HX:-$P/target/release/hx}
cd "$WS" || exit 1
"$P/pod" -k -w "$WS" -t -n -R /run -- sleep 3600 &
sleep 0.5
POD=$(pgrep -f "^sleep 3600" | head -1)
GIT="-m $WS/.git -p $WS/.git/config -p $WS/.git/hooks -p $WS/.git/info"
for round in 1 2 3; do
  echo "--- round $round, load: $(cut -d' ' -f1-3 /proc/loadavg)"
  while read -r name cmd; do
    printf '%-34s ' "$name"; eval "$P/bench $N $cmd"
  done <<EOC
true                               true
sh-c-true                          sh -c true
bash-c-true                        bash -c true
hx-version                         $HX --version
today:llrun                        $P/llrun -w $WS -N -- true
fallback:llrun+scopes+seccomp      $P/llrun -w $WS -N -S -C -- true
pod:user+mnt+pid+ipc               $P/pod -w $WS -t -- true
pod:+net                           $P/pod -w $WS -t -n -- true
pod:full                           $P/pod -w $WS $GIT -t -n -R /run -U -l -- true
util-linux:unshare-Urpm            unshare -Urpm --fork true
util-linux:unshare-Urpmn           unshare -Urpmn --fork true
join-pod:enter                     $P/enter $POD -- true
join-pod:enter+landlock            $P/enter $POD -l -- true
join-pod:enter+bash                $P/enter $POD -l -- bash -c true
EOC
done
pkill -9 -f "hxprobe/pod -k -w $WS -t -n -R /run -- sleep 3600"
