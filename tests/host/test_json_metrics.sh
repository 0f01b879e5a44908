#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The tool's machine-readable output (issue 21 item 5), on a /dev/shm stack:
#
#   +------------ network namespace made here (lo DOWN) -------------+
#   |  sluice run python3 (a listener, held)                          |
#   |  sluice run python3 (a client and server, 256 KiB each way)     |
#   |            both on stack tjm-PID, 127.0.0.1 inside it           |
#   +-----------------------------------------------------------------+
#   sluice info/stacks/dump/fds/version/doctor --json, sluice metrics: outside
#
# 1. Each --json document parses (python3's json) and has the keys and
#    types tools/README.md ("JSON output") gives it; dump's counters are
#    every counter of `sluice dump`, fds names the held listener.
# 2. sluice metrics is read by a real OpenMetrics parser (Debian's
#    python3-prometheus-client): counter families with _total samples,
#    every sample labelled stack=, "# EOF" last; the stack's TCP counters
#    move after the traffic; --output FILE --interval replaces FILE by
#    rename (a new inode each time, no temporary file left beside it).
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
py=/usr/bin/python3
tmp=$(mktemp -d)
stack=tjm-$$

cleanup() {
	# A job is a subshell running in_netns (a function): its child (the
	# program sluice run became) goes with it, not left for its sleep.
	for j in $(jobs -p); do
		pkill -P "$j" 2>/dev/null
		kill "$j" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "/dev/shm/sluice-$stack" "/dev/shm/sluicefd-$stack" "$tmp"
}
trap cleanup EXIT

# The Debian package of the Prometheus client library, installed as other
# suites install what they need (tests/vm/deps.sh lists it too).
if ! "$py" -c 'import prometheus_client' 2>/dev/null && [ "${SLUICE_NO_DEPS:-0}" != 1 ] &&
	[ "$(id -u)" = 0 ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		python3-prometheus-client >/dev/null 2>&1 ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends python3-prometheus-client >/dev/null 2>&1; }
fi
have_prom=0
"$py" -c 'import prometheus_client.openmetrics.parser' 2>/dev/null && have_prom=1

# in_netns CMD...: CMD in a new network namespace whose lo is down, so
# only the stack can carry its traffic.
# No helper is left behind when they exit (SLUICE_NO_HELPER).
in_netns() { SLUICE_NO_HELPER=1 unshare -n "$@"; }
if ! unshare -n true 2>/dev/null; then
	skip "all" "no network namespaces here (unshare -n)"
	done_testing
	exit 0
fi

# ---- the schemas, as tools/README.md gives them: KEY: TYPE, where TYPE is
# str, int, bool, num, obj, list, and a trailing ? allows null.
cat >"$tmp/schema.py" <<'EOF'
import json, sys

