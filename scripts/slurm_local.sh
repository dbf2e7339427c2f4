#!/usr/bin/env bash
# A throwaway one-node Slurm 22.05 cluster on this machine, for tests of multi-worker training:
#   scripts/slurm_local.sh up|down|status|check|env
# Everything (config, munge key, state, logs) lives in $OSPREY_SLURM_DIR (default /tmp/osprey-slurm);
# the daemons listen on loopback only. Needs root. Exit 77 when this machine cannot run it.
# Slurm's own commands (srun, sinfo, squeue) find this cluster only through SLURM_CONF: `up` prints
# the line that sets it on stdout (its progress goes to stderr), and `env` prints it again, so
#   eval "$(scripts/slurm_local.sh up)"      # or, later, eval "$(scripts/slurm_local.sh env)"
#   srun -n 4 --mpi=pmix osprey train --strategy multi_worker
# The node offers at least 4 CPUs ($OSPREY_SLURM_CPUS, default the larger of 4 and nproc), so the
# documented 4-task commands run on a 2-core laptop (tasks then share cores).
set -euo pipefail

DIR=${OSPREY_SLURM_DIR:-/tmp/osprey-slurm}
# Not Slurm's 6817/6818, so a system-wide Slurm on the same machine keeps its ports.
PORT=${OSPREY_SLURM_PORT:-16817}
NODE=localhost
CONF=$DIR/slurm.conf
MUNGE_SOCKET=$DIR/munge/munge.socket
# Every Slurm command below must read our config: without SLURM_CONF (and a file there) the
# clients fall back to /etc/slurm, then to a DNS SRV lookup for a controller.
export SLURM_CONF=$CONF
# Our Slurm talks to our munged (AuthInfo); the munge/unmunge tools need this to do the same.
export MUNGE_SOCKET

log() { echo "slurm_local: $*" >&2; }
# What a shell needs to reach this cluster: the lines `up` and `env` print.
env_lines() { echo "export SLURM_CONF=$CONF"; }
skip() { log "skipped: $*"; exit 77; }

check_prereqs() {
  [[ $(id -u) -eq 0 ]] || skip "needs root (slurmd runs jobs as any user and SlurmUser=root here)"
  local b
  for b in munged mungekey slurmctld slurmd sinfo srun scontrol; do
    command -v "$b" >/dev/null || skip "$b is not installed (Debian: slurm-wlm munge)"
  done
}

# The pid in $1 if that process is still alive and runs the program $2 (a stale pid file must not
# make us kill whatever process got the number since).
live_pid() {
  local f=$1 prog=$2 pid
  [[ -s $f ]] || return 1
  pid=$(<"$f")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ $(cat /proc/"$pid"/comm 2>/dev/null) == "$prog" ]] || return 1
  echo "$pid"
}

# Sends SIGTERM to every "pidfile:program" given, then waits for all of them together (each daemon
# takes about 2 s to shut down; one after the other would add up), SIGKILL after 10 s.
stop() {
  local spec pid i alive pids=()
  for spec in "$@"; do
    if pid=$(live_pid "${spec%%:*}" "${spec##*:}"); then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  for ((i = 0; i < 100; i++)); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null && { log "$pid ignored SIGTERM; killing"; kill -KILL "$pid" 2>/dev/null || true; }
  done
  for spec in "$@"; do rm -f "${spec%%:*}"; done
}

# Cancels the jobs still in our cluster (a test killed halfway leaves its job steps running, and
# stopping the daemons would not end them) and waits, bounded, until they are gone.
cancel_jobs() {
  [[ -f $CONF ]] && live_pid "$DIR/run/slurmctld.pid" slurmctld >/dev/null || return 0
  local jobs i
  jobs=$(squeue -h -o %A 2>/dev/null || true)
  [[ -n $jobs ]] || return 0
  log "cancelling jobs: ${jobs//$'\n'/ }"
  # shellcheck disable=SC2086  # one argument per job id
  scancel $jobs 2>/dev/null || true
  for ((i = 0; i < 150; i++)); do  # 15 s: KillWait (5 s) plus the time to report back
    # Plain squeue lists pending, running and completing jobs: the ones whose processes may live.
    [[ -z $(squeue -h -o %A 2>/dev/null) ]] && return 0
    sleep 0.1
  done
  log "jobs still there after 15 s: $(squeue -h 2>/dev/null | tr '\n' ';')"
}

down() {
  [[ -d $DIR ]] || return 0
  cancel_jobs
  # All three at once: each takes ~2 s to finish its threads, and the Slurm daemons need munged
  # for nothing on their way out. Step daemons of jobs still running end with their jobs. Logs
  # stay in $DIR for post-mortems.
  stop "$DIR/run/slurmd.pid:slurmd" "$DIR/run/slurmctld.pid:slurmctld" "$DIR/munge/munged.pid:munged"
  rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
}

