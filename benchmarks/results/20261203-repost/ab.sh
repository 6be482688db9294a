#!/bin/bash
# Alternates two bench jars on `--compare shm://…,floor --polling BUSY`, ROUNDS times; prints each run's
# side-by-side lines. usage: ab.sh ROUNDS before=JAR after=JAR   (from the repository root)
set -u
rounds=$1; shift
protoc="$(pwd)/benchmarks/target/protoc/protoc.exe"
for r in $(seq "$rounds"); do
  for pair in "$@"; do
    name=${pair%%=*}; jar=${pair#*=}
    echo "== $name round $r ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
    java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED \
      -Xms1g -Xmx1g -XX:+AlwaysPreTouch "-Dreverb.protoc=$protoc" -jar "$jar" \
      --compare "shm://ab$name$r,floor" --polling BUSY -z 8s --warmup 3s -q 2>&1 | grep -E "busy  |x the floor"
  done
done
