#!/bin/bash
# usage: bench.sh JAR OUT [extra args...]  -- the bin/reverb-bench command line, with a given jar
jar=$1; out=$2; shift 2
{ echo "== $(date -u +%H:%M:%S) $(uptime)"; echo "jar: $jar"; } >> $out
java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Xms1g -Xmx1g \
  -jar $jar --compare 'tcp://127.0.0.1:0,grpc://127.0.0.1:0?direct=true' --payload ${PAYLOAD:-64,1MiB} -z ${DUR:-5s} -q "$@" >> $out 2>&1
echo "== end $(date -u +%H:%M:%S) $(uptime)" >> $out