tail_logs() {
  local f
  for f in "$DIR"/log/*.log; do
    [[ -f $f ]] || continue
    log "--- last lines of $f"
    tail -n 15 "$f" >&2
  done
}

# The CPUs the node offers: $OSPREY_SLURM_CPUS, else at least 4 (the docs' `srun -n 4`; Slurm
# would otherwise keep such a job pending for good on a smaller machine), else nproc.
node_cpus() {
  local n=${OSPREY_SLURM_CPUS:-}
  if [[ -n $n ]]; then
    [[ $n =~ ^[1-9][0-9]*$ ]] || { log "OSPREY_SLURM_CPUS must be a positive integer. Received: '$n'"; exit 2; }
    echo "$n"
  else
    n=$(nproc)
    echo $((n > 4 ? n : 4))
  fi
}

write_conf() {
  local cpus mem_mb
  cpus=$(node_cpus)
  # A little under the total, so slurmd never finds less memory than configured.
  mem_mb=$(awk '/^MemTotal:/ { print int($2 / 1024 * 0.9) }' /proc/meminfo)
  cat >"$CONF" <<EOF
# Written by scripts/slurm_local.sh; rewritten on every 'up'.
ClusterName=osprey
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
# Listen on the address our names resolve to (127.0.0.1), not on every interface.
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
TmpFS=$DIR/tmp
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# The system's /etc/slurm/plugstack.conf would otherwise be read.
PlugStackConfig=$DIR/plugstack.conf
# No cgroups: linuxproc tracks job processes by parent pid, task/none binds nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# Open MPI 4.1 programs started by srun find their rank through PMIx.
MpiDefault=pmix
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
# A fresh node comes up idle, and finished jobs leave the queue quickly.
ReturnToService=2
MinJobAge=2
KillWait=5
InactiveLimit=0
# Trust the node line below instead of comparing it with what slurmd detects (a node whose
# detected cores or memory differ would be drained).
SlurmdParameters=config_overrides
NodeName=$NODE NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  : >"$DIR/plugstack.conf"
}

start_munged() {
  # A key of our own: the cluster must not accept credentials from (or depend on) the system's munge.
  [[ -s $DIR/munge/munge.key ]] || mungekey --create --keyfile="$DIR/munge/munge.key" >/dev/null
  chmod 0600 "$DIR/munge/munge.key"
  # munged forks once its socket is ready; --origin keeps it from resolving the hostname.
  munged --key-file="$DIR/munge/munge.key" --socket="$MUNGE_SOCKET" \
    --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/log/munged.log" \
    --seed-file="$DIR/munge/munged.seed" --origin=127.0.0.1 --num-threads=2 </dev/null
  munge -n -S "$MUNGE_SOCKET" | unmunge -S "$MUNGE_SOCKET" >/dev/null \
    || { log "munged does not answer on $MUNGE_SOCKET"; return 1; }
}

up() {
  check_prereqs
  if [[ -e $DIR && ! -e $DIR/.osprey-slurm ]] && [[ -n $(ls -A "$DIR") ]]; then
    log "$DIR exists and was not made by this script; set OSPREY_SLURM_DIR elsewhere"
    exit 1
  fi
  down
  # State from an earlier cluster (jobs, node states) would only confuse the new one.
  rm -rf "$DIR/state" "$DIR/spool" "$DIR/tmp" "$DIR/run"
  mkdir -p "$DIR"/{state,spool,tmp,run,log,munge}
  touch "$DIR/.osprey-slurm"
  # munged refuses a socket directory that others can write or cannot search (0755 it is); the
  # key itself is 0600.
  chmod 0755 "$DIR" "$DIR/munge"
  rm -f "$DIR"/log/*.log
  write_conf
  start_munged || { tail_logs; down; exit 1; }
  # -D: stay in the foreground, so the pids we save are the daemons'; setsid: a Ctrl-C meant for
  # the caller's terminal does not reach them. No fds of ours stay open (a caller capturing our
  # output, such as ctest, would wait for them to close).
  setsid slurmctld -D -i -f "$CONF" </dev/null >>"$DIR/log/slurmctld.out" 2>&1 &
  echo $! >"$DIR/run/slurmctld.pid"
  setsid slurmd -D -N "$NODE" -f "$CONF" </dev/null >>"$DIR/log/slurmd.out" 2>&1 &
  echo $! >"$DIR/run/slurmd.pid"
  local i state=""
  for ((i = 0; i < 300; i++)); do  # 30 s
    state=$(sinfo -h -N -n "$NODE" -o %T 2>/dev/null || true)
    if [[ $state == idle ]]; then
      log "up in $DIR (node $NODE idle, $(node_cpus) CPUs on $(nproc) cores, port $PORT)"
      log "Slurm's commands find this cluster through SLURM_CONF; in your shell run:"
      env_lines
      return 0
    fi
    live_pid "$DIR/run/slurmctld.pid" slurmctld >/dev/null || { log "slurmctld exited"; break; }
    live_pid "$DIR/run/slurmd.pid" slurmd >/dev/null || { log "slurmd exited"; break; }
    sleep 0.1
  done
  log "node did not become idle (state: '${state:-none}')"
  tail_logs
  down
  exit 1
}

status() {
  [[ -f $CONF ]] || { log "no cluster configured in $DIR"; exit 1; }
  sinfo -N -o '%N %T %C %m %P'
  squeue
}

case ${1:-} in
  up) up ;;
  down) down; log "down" ;;
  status) status ;;
  check) check_prereqs ;;  # exit 77 with the reason where this machine cannot run the cluster
  env) env_lines ;;
  *) echo "usage: $0 up|down|status|check|env   (dir: \$OSPREY_SLURM_DIR, default /tmp/osprey-slurm)" >&2; exit 2 ;;
esac
