#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# gVisor's socket syscall tests, the kernel beside Sluice.  For each binary
# built by `make conformance-build` (tests/conformance/gvisor.mk) it lists
# the cases (--gtest_list_tests) and runs each one twice, each run in a
# fresh network namespace (unshare -n, then lo up) under a time limit:
# once on the kernel, once under `sluice run` on a fresh /dev/shm stack of
# its own.  It prints per binary the cases, the kernel's passes, Sluice's
# passes and every deviation (a case the kernel passes and Sluice does not),
# and writes one line per case to the results file:
#
#   BINARY CASE KERNEL_RESULT SLUICE_RESULT
#
# A result is pass, fail (the test failed), skip (GTEST_SKIP), hang (the
# time limit ran out: exit 124 or 137), crash-SIGNAME (a signal), or
# norun (the filter ran no test).
#
#   tests/conformance/gvisor.sh [options]
#     --bindir DIR     the binaries (default build/conformance)
#     --binary REGEX   only binaries whose name matches (repeatable)
#     --subset FILE    only the cases listed: lines "BINARY CASE" (# comments)
#     --results FILE   results file (default BINDIR/results.txt)
#     --outdir DIR     each deviation's output, both runs (default BINDIR/out)
#     --timeout S      per run (default 20; the kill follows 2 s later)
#     --jobs N         cases at a time, 1 or 2 (default 1)
#     --sluice-only    do not run the kernel side (its result is "-")
#     --module         Sluice's side on a stack of the loaded module (its
#                      region and socket fds), not /dev/shm; a run whose
#                      stack fell back to /dev/shm is "shm", a failure
#     --sluice PATH    the sluice tool (default build/tools/sluice)
#     --each           a line per case as it ends ("  case: BINARY CASE
#                      KERNEL SLUICE"), a deviation's last lines after it:
#                      a long run cut short still shows what it ran
# Exit status: 0 when no case deviates, 1 otherwise, 2 on a usage error.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bindir=$top/build/conformance
results='' outdir='' subset='' tlimit=20 jobs=1 sluice_only=0 module=0 each=0
sluice=$top/build/tools/sluice
filters=()
usage() { sed -n '/^#   tests/,/^# Exit/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--bindir) bindir=$2; shift ;;
	--binary) filters+=("$2"); shift ;;
	--subset) subset=$2; shift ;;
	--results) results=$2; shift ;;
	--outdir) outdir=$2; shift ;;
	--timeout) tlimit=$2; shift ;;
	--jobs) jobs=$2; shift ;;
	--sluice-only) sluice_only=1 ;;
	--module) module=1 ;;
	--sluice) sluice=$2; shift ;;
	--each) each=1 ;;
	*) usage ;;
	esac
	shift
done
case $jobs in 1|2) ;; *) echo "--jobs is 1 or 2" >&2; exit 2 ;; esac
bindir=$(cd "$bindir" && pwd) || exit 2
: "${results:=$bindir/results.txt}"
: "${outdir:=$bindir/out}"
[ -x "$sluice" ] || { echo "no $sluice: make lib tools" >&2; exit 2; }
if ! command -v unshare >/dev/null || ! command -v ip >/dev/null; then
	echo "needs unshare and ip" >&2
	exit 2
fi

# The binaries, in the order of tests/conformance/gvisor.mk.
all_bins=$(sed -n '/^GV_BINS :=/,/^$/p' "$top/tests/conformance/gvisor.mk" |
	tr -s ' \\\t' '\n' | grep '_test$')

tmp=$(mktemp -d /tmp/sluice-gvisor.XXXXXX)
stack_pfx=gv-$$
cleanup() {
	rm -rf "$tmp"
	rm -rf /dev/shm/sluice*-"$stack_pfx"-*
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rm -rf "$outdir"
mkdir -p "$outdir" "$(dirname "$results")"
: >"$results"

# classify RC OUTPUT: the result word of one run.
classify() {
	local rc=$1 f=$2
	case $rc in
	0)
		if grep -q '^\[  SKIPPED \] 1 test' "$f"; then echo skip
		elif grep -q '^\[  PASSED  \] 1 test' "$f"; then echo pass
		else echo norun
		fi ;;
	# 143: busybox's timeout (the test VM) exits with the TERM it sent
	124|137|143) echo hang ;;
	1) echo fail ;;
	*)
		if [ "$rc" -gt 128 ]; then
			echo "crash-$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))"
		else
			echo fail
		fi ;;
	esac
}

# run_one MODE BIN CASE N OUT: one run in a fresh network namespace; prints
# the result word.  MODE is kernel or sluice; N makes the stack name unique.
run_one() {
	local mode=$1 bin=$2 case=$3 n=$4 out=$5 rc
	local -a pre=()
	if [ "$mode" = sluice ]; then
		# A private stack per case; no helper outlives the case (nothing
		# else is on the stack, and it is removed right after: a module
		# stack goes with its last process).
		pre=(env SLUICE_STACK="$stack_pfx-$n" SLUICE_NO_HELPER=1)
		[ $module = 1 ] || pre+=(SLUICE_SHM=1)
		pre+=("$sluice" run --)
	fi
	timeout -k 2 "$tlimit" unshare -n bash -c 'ip link set lo up && exec "$@"' _ \
		"${pre[@]}" "$bin" --gtest_color=no --gtest_filter="$case" >"$out" 2>&1 </dev/null
	rc=$?
	if [ "$mode" = sluice ] && [ $module = 1 ] && [ -e "/dev/shm/sluice-$stack_pfx-$n" ]; then
		rm -rf "/dev/shm/sluice-$stack_pfx-$n" "/dev/shm/sluicefd-$stack_pfx-$n"
		echo shm
		return
	fi
	[ "$mode" = sluice ] && rm -rf "/dev/shm/sluice-$stack_pfx-$n" "/dev/shm/sluicefd-$stack_pfx-$n"
	classify "$rc" "$out"
}

