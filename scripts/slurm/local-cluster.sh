#!/usr/bin/env bash
# A real one-node Slurm for tests and benchmarks: munged, slurmctld and slurmd on this host, all
# state in one folder (WHETSTONE_SLURM_DIR, default /tmp/whetstone-slurm), two GRES GPUs backed by
# placeholder files. Needs root and Debian's slurm-wlm and munge (apt-get install slurm-wlm munge).
#
#   scripts/slurm/local-cluster.sh start    start (or find running) and print `export SLURM_CONF=…`
#   scripts/slurm/local-cluster.sh status   exit 0 and print the exports when running, else exit 1
#   scripts/slurm/local-cluster.sh stop     cancel its jobs and stop the three daemons
#
# Several clusters may run on one host (one per folder): each picks free ports and its own munge
# socket. The node is this host's short name; its CPUs and memory are the machine's. Everything
# else that talks to the cluster needs only SLURM_CONF (the munge socket is named in slurm.conf).
# See docs/slurm.md.
set -euo pipefail

dir="${WHETSTONE_SLURM_DIR:-/tmp/whetstone-slurm}"
timeout_s="${WHETSTONE_SLURM_START_TIMEOUT:-60}"
conf="$dir/etc/slurm.conf"
munge_socket="$dir/munge/munge.socket"

say() { echo "local-cluster: $*" >&2; }
# A log's last lines without Debian's PMIx plugin noise (it logs errors on every start).
log_tail() { grep -v -e 'pmix' -e 'MPI: Cannot create context' "$1" 2>/dev/null | tail -n 5; }
die() { say "$*"; exit 1; }

# The pid in a pid file when that process is alive and is the named daemon of this folder
# (a pid file left by a crash may name a pid reused by something else).
live_pid() { # name pidfile
  local name="$1" file="$2" pid
  [ -s "$file" ] || return 1
  pid="$(tr -dc '0-9' < "$file")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  local cmd
  cmd="$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null || true)"
  case "$cmd" in *"$name"*"$dir/"*) echo "$pid" ;; *) return 1 ;; esac
}

munged_pid() { live_pid munged "$dir/munge/munged.pid"; }
slurmctld_pid() { live_pid slurmctld "$dir/run/slurmctld.pid"; }
slurmd_pid() { live_pid slurmd "$dir/run/slurmd.pid"; }

print_env() {
  echo "export SLURM_CONF=$conf"
  echo "export WHETSTONE_SLURM_DIR=$dir"
}

node_state() { # the node's state as sinfo prints it (idle, mix, alloc, down*, drain, …), or empty
  SLURM_CONF="$conf" timeout 10 sinfo -h -N -o '%t' 2>/dev/null | head -n 1 || true
}

running() { munged_pid >/dev/null && slurmctld_pid >/dev/null && slurmd_pid >/dev/null; }

# Ports not in use on this host (any state, IPv4 or IPv6), consecutive pair from a start that
# depends on the folder so that two clusters rarely race for the same pair.
port_in_use() {
  local hex
  hex="$(printf '%04X' "$1")"
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '{print $2}' | grep -qi ":$hex\$"
}
pick_ports() {
  local base p
  # 20000-31999: below Linux's ephemeral ports (32768 and up), where outgoing connections land.
  base=$(( 20000 + $(printf '%s' "$dir" | cksum | cut -d' ' -f1) % 10000 ))
  for ((p = base; p < base + 2000; p += 2)); do
    if ! port_in_use "$p" && ! port_in_use "$((p + 1))"; then
      echo "$p"
      return 0
    fi
  done
  die "no free pair of ports from $base"
}

