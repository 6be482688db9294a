#!/usr/bin/env bash
# Runs the measurements recorded in RESULTS.md and keeps the raw output in benchmarks/results/.
# Usage: benchmarks/measure.sh [seconds per run, default 10]
# Needs a built jar (bin/reverb-bench builds it). Takes about 10 minutes with the defaults.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/benchmarks/results/$(date -u +%Y%m%d-%H%M)"
secs="${1:-10}"
bench="$root/bin/reverb-bench"
mkdir -p "$out"
cd "$out"

reverb="inproc://measure"
if "$bench" --uri shm://probe-$$ -n 10 --warmup 0 --server same-process -q --format csv >/dev/null 2>&1; then
  reverb="shm://measure-$$"
fi

log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$out/load.txt"; uptime | tee -a "$out/load.txt"; }

log "environment"
{ java -version 2>&1; nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2; } > "$out/environment.txt"

log "1. main job: Reverb ($reverb) and grpc-java Netty, unary 64 B, c=1"
"$bench" --compare "$reverb,grpc://127.0.0.1:0" -z "${secs}s" --format json -o main.json --html main.html -q
"$bench" report main.json > main.txt

if [[ "$reverb" == shm://* ]]; then
  log "2. shm in each polling mode, grpc-java Netty (default and direct executor) and in-process, unary 64 B, c=1"
  "$bench" --compare "shm://modes-$$,grpc://127.0.0.1:0,grpc://127.0.0.1:0?direct=true,grpc-inproc://modes" --polling BUSY,EVENT,ADAPTIVE \
    -z "${secs}s" --format json -o polling.json --html polling.html -q
  "$bench" report polling.json > polling.txt
fi

log "3. unary 1 MiB echo, c=1"
"$bench" --compare "$reverb,grpc://127.0.0.1:0" --payload 1MiB -z "${secs}s" --format json -o large.json --html large.html -q
"$bench" report large.json > large.txt

log "4. idle server CPU, default polling"
if [[ "$reverb" == shm://* ]]; then
  "$bench" idle-cpu --uri "shm://idle-$$" --seconds 10s > idle.txt
  "$bench" idle-cpu --uri "shm://idle-modes-$$" --polling EVENT,BUSY --seconds 10s >> idle.txt
fi
"$bench" idle-cpu --uri grpc://127.0.0.1:0 --seconds 10s >> idle.txt

log "5. JMH: latency and allocation per call (-prof gc)"
targets="grpc-netty,grpc-inproc"
if "$bench" --uri inproc://probe -n 10 --warmup 0 -q --format csv >/dev/null 2>&1; then targets="reverb-inproc,$targets"; fi
if [[ "$reverb" == shm://* ]]; then targets="reverb-shm-adaptive,reverb-shm-busy,reverb-shm-event,$targets"; fi
"$bench" jmh UnaryLatencyBenchmark -prof gc -p "target=$targets" -wi 3 -w 2s -i 3 -r 2s -f 1 > jmh-latency.txt 2>&1
log "done"

if [[ -n "${MEASURE_JMH_ALL:-}" ]]; then
  log "6. JMH: throughput with 1/16/128 outstanding, 1 MiB echo, server streaming"
  "$bench" jmh 'UnaryThroughputBenchmark|LargeEchoBenchmark|ServerStreamingBenchmark' -p "target=$targets" \
    -wi 2 -w 1s -i 3 -r 1s -f 1 > jmh-throughput.txt 2>&1
  log "done"
fi
