#!/bin/sh
# Item 4: metadata changes outside the writable roots (chmod, chown, touch -d, setxattr):
# Landlock has no right for them. They must fail outside and work inside the workspace.
. "$(dirname "$0")/lib.sh"
F=$OUT/file; echo data > "$F"; chmod 644 "$F"
before=$(stat -c '%a %u:%g %Y' "$F")
U=$(id -u); G=$(id -g)
ATTACK="chmod 600 '$F'; chown $U:$G '$F'; touch -d 2001-01-01 '$F'; python3 -c 'import os; os.setxattr(\"$F\", \"user.hx\", b\"1\")'"
run sh -c "$ATTACK" > "$OUT/attack" 2>&1; cat "$OUT/attack"
after=$(stat -c '%a %u:%g %Y' "$F")
xattr=$(python3 -c "import os; print(os.listxattr('$F'))")
[ "$before" = "$after" ] && pass "mode, owner and mtime of $F unchanged ($after)" || fail "metadata of $F changed: $before -> $after"
[ "$xattr" = "[]" ] && pass "no xattr set on $F" || fail "xattr set on $F: $xattr"
for op in "chmod 600 f" "chown $U:$G f" "touch -d 2001-01-01 f" "python3 -c 'import os; os.setxattr(\"f\", \"user.hx\", b\"1\")'"; do
  run sh -c "$op" > "$OUT/in" 2>&1 && pass "inside the workspace: $op" || fail "inside the workspace: $op: $(cat "$OUT/in")"
done
[ "$(stat -c %a "$WS/f")" = 600 ] && pass "workspace file mode is 600" || fail "workspace file mode is $(stat -c %a "$WS/f")"
finish
