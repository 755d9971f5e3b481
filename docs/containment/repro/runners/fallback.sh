# The fallback without user namespaces: today's sandbox plus the Landlock ABI-6 scopes
# (signals, abstract Unix sockets) and the seccomp filter refusing IPv4/IPv6 sockets and
# io_uring (probes/llrun.c -S -C), under hx's exit sweep.
LLRUN=${LLRUN:-/tmp/hxprobe/llrun}
sandbox() { python3 "$HERE/runners/hxsweep.py" "$LLRUN" -w "$WS" -N -S -C -- "$@"; }
