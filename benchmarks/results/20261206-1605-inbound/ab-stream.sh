#!/bin/bash
# A/B of server-streaming 64 B over shm:// (1000 messages per call, 4 calls outstanding), two jars alternated.
# Usage, from the repository root: ab-stream.sh OUT PAIRS OLD.jar NEW.jar  (each jar a build of reverb-bench.jar)
out=$1; pairs=$2; old=$3; new=$4; mkdir -p "$out"
for i in $(seq 1 "$pairs"); do
  for name in old new; do
    if [[ $name == old ]]; then cp "$old" benchmarks/target/reverb-bench.jar; else cp "$new" benchmarks/target/reverb-bench.jar; fi
    r=$(bin/reverb-bench --uri shm://st --kind server-streaming --stream-messages 1000 -c 4 -z 5s --warmup 2s -q 2>&1 \
      | grep -E 'Messages:' | awk '{print $2}')
    echo "$i $name $r" | tee -a "$out/stream.txt"
  done
done
