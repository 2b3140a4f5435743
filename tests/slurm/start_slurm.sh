#!/usr/bin/env bash
# Start a 2-node SLURM on this machine for the tests (as root): Debian's slurm-wlm and munge, one slurmctld,
# two slurmd (n0, n1) on 127.0.0.1 ports 17001/17002. Idempotent: a running cluster is left as it is.
# Recipe verified on Debian 12 (SLURM 22.05): see the cluster issue's notes.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then echo "start_slurm.sh: needs root" >&2; exit 3; fi
if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi
if sinfo -h -o %T 2>/dev/null | grep -q idle; then echo "slurm already running"; exit 0; fi

CPUS=$(nproc)
MEM=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 4 ))
mkdir -p /etc/munge /var/log/munge /var/lib/munge /run/munge /etc/slurm /var/spool/slurmctld /var/log/slurm
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
fi
chown -R munge:munge /etc/munge /var/log/munge /var/lib/munge /run/munge
chmod 0400 /etc/munge/munge.key
pgrep -x munged >/dev/null || runuser -u munge -- munged

cat > /etc/slurm/slurm.conf <<CONF
ClusterName=dispatchprof
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmctldPort=16817
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=600
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd-%n
SlurmdPidFile=/run/slurmd-%n.pid
SlurmctldPidFile=/run/slurmctld.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd-%n.log
NodeName=n0 NodeHostname=localhost NodeAddr=127.0.0.1 Port=17001 CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=17002 CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=n0,n1 Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
mkdir -p /var/spool/slurmd-n0 /var/spool/slurmd-n1
pgrep -x slurmctld >/dev/null || slurmctld
for n in n0 n1; do pgrep -f "slurmd -N $n" >/dev/null || slurmd -N "$n"; done
for _ in $(seq 1 60); do
  if [ "$(sinfo -h -o %T | grep -c idle)" -ge 1 ] && [ "$(sinfo -h -N -o %T | grep -c idle)" -ge 2 ]; then
    sinfo
    exit 0
  fi
  sleep 1
done
echo "start_slurm.sh: nodes did not become idle" >&2
sinfo -N || true
tail -20 /var/log/slurm/slurmctld.log >&2 || true
exit 1
