#!/bin/sh
# mpirun's launch agent for the simulated hosts: `rsh.sh ADDR cmd...` runs
# cmd in the network namespace of the host with that address, named as it.
addr=$1
shift
# the hostfile names hosts by address; hosts.sh recorded each one's namespace
ns=$(awk -v a="$addr" '$1 == a || $2 == a {print $2}' /run/ipu-netns/hosts)
[ -n "$ns" ] || { echo "rsh.sh: unknown host $addr" >&2; exit 1; }
exec ip netns exec "$ns" unshare --uts sh -c "hostname $ns; exec $*"