LOCK = {"held": "bool", "pid": "int?", "holder": "str?", "held_ms": "int?"}
SCHEMAS = {
    "version": {"version": "str", "abi": "int"},
    "info": {"library": {"version": "str", "abi": "int"},
             "stacks": [{"name": "str", "where": "str", "valid": "bool", "lock?": LOCK,
                         "slots?": {"used": "int", "max": "int", "peak": "int"},
                         "buffers?": {"used": "int", "max": "int", "peak": "int"}}],
             "module": ({"version": "str", "abi": "int", "features": "int",
                         "compatible": "bool",
                         "sysfs": {"abi_version": "str?", "features": "str?"},
                         "debugfs_info": "str?"}, "null"),
             "module_error": "str?"},
    "stacks": {"stacks": [{"name": "str", "state": "str", "where": "str",
                           "sockets_used?": "int", "sockets_max?": "int",
                           "buffers_used?": "int", "buffers_max?": "int",
                           "region_bytes?": "int", "helper_pid?": "int?",
                           "lock?": LOCK, "error?": "str"}]},
    "dump": {"name": "str", "state": "str", "where": "str", "addr": "str", "mask": "str",
             "mtu": "int", "mac": "str", "ifindex": "int?", "broken_pid": "int?",
             "region_bytes": "int",
             "slots": {"used": "int", "max": "int", "peak": "int", "bytes_each": "int"},
             "buffers": {"used": "int", "max": "int", "peak": "int", "bytes_each": "int"},
             "wake_cost_ns": "int?", "spin_us": "int?", "helper_pid": "int?",
             "lock": LOCK,
             "lock_word": {"word": "int", "owner": "int", "contended": "int"},
             "abi": "int", "lib_layout": "int", "counters": "obj",
             "kring": "obj?",
             "sockets": [{"idx": "int", "type": "str", "state": "str?", "local": "str",
                          "remote": "str", "rxq_bytes": "int", "rx_pkts": "int",
                          "tx_pkts": "int", "pid": "int", "pid_exited": "bool",
                          "filter": ({"id": "int", "local": "str"}, "null"),
                          "tcp": "obj?"}],
             "time_wait": {"entries": "int", "peak": "int", "max": "int", "expired": "int",
                           "list": [{"local": "str", "remote": "str",
                                     "expires_in_s": "num"}],
                           "complete": "bool"}},
    "fds": {"fds": [{"pid": "int", "fd": "int", "stack": "str", "socket": "int",
                     "proto": "str?", "state": "str?", "local": "str?", "remote": "str?",
                     "command": "str"}]},
    "doctor": ({"interface": "str", "found": "bool", "kind": "str", "link_type": "int",
                "mtu": "int?", "state": "str", "driver": "str?", "rdma_present": "bool",
                "rdma_devices": [{"device": "str", "port": "int", "soft_roce": "bool",
                                  "link_layer": "str", "state": "str", "rate": "str",
                                  "limits": ({"firmware": "str", "max_qp": "int",
                                              "max_qp_wr": "int", "max_sge": "int",
                                              "max_cq": "int", "max_cqe": "int",
                                              "max_mcast_grp": "int"}, "null"),
                                  "limits_error": "str?", "devlink": "str?",
                                  "flow_steering_mode": "str?",
                                  "flow_steering_error": "str?"}],
                "ipoib": ({"mode": "str", "pkey": "str", "ipoib_enhanced": "str",
                           "parent": "str?"}, "null"),
                "cap_net_raw": {"effective": "bool?", "permitted": "bool?"},
                "module": {"loaded": "bool", "error": "str?", "ipoib": "bool",
                           "ib_device": "str?", "ib_port": "int?", "pkey": "int?",
                           "pkey_index": "int?", "pkey_in_table": "bool?", "qpn": "int?",
                           "qkey": "int?", "qkey_from_sa": "bool?", "ud_mtu": "int?",
                           "connected": "bool?", "enhanced": "bool?",
                           "flow_steering": "bool?", "checksum_offload": "bool?"},
                "path": {"kind": "str", "text": "str"}},
               {"interface": "str", "found": "bool", "error": "str"}),
}
TYPES = {"str": str, "int": int, "bool": bool, "num": (int, float), "obj": dict,
         "list": list}

def check(v, t, path):
    if isinstance(t, tuple):      # alternatives: a schema or "null"
        errs = [check(v, a, path) for a in t]
        return [] if any(not e for e in errs) else errs[0]
    if t == "null":
        return [] if v is None else [f"{path}: not null"]
    if isinstance(t, dict):
        if not isinstance(v, dict):
            return [f"{path}: not an object"]
        errs = []
        for k, sub in t.items():
            opt = k.endswith("?")
            k = k.rstrip("?")
            if k not in v:
                if not opt:
                    errs.append(f"{path}.{k}: missing")
                continue
            errs += check(v[k], sub, f"{path}.{k}")
        return errs
    if isinstance(t, list):
        if not isinstance(v, list):
            return [f"{path}: not a list"]
        return [e for i, x in enumerate(v) for e in check(x, t[0], f"{path}[{i}]")]
    if t.endswith("?") and v is None:
        return []
    want = TYPES[t.rstrip("?")]
    # bool is an int in Python: an int field must not be a bool.
    if not isinstance(v, want) or (t.rstrip("?") in ("int", "num") and isinstance(v, bool)):
        return [f"{path}: {type(v).__name__}, not {t}"]
    return []

doc = json.load(open(sys.argv[2]))
errs = check(doc, SCHEMAS[sys.argv[1]], sys.argv[1])
print("; ".join(errs[:5]))
sys.exit(1 if errs else 0)
EOF

