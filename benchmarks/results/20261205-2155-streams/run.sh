#!/bin/bash
# A/B of this session's stream changes (client response window, server grant window, server stream cork) against
# b1d68f4: grpc-java server streaming and grpc-java unary against native, each jar in turn.
# Usage (repository root): run.sh NEW.jar OLD.jar OUTDIR
new="$1"; old="$2"; out="$3"
for i in 1 2; do
  for j in new old; do
    jar=$new; [[ $j == old ]] && jar=$old
    cp "$jar" benchmarks/target/reverb-bench.jar
    bin/reverb-bench --compare 'grpc+shm://gs?direct=true,shm://ns' --kind server-streaming --stream-messages 1000 \
      -c 4 -z 5s --warmup 2s -q > "$out/stream-$j-$i.txt" 2>&1
  done
done
for j in new old; do
  jar=$new; [[ $j == old ]] && jar=$old
  cp "$jar" benchmarks/target/reverb-bench.jar
  bin/reverb-bench --compare 'shm://rg,grpc+shm://rgg?direct=true' --rounds 3 -z 6s --warmup 2s -q > "$out/unary-$j.txt" 2>&1
done
cp "$new" benchmarks/target/reverb-bench.jar
