#!/usr/bin/env bash
# JMH -prof gc, UnaryLatencyBenchmark (blocking stubs), the before jar then the after jar (which also has the
# -noretry targets). Usage: jmh-ab.sh BEFORE.jar AFTER.jar OUTDIR
set -euo pipefail
before="$1"; after="$2"; out="$3"
flags=(--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Xms1g -Xmx1g
  -XX:+AlwaysPreTouch)
args=(UnaryLatencyBenchmark -bm avgt -prof gc -wi 2 -i 3 -w 2s -r 3s -f 1)
echo "load $(cut -d' ' -f1-3 /proc/loadavg)" > "$out/jmh-before.txt"
java "${flags[@]}" -jar "$before" jmh "${args[@]}" \
  -p target=grpc-reverb-shm-direct,grpc-netty-direct,reverb-shm-adaptive >> "$out/jmh-before.txt" 2>&1
echo "load $(cut -d' ' -f1-3 /proc/loadavg)" > "$out/jmh-after.txt"
java "${flags[@]}" -jar "$after" jmh "${args[@]}" -p target=grpc-reverb-shm-direct,grpc-netty-direct,reverb-shm-adaptive,grpc-reverb-shm-direct-noretry,grpc-netty-direct-noretry >> "$out/jmh-after.txt" 2>&1
echo "load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/jmh-after.txt"
