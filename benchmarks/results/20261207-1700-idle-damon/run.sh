#!/bin/bash
# The idle server's CPU with this VM's DAMON (kdamond, physical-address monitoring) off, then on again (a fresh
# kdamond), measured right away and after its monitoring has adapted. Needs root; leaves DAMON on.
cd "$(dirname "$0")/../../.."
D=/sys/kernel/mm/damon/admin/kdamonds/0/state
idle() { echo "-- $(date -u +%T) damon $(cat $D)"; bin/reverb-bench idle-cpu --uri shm://idle --polling ADAPTIVE --seconds 10s 2>&1 | grep -E "idle server|threads"; }
idle
echo off > $D; sleep 5
idle; idle
echo on > $D
idle
sleep 150
idle; idle
