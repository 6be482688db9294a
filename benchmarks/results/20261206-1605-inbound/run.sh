#!/bin/bash
# issue 40's figures, main at the session's streaming change; from the repository root
out=${1:-.}
uptime > $out/uptime.txt
bin/reverb-bench --compare 'shm://f1,floor,floor+aeron' --polling BUSY --rounds 3 -z 5s --warmup 2s -q > $out/floor-BUSY.txt 2>&1
bin/reverb-bench --compare 'shm://f1,floor,floor+aeron' --polling ADAPTIVE --rounds 3 -z 5s --warmup 2s -q > $out/floor-ADAPTIVE.txt 2>&1
bin/reverb-bench --compare 'shm://m1,floor,grpc://127.0.0.1:0?direct=true' --payload 1MiB --rounds 3 -z 4s --warmup 2s -q > $out/mib.txt 2>&1
bin/reverb-bench --uri shm://tp -c 128 -z 5s --warmup 2s -q --rounds 3 > $out/tput-c128.txt 2>&1
bin/reverb-bench --uri shm://st --kind server-streaming --stream-messages 1000 -c 4 -z 5s --warmup 2s -q --rounds 3 > $out/stream.txt 2>&1
uptime >> $out/uptime.txt
