#!/bin/bash
# Class histogram of what one blocking grpc-java unary call over shm:// allocates (client and server in one JVM,
# directExecutor, disableRetry), with Epsilon GC so that nothing allocated is collected before it is counted.
# Usage: hist.sh CLASSPATH OUT [extra JVM flags, e.g. -XX:-DoEscapeAnalysis]; compare two with diff.py A B,
# sum by owner with owners.py FILES...
cp="$1"; out="$2"; shift 2
java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED -XX:+UnlockExperimentalVMOptions -XX:+UseEpsilonGC \
  -Xms4g -Xmx4g "$@" -cp "$cp" io.reverb.bench.AsyncCallProbe 50000 --histogram --blocking grpc-noretry 2>&1 \
  | grep -v WARN > "$out"
