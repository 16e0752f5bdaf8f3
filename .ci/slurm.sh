#!/usr/bin/env bash
# A throwaway single-node Slurm cluster (slurmctld + slurmd + munged) for the matrix's Slurm executor
# test, on Debian bookworm as root without systemd. Idempotent: installed packages and running daemons
# are kept. Recipe and timings: ../shared/reference/slurm-single-node.md (about 15 s from nothing).
#   .ci/slurm.sh up     install if needed, start the daemons, wait until the node is idle
#   .ci/slurm.sh down   stop the daemons started here (by pid file)
set -euo pipefail
# shellcheck source=.ci/apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
STATE=${SLURM_CI_DIR:-/tmp/slurm-ci}
CONF=/etc/slurm/slurm.conf

say() { printf '[slurm] %s\n' "$*"; }

# wait_until SECONDS WHAT COMMAND...: polls every half second.
wait_until() {
  local limit=$1 what=$2
  shift 2
  local stop=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= stop)); then
      say "gave up waiting for $what"
      return 1
    fi
    sleep 0.5
  done
}

install_packages() {
  dpkg -s slurmctld slurmd slurm-client munge >/dev/null 2>&1 && return
  say "installing slurmctld slurmd slurm-client munge"
  # The packages' postinst scripts try to start the daemons before a slurm.conf exists.
  apt_install_quietly slurmctld slurmd slurm-client munge
}

munge_up() {
  if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then return; fi
  [ -s /etc/munge/munge.key ] || runuser -u munge -- mungekey --create
  chown munge:munge /etc/munge /etc/munge/munge.key
  chmod 0700 /etc/munge
  chmod 0600 /etc/munge/munge.key
  # No systemd-tmpfiles here: munged needs its socket directory made for it.
  install -d -o munge -g munge -m 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged
  wait_until 10 munged bash -c 'munge -n | unmunge'
}

configure() {
  local host mem node
  host=$(hostname -s)
  # RealMemory above the real amount drains the node: declare 90 %.
  mem=$(($(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo) * 9 / 10))
  node=$(slurmd -C | head -n 1 | sed -E "s/RealMemory=[0-9]+/RealMemory=$mem/")
  mkdir -p /etc/slurm "$STATE"/state "$STATE"/spool "$STATE"/log
  cat >"$CONF" <<CONF
ClusterName=ci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$STATE/log/jobcomp.txt
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=3600
StateSaveLocation=$STATE/state
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
}

node_idle() { [ "$(sinfo -h -N -o %t)" = idle ]; }

up() {
  install_packages
  munge_up
  if scontrol ping >/dev/null 2>&1 && node_idle; then
    say "already up"
    return
  fi
  down
  rm -rf "$STATE"
  configure
  slurmctld
  wait_until 30 slurmctld scontrol ping
  slurmd
  wait_until 60 "an idle node" node_idle
  sinfo
}

down() {
  local f pid
  for f in "$STATE/slurmd.pid" "$STATE/slurmctld.pid"; do
    [ -s "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
    # Gone or a zombie (PID 1 here may reap late).
    for _ in $(seq 100); do
      case $(ps -o stat= -p "$pid" 2>/dev/null) in '' | Z*) break ;; esac
      sleep 0.1
    done
  done
}

"${1:-up}"
