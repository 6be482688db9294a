#!/usr/bin/env bash
# Runs an example main with the JVM flags Reverb needs (Agrona's --add-exports).
#
#   examples/run.sh helloworld.HelloWorldServer                 # listens on shm://reverb-helloworld
#   examples/run.sh helloworld.HelloWorldClient                 # in another terminal
#   examples/run.sh routeguide.RouteGuideServer tcp://127.0.0.1:7000
#   examples/run.sh inference.InferenceClient shm://reverb-inference 32
#
# The first run builds the examples (and the modules they need) from this checkout; REBUILD=1 forces it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
classpath_file="$root/examples/target/classpath.txt"
if [ ! -f "$classpath_file" ] || [ -n "${REBUILD:-}" ]; then
  echo "examples/run.sh: building the examples (mvn -B -q -pl examples -am package -DskipTests)..." >&2
  # Maven 3.8 writes ANSI reset codes even in batch mode: show its output, without them, only on failure.
  log="$(mktemp)"
  if ! (cd "$root" && mvn -B -q -Dstyle.color=never -pl examples -am package dependency:build-classpath \
    -DskipTests -Dmdep.outputFile=target/classpath.txt) >"$log" 2>&1; then
    sed 's/\x1b\[[0-9;]*m//g' "$log" >&2
    rm -f "$log"
    echo "examples/run.sh: the build failed (Maven's output above)" >&2
    exit 1
  fi
  rm -f "$log"
fi
if [ $# -lt 1 ]; then
  echo "usage: $0 <main class, e.g. helloworld.HelloWorldServer> [uri] [args...]" >&2
  exit 2
fi
main="$1"
shift
case "$main" in
  io.reverb.*) ;;
  *) main="io.reverb.examples.$main" ;;
esac
exec java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED --add-exports java.base/sun.nio.ch=ALL-UNNAMED \
  -cp "$root/examples/target/classes:$(cat "$classpath_file")" "$main" "$@"