# json_ok NAME FILE: the document parses and matches schema NAME.
json_ok() {
	local out
	out=$("$py" "$tmp/schema.py" "$1" "$2" 2>&1)
	check "$1 --json parses and matches its schema${out:+ ($out)}" [ -z "$out" ]
}

# A listener held open on the stack, for fds and dump.
in_netns "$sluice" run --stack "$stack" -- "$py" -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 7111))
s.listen(4)
print("ready", flush=True)
time.sleep(60)' >"$tmp/holder.out" 2>&1 &
for _ in $(seq 100); do grep -q ready "$tmp/holder.out" && break; sleep 0.1; done
check "a listener runs under sluice run on $stack" grep -q ready "$tmp/holder.out"

# ---- 1. --json
"$sluice" version --json >"$tmp/version.json"
json_ok version "$tmp/version.json"
"$sluice" info --json >"$tmp/info.json"
check "info --json exits 0 with or without the module" [ $? = 0 ]
json_ok info "$tmp/info.json"
check "info --json lists the stack" "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not any(s["name"] == sys.argv[2] and s["valid"] for s in d["stacks"]))' \
	"$tmp/info.json" "$stack"
"$sluice" stacks --json >"$tmp/stacks.json"
json_ok stacks "$tmp/stacks.json"
check "stacks --json: the stack is ready, in shm, with its sockets" "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = [s for s in d["stacks"] if s["name"] == sys.argv[2]]
sys.exit(not (s and s[0]["state"] == "ready" and s[0]["where"] == "shm"
              and s[0]["sockets_used"] >= 1 and s[0]["sockets_max"] > 0))' \
	"$tmp/stacks.json" "$stack"
# A stack the user may not read: invalid, saying why (root's is 0600).
if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$sluice" stacks --json \
		>"$tmp/stacks-nobody.json" 2>"$tmp/stacks-nobody.err"
	json_ok stacks "$tmp/stacks-nobody.json"
	check "stacks --json as nobody: root's stack is invalid, Permission denied" "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = [s for s in d["stacks"] if s["name"] == sys.argv[2]]
sys.exit(not (s and s[0]["state"] == "invalid" and s[0]["error"] == "Permission denied"))' \
		"$tmp/stacks-nobody.json" "$stack"
	check "and nothing on stderr" test ! -s "$tmp/stacks-nobody.err"
fi
"$sluice" dump --json "$stack" >"$tmp/dump.json"
json_ok dump "$tmp/dump.json"
"$sluice" dump --all --json "$stack" >"$tmp/dumpall.json"
json_ok dump "$tmp/dumpall.json"
# Every counter the text dump can name is a key of "counters".
names=$("$py" -c 'import json,sys; print(" ".join(sorted(json.load(open(sys.argv[1]))["counters"])))' \
	"$tmp/dump.json")
check "dump --json has every counter ($(wc -w <<<"$names") of them)" \
	[ "$(wc -w <<<"$names")" -gt 50 ]
check "dump --json: the listener, with its queues" "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not any(s["type"] == "tcp" and s["state"] == "LISTEN" and
                 s["local"] == "127.0.0.1:7111" and "accept_queue" in s["tcp"]
                 for s in d["sockets"]))' "$tmp/dump.json"
"$sluice" fds --json "$stack" >"$tmp/fds.json"
json_ok fds "$tmp/fds.json"
check "fds --json names the listener's fd in python3" "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not any(f["stack"] == sys.argv[2] and f["proto"] == "tcp" and
                 f["state"] == "LISTEN" and f["local"] == "127.0.0.1:7111" and
                 f["command"].startswith("python") for f in d["fds"]))' "$tmp/fds.json" "$stack"
"$sluice" fds --json >"$tmp/fdsall.json"
json_ok fds "$tmp/fdsall.json"
# doctor --json: lo; an interface that is not there (exit 1, the reason);
# an IPoIB interface on an mlx5 HCA described by a sysfs tree of our own
# (SLUICE_SYSFS, as test_doctor.sh), its flow steering mode unknown here.
"$sluice" doctor --json --interface lo >"$tmp/doc-lo.json"
check "doctor --json --interface lo exits 0" [ $? = 0 ]
json_ok doctor "$tmp/doc-lo.json"
check "doctor --json: lo is loopback, found, its path loopback" "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not (d["found"] and d["kind"] == "loopback" and d["link_type"] == 772 and
              d["path"]["kind"] == "loopback" and d["ipoib"] is None))' "$tmp/doc-lo.json"
