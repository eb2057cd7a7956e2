#!/bin/sh
# A real single-machine SLURM cluster (munge + slurmctld + slurmd from
# Debian's slurm-wlm), for the tests and for trying the batch template.
#
#   launch/slurm/cluster.sh up DIR     start it; prints `export SLURM_CONF=DIR/slurm.conf`
#   launch/slurm/cluster.sh down DIR   stop it and remove DIR
#
# Needs root and the packages slurm-wlm and munge (scripts/install-deps.sh).
# Exit 77 when they are missing, 1 when the node does not come up.
set -eu
cmd=${1:-} dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 up|down DIR" >&2; exit 2; }
case $cmd in
up)
    for b in slurmctld slurmd sbatch munged; do
        command -v $b >/dev/null 2>&1 || [ -x /usr/sbin/$b ] || { echo "cluster.sh: $b not installed (apt-get install slurm-wlm munge)" >&2; exit 77; }
    done
    mkdir -p "$dir/state" "$dir/spool" "$dir/log"
    dir=$(cd "$dir" && pwd)
    # munge: the package makes the key; make one if it did not
    [ -f /etc/munge/munge.key ] || { mungekey --create >/dev/null 2>&1 || /usr/sbin/mungekey --create; chown munge:munge /etc/munge/munge.key; chmod 600 /etc/munge/munge.key; }
    install -d -o munge -g munge -m 0755 /run/munge
    pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
    host=$(hostname)
    cpus=$(nproc)
    mem=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)
    cat > "$dir/slurm.conf" <<CONF
ClusterName=ipuexec
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MailProg=/bin/true
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
    export SLURM_CONF="$dir/slurm.conf"
    /usr/sbin/slurmctld -i
    /usr/sbin/slurmd
    i=0
    until sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed)'; do
        i=$((i + 1))
        [ $i -lt 100 ] || { echo "cluster.sh: the node did not come up; see $dir/log" >&2; exit 1; }
        sleep 0.2
    done
    echo "export SLURM_CONF=$dir/slurm.conf"
    ;;
down)
    pids=""
    for f in "$dir/slurmd.pid" "$dir/slurmctld.pid"; do
        [ -f "$f" ] && pids="$pids $(cat "$f")"
    done
    [ -f "$dir/slurm.conf" ] && SLURM_CONF="$dir/slurm.conf" scontrol shutdown >/dev/null 2>&1 || true
    # wait for the daemons (and their job steps) to go, then make sure
    alive() { for p in $pids; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
    i=0
    while [ $i -lt 50 ] && alive; do i=$((i + 1)); sleep 0.1; done
    for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
    pkill -9 -f "slurmstepd.*$dir" 2>/dev/null || true
    rm -rf "$dir" /tmp/spmix_appdir_* 2>/dev/null || true
    ;;
*) echo "usage: $0 up|down DIR" >&2; exit 2 ;;
esac
