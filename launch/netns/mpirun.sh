#!/bin/sh
# mpirun across the simulated hosts of launch/netns/hosts.sh: started in the
# first host's namespace with the hostfile, the namespace launch agent, TCP
# restricted to the hosts' subnet, UCX over TCP between hosts and shared
# memory within one, short keepalives so a lost host is noticed quickly.
#   launch/netns/mpirun.sh [mpirun options] program args...
here=$(cd "$(dirname "$0")" && pwd)
STATE=/run/ipu-netns
NET=${IPU_NETNS_SUBNET:-10.203.7}
[ -f $STATE/hostfile ] || { echo "mpirun.sh: no hosts; run launch/netns/hosts.sh up K" >&2; exit 2; }
exec ip netns exec ipuh0 unshare --uts sh -c "hostname ipuh0; exec mpirun \
    --hostfile $STATE/hostfile --mca plm_rsh_agent $here/rsh.sh \
    --mca oob_tcp_if_include $NET.0/24 --mca btl_tcp_if_include $NET.0/24 \
    --mca oob_tcp_keepalive_time ${IPU_NETNS_KEEPALIVE:-5} --mca oob_tcp_keepalive_intvl 2 --mca oob_tcp_keepalive_probes 3 \
    -x UCX_TLS=tcp,self,sm -x UCX_NET_DEVICES=veth0 -x UCX_KEEPALIVE_INTERVAL=2s \
    -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM \
    $*"
