#!/usr/bin/env bash
# Throughput of a whole CoreDNS with gslb, measured by dnsperf over loopback.
# Usage: bench/run.sh [SECONDS]   (default 10 s per case; needs dnsperf)
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-10}
command -v dnsperf >/dev/null || { echo "dnsperf missing: apt-get install dnsperf" >&2; exit 1; }
go build -o coredns ../cmd/coredns
./coredns -conf Corefile -quiet &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f coredns queries.txt' EXIT
for i in $(seq 50); do dig @127.0.0.1 -p 1053 www.example.org +short +time=1 >/dev/null 2>&1 && break; sleep 0.1; done
printf 'www.example.org A\napi.example.org A\nwww.example.org AAAA\n' > queries.txt
run() {
	echo "== $1"
	shift
	dnsperf -s 127.0.0.1 -p 1053 -d queries.txt -l "$secs" -c 4 -Q 200000 "$@" | grep -E 'Queries (sent|completed|lost)|Queries per second|Average Latency'
}
run "no ECS (resolver address, location-free)"
run "ECS 202.101.172.0/24 (Zhejiang Telecom, LRU hit)" -E 8:00011800ca65ac
run "ECS 8.8.8.0/24 (US, country level)" -E 8:00011800080808
