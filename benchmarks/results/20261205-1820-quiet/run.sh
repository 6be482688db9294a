#!/bin/bash
# Quiet-machine measurements for issues 39/40 after the server stream SPI and the cork: A/B base (/tmp/base at
# 9723bcf, this session's start) against /work/main. Usage: run.sh OUT_DIR
set -u
out=${1:?out dir}; mkdir -p $out
B="-q"
run() { local name=$1 dir=$2; shift 2; echo "== $name $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) @ $(git -C $dir log --oneline -1 | cut -c1-7)" | tee -a $out/log.txt; (cd $dir && bin/reverb-bench "$@") > $out/$name.txt 2>&1; tail -8 $out/$name.txt | tee -a $out/log.txt; }
M=/work/main; S=/tmp/base
for i in 1 2 3; do
  run tput-c128-main-$i $M --uri shm://tp -c 128 -z 5s --warmup 2s $B
  run tput-c128-base-$i $S --uri shm://tp -c 128 -z 5s --warmup 2s $B
done
run tput-c128-tcp-main $M --uri tcp://127.0.0.1:0 -c 128 -z 5s --warmup 2s $B
run tput-c128-tcp-base $S --uri tcp://127.0.0.1:0 -c 128 -z 5s --warmup 2s $B
run grpc-on-reverb-main $M --compare 'shm://rg,grpc+shm://rgg?direct=true' --rounds 3 -z 6s --warmup 2s $B
run grpc-on-reverb-base $S --compare 'shm://rg,grpc+shm://rgg?direct=true' --rounds 3 -z 6s --warmup 2s $B
run floor-busy-main $M --compare 'shm://f1,floor,floor+aeron' --polling BUSY --rounds 3 -z 5s --warmup 2s $B
run floor-adaptive-main $M --compare 'shm://f1,floor,floor+aeron' --polling ADAPTIVE --rounds 3 -z 5s --warmup 2s $B
run stream-main $M --uri shm://st --kind server-streaming --stream-messages 1000 -c 4 -z 5s --warmup 2s $B
run stream-base $S --uri shm://st --kind server-streaming --stream-messages 1000 -c 4 -z 5s --warmup 2s $B
run mib-main $M --compare 'shm://m1,floor,grpc://127.0.0.1:0?direct=true' --payload 1MiB --rounds 3 -z 4s --warmup 2s $B
run idle-cpu-main $M idle-cpu --uri shm://idle --polling ADAPTIVE --seconds 10s
run jmh-grpc-alloc-main $M jmh UnaryLatencyBenchmark -bm avgt -prof gc -wi 2 -i 3 -w 2s -r 3s -f 1 -p target=grpc-reverb-shm-direct-noretry,grpc-netty-direct-noretry
run jmh-grpc-alloc-base $S jmh UnaryLatencyBenchmark -bm avgt -prof gc -wi 2 -i 3 -w 2s -r 3s -f 1 -p target=grpc-reverb-shm-direct-noretry
run jmh-native-alloc-main $M jmh UnaryLatencyBenchmark -bm avgt -prof gc -p target=reverb-shm-adaptive -wi 2 -i 3 -w 2s -r 3s -f 1
run jmh-native-alloc-base $S jmh UnaryLatencyBenchmark -bm avgt -prof gc -p target=reverb-shm-adaptive -wi 2 -i 3 -w 2s -r 3s -f 1
echo "== done $(date -u +%T)" | tee -a $out/log.txt
