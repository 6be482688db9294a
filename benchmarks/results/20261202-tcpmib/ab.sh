#!/bin/bash
# A/B on loopback: the same --compare command with two jars, alternated round by round (servers in their own JVMs).
# usage: A_JAR=before.jar B_JAR=after.jar ab.sh ROUNDS TARGETS OUT   (TARGETS as for --compare)
set -u
rounds=$1; targets=$2; out=$3
J="java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED -Xms1g -Xmx1g -XX:+AlwaysPreTouch"
for r in $(seq "$rounds"); do
  for v in A B; do
    if [ $v = A ]; then jar=$A_JAR; else jar=$B_JAR; fi
    echo "== round $r $v $jar $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out"
    $J -jar "$jar" --compare "$targets" --payload 1MiB -z 5s -q 2>&1 | grep -v '^\s*at \|WARN' \
      | sed -n '/^Side by side/,$p' >> "$out"
  done
done
