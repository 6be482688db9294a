#!/bin/bash
# A/B: shm:// unary 64 B against floor+aeron, BUSY and ADAPTIVE, jars alternated. Usage: ab.sh OUT NAME=JAR...
out="$1"; shift
for spec in "$@"; do
  name=${spec%%=*}; jar=${spec#*=}
  cp "$jar" benchmarks/target/reverb-bench.jar
  bin/reverb-bench --compare 'shm://ab,floor+aeron' --polling BUSY,ADAPTIVE --rounds 3 -z 5s --warmup 2s -q > "$out/$name.txt" 2>&1
done
