#!/bin/bash
# usage: loop.sh size buf [spin]  (from the repository root, after bin/reverb-bench has built the jar)
# The raw NIO echo floor, two processes on loopback: io.reverb.bench.floor.NioEchoFloor.
jar=benchmarks/target/reverb-bench.jar
port_file=$(mktemp)
java -cp "$jar" io.reverb.bench.floor.NioEchoFloor server "$1" "$2" "${3:-block}" > "$port_file" &
sp=$!
for i in $(seq 50); do [ -s "$port_file" ] && break; sleep 0.1; done
java -cp "$jar" io.reverb.bench.floor.NioEchoFloor client "$1" "$2" "${3:-block}" "$(cat "$port_file")"
kill $sp 2>/dev/null; wait $sp 2>/dev/null; rm -f "$port_file"
