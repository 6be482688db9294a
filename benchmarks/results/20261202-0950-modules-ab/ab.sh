#!/bin/bash
# Before/after the module split, one channel and the per-connection grpc transports (issue 26):
# the two reverb-bench jars alternated, same targets, same load. before = 04940b2, after = main with the changes.
# usage: ab.sh BEFORE.jar AFTER.jar ROUNDS
set -u
before=$1; after=$2; rounds=${3:-3}
for i in $(seq "$rounds"); do
  for side in before after; do
    jar=$before; [ "$side" = after ] && jar=$after
    echo "== round $i $side $(uptime)"
    java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED \
      -Xms1g -Xmx1g -XX:+AlwaysPreTouch -jar "$jar" \
      --compare "shm://ab-$side-$i,grpc+shm://abg-$side-$i?direct=true,tcp://127.0.0.1:0" \
      -z 5s --warmup 2s -q --format csv
  done
done
