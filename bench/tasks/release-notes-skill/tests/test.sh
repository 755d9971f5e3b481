#!/bin/bash
# Reward 1 when /app/RELEASE.md is the release note the skill describes (the codename and
# the sign-off are in the skill alone), a missing final newline forgiven; 0 otherwise.
if [ -f /app/RELEASE.md ] && sed -e '$a\' /app/RELEASE.md | cmp -s - /tests/expected.md; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
