#!/usr/bin/env bash
# Runs a main of the grpc-java migration example with the flag Reverb's transports need.
#   examples/grpc-migration/run.sh DualServer [port] [reverb-uri]        # terminal 1
#   examples/grpc-migration/run.sh MigrationClient [port] [reverb-uri]   # terminal 2
# Builds the module and its class path on first use (REBUILD=1 to rebuild).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
module="$root/examples/grpc-migration"
classpath_file="$module/target/classpath.txt"
if [ ! -f "$classpath_file" ] || [ -n "${REBUILD:-}" ]; then
  (cd "$root" && mvn -B -q -pl examples/grpc-migration -am install -DskipTests && \
    mvn -B -q -pl examples/grpc-migration dependency:build-classpath -Dmdep.outputFile=target/classpath.txt)
fi
if [ $# -lt 1 ]; then
  echo "usage: $0 DualServer|MigrationClient [port] [reverb-uri]" >&2
  exit 2
fi
main="$1"
shift
case "$main" in
  io.reverb.*) ;;
  *) main="io.reverb.examples.migration.$main" ;;
esac
exec java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED --add-exports java.base/sun.nio.ch=ALL-UNNAMED \
  -cp "$module/target/classes:$(cat "$classpath_file")" "$main" "$@"
