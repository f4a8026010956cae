#!/usr/bin/env bash
# Old against new under a machine whose speed drifts: CoreDNS `hosts` and two gslb builds run at
# once, each server on CPU 1, and dnsperf (on CPU 0) saturates each in turn for a few seconds, cycle
# after cycle; the ratios are taken within each cycle, whose three bursts saw the same machine, and
# their medians printed. Reads the inputs `make bench-dns` generated (run it once first).
#
# Usage: OLD=PATH NEW=PATH bench/bursts.sh
#   OLD, NEW          two CoreDNS binaries with gslb (default NEW: built from this tree)
#   CYCLES=15         cycles of three bursts (hosts, old, new)
#   SECS=3            seconds of each burst (warm)
#   PLUGINS=0         1: `errors` and `prometheus` in every block
#   COLD=0            1: every query of a burst a new /24: the cold input split in CYCLES parts,
#                     each sent once to each server (no warm pass), bursts as long as a part
#   SEED=1 WARM=20000 COLD_N=850000   the inputs' names, as make bench-dns made them
#   BASE_PORT=15500 (servers on +1..+3, prometheus on +21..+23, ready on +41..+43; 127.0.0.1 only)
# Output: each burst's qps, then the medians (min, max) of old/hosts, new/hosts and new/old.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
CYCLES=${CYCLES:-15} SECS=${SECS:-3} PLUGINS=${PLUGINS:-0} COLD=${COLD:-0} SEED=${SEED:-1}
WARM=${WARM:-20000} COLD_N=${COLD_N:-850000} BASE_PORT=${BASE_PORT:-15500}
g=$here/data/gen/real-s$SEED
for f in "$g-nodes.yaml" "$g-warm-$WARM.bin" "$g-cold-$COLD_N.txt"; do
	[[ -s $f ]] || { echo "bursts.sh: no $f: run make bench-dns once first" >&2; exit 2; }
done
[[ -n ${OLD:-} ]] || { echo "bursts.sh: OLD=PATH is the build to compare with" >&2; exit 2; }
res=$(mktemp -d)
pids=()
cleanup() { ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$res"; }
trap cleanup EXIT
if [[ -z ${NEW:-} ]]; then
	NEW=$res/coredns
	(cd "$root" && go build -o "$NEW" ./cmd/coredns)
fi

block() { # NAME PORT BODY
	local i=$(($2 - BASE_PORT)) extra=""
	[[ $PLUGINS == 1 ]] && extra=$'    errors\n'"    prometheus 127.0.0.1:$((BASE_PORT + 20 + i))"$'\n'
	printf 'example.org:%s {\n    bind 127.0.0.1\n    ready 127.0.0.1:%s\n%s%s\n}\n' "$2" "$((BASE_PORT + 40 + i))" "$extra" "$3" >"$res/$1.conf"
}
block hosts $((BASE_PORT + 1)) $'    hosts {\n        192.0.2.254 www.example.org\n    }'
gslb=$'    gslb {\n'"        geoip $here/data/GeoLite2-City.mmdb"$'\n'"        asn $here/data/asn.mmdb"$'\n'"        nodes $g-nodes.yaml"$'\n    }'
block old $((BASE_PORT + 2)) "$gslb"
block new $((BASE_PORT + 3)) "$gslb"
i=0
for s in hosts:$OLD old:$OLD new:$NEW; do
	i=$((i + 1))
	taskset -c 1 "${s#*:}" -conf "$res/${s%%:*}.conf" >"$res/${s%%:*}.log" 2>&1 &
	pids+=($!)
	for ((t = 0; t < 900; t++)); do
		curl -fs -o /dev/null "http://127.0.0.1:$((BASE_PORT + 40 + i))/ready" && break
		kill -0 "${pids[-1]}" 2>/dev/null || { cat "$res/${s%%:*}.log" >&2; exit 1; }
		sleep 0.2
	done
done
perf() { taskset -c 0 dnsperf -B -s 127.0.0.1 -p "$1" -c 4 -q 100 "${@:2}" 2>&1 | awk '/Queries per second/{print $4}'; }
if [[ $COLD == 1 ]]; then
	split -n "l/$CYCLES" -d -a 3 "$g-cold-$COLD_N.txt" "$res/part"
	for ((c = 0; c < CYCLES; c++)); do
		(cd "$root" && go run ./bench/gen queries -subnets "$(printf '%s/part%03d' "$res" "$c")" -mode cold -out "$res/part$c.bin" >/dev/null)
	done
else
	for p in 2 3; do perf $((BASE_PORT + p)) -d "$g-warm-$WARM.bin" -l 4 >/dev/null; done # the memo's entries
fi
for ((c = 0; c < CYCLES; c++)); do
	for s in hosts:1 old:2 new:3; do
		if [[ $COLD == 1 ]]; then
			q=$(perf $((BASE_PORT + ${s#*:})) -d "$res/part$c.bin" -n 1)
		else
			q=$(perf $((BASE_PORT + ${s#*:})) -d "$g-warm-$WARM.bin" -l "$SECS")
		fi
		echo "$c ${s%%:*} $q"
	done
done | tee "$res/bursts.txt"
python3 - "$res/bursts.txt" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    c, n, q = line.split()
    rows[c][n] = float(q)
rows = [r for r in rows.values() if len(r) == 3 and all(r.values())]
med = statistics.median
print("qps medians: hosts %.0f, old %.0f, new %.0f" % tuple(med(r[k] for r in rows) for k in ("hosts", "old", "new")))
for a, b in (("old", "hosts"), ("new", "hosts"), ("new", "old")):
    x = [r[a] / r[b] for r in rows]
    print("%s/%s: median %.3f (min %.3f, max %.3f), %d cycles" % (a, b, med(x), min(x), max(x), len(x)))
PY
