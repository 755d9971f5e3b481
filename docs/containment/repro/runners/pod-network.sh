# The recommended design with network = true: as runners/pod.sh but no network namespace;
# abstract Unix sockets are then refused by the Landlock scope alone (-l, ABI 6).
POD=${POD:-/tmp/hxprobe/pod}
sandbox() {
  "$POD" -w "$WS" -m "$WS/.git" -p "$WS/.git/config" -p "$WS/.git/hooks" -p "$WS/.git/info" \
    -t -R /run -U -l ${ALLOW_SOCKET:+-s "$ALLOW_SOCKET"} -- "$@"
}
