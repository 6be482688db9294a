#!/bin/bash
# A/B of the probe backoff, alternating jar by jar, round by round (run from the repository root).
# BEFORE: benchmarks/target/reverb-bench.jar built at main 3a39c9b; AFTER: the same at this branch's commit.
# usage: [PREFIX=name-] benchmarks/results/20261202-tail3/ab.sh BEFORE.jar AFTER.jar [ROUNDS]   (output: $out/${PREFIX}*.txt)
set -u
out=$(dirname "$0")
p=${PREFIX:-}
before=$1; after=$2; rounds=${3:-3}
java=(java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED)
stamp() { echo "== $1 ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"; }
for r in $(seq "$rounds"); do
  for side in before after; do
    jar=$before; [[ $side == after ]] && jar=$after
    { stamp "$side round $r: EnginePingPong --modes BUSY,ADAPTIVE --throughput 5 --messages 300000"
      "${java[@]}" -cp "$jar" io.reverb.bench.pingpong.EnginePingPong --modes BUSY,ADAPTIVE --throughput 5 \
        --messages 300000 --slow-dump "/tmp/tail3-ab-$p$side-$r" 2>&1 | grep -E '^(mode|BUSY|ADAPTIVE) '
      echo "ADAPTIVE slow round trips without a sleep, by 10 us bucket (lower bound us: count):"
      awk '!/^#/ && $4==0 {b=int($3/10000)*10; c[b]++} END{for(k in c) print k, c[k]}' \
        "/tmp/tail3-ab-$p$side-$r-ADAPTIVE.txt" | sort -n | head -12 | tr '\n' ' '; echo
    } >> "$out/${p}enginepingpong-ab.txt"
    { stamp "$side round $r: reverb-bench --uri shm://t3$side$r --polling BUSY,ADAPTIVE -z 10s -q"
      "${java[@]}" -Xms1g -Xmx1g -XX:+AlwaysPreTouch -jar "$jar" --uri "shm://t3$side$r" --polling BUSY,ADAPTIVE \
        -z 10s -q 2>&1 | tail -n 4
    } >> "$out/${p}rpc-ab.txt"
    { stamp "$side round $r: reverb-bench idle-cpu --uri shm://i3$side$r --polling ADAPTIVE --seconds 10s"
      "${java[@]}" -Xms1g -Xmx1g -XX:+AlwaysPreTouch -jar "$jar" idle-cpu --uri "shm://i3$side$r" --polling ADAPTIVE \
        --seconds 10s 2>&1 | tail -n 3
    } >> "$out/${p}idle-cpu-ab.txt"
  done
done