wait_or_kill() { # name pid: wait up to 15 s after SIGTERM, then SIGKILL
  local name="$1" pid="$2" i
  for ((i = 0; i < 150; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  say "$name ($pid) ignored SIGTERM for 15 s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

kill_tree() { # pid: stop it, end its descendants, then it
  local pid="$1" child
  kill -STOP "$pid" 2>/dev/null || return 0
  for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do kill_tree "$child"; done
  kill -KILL "$pid" 2>/dev/null || true
}

stop() {
  local pid i
  # Cancel this cluster's jobs first, so that no job step (slurmstepd and its children) outlives
  # the daemons. Only when the controller answers.
  if slurmctld_pid >/dev/null && [ -f "$conf" ]; then
    local jobs
    jobs="$(SLURM_CONF="$conf" timeout 10 squeue -h -t PD,R,CG,S -o '%i' 2>/dev/null || true)"
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      SLURM_CONF="$conf" timeout 10 scancel $jobs 2>/dev/null || true
      for ((i = 0; i < 150; i++)); do
        [ -z "$(SLURM_CONF="$conf" timeout 10 squeue -h -t PD,R,CG,S -o '%i' 2>/dev/null || true)" ] && break
        sleep 0.1
      done
    fi
  fi
  # All three at once (each takes a second or two to save its state and end its threads).
  local name pids=()
  for name in slurmd slurmctld munged; do
    if pid="$("${name}_pid")"; then
      kill -TERM "$pid" 2>/dev/null && pids+=("$name:$pid")
    fi
  done
  for pid in "${pids[@]}"; do wait_or_kill "${pid%%:*}" "${pid#*:}"; done
  # After a crash (or a job that ignored scancel) a job's slurmstepd outlives its slurmd. It
  # carries this cluster's SLURM_CONF: end it and what it runs.
  local stepd
  for stepd in $(pgrep -x slurmstepd || true); do
    if tr '\0' '\n' 2>/dev/null < "/proc/$stepd/environ" | grep -qxF "SLURM_CONF=$conf"; then
      say "ending a job step left running (slurmstepd $stepd)"
      kill_tree "$stepd"
    fi
  done
  rm -f "$dir/run/slurmd.pid" "$dir/run/slurmctld.pid" "$dir/munge/munged.pid"
}

write_config() {
  local node cpus mem ports
  node="$(hostname -s)"
  cpus="$(nproc)"
  mem="$(free -m | awk '/^Mem:/ {print $2}')"
  ports="$(pick_ports)"
  mkdir -p "$dir/etc" "$dir/state" "$dir/spool" "$dir/log" "$dir/run" "$dir/dev" "$dir/jobs"
  # The GRES device files. Slurm only stat()s them (no cgroup device constraint with task/none):
  # character devices that are /dev/null's twins (1:3), else plain files, which slurmd accepts
  # but logs as "not a valid character or block device". Their trailing digits become
  # CUDA_VISIBLE_DEVICES in the job.
  local g
  for g in 0 1; do
    if [ ! -c "$dir/dev/gpu$g" ]; then
      rm -f "$dir/dev/gpu$g"
      mknod "$dir/dev/gpu$g" c 1 3 2>/dev/null || : > "$dir/dev/gpu$g"
    fi
  done
  cat > "$dir/etc/gres.conf" <<EOF
AutoDetect=off
Name=gpu File=$dir/dev/gpu[0-1]
EOF
  # task/none and proctrack/linuxproc need no cgroup.conf, so this works in containers without
  # a writable cgroup hierarchy.
  cat > "$conf" <<EOF
# Written by scripts/slurm/local-cluster.sh; rewritten on each start.
ClusterName=whetstone
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ports
SlurmdPort=$((ports + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerNode=256
GresTypes=gpu
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
# Short waits, so that cancels and time limits act within seconds.
KillWait=5
MessageTimeout=10
InactiveLimit=0
MinJobAge=300
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem Gres=gpu:2 State=UNKNOWN
PartitionName=whetstone Nodes=$node Default=YES MaxTime=60 OverSubscribe=FORCE:8 State=UP
EOF
}

start() {
  [ "$(id -u)" -eq 0 ] || die "needs root (slurmd runs jobs as their users; SlurmUser=root here)"
  local bin
  for bin in munged slurmctld slurmd sinfo; do
    command -v "$bin" >/dev/null || die "no $bin on PATH: apt-get install slurm-wlm munge"
  done

  if running; then
    say "already running in $dir (node $(node_state))"
    print_env
    return 0
  fi
  # A partial set (a crash, a killed daemon): stop what is left and start afresh.
  stop

  # munged wants its socket's folders open to all (execute) so that every user can reach it;
  # the key alone is secret (0600).
  mkdir -p "$dir/munge"
  chmod 755 "$dir" "$dir/munge"
  if [ ! -s "$dir/munge/munge.key" ]; then
    if command -v mungekey >/dev/null; then
      mungekey --create --keyfile="$dir/munge/munge.key"
    else
      dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    fi
  fi
  chmod 600 "$dir/munge/munge.key"
  rm -f "$munge_socket" "$munge_socket.lock"
  # --force: munged refuses to start when a folder above its socket is closed to others
  # ("Socket is inaccessible: execute permissions for all required", e.g. under /root); forced,
  # it runs and only root reaches it, which is all this cluster needs.
  munged --force \
    --socket="$munge_socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" \
    || die "munged did not start: $(log_tail "$dir/munge/munged.log")"

  write_config
  export SLURM_CONF="$conf"
  # -c: no jobs or node state from an earlier run (tests want an empty cluster).
  slurmctld -c -f "$conf" || die "slurmctld did not start: $(log_tail "$dir/log/slurmctld.log")"
  slurmd -c -f "$conf" || die "slurmd did not start: $(log_tail "$dir/log/slurmd.log")"

  local deadline=$((SECONDS + timeout_s)) state=""
  while ((SECONDS < deadline)); do
    state="$(node_state)"
    [ "$state" = "idle" ] && break
    if ! slurmctld_pid >/dev/null; then die "slurmctld exited: $(log_tail "$dir/log/slurmctld.log")"; fi
    if ! slurmd_pid >/dev/null; then die "slurmd exited: $(log_tail "$dir/log/slurmd.log")"; fi
    sleep 0.2
  done
  if [ "$state" != "idle" ]; then
    say "the node is not idle after ${timeout_s} s (state: ${state:-none}); slurmd's log says:"
    log_tail "$dir/log/slurmd.log" >&2
    SLURM_CONF="$conf" sinfo -h -R >&2 2>/dev/null || true
    exit 1
  fi
  say "running in $dir (node $(hostname -s) idle)"
  print_env
}

case "${1:-}" in
  start) start ;;
  stop) stop; say "stopped ($dir)" ;;
  status)
    if running; then say "running in $dir (node $(node_state))"; print_env; else say "not running ($dir)"; exit 1; fi
    ;;
  *) echo "usage: $0 start|stop|status   (folder: WHETSTONE_SLURM_DIR, default /tmp/whetstone-slurm)" >&2; exit 2 ;;
esac
