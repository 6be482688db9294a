#!/bin/bash
# A/B across two network namespaces joined by a veth pair (MTU 1500): each target's server runs in tcpmib-s
# (10.79.0.1) with `ip netns exec`, the client in tcpmib-c (10.79.0.2); two jars alternated round by round. Root.
# usage: A_JAR=before.jar B_JAR=after.jar ab-netns.sh ROUNDS OUT
set -u
rounds=$1; out=$2
J="java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED -Xms1g -Xmx1g -XX:+AlwaysPreTouch"
s=tcpmib-s; c=tcpmib-c
cleanup() { ip netns del $s 2>/dev/null; ip netns del $c 2>/dev/null; }
trap cleanup EXIT
cleanup
ip netns add $s; ip netns add $c
ip link add tcpmib-vs type veth peer name tcpmib-vc
ip link set tcpmib-vs netns $s; ip link set tcpmib-vc netns $c
ip -n $s addr add 10.79.0.1/24 dev tcpmib-vs; ip -n $c addr add 10.79.0.2/24 dev tcpmib-vc
for n in $s $c; do ip -n $n link set lo up; done
ip -n $s link set tcpmib-vs up; ip -n $c link set tcpmib-vc up
port=7600
for r in $(seq "$rounds"); do
  for v in A B; do
    if [ $v = A ]; then jar=$A_JAR; else jar=$B_JAR; fi
    for uri in 'tcp://10.79.0.1:PORT' 'tcp://10.79.0.1:PORT?aliasing=true' 'grpc://10.79.0.1:PORT?direct=true'; do
      port=$((port + 1)); u=${uri/PORT/$port}
      ip netns exec $s $J -jar "$jar" server --uri "$u" > /tmp/tcpmib-netns-server.log 2>&1 &
      sp=$!
      for i in $(seq 300); do grep -q '^REVERB-BENCH-SERVER-READY' /tmp/tcpmib-netns-server.log && break; sleep 0.1; done
      echo "== round $r $v $jar $u $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out"
      ip netns exec $c $J -jar "$jar" --uri "$u" --server none --payload 1MiB -z 5s -q 2>&1 \
        | grep -E 'Throughput|Min:|50 % in|99 % in' >> "$out"
      kill $sp; wait $sp 2>/dev/null
    done
  done
done
