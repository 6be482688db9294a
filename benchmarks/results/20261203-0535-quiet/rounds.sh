#!/bin/bash
# The open goals' ratios with --rounds 3 (targets alternated round by round; medians over the rounds).
# Run from the repository root on a quiet machine after `mvn -B -q -DskipTests -pl benchmarks -am package`.
set -u
out=$(dirname "$0")
run() {
  local name=$1; shift
  echo "== $name: bin/reverb-bench $* ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))" >> "$out/$name.txt"
  bin/reverb-bench "$@" >> "$out/$name.txt" 2>&1
  echo "== $name"; sed -n '/^Medians over/,$p' "$out/$name.txt" | tail -n 4
}
run rounds-floor-busy --compare shm://rf,floor,floor+aeron --polling BUSY --rounds 3 -z 6s --warmup 2s -q
run rounds-grpc-on-reverb --compare 'shm://rg,grpc+shm://rgg?direct=true' --rounds 3 -z 6s --warmup 2s -q
run rounds-adaptive-vs-busy --uri shm://ra --polling BUSY,ADAPTIVE --rounds 3 -z 6s --warmup 2s -q
run rounds-mib-shm --compare 'shm://rm,shm://rmm?aliasing=true,grpc://127.0.0.1:0?direct=true' --payload 1MiB --rounds 3 -z 4s --warmup 2s -q
run rounds-mib-tcp --compare 'tcp://127.0.0.1:0,tcp://127.0.0.1:0?aliasing=true,grpc://127.0.0.1:0?direct=true' --payload 1MiB --rounds 3 -z 4s --warmup 2s -q
