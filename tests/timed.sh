#!/bin/sh
# Runs one test of make check (its LOG_COMPILER) and passes its exit status
# on; the last line of the test's log is its wall time ("wall time: S s"),
# which scripts/test.sh tabulates.
t0=$(date +%s.%N)
"$@"
rc=$?
t1=$(date +%s.%N)
echo "wall time: $(echo "$t0 $t1" | awk '{ printf "%.1f", $2 - $1 }') s"
exit $rc
