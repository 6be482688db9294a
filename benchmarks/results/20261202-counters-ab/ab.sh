#!/bin/bash
# Before/after the live counters file (reverb-stat): reverb-bench unary 64 B over shm://, c=1, p50, the jars
# alternated round by round under the same load, plus a third arm: the after jar with the file off
# (REVERB_COUNTERS=off, inherited by the server process: the same counters, in process memory). Then bytes allocated
# per call (all threads, client and server in one JVM), which do not depend on load.
# Needs a quiet machine (nothing else running); the 2-vCPU VM shared with builds gives bimodal p50s.
# Build each jar in its own checkout: mvn -B -o -q -DskipTests -pl benchmarks -am package
# usage: ab.sh BEFORE.jar AFTER.jar [ROUNDS]
set -u
before=$1; after=$2; rounds=${3:-5}
flags=(--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED)
for i in $(seq "$rounds"); do
  for side in before after after-off; do
    jar=$before; [ "$side" != before ] && jar=$after
    counters=on; [ "$side" = after-off ] && counters=off
    echo "== round $i $side $(uptime)"
    REVERB_COUNTERS=$counters java "${flags[@]}" -Xms1g -Xmx1g -XX:+AlwaysPreTouch -jar "$jar" \
      --uri "shm://abc-$side-$i" -z 5s --warmup 2s -q --format csv
  done
done
for i in 1 2 3; do
  for side in before after; do
    jar=$before; [ "$side" = after ] && jar=$after
    echo "== allocation $i $side: $(java "${flags[@]}" -cp "$jar" io.reverb.bench.GrpcAllocProbe 100000 native 2>&1 | grep '^native')"
  done
done
