#!/bin/bash
# Before/after one wake-up per blocking grpc-java call over Reverb: two reverb-bench jars alternated round by round,
# native stubs and grpc-java stubs (directExecutor on both sides) over shm://, unary 64 B, c=1, each server in its
# own JVM. before = main at ed55a8a, after = the grpcfast branch. For a quiet machine only.
# usage: ab.sh BEFORE.jar AFTER.jar ROUNDS
set -u
before=$1; after=$2; rounds=${3:-5}
for i in $(seq "$rounds"); do
  for side in before after; do
    jar=$before; [ "$side" = after ] && jar=$after
    echo "== round $i $side $(uptime)"
    java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED \
      -Xms1g -Xmx1g -XX:+AlwaysPreTouch -jar "$jar" \
      --compare "shm://hn-$side-$i,grpc+shm://hg-$side-$i?direct=true" \
      -z 5s --warmup 2s -q --format csv
  done
done
