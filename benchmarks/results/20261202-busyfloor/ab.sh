#!/bin/bash
# usage: ab.sh rounds calls name1=cp1 name2=cp2 ...
rounds=$1; calls=$2; shift 2
for r in $(seq 1 $rounds); do
  for spec in "$@"; do
    name=${spec%%=*}; cp=${spec#*=}
    out=$(java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED -Xms1g -Xmx1g -XX:+AlwaysPreTouch -cp $cp io.reverb.bench.loopback.RpcCostProbe $calls 5 rpc 2>&1 | grep '^rpc  ')
    min=$(echo "$out" | awk '{print $2}' | sort -n | head -1)
    med=$(echo "$out" | awk '{print $2}' | sort -n | sed -n 3p)
    b=$(echo "$out" | awk '{print $8}' | sort -n | head -1)
    echo "round $r $name min $min med $med B/call $b load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
