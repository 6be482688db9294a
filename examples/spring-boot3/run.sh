#!/usr/bin/env bash
# Runs the Spring Boot example on Spring Boot 3.5 with the JVM flag Reverb needs (Agrona's --add-exports): the
# sources of examples/spring-boot (Spring Boot 4), built against reverb-spring-boot3-starter. Same arguments as
# examples/spring-boot/run.sh, e.g.
#
#   examples/spring-boot3/run.sh                                   # serve and call in one application, then exit
#   examples/spring-boot3/run.sh --spring.profiles.active=server   # serve until Ctrl-C (graceful shutdown)
set -euo pipefail
REVERB_EXAMPLE_MODULE=examples/spring-boot3 exec "$(dirname "$0")/../spring-boot/run.sh" "$@"
