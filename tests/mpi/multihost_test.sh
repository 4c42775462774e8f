#!/usr/bin/env bash
# tests/mpi/multihost_test.sh — DDP on several "hosts" through Open MPI's own launcher: network
# namespaces on one machine act as hosts, joined by veth pairs, and `mpirun -H` starts the ranks
# on them over the TCP transport. Checks that
#   (a) train_mnist on N hosts x R ranks trains exactly what N x R ranks on one host train: the
#       checkpoints (--save) are byte-identical, and so are the printed losses/accuracies;
#   (b) a rank killed (kill -9) on the last host mid-training ends the whole job with an error
#       (mpirun exits non-zero, every rank is gone) within 60 s;
#   (c) a cut link (`ip -n <last host> link set <dev> down` mid-training) ends every rank with an
#       error within 60 s: with TINYTORCH_DIST_TIMEOUT=10 a rank waiting in a collective prints
#       "Watchdog caught collective operation timeout" and aborts the job (MPI_Abort).
#
#   sudo tests/mpi/multihost_test.sh build/bin/train_mnist [hosts N=2] [ranks per host R=1] [checks=abc]
#   sudo tests/mpi/multihost_test.sh build/bin/train_mnist 4 2 a      # (a) only, 4 hosts x 2 ranks
#
# Needs root (network namespaces); otherwise, or without `ip`/veth support or Fashion-MNIST, it
# prints SKIPPED and exits 77 (ctest: Skipped, never Passed). ctest runs it as mpi_multihost
# (tests/mpi/tests.cmake) with 2 hosts x 1 rank. 2 hosts are joined by one veth pair;
# 3 or 4 hosts are joined by a bridge in a further "switch" namespace. Host i is the namespace
# ttmh<tag>h<i> with address 10.77.0.<i>/24 on device ttmh<tag>e<i>, where <tag> is this
# script's PID in hex plus a random byte, so that two runs do not collide (a name that exists
# already is an error, not a skip); every device is created inside its namespace, so nothing is
# added to, or changed in, the machine's own network namespace. mpirun runs inside host 1 and starts each
# other host's daemon (orted) through an rsh agent, a generated script that enters that host's
# namespace (recipe: ../shared/design/multinode-netns.md):
#   ip netns exec <host 1> mpirun -H 10.77.0.1:1,10.77.0.2:1 -np 2 --mca plm_rsh_agent <agent>
#     --mca btl self,tcp --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 ...
# Each host also gets its own hostname (its namespace's name, in a UTS namespace: `unshare --uts`):
# with the machine's one hostname on every host, Open MPI 4.1.4 crashed (SIGSEGV in
# mca_pml_ob1_recv_frag_callback_match, during the first MPI_Allgather) with 2 hosts x 2 ranks.
# In each host namespace net.ipv4.tcp_retries2 is 5 (the namespace's own copy of the sysctl): after
# a link is cut, mpirun aborting the job waits for the lost host's daemon until TCP gives up on the
# connection, about 13 s after 5 retransmissions instead of about 15 min after the default 15.
# Every namespace, device and process is removed on exit (trap), whether a check failed or the
# script was interrupted; each run is wrapped in `timeout`. Prints one "ok"/"FAIL" line per check,
# and the output of a failed run; exits 0 when every check passed, 1 otherwise, 2 on bad usage.
# (a) on one host runs through scripts/mpirun.sh (shared memory), on the hosts over TCP. Takes about
# 45 s on 2 cores: (a) 8 s, (b) 7 s, (c) 30 s (10 s collective timeout, then about 13 s until TCP
# gives up on the lost host); training uses the first 2000 images (--limit 2000).
# Chapter: chapters/06-distributed-data-parallel.md ("Many hosts").
set -uo pipefail

usage="usage: multihost_test.sh <train_mnist binary> [hosts=2 (2..4)] [ranks per host=1 (1..4)] [checks=abc]"
bin="${1:?$usage}"
hosts="${2:-2}"
per_host="${3:-1}"
checks="${4:-abc}"
limit=60  # seconds from the fault to the end of every rank, (b) and (c)
[[ "$hosts" =~ ^[2-4]$ && "$per_host" =~ ^[1-4]$ ]] || { echo "$usage" >&2; exit 2; }
np=$((hosts * per_host))
layout="$hosts hosts x $per_host rank$( ((per_host == 1)) || echo s)"  # for messages
[[ "$checks" =~ ^[abc]+$ ]] || { echo "$usage" >&2; exit 2; }

