#!/bin/bash
# A/B: grpc-java server streaming over grpc+shm (1000 x 64 B per call, 4 calls at a time), with the client's response
# window (main after fa835be) and without (b1d68f4), alternated; grpc-java over Netty in the same command for reference.
# Usage (repository root): run.sh NEW.jar OLD.jar OUTDIR
new="$1"; old="$2"; out="$3"
for i in 1 2; do
  for j in new old; do
    jar=$new; [[ $j == old ]] && jar=$old
    cp "$jar" benchmarks/target/reverb-bench.jar
    bin/reverb-bench --compare 'grpc+shm://gw?direct=true,grpc://127.0.0.1:0?direct=true' --kind server-streaming \
      --stream-messages 1000 -c 4 -z 5s --warmup 2s -q > "$out/$j-$i.txt" 2>&1
  done
done
cp "$new" benchmarks/target/reverb-bench.jar
