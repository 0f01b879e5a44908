#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# packetdrill's TCP scripts (gtests/net/tcp of a packetdrill checkout) on
# the kernel and on a Sluice stack, each in a network namespace of its own:
#
#   kernel: netns pd-PID-k   packetdrill --tun--> Linux TCP (real time)
#   sluice: netns pd-PID-s   packetdrill --so_filename=pd_plugin.so--> Sluice
#                            in packetdrill's process (virtual time); a tun0
#                            exists there only for the scripts' `tc` line
#
# Every script runs strictly, and again "relaxed" when the strict run
# failed only by the window scale its SYN or SYN-ACK announced: the
# script's outbound wscale values are replaced by the one the stack sent
# (Linux's choice follows its buffer sizes, Sluice's its own), and the
# script is run once more. Prints a line a script (strict, relaxed, each
# side) and totals; --results writes the same as "script ks kr ss sr".
#
#   bash tests/conformance/packetdrill.sh --packetdrill ../packetdrill \
#        [--plugin build/conformance/pd_plugin.so] [--list FILE]
#        [--only GLOB]... [--side kernel|sluice|both] [--outdir DIR]
#        [--results FILE]
#
# Needs root (namespaces, tun). The scripts assume cubic is the congestion
# control (their defaults.sh sets it): a namespace may only pick one the
# host allows (net.ipv4.tcp_allowed_congestion_control), so if cubic is
# not allowed it is added for the run and the host's list put back after.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
pd=
plugin=$top/build/conformance/pd_plugin.so
list=$top/tests/conformance/packetdrill.list
side=both
outdir=
results=
only=()

while [ $# -gt 0 ]; do
	case $1 in
	--packetdrill) pd=$2; shift ;;
	--plugin) plugin=$2; shift ;;
	--list) list=$2; shift ;;
	--only) only+=("$2"); shift ;;
	--side) side=$2; shift ;;
	--outdir) outdir=$2; shift ;;
	--results) results=$2; shift ;;
	*) echo "usage: see the top of $0" >&2; exit 2 ;;
	esac
	shift
done

bin=$pd/gtests/net/packetdrill/packetdrill
tcp=$pd/gtests/net/tcp
[ -n "$pd" ] && [ -x "$bin" ] && [ -d "$tcp" ] ||
	{ echo "no packetdrill binary at $bin (make packetdrill-build PACKETDRILL=...)" >&2; exit 2; }
[ "$side" = kernel ] || [ -f "$plugin" ] || { echo "no plugin $plugin" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 2; }
# packetdrill runs in each script's folder: absolute paths.
plugin=$(realpath "$plugin")
bin=$(realpath "$bin")
tcp=$(realpath "$tcp")

tmp=$(mktemp -d)
[ -n "$outdir" ] || outdir=$tmp/out
mkdir -p "$outdir"
allowed=/proc/sys/net/ipv4/tcp_allowed_congestion_control
old_allowed=
cleanup() {
	ip netns del "pd-$$-k" 2>/dev/null
	ip netns del "pd-$$-s" 2>/dev/null
	[ -z "$old_allowed" ] || echo "$old_allowed" >"$allowed"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ "$side" != sluice ] && ! grep -qw cubic "$allowed"; then
	old_allowed=$(cat "$allowed")
	echo "# cubic added to $allowed for the run (was: $old_allowed)"
	echo "$old_allowed cubic" >"$allowed"
fi

# The arguments packetdrill's own run_all.py gives an IPv4 run.
args=(--send_omit_free --ip_version=ipv4 --local_ip=192.168.0.1 --gateway_ip=192.168.0.1
	--netmask_ip=255.255.0.0 --remote_ip=192.0.2.1 -D TFO_COOKIE=3021b9d889017eeb
	-D CODE=host_unreachable -D CMSG_LEVEL_IP=SOL_IP -D CMSG_TYPE_RECVERR=IP_RECVERR)

# run_one SIDE DIR SCRIPT LOG: the verdict word on stdout. The kernel runs
# in real time on a machine others share: a run that failed by a timing
# error alone is tried again, up to three runs (Sluice's virtual time
# makes its runs the same every time).
run_one() {
	local v i
	for i in 1 2 3; do
		v=$(run_once "$@")
		[ "$v" = fail ] && grep -q 'error handling packet: timing error' "$4" || break
		cp "$4" "${4%.log}.try$i.log"
	done
	echo "$v"
}

