#!/bin/bash
# usage: ab3.sh ROUNDS POLLING TARGETS VARIANT_PROPS... (variants named A,B,C... in order; alternated each round)
cd /work/main
rounds=$1; polling=$2; targets=$3; shift 3
names=(A B C D E)
for r in $(seq 1 $rounds); do
  i=0
  for p in "$@"; do
    v=${names[$i]}; i=$((i+1))
    JAVA_TOOL_OPTIONS="$p" bin/reverb-bench --compare "$targets" --polling $polling -z 3s --warmup 2s -q 2>&1 | grep -E "^  (reverb|floor|grpc)" | grep -v " vs " | awk -v v=$v -v r=$r '{printf "%s r%s %-28s p50 %s\n", v, r, $1" "$2" "$3, $(NF-5)}'
  done
done