skip() { echo "SKIPPED: $*"; exit 77; }
[[ "$(id -u)" == 0 ]] || skip "needs root to create network namespaces (sudo $0 ...)"
command -v ip >/dev/null 2>&1 || skip "no 'ip' command (apt-get install iproute2)"
MPIRUN="${MPIRUN:-mpirun}"
command -v "$MPIRUN" >/dev/null 2>&1 || skip "'$MPIRUN' not found (apt-get install openmpi-bin)"
data="${TINYTORCH_DATA:-/usr/share/datasets/fashion-mnist}"
ls "$data"/train-images-idx3-ubyte* >/dev/null 2>&1 ||
  skip "Fashion-MNIST not found in $data (apt-get install dataset-fashion-mnist)"
[[ -x "$bin" ]] || { echo "FAIL: '$bin' is not an executable (cmake --build build --target train_mnist)"; exit 1; }
bin="$(readlink -f "$bin")"
mpirun_sh="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../../scripts/mpirun.sh"

tag="ttmh$(printf '%x%02x' $$ $((RANDOM % 256)))"
subnet=10.77.0.0/24
namespaces=()   # created so far, removed by cleanup
bg_pids=()      # background `timeout` wrappers started by this script
work=""

cleanup() {
  local ns p i
  trap - EXIT INT TERM HUP
  exec 2>/dev/null  # no "Killed" notices from bash for the jobs killed below
  # Every process inside our namespaces is ours (mpirun, the daemons, the ranks): kill them by PID,
  # and wait (at most 5 s) until they are gone.
  for ((i = 0; i < 25; i++)); do
    p=""
    for ns in "${namespaces[@]}"; do p+=" $(ip netns pids "$ns")"; done
    [[ -z "${p// /}" ]] && break
    kill -9 $p
    sleep 0.2
  done
  for p in "${bg_pids[@]}"; do kill -9 "$p"; done
  wait
  # Deleting a namespace deletes the veth ends and the bridge inside it.
  for ns in "${namespaces[@]}"; do ip netns del "$ns"; done
  [[ -n "$work" ]] && rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

work="$(mktemp -d /tmp/tt-multihost.XXXXXX)"

# ---- the "cluster": host i = namespace $tag"h"i, address 10.77.0.i on device $tag"e"i --------------
add_ns() {
  [[ ! -e "/var/run/netns/$1" ]] || { echo "FAIL: network namespace $1 exists already"; exit 1; }
  ip netns add "$1" 2>"$work/err" || skip "cannot create network namespace $1: $(cat "$work/err")"
  namespaces+=("$1")
  ip -n "$1" link set lo up
}
host_ns=() host_dev=() host_ip=()
for ((i = 1; i <= hosts; i++)); do
  host_ns+=("${tag}h$i")
  host_dev+=("${tag}e$i")
  host_ip+=("10.77.0.$i")
  add_ns "${tag}h$i"
done
if ((hosts == 2)); then
  # One veth pair, created with its ends already inside the two namespaces.
  ip link add "${host_dev[0]}" netns "${host_ns[0]}" type veth peer name "${host_dev[1]}" netns "${host_ns[1]}" \
    2>"$work/err" || skip "cannot create a veth pair: $(cat "$work/err")"
else
  # A bridge in its own "switch" namespace, one veth pair per host (port p<i> on the switch).
  add_ns "${tag}sw"
  ip -n "${tag}sw" link add br0 type bridge 2>"$work/err" || skip "cannot create a bridge: $(cat "$work/err")"
  ip -n "${tag}sw" link set br0 up
  for ((i = 0; i < hosts; i++)); do
    ip link add "${host_dev[$i]}" netns "${host_ns[$i]}" type veth peer name "p$((i + 1))" netns "${tag}sw" \
      2>"$work/err" || skip "cannot create a veth pair: $(cat "$work/err")"
    ip -n "${tag}sw" link set "p$((i + 1))" master br0
    ip -n "${tag}sw" link set "p$((i + 1))" up
  done
fi
for ((i = 0; i < hosts; i++)); do
  ip -n "${host_ns[$i]}" addr add "${host_ip[$i]}/24" dev "${host_dev[$i]}"
  ip -n "${host_ns[$i]}" link set "${host_dev[$i]}" up
  ip netns exec "${host_ns[$i]}" sh -c 'echo 5 > /proc/sys/net/ipv4/tcp_retries2' 2>"$work/err" ||
    skip "cannot set net.ipv4.tcp_retries2 inside a namespace: $(cat "$work/err")"
done

# enter.sh <namespace> <command...>: runs the command on that host, i.e. in its network namespace
# and in a new UTS namespace whose hostname is the namespace's name.
cat >"$work/enter.sh" <<'EOF_ENTER'
#!/usr/bin/env bash
exec ip netns exec "$1" unshare --uts bash -c 'echo "$0" > /proc/sys/kernel/hostname && exec "$@"' "$@"
EOF_ENTER
# The rsh agent: Open MPI runs `agent <host> orted ...`; we enter that host instead of ssh-ing to it.
{
  echo '#!/usr/bin/env bash'
  echo 'host="$1"; shift'
  echo 'case "$host" in'
  for ((i = 0; i < hosts; i++)); do echo "  ${host_ip[$i]}) ns=${host_ns[$i]} ;;"; done
  echo '  *) echo "multihost agent: unknown host $host" >&2; exit 1 ;;'
  echo 'esac'
  echo "exec $work/enter.sh \"\$ns\" bash -c \"\$*\""
} >"$work/agent.sh"
chmod +x "$work/enter.sh" "$work/agent.sh"
"$work/enter.sh" "${host_ns[0]}" true 2>"$work/err" ||
  skip "cannot enter a namespace with its own hostname (unshare --uts): $(cat "$work/err")"

hostlist="$(IFS=,; echo "${host_ip[*]/%/:$per_host}")"  # 10.77.0.1:R,10.77.0.2:R,...
mpirun_hosts=("$work/enter.sh" "${host_ns[0]}" "$MPIRUN" --allow-run-as-root -np "$np" -H "$hostlist"
  --bind-to none --mca plm_rsh_agent "$work/agent.sh" --mca plm_rsh_no_tree_spawn 1
  --mca btl self,tcp --mca btl_tcp_if_include "$subnet" --mca oob_tcp_if_include "$subnet"
  --mca mpi_yield_when_idle 1)
train=("$bin" --data-dir "$data" --limit 2000)

failures=0
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
fail() {  # fail <check> <message> [output file]
  failures=$((failures + 1))
  echo "FAIL [$1]: $2"
  if [[ -n "${3:-}" ]]; then
    echo "----- output of [$1] -----"
    cat "$3"
    echo "--------------------------"
  fi
}
rank_pids() {  # PIDs of train_mnist processes in any of our namespaces
  local ns p
  for ns in "${namespaces[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do
      [[ "$(readlink "/proc/$p/exe" 2>/dev/null)" == "$bin" ]] && echo "$p"
    done
  done
}
# Summary lines of a train_mnist output without the timings: "epoch 1/2 loss=... test_acc=...".
results() { sed -n -e 's/ samples\/s=.*//p' -e '/^test_accuracy=/p' "$1" | grep -v '^epoch .*\[' ; }

# ---- (a) N ranks on one host == N ranks on N hosts, byte for byte ------------------------------
if [[ "$checks" == *a* ]]; then
  start=$(now)
  timeout -k 5 60 bash "$mpirun_sh" -np "$np" "${train[@]}" --epochs 2 --save "$work/one_host.tt" \
    >"$work/a1.out" 2>&1
  rc1=$?
  timeout -k 5 60 "${mpirun_hosts[@]}" "${train[@]}" --epochs 2 --save "$work/hosts.tt" >"$work/a2.out" 2>&1
  rc2=$?
  if ((rc1 != 0)); then
    fail a "$np ranks on one host: exit $rc1" "$work/a1.out"
  elif ((rc2 != 0)); then
    fail a "$layout: exit $rc2" "$work/a2.out"
  elif ! cmp -s "$work/one_host.tt" "$work/hosts.tt"; then
    fail a "the checkpoints differ (one host vs $hosts hosts)"
  elif [[ "$(results "$work/a1.out")" != "$(results "$work/a2.out")" || -z "$(results "$work/a1.out")" ]]; then
    fail a "the printed results differ" "$work/a2.out"
    diff <(results "$work/a1.out") <(results "$work/a2.out")
  else
    echo "ok   [a]: $layout = $np ranks on one host: checkpoints identical" \
      "($(stat -c %s "$work/hosts.tt") bytes), $(grep '^test_accuracy=' "$work/a2.out") (both runs: $(since "$start") s)"
  fi
fi

# ---- (b), (c): a fault on the last host mid-training ends every rank within $limit s ------------
# fault_check <check> <fault command...>: starts a long training on the hosts (with the mpirun
# options in $fault_mpirun_options), waits for its first epoch line, runs the fault, then waits (at
# most $limit s) until mpirun has exited and no rank is left in any namespace. Returns 0 when both
# happened, with mpirun's exit code in $rc, the seconds since the fault in $elapsed and the output
# in the file $out; otherwise reports the failure and returns 1.
fault_mpirun_options=()
fault_check() {
  local check="$1" t0 deadline job
  shift
  out="$work/$check.out"
  rc=""
  timeout -k 5 $((limit + 60)) "${mpirun_hosts[@]}" "${fault_mpirun_options[@]}" \
    "${train[@]}" --epochs 100000 >"$out" 2>&1 &
  job=$!
  bg_pids+=("$job")
  deadline=$(($(date +%s) + 30))
  until grep -q '^epoch ' "$out" 2>/dev/null; do
    if ! kill -0 "$job" 2>/dev/null; then wait "$job"; fail "$check" "the job ended before training (exit $?)" "$out"; return 1; fi
    (($(date +%s) < deadline)) || { fail "$check" "no epoch line after 30 s" "$out"; return 1; }
    sleep 0.2
  done
  "$@" || { fail "$check" "the fault '$*' failed"; return 1; }
  t0=$(now)
  deadline=$(($(date +%s) + limit))
  while kill -0 "$job" 2>/dev/null || [[ -n "$(rank_pids)" ]]; do
    (($(date +%s) < deadline)) || break
    sleep 0.2
  done
  elapsed=$(since "$t0")
  if kill -0 "$job" 2>/dev/null; then
    fail "$check" "mpirun still running $limit s after the fault (hung); ranks left: $(rank_pids | wc -l)" "$out"
    return 1
  fi
  wait "$job"
  rc=$?
  if [[ -n "$(rank_pids)" ]]; then
    fail "$check" "mpirun exited ($rc) but $(rank_pids | wc -l) rank(s) still run $limit s after the fault" "$out"
    return 1
  fi
  return 0
}
kill_last_rank() {
  local p
  p=$(for p in $(ip netns pids "${host_ns[-1]}"); do
    [[ "$(readlink "/proc/$p/exe" 2>/dev/null)" == "$bin" ]] && echo "$p"; done | head -1)
  [[ -n "$p" ]] || { echo "no train_mnist process in ${host_ns[-1]}"; return 1; }
  kill -9 "$p"
}

# After fault_check: mpirun must have exited with its own error (not 0, not our timeout's 124)
# and printed <pattern>. Usage: fault_verdict <check> <pattern> <why the pattern> <what happened>
fault_verdict() {
  if ((rc == 0 || rc == 124)); then
    fail "$1" "expected mpirun's error exit, got $rc" "$out"
  elif ! grep -q "$2" "$out"; then
    fail "$1" "the output lacks '$2' ($3)" "$out"
  else
    echo "ok   [$1]: $4: every rank ended, mpirun exit $rc, ${elapsed} s after the fault"
    return 0
  fi
  return 1
}

if [[ "$checks" == *b* ]] && fault_check b kill_last_rank; then
  fault_verdict b "exited on signal 9" "it names the killed rank" "a rank killed on ${host_ip[-1]}"
fi

# Every rank learns of the collective timeout; -x passes the variable to the other hosts' ranks.
fault_mpirun_options=(-x TINYTORCH_DIST_TIMEOUT=10)
if [[ "$checks" == *c* ]] && fault_check c ip -n "${host_ns[-1]}" link set "${host_dev[-1]}" down; then
  fault_verdict c "Watchdog caught collective operation timeout" "TINYTORCH_DIST_TIMEOUT=10" \
    "link of ${host_ip[-1]} cut" && grep -m1 "Watchdog caught" "$out"
fi

if ((failures)); then
  echo "multihost_test ($layout): $failures check(s) failed"
  exit 1
fi
echo "multihost_test ($layout): all checks passed"
