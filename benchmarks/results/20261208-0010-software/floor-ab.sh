#!/bin/bash
# floor-ab.sh ROUNDS TARGETS [extra reverb-bench args]: alternates the engine of 702b0b07 (its classes compiled in a
# worktree, put before the jar: `git worktree add /work/wt/base 702b0b07 && (cd /work/wt/base && mvn -o -q -pl
# rdma-transport/engine compile)`) and main's (the jar alone), one --rounds 1 run each, BUSY.
rounds=$1; targets=$2; shift 2
J="java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Xms1g -Xmx1g -XX:+AlwaysPreTouch"
jar=benchmarks/target/reverb-bench.jar
for r in $(seq "$rounds"); do
  for v in before after; do
    if [ $v = before ]; then cp=/work/wt/base/rdma-transport/engine/target/classes:$jar; else cp=$jar; fi
    echo "== round $r: $v"
    $J -cp "$cp" io.reverb.bench.ReverbBench --compare "$targets" --polling BUSY --rounds 1 -z 4s --warmup 2s -q "$@" 2>&1 |
      grep -E "^  (floor|reverb)" | grep -v " vs "
  done
done