run_once() {
	local s=$1 dir=$2 script=$3 log=$4 ns=pd-$$-${1:0:1} rc
	local extra=()

	ip netns del "$ns" 2>/dev/null
	ip netns add "$ns" || return 1
	ip -n "$ns" link set lo up
	if [ "$s" = sluice ]; then
		ip -n "$ns" tuntap add dev tun0 mode tun
		extra=(--so_filename="$plugin" --so_flags=ip=192.168.0.1${PD_SO_FLAGS:+,$PD_SO_FLAGS})
	fi
	(cd "$dir" && timeout -k 5 120 ip netns exec "$ns" "$bin" "${args[@]}" "${extra[@]}" \
		"$script") >"$log" 2>&1
	rc=$?
	ip netns del "$ns"
	# A script that fails ends packetdrill before the plugin's teardown,
	# which leaves its stack (/dev/shm/sluice-pd-PID): remove those of
	# runs that are gone (never one whose process lives).
	if [ "$s" = sluice ]; then
		for f in /dev/shm/sluice-pd-*; do
			[ -e "$f" ] || continue
			kill -0 "${f##*-}" 2>/dev/null || rm -f "$f" "/dev/shm/sluicefd-pd-${f##*-}"
		done
	fi
	if [ $rc = 0 ]; then
		echo pass
	elif [ $rc = 124 ] || [ $rc = 137 ]; then
		echo timeout
	else
		echo fail
	fi
}

# The file of a listed script: own/NAME is ours (tests/conformance/pd/),
# anything else is gtests/net/tcp's.
script_file() {
	case $1 in
	own/*) echo "$top/tests/conformance/pd/${1#own/}" ;;
	*) echo "$tcp/$1" ;;
	esac
}

# relaxed SIDE PATH STRICT-VERDICT STRICT-LOG: the verdict with the
# script's outbound wscale set to what the stack sent.
relaxed() {
	local s=$1 path=$2 v=$3 log=$4 w dir copy
	[ "$v" != pass ] || { echo pass; return; }
	w=$(sed -n 's/.*expected: wscale [0-9]* actual: wscale \([0-9]*\).*/\1/p' "$log" | head -n 1)
	[ -n "$w" ] || { echo "$v"; return; }
	# The copy sits where the original's relative paths (../common,
	# ../../common, ./settings.sh) still lead to the same files.
	case $path in
	own/*)
		dir=$tmp/own
		mkdir -p "$dir"
		ln -sfn "$top/tests/conformance/pd/settings.sh" "$dir/settings.sh"
		;;
	*)
		dir=$tmp/net/tcp/$(dirname "$path")
		mkdir -p "$dir"
		ln -sfn "$tcp/common" "$tmp/net/tcp/common"
		ln -sfn "$tcp/../common" "$tmp/net/common"
		;;
	esac
	copy=$dir/$(basename "$path")
	sed -E "/^[[:space:]]*[-+*0-9.~]*[[:space:]]*>/s/wscale [0-9]+/wscale $w/g" \
		"$(script_file "$path")" >"$copy"
	run_one "$s" "$dir" "$(basename "$path")" "${log%.log}.relaxed.log"
}

picked() {
	local g
	[ ${#only[@]} = 0 ] && return 0
	for g in "${only[@]}"; do
		# shellcheck disable=SC2053
		[[ $1 == $g ]] && return 0
	done
	return 1
}

declare -A tot
for k in ks kr ss sr; do tot[$k]=0; done
n=0
start=$SECONDS
printf '%-52s %-8s %-8s %-8s %-8s\n' script kernel kernel~ sluice sluice~
[ -z "$results" ] || : >"$results"
while read -r path; do
	case $path in '' | '#'*) continue ;; esac
	picked "$path" || continue
	n=$((n + 1))
	base=$outdir/${path//\//_}
	ks=- kr=- ss=- sr=-
	file=$(script_file "$path")
	if [ "$side" != sluice ]; then
		ks=$(run_one kernel "$(dirname "$file")" "$(basename "$file")" "$base.kernel.log")
		kr=$(relaxed kernel "$path" "$ks" "$base.kernel.log")
	fi
	if [ "$side" != kernel ]; then
		ss=$(run_one sluice "$(dirname "$file")" "$(basename "$file")" "$base.sluice.log")
		sr=$(relaxed sluice "$path" "$ss" "$base.sluice.log")
	fi
	for k in ks kr ss sr; do
		[ "${!k}" != pass ] || tot[$k]=$((tot[$k] + 1))
	done
	printf '%-52s %-8s %-8s %-8s %-8s\n' "$path" "$ks" "$kr" "$ss" "$sr"
	[ -z "$results" ] || echo "$path $ks $kr $ss $sr" >>"$results"
done <"$list"
printf '%-52s %-8s %-8s %-8s %-8s\n' "total ($n scripts, $((SECONDS - start)) s)" \
	"${tot[ks]}" "${tot[kr]}" "${tot[ss]}" "${tot[sr]}"
echo "# pass counts: kernel strict, kernel relaxed (~: wscale value relaxed), sluice strict, sluice relaxed; logs in $outdir"
