#!/bin/bash
# sw-ab.sh ROUNDS: alternates `reverb-bench software` with the engine of 702b0b07 (classes first) and with main's jar
J="java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Xms1g -Xmx1g -XX:+AlwaysPreTouch"
for r in $(seq $1); do
  echo "== before (702b0b07 engine)"; $J -cp /work/wt/base/rdma-transport/engine/target/classes:/work/main/benchmarks/target/reverb-bench.jar io.reverb.bench.ReverbBench software -z 6s --warmup 3s | tail -3
  echo "== after (main)"; $J -jar /work/main/benchmarks/target/reverb-bench.jar software -z 6s --warmup 3s | tail -3
done