# run_case BIN CASE N: both runs; writes "KERNEL SLUICE" to $tmp/res.N and
# keeps both outputs of a deviation in $outdir.
run_case() {
	local bin=$1 case=$2 n=$3 k=- s ko=$tmp/k.$3 so=$tmp/s.$3 dev=0
	[ $sluice_only = 1 ] || k=$(run_one kernel "$bin" "$case" "$n" "$ko")
	s=$(run_one sluice "$bin" "$case" "$n" "$so")
	if [ "$k" = pass ] && [ "$s" != pass ] || { [ "$k" = - ] && [ "$s" != pass ]; }; then
		local d=$outdir/${bin##*/}
		dev=1
		mkdir -p "$d"
		{
			[ $sluice_only = 1 ] || { echo "==== kernel: $k"; tail -c 20000 "$ko"; }
			echo "==== sluice: $s"; tail -c 20000 "$so"
		} >"$d/${case//\//_}.txt"
	fi
	if [ $each = 1 ]; then
		# One printf a case, so that two jobs' lines do not interleave.
		local tail=''
		[ $dev = 0 ] || tail=$(grep -v '^\[ *\(RUN\|OK\) *\]' "$so" | tail -n 12 | sed 's/^/    sluice: /')
		printf '  case: %s %s %s %s\n%s' "${bin##*/}" "$case" "$k" "$s" "${tail:+$tail
}"
	fi
	rm -f "$ko" "$so"
	echo "$k $s" >"$tmp/res.$n"
}

# cases BIN: the binary's cases, Suite.Case, one a line (DISABLED_ ones out).
cases() {
	"$1" --gtest_list_tests 2>/dev/null | awk '
		/^[^ ]/ { suite = $1; next }
		/^  / { print suite $1 }' | grep -v DISABLED_
}

wanted_bin() {
	local f
	[ ${#filters[@]} = 0 ] && return 0
	for f in "${filters[@]}"; do
		[[ $1 =~ $f ]] && return 0
	done
	return 1
}

t0=$SECONDS
n=0
tot_c=0 tot_k=0 tot_s=0 tot_d=0 tot_h=0 tot_x=0
summary=()
missing=()
for b in $all_bins; do
	wanted_bin "$b" || continue
	bin=$bindir/$b
	list=''
	[ -z "$subset" ] || list=$(grep -v '^#' "$subset" | awk -v b="$b" '$1 == b { print $2 }')
	[ -z "$subset" ] || [ -n "$list" ] || continue
	if [ ! -x "$bin" ]; then
		missing+=("$b")
		continue
	fi
	[ -n "$subset" ] || list=$(cases "$bin")
	[ -n "$list" ] || continue
	first=$((n + 1))
	tb=$SECONDS
	while read -r c; do
		n=$((n + 1))
		if [ "$jobs" = 1 ]; then
			run_case "$bin" "$c" "$n"
		else
			while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
			run_case "$bin" "$c" "$n" &
		fi
		echo "$c" >"$tmp/case.$n"
	done <<<"$list"
	wait
	nc=0 nk=0 ns=0 nd=0 nh=0 nx=0
	devs=()
	for ((i = first; i <= n; i++)); do
		c=$(cat "$tmp/case.$i")
		read -r k s <"$tmp/res.$i"
		echo "$b $c $k $s" >>"$results"
		nc=$((nc + 1))
		[ "$k" = pass ] && nk=$((nk + 1))
		[ "$s" = pass ] && ns=$((ns + 1))
		if [ "$k" = pass ] && [ "$s" != pass ]; then
			nd=$((nd + 1))
			case $s in hang) nh=$((nh + 1)) ;; crash-*) nx=$((nx + 1)) ;; esac
			devs+=("  deviation: $c: kernel pass, sluice $s")
		fi
	done
	echo "$b: $nc cases, kernel pass $nk, sluice pass $ns, deviations $nd" \
		"(hang $nh, crash $nx, fail/other $((nd - nh - nx))), $((SECONDS - tb)) s"
	[ ${#devs[@]} = 0 ] || printf '%s\n' "${devs[@]}"
	summary+=("$(printf '%-58s %5d %6d %6d %5d %4d %5d' "$b" $nc $nk $ns $nd $nh $nx)")
	tot_c=$((tot_c + nc)) tot_k=$((tot_k + nk)) tot_s=$((tot_s + ns))
	tot_d=$((tot_d + nd)) tot_h=$((tot_h + nh)) tot_x=$((tot_x + nx))
done

echo
printf '%-58s %5s %6s %6s %5s %4s %5s\n' binary cases kernel sluice devs hang crash
printf '%s\n' "${summary[@]}"
printf '%-58s %5d %6d %6d %5d %4d %5d\n' total $tot_c $tot_k $tot_s $tot_d $tot_h $tot_x
[ ${#missing[@]} = 0 ] || echo "not built: ${missing[*]}"
echo "results: $results; deviations' output: $outdir; $((SECONDS - t0)) s"
[ "$tot_d" = 0 ]
