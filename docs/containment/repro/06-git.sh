#!/bin/sh
# Item 6: planting code that unsandboxed programs run: .git/config (core.hooksPath,
# core.fsmonitor, aliases), .git/hooks/, .git/info/ must be read-only to commands, while
# objects, refs, the index and logs stay writable (commits work).
. "$(dirname "$0")/lib.sh"
rm -rf "$WS/.git/hooks"   # a missing hooks folder must not be creatable either
ATTACK='git config core.fsmonitor "touch /tmp/pwned-fsmonitor"
echo "[core] hooksPath = /tmp/evil" >> .git/config
mkdir -p .git/hooks && printf "#!/bin/sh\ntouch /tmp/pwned\n" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit
echo "* filter=evil" > .git/info/attributes
true'
run sh -c "$ATTACK" > "$OUT/attack" 2>&1; cat "$OUT/attack"
grep -q fsmonitor "$WS/.git/config" && fail ".git/config was changed" || pass ".git/config unchanged"
[ -e "$WS/.git/hooks/pre-commit" ] && fail ".git/hooks/pre-commit planted" || pass "no hook planted"
[ -e "$WS/.git/info/attributes" ] && fail ".git/info/attributes planted" || pass ".git/info unchanged"
# Replacing the whole folder plants a new config and hooks just as well.
run sh -c 'mv .git .git-moved && mkdir .git && echo planted > .git/config' > "$OUT/attack2" 2>&1; cat "$OUT/attack2"
if [ -d "$WS/.git/objects" ]; then pass ".git could not be moved away and replaced"
else fail ".git was moved away and replaced"; rm -rf "$WS/.git"; mv "$WS/.git-moved" "$WS/.git"; fi
run sh -c 'echo more >> f && git commit -qam second && git log --oneline | wc -l' > "$OUT/commit" 2>&1
[ "$(tail -1 "$OUT/commit")" = 2 ] && pass "git commit works inside (objects, refs, index, logs)" || fail "git commit inside failed: $(cat "$OUT/commit")"
[ "$(git -C "$WS" log --oneline | wc -l)" = 2 ] && pass "the commit is visible outside" || fail "the commit is not visible outside"
finish
