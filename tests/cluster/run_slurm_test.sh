#!/bin/bash
# A real Slurm on this machine runs the job-array script of
# `tpusim sweep slurm`: a 4-point --gemm sweep in 2 shards, then
# `tpusim sweep merge` must find every point exactly once. Then shard 1 is
# deleted, resubmitted alone (sbatch --array=1) and merged again.
# Installs Debian's slurm-wlm + munge when missing (root and apt needed);
# otherwise prints SKIPPED with the reason and exits 77 (CTest
# SKIP_RETURN_CODE). Daemons get private state/spool/pid/log paths in a temp
# folder and are stopped by the trap, whatever happens.
# Usage: run_slurm_test.sh /path/to/tpusim
set -u
TPUSIM="${1:-${TPUSIM_BINARY:-}}"
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*"; for f in "$TMP"/*.log "$TMP"/sweep/logs/*; do [ -f "$f" ] && { echo "== $f"; tail -20 "$f"; }; done; exit 1; }

[ -n "$TPUSIM" ] && [ -x "$TPUSIM" ] || { echo "FAILED: no tpusim binary given"; exit 1; }
[ "$(id -u)" = 0 ] || skip "needs root to start slurmctld, slurmd and munged"

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  command -v apt-get >/dev/null || skip "slurm is not installed and there is no apt-get"
  echo "installing slurm-wlm and munge ..."
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y slurm-wlm munge >/tmp/tpusim_slurm_apt.log 2>&1; then
    skip "apt-get install slurm-wlm munge failed (see /tmp/tpusim_slurm_apt.log): $(tail -1 /tmp/tpusim_slurm_apt.log)"
  fi
fi

TMP="$(mktemp -d /tmp/tpusim_slurm.XXXXXX)"
chmod 755 "$TMP"
STARTED_MUNGED=""
JOBS=""
cleanup() {
  for j in $JOBS; do SLURM_CONF="$TMP/slurm.conf" scancel "$j" >/dev/null 2>&1; done
  for p in slurmd slurmctld; do
    [ -f "$TMP/$p.pid" ] && kill "$(cat "$TMP/$p.pid")" 2>/dev/null
  done
  sleep 1
  for p in slurmd slurmctld; do
    [ -f "$TMP/$p.pid" ] && kill -9 "$(cat "$TMP/$p.pid")" 2>/dev/null
  done
  [ -n "$STARTED_MUNGED" ] && kill "$STARTED_MUNGED" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

# munge: the package made /etc/munge/munge.key; the socket folder may be gone.
# A working socket decides, not pgrep: a dead munged may linger as a zombie.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  [ -f /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null; }
  chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge /var/lib/munge /var/log/munge && chown munge:munge /run/munge /var/lib/munge /var/log/munge
  chmod 755 /run/munge
  runuser -u munge -- munged --force || skip "munged did not start"
  for _ in $(seq 20); do [ -s /run/munge/munged.pid ] && break; sleep 0.2; done
  STARTED_MUNGED="$(cat /run/munge/munged.pid 2>/dev/null)"
fi
munge -n | unmunge >/dev/null 2>&1 || skip "munge does not work here (munge -n | unmunge failed)"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HOST="$(hostname -s)"
NODE="$(slurmd -C | head -1)"   # this machine's CPUs and memory as slurmd sees them
mkdir -p "$TMP/state" "$TMP/spool"
cat >"$TMP/slurm.conf" <<EOF
ClusterName=tpusimtest
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
StateSaveLocation=$TMP/state
SlurmdSpoolDir=$TMP/spool
SlurmctldPidFile=$TMP/slurmctld.pid
SlurmdPidFile=$TMP/slurmd.pid
SlurmctldLogFile=$TMP/slurmctld.log
SlurmdLogFile=$TMP/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
$NODE NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$TMP/slurm.conf"
slurmctld -c -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" || fail "slurmd did not start"
for _ in $(seq 60); do
  state="$(sinfo -h -o %T 2>/dev/null | head -1)"
  [ "$state" = idle ] && break
  sleep 1
done
[ "$state" = idle ] || fail "node not idle after 60 s (state '$state')"

cat >"$TMP/spec.yaml" <<'EOF'
name: slurm4
base: {arch: v5e, gemm: "256,256,256"}
axes:
  grid:
    workload.gemm: ["256,256,256", "128,256,512"]
    workload.dtype: [bf16, int8]
EOF
"$TPUSIM" sweep slurm "$TMP/spec.yaml" --shards 2 --out "$TMP/sweep" || fail "sweep slurm"

wait_job() {  # bounded wait until the job has left the queue
  local deadline=$((SECONDS + 300))
  while [ -n "$(squeue -h -j "$1" 2>/dev/null)" ]; do
    [ $SECONDS -lt $deadline ] || fail "job $1 still queued after 5 minutes: $(squeue -j "$1")"
    sleep 1
  done
}
check_merge() {
  "$TPUSIM" sweep merge "$TMP/spec.yaml" --out "$TMP/merged" "$TMP"/sweep/shard-* || fail "merge ($1)"
  rows="$(tail -n +2 "$TMP/merged/results.csv" | wc -l)"
  ids="$(tail -n +2 "$TMP/merged/results.csv" | cut -d, -f1 | sort -u | wc -l)"
  oks="$(tail -n +2 "$TMP/merged/results.csv" | grep -c ',ok,')"
  [ "$rows" = 4 ] && [ "$ids" = 4 ] && [ "$oks" = 4 ] || fail "$1: $rows rows, $ids ids, $oks ok (want 4 each)"
  echo "$1: 4 points, each exactly once, all ok"
}

JOB="$(sbatch --parsable "$TMP/sweep/sweep.sbatch")" || fail "sbatch"
JOBS="$JOB"
echo "submitted array job $JOB"
wait_job "$JOB"
check_merge "first submission"

# Lose shard 1, resubmit just that task, merge again.
rm -rf "$TMP/sweep/shard-1"
"$TPUSIM" sweep status "$TMP/spec.yaml" "$TMP/sweep" | grep -q "shards with missing points: 1" || fail "status did not name shard 1"
JOB2="$(sbatch --parsable --array=1 "$TMP/sweep/sweep.sbatch")" || fail "resubmit"
JOBS="$JOBS $JOB2"
wait_job "$JOB2"
check_merge "after resubmitting shard 1"
echo "PASSED"
exit 0
