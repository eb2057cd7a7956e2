#!/bin/bash
# Model benchmarks of ipu-exec on a machine without Open MPI, UCX, oneDNN,
# protobuf-c or hwloc: everything comes from bench/remote/pack/bundle.tar.xz (made here by
# bench/remote/pack.sh on Debian 12), the models from the machine's python3
# (torch, torchvision, onnx), the peer from its onnxruntime wheel
# (bench/ort_run.py). Run from the repository root:
#
#   OUT=/some/dir bash bench/remote/run.sh
#
# Results, appended as each step goes (a timeout keeps what was done), at
# most 8 files in $OUT:
#   env.txt      the machine: CPUs, tools, python packages, limits
#   log.txt      every step's timestamp, commands, stderr, smoke tests
#   models1.md   bench/models.sh at 1 thread          (step models1)
#   pipeline.md  bench/pipeline.sh resnet50           (step pipeline)
#   scaling.md   resnet50 over 1/2/4/8 ranks, 8 replicas (step scaling)
#   gcl.md       libgcl's call check against no check  (step gcl: needs
#                bench/remote/pack/gcl.tar.xz from bench/remote/pack-gcl.sh)
#   models2.md   bench/models.sh at BENCH_THREADS=2   (step models2)
#   layout.md    the CNNs at batch 1 and 8, 1 thread, with convolutions in
#                oneDNN's layout and in its channel-blocked one
#                (IPU_EXEC_CONV_LAYOUT; step layout, not run by default)
#
# Knobs (environment): DEV_STEPS (default "smoke models models1 pipeline
# scaling gcl models2"), DEV_MODELS (the bench's model list), DEV_ROUNDS
# (BENCH_ROUNDS of models.sh, 2), DEV_RUNS (BENCH_RUNS, models.sh's default
# 10), DEV_PIPE_ROUNDS (pipeline.sh's BENCH_ROUNDS, its default 3),
# DEV_PIPE_MODEL / DEV_SCALE_MODEL (resnet50), DEV_SCALE_BATCHES (64),
# DEV_SCALE_RANKS ("2 4 8"), DEV_REPLICAS (8), DEV_DEADLINE (seconds for the
# whole script, 540; every step's timeout is cut to what is left),
# DEV_TOP_BUILDDIR (/tmp/ipu-remote-build: the top_builddir of the benches,
# holding the wrapper ipu-exec and the model cache; never a real build),
# DEV_UNPACK (/tmp/ipu-bundle: emptied first, so it must be absent or a
# previous unpack), DEV_MPI_MODE (relocate, the default: Open MPI/PMIx find
# the bundle's plugins through OPAL_*/PMIX_* variables; copy: the plugin
# trees are copied to their Debian paths, each only where absent, and left
# there, for a machine of your own where relocation fails),
# BENCH_PEER (default python unless bench/node_modules has onnxruntime-node),
# DEV_PYTHON (the python to try first; else python3 on PATH, /usr/bin/python3:
# the first that imports torch, torchvision and onnx makes the models, the
# first that imports onnxruntime runs the peer).
set -u
cd "$(dirname "$0")/../.." || exit 1
REPO=$PWD
: "${OUT:?OUT must name the folder the results go to}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/log.txt
ENVF=$OUT/env.txt
STEPS=${DEV_STEPS:-smoke models models1 pipeline scaling gcl models2}
MODELS=${DEV_MODELS:-resnet18 resnet50 mobilenet_v2 squeezenet1_1 densenet121 efficientnet_b0 gpt2_tiny bert_tiny gpt2_small bert_small}
ROUNDS=${DEV_ROUNDS:-2}
DEADLINE=${DEV_DEADLINE:-540}
TOP=${DEV_TOP_BUILDDIR:-/tmp/ipu-remote-build}
UNPACK=${DEV_UNPACK:-/tmp/ipu-bundle}
MPI_MODE=${DEV_MPI_MODE:-relocate}
SCALE_MODEL=${DEV_SCALE_MODEL:-resnet50}
SCALE_BATCHES=${DEV_SCALE_BATCHES:-64}
SCALE_RANKS=${DEV_SCALE_RANKS:-2 4 8}
REPLICAS=${DEV_REPLICAS:-8}
L=/usr/lib/x86_64-linux-gnu
SECONDS=0

