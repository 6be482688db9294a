#!/bin/bash
# usage: ab2.sh ROUNDS POLLING TARGETS PROPS_A PROPS_B
cd /work/main
for r in $(seq 1 $1); do
  for v in A B; do
    if [ $v = A ]; then p="$4"; else p="$5"; fi
    JAVA_TOOL_OPTIONS="$p" bin/reverb-bench --compare "$3" --polling $2 -z 3s --warmup 2s -q 2>&1 | grep -E "^  (reverb|floor|grpc)" | grep -v " vs " | awk -v v=$v -v r=$r '{printf "%s r%s %-28s p50 %s\n", v, r, $1" "$2" "$3, $(NF-5)}'
  done
done
