#!/bin/sh
# Stands in for ssh as mpirun's plm_rsh_agent where the "hosts" are network
# namespaces on one machine (tests/netns): `netns_rsh.sh [OPTIONS] HOST
# COMMAND...` runs COMMAND with /bin/sh (as sshd would) inside the namespace
# that holds address HOST. Needs root and iproute2's ip.
set -eu
while [ $# -gt 0 ]; do
  case "$1" in
    # ssh options mpirun may add: those with a value, then flags (-x, -T).
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=$1
shift
for ns in $(ip netns list | cut -d' ' -f1); do
  if ip netns exec "$ns" ip -o -4 addr show | grep -qF " inet $host/"; then
    exec ip netns exec "$ns" /bin/sh -c "$*"
  fi
done
echo "netns_rsh.sh: no network namespace holds address $host" >&2
exit 255
