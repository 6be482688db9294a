#!/usr/bin/env bash
# Issue 40's figures on main after the engine cuts (AMD EPYC 2-vCPU VM); run from the repository root after
# `mvn -B -q install -DskipTests` (bin/reverb-bench builds its jar otherwise). Each command's output goes to the file named.
set -u
d="$(cd "$(dirname "$0")" && pwd)"
b=bin/reverb-bench
{ date -u; uptime; } > "$d/log.txt"
$b --compare 'shm://f1,floor,floor+aeron' --polling BUSY --rounds 3 -z 5s --warmup 2s -q > "$d/floor-busy.txt" 2>&1
$b --compare 'shm://f1,floor+aeron' --polling ADAPTIVE --rounds 3 -z 5s --warmup 2s -q > "$d/adaptive.txt" 2>&1
$b --compare 'shm://m1,floor,floor?readReplies=true,grpc://127.0.0.1:0?direct=true' --payload 1MiB --rounds 3 -z 4s --warmup 2s -q > "$d/mib.txt" 2>&1
$b --uri shm://tp -c 128 -z 5s --warmup 2s -q --rounds 3 > "$d/tput-c128.txt" 2>&1
$b --uri shm://st --kind server-streaming --stream-messages 1000 -c 4 -z 5s --warmup 2s -q --rounds 3 > "$d/stream.txt" 2>&1
$b --compare 'tcp://127.0.0.1:0,floor+tcp' --polling BUSY --payload 64,1MiB --rounds 3 -z 4s --warmup 2s -q > "$d/tcp-busy.txt" 2>&1
$b idle-cpu --uri shm://idle --polling ADAPTIVE --seconds 10s > "$d/idle-cpu.txt" 2>&1
$b software --rounds 3 -z 6s --warmup 3s > "$d/software.txt" 2>&1
{ date -u; uptime; } >> "$d/log.txt"
