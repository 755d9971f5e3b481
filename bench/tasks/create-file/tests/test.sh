#!/bin/bash
# Reward 1 for exactly the 15 bytes asked for, 0 otherwise.
if printf 'Hello, Harbor!\n' | cmp -s - /app/greeting.txt; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
