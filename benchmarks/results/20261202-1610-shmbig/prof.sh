#!/bin/bash
# usage: prof.sh TAG URI
TAG=$1; URI=$2
J=${JAR:-/work/wt-shmbig/benchmarks/target/reverb-bench.jar}
java -XX:+PreserveFramePointer --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Xms1g -Xmx1g -XX:+AlwaysPreTouch -jar $J --uri "$URI" --payload 1MiB -z 22s -q --server-jvm-arg=-XX:+PreserveFramePointer > /tmp/shmbig/$TAG.out 2>&1 &
BP=$!
sleep 12
PIDS=$(pgrep -f "reverb-bench.jar|after.jar|before.jar")
echo "pids: $PIDS"; uptime
perf record -F 499 -a -g -o /tmp/shmbig/$TAG.perf -- sleep 6 2>/dev/null
for p in $PIDS; do jcmd $p Compiler.perfmap >/dev/null 2>&1; done
wait $BP
tail -4 /tmp/shmbig/$TAG.out | head -2
grep -E "Requests/sec|50%|Average" /tmp/shmbig/$TAG.out
