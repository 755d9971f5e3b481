#!/bin/bash
set -euo pipefail
cat > /app/RELEASE.md <<'NOTE'
# Release 2.4.0 "Kestrel"

## Changes
- Faster startup
- Fix crash on empty input

Signed-off-by: release-bot <release@hx.invalid>
NOTE
