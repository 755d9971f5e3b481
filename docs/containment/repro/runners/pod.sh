# The recommended design, as the prototype probes/pod.c: user+mount+pid+ipc+net namespaces,
# read-only root, private /dev, /tmp and /run, .git's config/hooks/info read-only, other
# programs' sockets covered, Landlock scopes and the IP-socket seccomp filter on top.
POD=${POD:-/tmp/hxprobe/pod}
sandbox() {
  "$POD" -w "$WS" -m "$WS/.git" -p "$WS/.git/config" -p "$WS/.git/hooks" -p "$WS/.git/info" \
    -t -n -R /run -U -l ${ALLOW_SOCKET:+-s "$ALLOW_SOCKET"} -- "$@"
}
