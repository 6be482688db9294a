#!/bin/bash
# usage: loop.sh size buf [spin]
cd /tmp/s3-b
java Loop.java server $1 $2 ${3:-block} > /tmp/s3-b/port.txt &
sp=$!
for i in $(seq 50); do [ -s /tmp/s3-b/port.txt ] && break; sleep 0.1; done
java Loop.java client $1 $2 ${3:-block} $(cat /tmp/s3-b/port.txt)
kill $sp 2>/dev/null; wait $sp 2>/dev/null; rm -f /tmp/s3-b/port.txt
