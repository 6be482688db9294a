#!/bin/bash
# The open goals re-measured on a quiet machine (nothing else running), main after the session's merges
# (main at a52a877, the morning after).
# Run from the repository root after `mvn -B -q -DskipTests -pl benchmarks -am package`; one .txt per run here.
# usage: benchmarks/results/20261203-0020-quiet/run.sh [ROUNDS]   (ROUNDS: how many times the whole list runs, 1)
set -u
out=$(dirname "$0")
rounds=${1:-1}
run() {
  local name=$1; shift
  echo "== $name: bin/reverb-bench $* ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))" >> "$out/$name.txt"
  bin/reverb-bench "$@" >> "$out/$name.txt" 2>&1
  echo "== $name"; tail -n 12 "$out/$name.txt" | grep -v '^\s*$'
}
for r in $(seq "$rounds"); do
  run floor-busy --compare shm://f$r,floor,floor+aeron --polling BUSY -z 10s -q
  run grpc-on-reverb --compare "shm://g$r,grpc+shm://gg$r?direct=true" -z 10s -q
  run adaptive-vs-busy --uri shm://a$r --polling BUSY,ADAPTIVE -z 10s -q
  run mib-shm --compare "shm://m$r,shm://mm$r?aliasing=true,grpc://127.0.0.1:0?direct=true" --payload 1MiB -z 5s -q
  run mib-tcp --compare 'tcp://127.0.0.1:0,tcp://127.0.0.1:0?aliasing=true,grpc://127.0.0.1:0?direct=true' --payload 1MiB -z 5s -q
  run idle-cpu idle-cpu --uri shm://i$r --polling ADAPTIVE --seconds 10s
done
# bytes per native unary call, client + server (JMH -prof gc): must not grow
bin/reverb-bench jmh UnaryLatencyBenchmark -bm avgt -prof gc -p target=reverb-shm-adaptive -wi 2 -i 3 -w 2s -r 3s -f 1 2>&1 \
  | grep -E 'gc.alloc.rate.norm|^Benchmark' | tee -a "$out/jmh-alloc.txt"