log() { printf '%s\n' "$*" >>"$LOG"; }
step() { log ""; log "=== $(date -u +%FT%TZ) +${SECONDS}s: $*"; }
has_step() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
# budget CAP: seconds a step may take, CAP or what is left before the
# deadline (less 10 s for the rest); 0 when under 20 s are left
budget() {
    local l=$((DEADLINE - SECONDS - 10))
    [ "$l" -gt "$1" ] && l=$1
    [ "$l" -lt 20 ] && l=0
    echo "$l"
}
# t SECONDS CMD...: the command under timeout (TERM to its process group,
# KILL 10 s later); logs the exit status when not 0
t() {
    local s=$1 rc=0; shift
    [ "$s" -gt 0 ] || { log "[skipped, no time left: $*]"; return 124; }
    timeout -k 10 "$s" "$@" || rc=$?
    [ $rc -eq 0 ] || log "[exit $rc$([ $rc -eq 124 ] && echo ": timed out after ${s}s"): $*]"
    { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && reap
    return $rc
}
# After a timeout: wait (10 s at most) for mpirun and the ranks it started
# to wind down, then kill what is left of the bundle's processes, by pid, so
# that they do not run on under the next step's timing.
reap() {
    local pids
    command -v pgrep >/dev/null 2>&1 || { sleep 5; return; }
    for _ in $(seq 20); do
        pids=$(pgrep -f "^${R:-/nonexistent}/bin/" | tr '\n' ' ')
        [ -z "$pids" ] && return
        sleep 0.5
    done
    log "killing what is left of the timed-out step: $pids"
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null
    sleep 1
}
cpus=$(nproc)
# The python with torch, torchvision and onnx (makes the models), and the
# one with onnxruntime (the peer): python3 on PATH unless it lacks them.
pick_python() { # MODULES
    local p
    for p in ${DEV_PYTHON:-} python3 /usr/bin/python3 python; do
        p=$(command -v "$p") || continue
        "$p" -c "import $1" >/dev/null 2>&1 && { echo "$p"; return; }
    done
    command -v python3 || echo /usr/bin/python3
}
PY=$(pick_python "torch, torchvision, onnx")
PEER_PY=$(pick_python "onnxruntime, onnx, numpy")

: >"$LOG"
step "run.sh: steps [$STEPS], models [$MODELS], deadline ${DEADLINE}s, OUT=$OUT, repo $REPO"

# ---------------------------------------------------------------- machine
{
    echo "date: $(date -u +%FT%TZ)"
    echo "uname: $(uname -a)"
    echo "glibc: $(ldd --version 2>&1 | head -n 1)"
    echo "os: $( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null)"
    echo "nproc: $cpus"
    echo "model name: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
    echo "affinity: $(taskset -pc $$ 2>&1)"
    echo "cgroup cpu.max: $(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo -)"
    echo "ptrace_scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo -)"
    for tool in node npm mpirun orterun python3 /usr/bin/python3 taskset timeout numactl git xz; do
        echo "which $tool: $(command -v "$tool" || echo missing)"
    done
    echo "python for the models: $PY; for the peer: $PEER_PY"
    for p in $(printf '%s\n' "$PY" "$PEER_PY" | sort -u); do
    echo "$p: $("$p" -c 'import sys; print(sys.version.split()[0])' 2>&1)"
    "$p" - <<'EOF' 2>&1
import importlib
for m in ("torch", "torchvision", "onnx", "onnxruntime", "numpy"):
    try:
        print(f"  {m} {importlib.import_module(m).__version__}")
    except Exception as e:  # noqa: BLE001
        print(f"  {m}: {e}")
EOF
    done
    echo "bundle: $(ls -l bench/remote/pack/bundle.tar.xz 2>&1)"
    echo "git: $(git rev-parse HEAD 2>/dev/null || echo -) $(git status --short 2>/dev/null | wc -l) changed files"
    echo; echo "--- lscpu"; lscpu
    echo; echo "--- free -m"; free -m
    echo; echo "--- df -h"; df -h /dev/shm /tmp "$REPO" 2>&1
    echo; echo "--- ulimit -a"; ulimit -a
    echo; echo "--- numactl -H"; numactl -H 2>&1 || true
} >"$ENVF" 2>&1

# ---------------------------------------------------------------- bundle
step "unpack bench/remote/pack/bundle.tar.xz into $UNPACK"
unpack() { # tar, else (no xz on the machine) python's tarfile
    tar -C "$UNPACK" -xJf "$REPO/bench/remote/pack/bundle.tar.xz" 2>>"$LOG" && return
    log "tar -xJ failed (no xz?): unpacking with python's tarfile"
    rm -rf "${UNPACK:?}"/* && "$PY" - "$REPO/bench/remote/pack/bundle.tar.xz" "$UNPACK" <<'EOF' 2>>"$LOG"
import sys, tarfile
with tarfile.open(sys.argv[1], "r:xz") as t:
    kw = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
    t.extractall(sys.argv[2], **kw)
EOF
}
if [ -e "$UNPACK" ] && [ ! -f "$UNPACK/root/BUNDLE_INFO" ] && [ -n "$(ls -A "$UNPACK" 2>/dev/null)" ]; then
    log "FATAL: $UNPACK is neither empty nor an earlier unpack: set DEV_UNPACK to another folder"
    exit 1
fi
rm -rf "$UNPACK"
mkdir -p "$UNPACK"
unpack && [ -x "$UNPACK/root/bin/ipu-exec" ] || { log "FATAL: cannot unpack the bundle"; exit 1; }
R=$UNPACK/root
cat "$R/BUNDLE_INFO" >>"$LOG"
cat "$R/BUNDLE_INFO" >>"$ENVF"
# Wrappers: only ipu-exec and Open MPI's programs (and what they start) see
# the bundle's libraries (Debian 12's libstdc++, libgomp, libz...); python3,
# torch and onnxruntime keep the machine's own.
mkdir -p "$R/wbin"
for b in ipu-exec orterun orted ompi_info; do
    cat >"$R/wbin/$b" <<EOF
#!/bin/sh
# run.sh wrapper of the bundle's $b
LD_LIBRARY_PATH="$R/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec "$R/bin/$b" "\$@"
EOF
    chmod +x "$R/wbin/$b"
done
ln -sf orterun "$R/wbin/mpirun"; ln -sf orterun "$R/wbin/mpiexec"
export PATH=$R/wbin:$PATH
# Open MPI 4.1 and PMIx 4 relocated by their installdirs variables
export OPAL_PREFIX=$R OPAL_EXEC_PREFIX=$R OPAL_BINDIR=$R/bin OPAL_LIBDIR=$R/lib/openmpi/lib \
    OPAL_PKGLIBDIR=$R/lib/openmpi/lib/openmpi3 OPAL_DATAROOTDIR=$R/share OPAL_DATADIR=$R/share \
    OPAL_PKGDATADIR=$R/share/openmpi OPAL_SYSCONFDIR=$R/etc/openmpi
export PMIX_PREFIX=$R/pmix2 PMIX_EXEC_PREFIX=$R/pmix2 PMIX_LIBDIR=$R/pmix2/lib \
    PMIX_PKGLIBDIR=$R/pmix2/lib/pmix PMIX_DATAROOTDIR=$R/pmix2/share PMIX_DATADIR=$R/pmix2/share \
    PMIX_PKGDATADIR=$R/pmix2/share/pmix PMIX_SYSCONFDIR=$R/pmix2/share
# (Debian's pmix-mca-params.conf names the plugin folder by its absolute path)
export PMIX_MCA_mca_base_component_path=$R/pmix2/lib/pmix
export HWLOC_PLUGINS_PATH=$R/lib/hwloc UCX_MODULE_DIR=$R/lib/ucx
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# A container's small /dev/shm (Docker: 64 MiB) would make 8 ranks' shared
# memory fail: back it with files in /tmp then.
shm_mb=$(df -Pm /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
if [ -z "$shm_mb" ] || [ "$shm_mb" -lt 1024 ]; then
    mkdir -p /tmp/ipu-shm
    export UCX_POSIX_DIR=/tmp/ipu-shm OMPI_MCA_btl_vader_backing_directory=/tmp/ipu-shm
    log "NOTE: /dev/shm has ${shm_mb:-no} MiB free: UCX_POSIX_DIR and vader's backing directory set to /tmp/ipu-shm"
fi

# Open MPI's, PMIx's and UCX's plugin trees at their Debian paths, each only
# where that path does not exist (or is an empty folder): never over a file
# of the machine.
copy_abs() {
    local src dst
    while read -r src dst; do
        if [ -e "$dst" ] && [ -n "$(ls -A "$dst" 2>/dev/null)" ]; then
            log "copy mode: $dst exists, left alone"
            continue
        fi
        mkdir -p "$dst" && cp -a "$src/." "$dst/" 2>>"$LOG" &&
            log "copy mode: $src -> $dst (left there: rm -r $dst to remove)"
    done <<EOF
$R/lib/openmpi/lib/openmpi3 $L/openmpi/lib/openmpi3
$R/share/openmpi /usr/share/openmpi
$R/etc/openmpi /etc/openmpi
$R/pmix2/lib/pmix $L/pmix2/lib/pmix
$R/pmix2/share $L/pmix2/share
$R/lib/ucx $L/ucx
$R/lib/hwloc $L/hwloc
EOF
}
unset_relocation() {
    unset OPAL_PREFIX OPAL_EXEC_PREFIX OPAL_BINDIR OPAL_LIBDIR OPAL_PKGLIBDIR OPAL_DATAROOTDIR \
        OPAL_DATADIR OPAL_PKGDATADIR OPAL_SYSCONFDIR PMIX_PREFIX PMIX_EXEC_PREFIX PMIX_LIBDIR \
        PMIX_PKGLIBDIR PMIX_DATAROOTDIR PMIX_DATADIR PMIX_PKGDATADIR PMIX_SYSCONFDIR \
        PMIX_MCA_mca_base_component_path HWLOC_PLUGINS_PATH UCX_MODULE_DIR
}
[ "$MPI_MODE" = copy ] && { unset_relocation; copy_abs; }

# ipu-exec where bench/pipeline.sh and bench/models.sh look: $top_builddir/ipu-exec
mkdir -p "$TOP"
if { [ -e "$TOP/ipu-exec" ] && ! grep -q 'run.sh wrapper' "$TOP/ipu-exec" 2>/dev/null; } ||
    [ -e "$TOP/config.status" ] || [ -e "$TOP/Makefile" ]; then
    log "FATAL: $TOP/ipu-exec is not this script's wrapper (a build?): set DEV_TOP_BUILDDIR to another folder"
    exit 1
fi
rm -f "$TOP/ipu-exec" && cp "$R/wbin/ipu-exec" "$TOP/ipu-exec"
EXE=$TOP/ipu-exec
CACHE=$TOP/tests/models/cache/b1_op13
log "ipu-exec: $EXE -> $R/bin/ipu-exec; python: $PY, peer's $PEER_PY; cache: $CACHE; PATH=$PATH"

# ---------------------------------------------------------------- smoke
mpi_ok=1
if has_step smoke; then
    step "smoke: ipu-exec info"
    t 60 "$EXE" info >>"$LOG" 2>&1
    step "smoke: missing libraries (ldd with the bundle's LD_LIBRARY_PATH)"
    miss=$(find "$R/bin" "$R/lib" "$R/pmix2" -type f \( -name '*.so*' -o -perm -u+x \) 2>/dev/null |
        while read -r f; do LD_LIBRARY_PATH=$R/lib ldd "$f" 2>/dev/null | grep 'not found' | sed "s|^|$f: |"; done)
    log "${miss:-none}"
    step "smoke: mpirun -np 2 --oversubscribe ipu-exec info"
    t 90 mpirun -np 2 --oversubscribe ipu-exec info >>"$LOG" 2>&1 || mpi_ok=0
    [ $mpi_ok -eq 1 ] || [ "$MPI_MODE" = copy ] ||
        log "mpirun failed relocated: DEV_MPI_MODE=copy copies the plugin trees to their Debian paths"
    log "mpirun smoke: $([ $mpi_ok -eq 1 ] && echo ok || echo FAILED)"
    t 30 ompi_info --parsable --path all >>"$LOG" 2>&1
fi

# ---------------------------------------------------------------- models
if has_step models; then
    b=$(budget 240)
    step "models: make_models.py $MODELS into $CACHE (timeout ${b}s)"
    mkdir -p "$CACHE"
    rc=0
    # shellcheck disable=SC2086
    t "$b" "$PY" tests/models/make_models.py "$CACHE" $MODELS --batch 1 --opset 13 >>"$LOG" 2>&1 || rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ]; then
        # make_models.py stops at the first model it cannot export: the
        # others one by one, so that one failure costs one row
        for m in $MODELS; do
            [ -f "$CACHE/$m/.complete" ] && continue
            log "models: $m alone"
            t "$(budget 120)" "$PY" tests/models/make_models.py "$CACHE" "$m" --batch 1 --opset 13 >>"$LOG" 2>&1
        done
    fi
    for m in $MODELS; do
        if [ -f "$CACHE/$m/.complete" ]; then
            log "  $m: $(du -sh "$CACHE/$m/model.onnx" | cut -f1) md5 $(md5sum <"$CACHE/$m/model.onnx" | cut -c1-12)"
        else
            log "  $m: NOT MADE: left out of bench/models.sh"
        fi
    done
    made=""
    for m in $MODELS; do [ -f "$CACHE/$m/.complete" ] && made="$made $m"; done
    MODELS=${made# }
    step "models: one pipeline of 2 ranks with --check (squeezenet1_1), the UCX path"
    sm=$CACHE/squeezenet1_1
    [ -f "$sm/.complete" ] || t "$(budget 60)" "$PY" tests/models/make_models.py "$CACHE" squeezenet1_1 >>"$LOG" 2>&1
    if [ -f "$sm/model.onnx" ]; then
        if ! t 90 mpirun -np 2 --oversubscribe "$EXE" "$sm/model.onnx" --check --batches 4 >>"$LOG" 2>&1; then
            step "models: retry with UCX_TLS=^cma, vader single copy off (a container's ptrace limits)"
            if t 90 env UCX_TLS=^cma OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun -np 2 --oversubscribe "$EXE" "$sm/model.onnx" --check --batches 4 >>"$LOG" 2>&1; then
                export UCX_TLS=^cma OMPI_MCA_btl_vader_single_copy_mechanism=none
                log "NOTE: UCX_TLS=^cma and btl_vader_single_copy_mechanism=none kept for every later run"
            fi
        fi
        step "models: bench/ort_run.py $sm --check --runs 2"
        t 120 "$PEER_PY" bench/ort_run.py "$sm" --check --runs 2 >>"$LOG" 2>&1
    fi
fi

# bench/models.sh's peer: onnxruntime-node if installed, else the python wheel
if [ -z "${BENCH_PEER:-}" ]; then
    if command -v node >/dev/null 2>&1 && [ -d bench/node_modules/onnxruntime-node ]; then
        BENCH_PEER=node
    else
        BENCH_PEER=python
    fi
fi
export BENCH_PEER PEER_PYTHON=$PEER_PY

models_sh() { # OUTFILE THREADS CAP
    local b
    b=$(budget "$3")
    [ -n "$MODELS" ] || { step "bench/models.sh at $2 thread(s): skipped, no model was made"; return; }
    step "bench/models.sh at $2 thread(s), BENCH_ROUNDS=$ROUNDS${DEV_RUNS:+ BENCH_RUNS=$DEV_RUNS}, peer $BENCH_PEER (timeout ${b}s) > $1"
    [ "$b" -gt 0 ] || { log "skipped: no time left"; return; }
    # shellcheck disable=SC2086
    t "$b" env top_builddir="$TOP" IPU_EXEC="$EXE" PYTHON_REF="$PY" BENCH_ROUNDS="$ROUNDS" \
        ${DEV_RUNS:+BENCH_RUNS=$DEV_RUNS} BENCH_THREADS="$2" bench/models.sh $MODELS >>"$1" 2>>"$LOG"
}

has_step models1 && models_sh "$OUT/models1.md" 1 240

# ---------------------------------------------------------------- pipeline
if has_step pipeline; then
    b=$(budget 120)
    step "bench/pipeline.sh ${DEV_PIPE_MODEL:-resnet50} (timeout ${b}s) > pipeline.md"
    if [ "$b" -gt 0 ]; then
        t "$b" env top_builddir="$TOP" PYTHON_REF="$PY" ${DEV_PIPE_ROUNDS:+BENCH_ROUNDS=$DEV_PIPE_ROUNDS} \
            bench/pipeline.sh "${DEV_PIPE_MODEL:-resnet50}" >>"$OUT/pipeline.md" 2>>"$LOG"
    else
        log "skipped: no time left"
    fi
fi

# ---------------------------------------------------------------- scaling
# samples/s of one configuration, as bench/pipeline.sh reads it
scale_row() { # LABEL RANKS CMD...
    local label=$1 n=$2 b o v
    shift 2
    b=$(budget 90)
    [ "$b" -gt 0 ] || { log "skipped $label: no time left"; echo "| $label | $n | - | - | skipped: no time left |" >>"$OUT/scaling.md"; return; }
    log "--- $label: $*"
    o=$(t "$b" "$@" 2>&1)
    printf '%s\n' "$o" >>"$LOG"
    v=$(printf '%s\n' "$o" | sed -n 's/^throughput: \([0-9.]*\) samples.*/\1/p' | head -n 1)
    line=$(printf '%s\n' "$o" | grep -m1 '^throughput:' || echo "no throughput line (see log.txt)")
    [ -z "$base" ] && [ -n "$v" ] && [ "$n" -eq 1 ] && base=$v
    echo "| $label | $n | ${v:--} | $( [ -n "$v" ] && [ -n "$base" ] && awk -v a="$v" -v b="$base" 'BEGIN { printf "%.2fx", a / b }' || echo -) | $line |" >>"$OUT/scaling.md"
}
if has_step scaling; then
    M=$CACHE/$SCALE_MODEL/model.onnx
    step "scaling: $SCALE_MODEL, ranks 1 $SCALE_RANKS, $REPLICAS replicas, $SCALE_BATCHES micro-batches > scaling.md"
    [ -f "$M" ] || t "$(budget 120)" "$PY" tests/models/make_models.py "$CACHE" "$SCALE_MODEL" >>"$LOG" 2>&1
    base=""
    {
        echo "$SCALE_MODEL, batch 1, $SCALE_BATCHES micro-batches after 2 warm-up ones; $cpus CPUs ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')); ranks bound to cores (mpirun --bind-to core --map-by core) unless marked"
        echo
        echo "| configuration | ranks | samples/s | vs 1 rank | ipu-exec's throughput line |"
        echo "|---|---:|---:|---:|---|"
    } >>"$OUT/scaling.md"
    mpi_bind() { # RANKS: mpirun's placement options
        if [ "$1" -le "$cpus" ]; then echo "--bind-to core --map-by core"; else echo "--oversubscribe --bind-to none"; fi
    }
    tag() { [ "$1" -le "$cpus" ] || echo " (oversubscribed: $cpus CPUs, unbound)"; }
    scale_row "1 rank, whole model (taskset -c 0)" 1 taskset -c 0 "$EXE" "$M" --batches "$SCALE_BATCHES" --warmup 2
    for n in $SCALE_RANKS; do
        # shellcheck disable=SC2046
        scale_row "$n ranks, $n pipeline stages$(tag "$n")" "$n" mpirun -np "$n" $(mpi_bind "$n") \
            "$EXE" "$M" --batches "$SCALE_BATCHES" --warmup 2
    done
    # shellcheck disable=SC2046
    scale_row "$REPLICAS ranks, $REPLICAS replicas$(tag "$REPLICAS")" "$REPLICAS" mpirun -np "$REPLICAS" $(mpi_bind "$REPLICAS") \
        "$EXE" "$M" --batches "$SCALE_BATCHES" --warmup 2 --replicas "$REPLICAS"
fi

# ---------------------------------------------------------------- gcl
# libgcl's always-on call check against a build without it (A: main with the
# check patched out; B: the same tree without the patch; both made by
# bench/remote/pack-gcl.sh), on the network path
# (GCL_NO_SHM=1) and on shared memory; bench/remote/pack/gcl.tar.xz holds both gcl-bench
# binaries with their libgcl.so.0 (wrappers set LD_LIBRARY_PATH).
if has_step gcl; then
    step "gcl: call check cost, bench/gcl-ab.sh > gcl.md"
    G=/tmp/gclpack; rm -rf "$G"; mkdir -p "$G"
    if tar -C "$G" -xJf "$REPO/bench/remote/pack/gcl.tar.xz" 2>>"$LOG"; then
        for d in A B; do # the bundle's libs (libmpi, UCX) after gcl's own
            sed -i "s|^LD_LIBRARY_PATH=\"\$d|LD_LIBRARY_PATH=\"\$d:$R/lib|" "$G/$d/bench/gcl-bench"
        done
        cat "$G/A/bench/gcl-bench" >>"$LOG"
        echo "libgcl call check: A = no check, B = main; $cpus CPUs ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'))" >>"$OUT/gcl.md"
        for envs in GCL_NO_SHM=1 ""; do
            echo "" >>"$OUT/gcl.md"; echo "BENCH_GCL_ENV='$envs'" >>"$OUT/gcl.md"
            BENCH_GCL_ENV="$envs" BENCH_A=$G/A BENCH_B=$G/B BENCH_NP="${DEV_GCL_NP:-2 8}" \
                BENCH_COLLS="${DEV_GCL_COLLS:-allreduce broadcast reduce allgather}" BENCH_SIZES="8 1048576" \
                BENCH_LAUNCHES="${DEV_GCL_LAUNCHES:-3}" BENCH_SECONDS=0.3 \
                t "$(budget "${DEV_GCL_CAP:-75}")" bench/gcl-ab.sh >>"$OUT/gcl.md" 2>>"$LOG"
        done
    else
        log "cannot unpack bench/remote/pack/gcl.tar.xz"
    fi
fi

has_step models2 && models_sh "$OUT/models2.md" 2 200

# ---------------------------------------------------------------- layout
if has_step layout; then
    cnns=$(for m in $MODELS; do case $m in gpt2_*|bert_*) ;; *) echo "$m" ;; esac; done | tr '\n' ' ')
    for bat in 8 1; do
        for l in onednn blocked; do
            b=$(budget 150)
            step "bench/models.sh batch $bat, IPU_EXEC_CONV_LAYOUT=$l (timeout ${b}s) > $OUT/layout.md"
            [ "$b" -gt 0 ] || { log "skipped: no time left"; continue; }
            # shellcheck disable=SC2086
            t "$b" env top_builddir="$TOP" IPU_EXEC="$EXE" PYTHON_REF="$PY" BENCH_ROUNDS="$ROUNDS" \
                BENCH_BATCH=$bat BENCH_RUNS=5 IPU_EXEC_CONV_LAYOUT=$l bench/models.sh $cnns \
                >>"$OUT/layout.md" 2>>"$LOG"
        done
    done
fi

step "done in ${SECONDS}s; $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
exit 0
