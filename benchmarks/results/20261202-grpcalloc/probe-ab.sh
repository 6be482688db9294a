#!/usr/bin/env bash
# Alternates the before and after jars through AsyncCallProbe (the bench's async closed loop, event polling: one
# poller runs client and server) and GrpcAllocProbe (blocking calls), then grpc-java over Netty once per jar (it does
# not use this code), with and without disableRetry(). Usage: probe-ab.sh BEFORE.jar AFTER.jar [rounds]
# The probes' classes come from the after jar (the before jar lacks the netty-noretry mode), first on the class path:
# they use public API only.
set -euo pipefail
before="$1"; after="$2"; rounds="${3:-2}"
flags=(--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED -Xms1g -Xmx1g)
probe="$(mktemp -d)"
(cd "$probe" && unzip -q "$after" 'io/reverb/bench/AsyncCallProbe*' 'io/reverb/bench/GrpcAllocProbe*')
for r in $(seq "$rounds"); do
  for jar in "$before" "$after"; do
    echo "== round $r: $jar (load $(cut -d' ' -f1-3 /proc/loadavg))"
    java "${flags[@]}" -cp "$probe:$jar" io.reverb.bench.AsyncCallProbe 300000 --query=polling=event \
      native grpc grpc-noretry 2>&1 | grep -v WARN
    java "${flags[@]}" -cp "$probe:$jar" io.reverb.bench.GrpcAllocProbe 200000 native grpc grpc-noretry 2>&1 | grep -v WARN
  done
done
echo "== grpc-java over Netty loopback, $after (load $(cut -d' ' -f1-3 /proc/loadavg))"
java "${flags[@]}" -cp "$probe:$after" io.reverb.bench.AsyncCallProbe 100000 --query=polling=event \
  netty netty-noretry 2>&1 | grep -v WARN
java "${flags[@]}" -cp "$probe:$after" io.reverb.bench.GrpcAllocProbe 100000 netty netty-noretry 2>&1 | grep -v WARN
rm -rf "$probe"
