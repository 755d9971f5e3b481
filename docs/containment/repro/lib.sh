# Shared by the reproductions. Each script runs one attack of issue 19 through `sandbox`
# (defined by the runner file named in $RUNNER) and prints PASS/FAIL lines, then the plain
# closing line "N passed, N failed"; it exits 1 on any FAIL.
#
#   RUNNER=runners/today.sh sh 04-metadata.sh   # hx's sandbox as it is: the attacks work
#   RUNNER=runners/pod.sh   sh 04-metadata.sh   # the recommended design: they fail
#
# A runner defines sandbox() { ...; } which runs "$@" confined, with $WS (a git repository)
# writable and its working directory $WS, and, when $ALLOW_SOCKET is set, that one socket
# reachable. $OUT is a folder outside every writable root (in $HOME, not /tmp, since /tmp is
# writable in today's sandbox).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
: "${RUNNER:?set RUNNER to a runner file, e.g. runners/pod.sh}"
case $RUNNER in /*) ;; *) RUNNER=$HERE/${RUNNER#./} ;; esac
. "$RUNNER"
WS=$(mktemp -d /tmp/hxrepro-ws.XXXXXX)
OUT=$(mktemp -d "$HOME/.hxrepro-out.XXXXXX")
chmod 755 "$OUT"
(cd "$WS" && git init -q . && git config user.email t@t && git config user.name t \
  && echo hi > f && git add f && git commit -qm init)
passes=0 fails=0
pass() { echo "PASS: $*"; passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
BG=""
finish() {
  for p in $BG; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$WS" "$OUT"
  echo "$passes passed, $fails failed"
  [ "$fails" -eq 0 ]
}
run() { (cd "$WS" && sandbox "$@"); }
