#!/usr/bin/env bash
# Idle server CPU by thread, with the benchmark's heap flags, with huge pages and without pre-touch; run from the
# repository root on a quiet machine. Writes idle-cpu.txt beside this script.
set -euo pipefail
out="$(dirname "$0")/idle-cpu.txt"
: > "$out"
for round in 1 2; do
  for arg in "" "--server-jvm-arg=-XX:+UseTransparentHugePages" "--server-jvm-arg=-XX:-AlwaysPreTouch"; do
    echo "# round $round, server JVM: -Xms1g -Xmx1g -XX:+AlwaysPreTouch ${arg#--server-jvm-arg=}" >> "$out"
    bin/reverb-bench idle-cpu --uri shm://idle --polling ADAPTIVE --seconds 10s $arg 2>&1 | tail -2 >> "$out"
  done
done
