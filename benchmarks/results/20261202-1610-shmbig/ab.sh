#!/bin/bash
# ab.sh ROUNDS: default-marshaller 1 MiB echo over shm, BEFORE and AFTER jars alternated round by round
BEFORE=${BEFORE:-/tmp/shmbig/before.jar}; AFTER=${AFTER:-/tmp/shmbig/after.jar}
for r in $(seq 1 $1); do
  for j in before after; do
    echo "== $j round $r load $(cut -d' ' -f1-3 /proc/loadavg)"
    java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Xms1g -Xmx1g -XX:+AlwaysPreTouch \
      -jar "$([ $j = before ] && echo "$BEFORE" || echo "$AFTER")" --uri "shm://shmbigab$r$j" --payload 1MiB -z 5s -q 2>&1 | grep -E "Throughput|Min:|50 % in|90 % in"
  done
done
