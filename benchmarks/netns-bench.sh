#!/usr/bin/env bash
# netns-bench.sh: reverb-bench with each target's server in one network namespace and the client in another,
# joined by a veth pair (a real TCP path with segmentation at the veth's MTU, not loopback's 64 KiB).
#
#   benchmarks/netns-bench.sh [--mtu N] [--prefix NAME] TARGETS [reverb-bench options...]
#
# TARGETS: comma-separated URIs whose host is SERVER, replaced by the server namespace's address, each with a fixed
# port, e.g.
#   benchmarks/netns-bench.sh 'tcp://SERVER:7401,tcp://SERVER:7402?aliasing=true,grpc://SERVER:7403?direct=true' \
#     --payload 1MiB -z 5s -q
# (floor+tcp://SERVER:7404 is the socket floor of tcp://: a plain NIO echo, no RPC.)
# One server JVM per target (started in the server namespace with `reverb-bench server`, stopped after its run),
# one client run per target (`--server none`), then the side-by-side table and ratios of all runs
# (`reverb-bench report`). JSON results are kept in benchmarks/target/netns-bench/<UTC time>/.
#
# Needs root (ip netns, veth) and iproute2. The namespaces are named PREFIX-s and PREFIX-c (default prefix
# reverb-nb) and are deleted on exit, also on failure or Ctrl-C. JVM options: as bin/reverb-bench
# (REVERB_BENCH_JVM_OPTS, default -Xms1g -Xmx1g -XX:+AlwaysPreTouch), for server and client alike.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jar="$root/benchmarks/target/reverb-bench.jar"
mtu=1500
prefix=reverb-nb
while [[ $# -gt 0 ]]; do
  case "$1" in
    --mtu) mtu="$2"; shift 2 ;;
    --prefix) prefix="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
if [[ $# -lt 1 ]]; then
  echo "usage: $0 [--mtu N] [--prefix NAME] TARGETS [reverb-bench options...] (see --help)" >&2
  exit 2
fi
targets="$1"
shift
if [[ "$(id -u)" != 0 ]]; then
  echo "netns-bench: needs root (ip netns add)" >&2
  exit 2
fi
if [[ ! -f "$jar" ]]; then
  echo "netns-bench: $jar is missing; build it with: mvn -B -q -DskipTests -pl benchmarks -am package" >&2
  exit 2
fi
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
# shellcheck disable=SC2206
jvm=(--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED
  ${REVERB_BENCH_JVM_OPTS:--Xms1g -Xmx1g -XX:+AlwaysPreTouch})

ns_s="$prefix-s"
ns_c="$prefix-c"
veth_s="${prefix:0:10}s"
veth_c="${prefix:0:10}c"
server_ip=10.78.0.1
client_ip=10.78.0.2
out="$root/benchmarks/target/netns-bench/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
server_pid=

cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2> /dev/null || true; wait "$server_pid" 2> /dev/null || true; fi
  ip netns del "$ns_s" 2> /dev/null || true
  ip netns del "$ns_c" 2> /dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$ns_s"
ip netns add "$ns_c"
ip link add "$veth_s" type veth peer name "$veth_c"
ip link set "$veth_s" netns "$ns_s"
ip link set "$veth_c" netns "$ns_c"
ip -n "$ns_s" addr add "$server_ip/24" dev "$veth_s"
ip -n "$ns_c" addr add "$client_ip/24" dev "$veth_c"
for ns in "$ns_s" "$ns_c"; do ip -n "$ns" link set lo up; done
ip -n "$ns_s" link set "$veth_s" mtu "$mtu" up
ip -n "$ns_c" link set "$veth_c" mtu "$mtu" up
echo "netns-bench: server namespace $ns_s ($server_ip), client namespace $ns_c ($client_ip), veth MTU $mtu;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

i=0
results=()
IFS=',' read -r -a uris <<< "$targets"
for template in "${uris[@]}"; do
  uri="${template//SERVER/$server_ip}"
  i=$((i + 1))
  log="$out/server-$i.log"
  ip netns exec "$ns_s" "$java" "${jvm[@]}" -jar "$jar" server --uri "$uri" > "$log" 2>&1 &
  server_pid=$!
  end=$((SECONDS + 90))
  until grep -q '^REVERB-BENCH-SERVER-READY ' "$log" 2> /dev/null; do
    if ! kill -0 "$server_pid" 2> /dev/null || ((SECONDS >= end)); then
      echo "netns-bench: the server for $uri did not start; its log:" >&2
      cat "$log" >&2
      exit 1
    fi
    sleep 0.1
  done
  ip netns exec "$ns_c" "$java" "${jvm[@]}" -jar "$jar" --uri "$uri" --server none --format json \
    -o "$out/run-$i.json" "$@"
  results+=("$out/run-$i.json")
  kill "$server_pid" 2> /dev/null || true
  wait "$server_pid" 2> /dev/null || true
  server_pid=
done
"$java" "${jvm[@]}" -jar "$jar" report "${results[@]}" | tee "$out/report.txt"
echo "netns-bench: load average at the end $(cut -d' ' -f1-3 /proc/loadavg); results in $out" >&2
