#!/usr/bin/env bash
# Runs the Spring Boot example on Spring Boot 4 with the JVM flag Reverb needs (Agrona's --add-exports).
# (examples/spring-boot3/run.sh runs the same application on Spring Boot 3.5.)
#
#   examples/spring-boot/run.sh                                   # serve and call in one application, then exit
#   examples/spring-boot/run.sh --spring.profiles.active=server   # serve until Ctrl-C (graceful shutdown)
#   examples/spring-boot/run.sh --spring.profiles.active=client   # in another terminal: call it
#   examples/spring-boot/run.sh --reverb.server.address=tcp://127.0.0.1:9090 \
#       --reverb.client.channels.greeter.address=tcp://127.0.0.1:9090
#
# The first run builds the example (and the modules it needs) from this checkout; REBUILD=1 forces it.
# REVERB_EXAMPLE_MODULE names the module to build and run (examples/spring-boot3/run.sh sets it).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
name="${REVERB_EXAMPLE_MODULE:-examples/spring-boot}"
module="$root/$name"
classpath_file="$module/target/classpath.txt"
if [ ! -f "$classpath_file" ] || [ -n "${REBUILD:-}" ]; then
  echo "$name/run.sh: building (mvn -B -q -pl $name -am package -DskipTests)..." >&2
  # Maven 3.8 writes ANSI reset codes even in batch mode: show its output, without them, only on failure.
  log="$(mktemp)"
  if ! (cd "$root" && mvn -B -q -Dstyle.color=never -pl "$name" -am package dependency:build-classpath \
    -DskipTests -Dmaven.javadoc.skip -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime) >"$log" 2>&1; then
    sed 's/\x1b\[[0-9;]*m//g' "$log" >&2
    rm -f "$log"
    echo "$name/run.sh: the build failed (Maven's output above)" >&2
    exit 1
  fi
  rm -f "$log"
fi
exec java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED --add-exports java.base/sun.nio.ch=ALL-UNNAMED \
  -cp "$module/target/classes:$(cat "$classpath_file")" io.reverb.examples.springboot.GreeterApplication "$@"
