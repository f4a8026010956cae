#!/usr/bin/env bash
# What the multisocket plugin gives on this machine: the demo (Corefile.example)
# served by our CoreDNS with one socket per port, then with `multisocket N`,
# in interleaved rounds, each a dnsperf throughput run of www.example.org A
# with the ECS option 202.101.172.0/24 (a Zhejiang China Telecom client).
#
# Usage: bench/multisocket.sh    or   make bench-multisocket [VAR=value ...]
#   ROUNDS=3 SECS=10 SOCKETS="1 2" CLIENTS=4 OUTSTANDING=100 PORT=15390
#   (SOCKETS: 1 is the server without multisocket.)
# Prints one line per run and the median qps per socket count. Loopback only.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
ROUNDS=${ROUNDS:-3} SECS=${SECS:-10} SOCKETS=${SOCKETS:-"1 2"} CLIENTS=${CLIENTS:-4}
OUTSTANDING=${OUTSTANDING:-100} PORT=${PORT:-15390}
command -v dnsperf >/dev/null || { echo "multisocket: dnsperf is missing (apt-get install dnsperf)" >&2; exit 1; }

work=$(mktemp -d)
pid=
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
(cd "$root" && "${GO:-go}" build -o "$work/coredns" ./cmd/coredns)
cp -r "$root/demo" "$root/nodes.example.yaml" "$work/"
echo "www.example.org A" >"$work/queries"
# ECS (option 8): family 1, source /24, scope 0, 202.101.172.
ecs=8:00011800ca65ac

for round in $(seq "$ROUNDS"); do
	for n in $SOCKETS; do
		ms=""
		[ "$n" = 1 ] || ms="multisocket $n"
		sed -e "s/example.org:1053 {/example.org:$PORT {/" -e "s/^    bind 127.0.0.1\$/    bind 127.0.0.1\n    $ms/" \
			-e '/^    log /d' -e '/^    prometheus /d' -e '/^    ready /d' \
			"$root/Corefile.example" >"$work/Corefile"
		(cd "$work" && exec ./coredns -conf Corefile -quiet >coredns.log 2>&1) &
		pid=$!
		for _ in $(seq 100); do
			dig +time=1 +tries=1 @127.0.0.1 -p "$PORT" www.example.org A +short >/dev/null 2>&1 && break
			sleep 0.1
		done
		qps=$(dnsperf -s 127.0.0.1 -p "$PORT" -d "$work/queries" -E "$ecs" -c "$CLIENTS" -q "$OUTSTANDING" \
			-l "$SECS" 2>&1 | awk '/Queries per second/ {print $4}')
		kill "$pid" && wait "$pid" 2>/dev/null || true
		pid=
		echo "round $round sockets $n: ${qps:-?} qps"
		echo "$n ${qps:-0}" >>"$work/results"
	done
done
for n in $SOCKETS; do
	median=$(awk -v n="$n" '$1 == n {print $2}' "$work/results" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
	echo "sockets $n: median ${median} qps"
done
