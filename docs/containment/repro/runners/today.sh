# hx's sandbox as built: Landlock writes + TCP connect/bind, setsid, no_new_privs
# (probes/llrun.c), under hx's subreaper and exit sweep (runners/hxsweep.py).
LLRUN=${LLRUN:-/tmp/hxprobe/llrun}
sandbox() { python3 "$HERE/runners/hxsweep.py" "$LLRUN" -w "$WS" -N -- "$@"; }
