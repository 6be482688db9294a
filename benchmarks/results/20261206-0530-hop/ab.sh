#!/bin/bash
# ab.sh OUT ROUNDS JAR... : each jar's --compare of shm:// against the floor and Aeron, BUSY, alternated jar by jar
out=$1; rounds=$2; shift 2
for r in $(seq 1 $rounds); do
  for j in "$@"; do
    echo "=== round $r jar $j load $(cut -d' ' -f1 /proc/loadavg)" >> $out
    java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Xms1g -Xmx1g -XX:+AlwaysPreTouch \
      -Dreverb.protoc=/work/main/benchmarks/target/protoc/protoc.exe -jar $j --compare "shm://ab$r,floor,floor+aeron" --polling ${POLLING:-BUSY} -z 4s --warmup 2s -q 2>&1 \
      | sed -n '/Side by side/,/^$/p' >> $out
  done
done
