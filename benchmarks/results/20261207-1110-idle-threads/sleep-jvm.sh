#!/usr/bin/env bash
# A JVM that only sleeps (no Reverb at all), CPU by thread over 10 s, per heap setting. Writes sleep-jvm.txt.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
printf 'public class Sleep { public static void main(String[] a) throws Exception { Thread.sleep(60000); } }\n' > "$tmp/Sleep.java"
javac -d "$tmp" "$tmp/Sleep.java"
: > "$here/sleep-jvm.txt"
for opts in "" "-Xms1g -Xmx1g" "-Xms1g -Xmx1g -XX:+AlwaysPreTouch" "-Xms1g -Xmx1g -XX:+AlwaysPreTouch -XX:+UseTransparentHugePages" "-Xms1g -Xmx1g -XX:+AlwaysPreTouch -XX:-UsePerfData"; do
  java $opts -cp "$tmp" Sleep & pid=$!
  sleep 4
  { echo "# java $opts Sleep"; python3 "$here/thread-cpu.py" "$pid" 10 | head -4; } >> "$here/sleep-jvm.txt"
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
rm -rf "$tmp"
