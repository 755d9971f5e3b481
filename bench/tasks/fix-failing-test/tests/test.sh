#!/bin/bash
# Reward 1 when the tests the agent was given are unchanged and pass, and so does one it
# was not shown (a fix that special-cases 2 + 3 fails it).
cd /app || exit 1
reward=0
if sha256sum --quiet -c /tests/test_calc.sha256 \
  && python3 -m unittest -q test_calc \
  && python3 -c 'from calc import add; assert add(-7, 10) == 3 and add(0, 0) == 0'; then
  reward=1
fi
echo "$reward" > /logs/verifier/reward.txt
