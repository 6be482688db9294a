#!/bin/bash
# mib-ab.sh ROUNDS: default-marshaller 1 MiB echo over shm, before/after jars alternated; prints min/p50 and the rope arrays taken prepared vs allocated at read (both JVMs)
for r in $(seq 1 $1); do
  for j in before after; do
    rm -f /tmp/mib-chunks-*
    echo "== $j round $r load $(cut -d' ' -f1-3 /proc/loadavg)"
    nice -n 19 java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Xms1g -Xmx1g -XX:+AlwaysPreTouch \
      -jar /tmp/mib-$j.jar --uri "shm://mibab$r$j" --payload 1MiB -z 4s --warmup 2s -q 2>&1 | grep -E "Requests/sec|Throughput|Min:|50 % in|calls/s"
    sleep 1; cat /tmp/mib-chunks-* 2>/dev/null
  done
done