"$sluice" doctor --json --interface "nosuch$$" >"$tmp/doc-none.json"
check "doctor --json of a missing interface exits 1" [ $? = 1 ]
json_ok doctor "$tmp/doc-none.json"
check "doctor --json: found false, and why" "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not (d["found"] is False and "no network interface" in d["error"]))' "$tmp/doc-none.json"
fake=$tmp/sys
mkf() { mkdir -p "$(dirname "$fake/$1")" && printf '%s\n' "$2" >"$fake/$1"; }
mkf class/net/ib0/type 32
mkf class/net/ib0/mtu 4092
mkf class/net/ib0/operstate up
mkf class/net/ib0/mode datagram
mkf class/net/ib0/pkey 0x8001
mkdir -p "$fake/class/net/ib0/device/infiniband/mlx5_0" "$fake/devices/pci0000:00/0000:81:00.0" \
	"$fake/bus/pci"
mkf class/infiniband/mlx5_0/ports/1/state "4: ACTIVE"
mkf class/infiniband/mlx5_0/ports/1/link_layer InfiniBand
ln -s ../../../devices/pci0000:00/0000:81:00.0 "$fake/class/infiniband/mlx5_0/device"
ln -s ../../../bus/pci "$fake/devices/pci0000:00/0000:81:00.0/subsystem"
SLUICE_SYSFS=$fake "$sluice" doctor --json --interface ib0 >"$tmp/doc-ib.json"
json_ok doctor "$tmp/doc-ib.json"
check "doctor --json: ib0 is IPoIB, its mode and P_Key, mlx5_0's devlink handle and flow steering mode" "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["rdma_devices"]
sys.exit(not (d["kind"] == "ipoib" and d["mtu"] == 4092 and d["ipoib"]["mode"] == "datagram"
              and d["ipoib"]["pkey"] == "0x8001" and len(r) == 1 and r[0]["device"] == "mlx5_0"
              and r[0]["link_layer"] == "InfiniBand" and r[0]["devlink"] == "pci/0000:81:00.0"
              and r[0]["flow_steering_mode"] == "unknown" and r[0]["flow_steering_error"]))' \
	"$tmp/doc-ib.json"

"$sluice" stacks --bogus >/dev/null 2>&1
check "an unknown option is a usage error (exit 2)" [ $? = 2 ]
"$sluice" dump --json >/dev/null 2>&1
check "dump --json without a name is a usage error (exit 2)" [ $? = 2 ]
"$sluice" dump --json "no-such-$$" >/dev/null 2>&1
check "dump --json of a missing stack exits 1" [ $? = 1 ]

# ---- 2. metrics
if [ "$have_prom" = 0 ]; then
	skip "sluice metrics through prometheus_client" "python3-prometheus-client not installed"
	done_testing
	exit $?
fi
cat >"$tmp/om.py" <<'EOF'
# Parse an exposition with prometheus_client's OpenMetrics parser; print
# NAME{stack=...,...} VALUE for the stack's samples, after checks.
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families

text = open(sys.argv[1]).read()
stack = sys.argv[2]
assert text.endswith("# EOF\n"), "no # EOF at the end"
fams = list(text_string_to_metric_families(text))
types = {f.name: f.type for f in fams}
assert types.get("sluice_tcp_rx") == "counter", "sluice_tcp_rx is not a counter"
assert types.get("sluice_sockets") == "gauge", "sluice_sockets is not a gauge"
for f in fams:
    for s in f.samples:
        assert "stack" in s.labels, f"{s.name} has no stack label"
        if f.type == "counter":
            assert s.name == f.name + "_total", f"{s.name}: counter without _total"
for f in fams:
    for s in f.samples:
        if s.labels["stack"] == stack:
            extra = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()) if k != "stack")
            print(f"{s.name}{{{extra}}} {int(s.value)}")
