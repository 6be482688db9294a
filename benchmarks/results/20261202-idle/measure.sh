#!/usr/bin/env bash
# measure.sh JAR LABEL: runs idle-cpu (ADAPTIVE, 25 s) with JAR, and samples the server's threads for 10 s of its
# idle window (once the server's CPU has stopped growing: < 2 ticks in each of 2 consecutive seconds)
jar=$1; label=$2; name=idl$RANDOM
cd /work/wt-idle
echo "== $label $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Xms1g -Xmx1g -XX:+AlwaysPreTouch \
  -Dreverb.protoc=benchmarks/target/protoc/protoc.exe -jar $jar idle-cpu --uri shm://$name --polling ADAPTIVE --seconds ${SECS:-25}s $EXTRA > /tmp/idle/out.$$ 2>&1 &
bench=$!
srv=""
for i in $(seq 1 300); do srv=$(pgrep -f -n "server --uri shm://$name" || true); [[ -n "$srv" ]] && break; sleep 0.1; done
sleep 3
prev=$(awk '{print $14+$15}' /proc/$srv/stat); quiet=0
for i in $(seq 1 60); do
  sleep 1
  cur=$(awk '{print $14+$15}' /proc/$srv/stat 2>/dev/null || echo 0)
  if (( cur - prev < 2 )); then quiet=$((quiet+1)); else quiet=0; fi
  prev=$cur
  (( quiet >= 2 )) && break
done
python3 /tmp/idle/threads.py $srv ${SAMPLE:-10}
wait $bench
cat /tmp/idle/out.$$; rm -f /tmp/idle/out.$$
echo "== end $(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/')"
