#!/bin/sh
# Simulated hosts on one machine: K network namespaces ipuh0..ipuh{K-1},
# each with its own address on a private bridge (in a namespace of its own),
# so that between them MPI and UCX go over TCP as between real hosts.
#
#   launch/netns/hosts.sh up K       create them (prints the hostfile path)
#   launch/netns/hosts.sh down       remove them (and kill what runs inside)
#   launch/netns/hosts.sh link N up|down   cut or restore host N's link
#
# Then: launch/netns/mpirun.sh -np 4 --map-by node ipu-exec model.onnx ...
# Needs root and iproute2. Exit 77 when namespaces cannot be made here.
set -eu
PREFIX=ipuh
BR=ipubr
NET=${IPU_NETNS_SUBNET:-10.203.7}
STATE=/run/ipu-netns
cmd=${1:-}
case $cmd in
up)
    k=${2:-2}
    [ "$(id -u)" -eq 0 ] || { echo "hosts.sh: needs root" >&2; exit 77; }
    command -v ip >/dev/null || { echo "hosts.sh: ip (iproute2) missing" >&2; exit 77; }
    "$0" down >/dev/null 2>&1 || true
    mkdir -p $STATE
    ip netns add $BR 2>/dev/null || { echo "hosts.sh: cannot create network namespaces here" >&2; exit 77; }
    ip -n $BR link add br0 type bridge
    ip -n $BR link set br0 up
    ip -n $BR link set lo up
    : > $STATE/hostfile
    i=0
    while [ $i -lt "$k" ]; do
        h=$PREFIX$i
        ip netns add $h
        ip link add veth0 netns $h type veth peer name $h-br netns $BR
        ip -n $BR link set $h-br master br0
        ip -n $BR link set $h-br up
        ip -n $h addr add $NET.$((i + 10))/24 dev veth0
        ip -n $h link set veth0 up
        ip -n $h link set lo up
        # a connection with data in flight to a host whose link went down is
        # given up after ~13 s of retransmissions (default: ~15 min), as the
        # launcher's keepalive does for an idle one
        ip netns exec $h sysctl -qw net.ipv4.tcp_retries2=5 2>/dev/null || true
        echo "$NET.$((i + 10)) $h" >> $STATE/hosts
        echo "$NET.$((i + 10)) slots=${SLOTS:-2}" >> $STATE/hostfile
        i=$((i + 1))
    done
    echo "$k" > $STATE/count
    echo "$STATE/hostfile"
    ;;
down)
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^($PREFIX[0-9]+|$BR)$"); do
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
        ip netns delete "$ns" 2>/dev/null || true
    done
    rm -rf $STATE
    ;;
link)
    n=${2:?host number} state=${3:?up or down}
    ip -n $PREFIX$n link set veth0 "$state"
    ;;
*) echo "usage: $0 up K | down | link N up|down" >&2; exit 2 ;;
esac