print(f"families {len(fams)}")
EOF
# om FILE: the stack's samples, or the parser's complaint
om() { "$py" "$tmp/om.py" "$1" "$stack" 2>&1; }
val() { awk -v k="$1" '$1 == k { print $2 }' <<<"$2"; }

"$sluice" metrics >"$tmp/m1.txt"
check "sluice metrics exits 0" [ $? = 0 ]
m1=$(om "$tmp/m1.txt")
check "prometheus_client parses it ($(tail -n 1 <<<"$m1"))" grep -q '^families [0-9]' <<<"$m1"
check "the stack is ready in sluice_stack_state" grep -q '^sluice_stack_state{state=ready,where=shm} 1$' <<<"$m1"
check "sluice_tcp_connections counts the listener" \
	grep -q '^sluice_tcp_connections{state=LISTEN} 1$' <<<"$m1"
check "drops by reason (sluice_dropped_total{reason=...})" \
	grep -q '^sluice_dropped_total{reason=tcp_rx_bad} ' <<<"$m1"

# Traffic: a client and a server in one program, 256 KiB each way.
out=$(timeout 30 env SLUICE_NO_HELPER=1 unshare -n "$sluice" run --stack "$stack" -- "$py" -c '
import socket, threading
l = socket.socket(); l.bind(("127.0.0.1", 7112)); l.listen(1)
c = socket.create_connection(("127.0.0.1", 7112)); s, _ = l.accept()
data = bytes(range(256)) * 1024
def echo():
    got = b""
    while len(got) < len(data):
        b = s.recv(65536); got += b; s.sendall(b)
t = threading.Thread(target=echo); t.start()
c.sendall(data); back = b""
while len(back) < len(data):
    back += c.recv(65536)
t.join(); print("echoed", len(back) if back == data else -1)' 2>&1)
check "a TCP echo runs on the stack under sluice run ($out)" [ "$out" = "echoed 262144" ]
"$sluice" metrics >"$tmp/m2.txt"
m2=$(om "$tmp/m2.txt")
for c in sluice_tcp_rx_total sluice_tcp_tx_total sluice_loopback_total \
	sluice_tcp_active_open_total sluice_tcp_passive_open_total; do
	a=$(val "$c{}" "$m1") b=$(val "$c{}" "$m2")
	check "$c moved with the traffic (${a:-?} -> ${b:-?})" [ "${b:-0}" -gt "${a:-0}" ]
done

# --output FILE --interval: FILE is replaced whole, never written in place.
prom=$tmp/out/sluice.prom
mkdir -p "$tmp/out"
"$sluice" metrics --interval 0.2 --output "$prom" &
mpid=$!
for _ in $(seq 50); do [ -s "$prom" ] && break; sleep 0.1; done
# Hold the file open: its inode cannot be reused, so a new one at the path
# means it was replaced, and what we hold stays whole.
exec {held}<"$prom"
i1=$(stat -L -c %i "/proc/$$/fd/$held" 2>/dev/null)
sleep 0.7
i2=$(stat -c %i "$prom" 2>/dev/null)
kill "$mpid"
wait "$mpid" 2>/dev/null
whole=$(tail -n 1 <&"$held")
exec {held}<&-
check "--output writes the file ($prom)" [ -s "$prom" ]
replaced=0
[ -n "$i1" ] && [ -n "$i2" ] && [ "$i1" != "$i2" ] && replaced=1
check "--interval replaces it by rename (inode $i1 -> $i2)" [ "$replaced" = 1 ]
check "the replaced file, still held open, is whole (last line: $whole)" [ "$whole" = "# EOF" ]
check "the file parses as OpenMetrics" grep -q '^families ' <<<"$(om "$prom")"
perm=$(stat -c %a "$prom")
check "the file is readable by a collector running as another user ($perm)" [ "$perm" = 644 ]
left=$(find "$tmp/out" -name '*.tmp.*' | wc -l)
check "no temporary file is left beside it" [ "$left" = 0 ]
"$sluice" metrics --interval nonsense >/dev/null 2>&1
check "metrics --interval nonsense is a usage error (exit 2)" [ $? = 2 ]
"$sluice" metrics --output /nonexistent-dir-$$/x.prom 2>/dev/null
check "metrics --output into a missing folder exits 1" [ $? = 1 ]
done_testing
