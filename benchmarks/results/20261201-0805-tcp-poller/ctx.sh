#!/bin/bash
# usage: ctx.sh JAR PAYLOAD URIQUERY -- voluntary context switches per call of pollers and NIC threads, both processes
jar=$1; payload=$2; q=$3
J="java --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED -Xms1g -Xmx1g -jar $jar"
$J server --uri "tcp://127.0.0.1:0$q" > /tmp/s3-b/srv.out 2>&1 &
sp=$!
for i in $(seq 50); do grep -q READY /tmp/s3-b/srv.out && break; sleep 0.2; done
addr=$(grep READY /tmp/s3-b/srv.out | awk '{print $2}')
$J --uri "$addr" --server none --payload $payload -z 8s --warmup 2s -q > /tmp/s3-b/cli.out 2>&1 &
cp=$!
sleep 4
snap() { for p in $sp $cp; do for t in /proc/$p/task/*; do n=$(cat $t/comm 2>/dev/null); case "$n" in *poll*|*nic*) echo "$p $(basename $t) $n $(grep -h voluntary_ctxt_switches $t/status | awk '{print $2}' | paste -sd' ') $(awk '{print $14+$15}' $t/stat)";; esac; done; done; }
snap > /tmp/s3-b/snap1; s1=$(date +%s.%N); sleep 3; snap > /tmp/s3-b/snap2; s2=$(date +%s.%N)
wait $cp
grep -E "Throughput" /tmp/s3-b/cli.out
calls=$(grep Throughput /tmp/s3-b/cli.out | awk '{print $2}' | tr -d ,)
join -j2 <(sort -k2 /tmp/s3-b/snap1) <(sort -k2 /tmp/s3-b/snap2) | awk -v c=$calls -v d=$(echo "$s2 - $s1" | bc) '{n=c*d; printf "%s %-16s vol/call %.2f  invol/call %.2f  cpu %%core %.0f\n", ($2=="'$sp'"?"server":"client"), $3, ($9-$4)/n, ($10-$5)/n, ($11-$6)/d}'
kill $sp
