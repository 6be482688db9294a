#!/bin/bash
# Re-measurement of the open goals on a quiet machine (nothing else running), main after the merges of
# 2026-12-02 13:00-14:30 UTC. Run from the repository root; writes one .txt per run next to this script.
# usage: benchmarks/results/20261202-1440-quiet/run.sh [BEFORE.jar]   (BEFORE.jar: main at ed55a8a, for the counters A/B)
set -u
out=$(dirname "$0")
run() { local name=$1; shift; echo "== $name: bin/reverb-bench $* ($(uptime))" | tee "$out/$name.txt"; bin/reverb-bench "$@" 2>&1 | tee -a "$out/$name.txt"; }
run reverb-vs-shm --compare reverb://127.0.0.1:0,shm://q1 -z 10s -q
run floor-busy --compare shm://q2,floor,floor+aeron --polling BUSY -z 10s -q
run grpc-on-reverb --compare 'shm://q3,grpc+shm://g3?direct=true' -z 10s -q
run adaptive-vs-busy --uri shm://q6 --polling BUSY,ADAPTIVE -z 10s -q
run mib-shm --compare 'shm://q4,shm://q5?aliasing=true,grpc://127.0.0.1:0?direct=true' --payload 1MiB -z 5s -q
run mib-tcp --compare 'tcp://127.0.0.1:0,tcp://127.0.0.1:0?aliasing=true,grpc://127.0.0.1:0?direct=true' --payload 1MiB -z 5s -q
if [ $# -ge 1 ]; then
  benchmarks/results/20261202-counters-ab/ab.sh "$1" benchmarks/target/reverb-bench.jar 3 2>&1 | tee "$out/counters-ab.txt"
fi
