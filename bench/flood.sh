#!/usr/bin/env bash
# Random-name flood against the signed demo zone, side by side with the cached answer: dnsperf
# asks `www.example.org A` and then random `<12 letters>.example.org A`, both with the DO bit,
# against our CoreDNS serving the demo table signed with two ECDSA P-256 keys (a KSK and a ZSK),
# for each denial (nsec, nsec3, black_lies), interleaved. The flood's rate over www's is the
# number to read: a chain answers a random name from its signed records, black lies sign one.
#
# Usage: bench/flood.sh   or   make bench-flood [VAR=value ...]
#   SECS=8       seconds of each dnsperf run
#   ROUNDS=2     interleaved rounds
#   NAMES=200000 random names in the query file
#   DENIALS="nsec nsec3 black_lies"
#   CLIENTS=4 OUTSTANDING=100 (dnsperf -c, -q); PORT=15400 (127.0.0.1 only)
#   COREDNS=PATH use this CoreDNS binary instead of building ./cmd/coredns
# Needs: go, dnsperf, dnssec-keygen (bind9-utils); taskset pins dnsperf on CPU 0, CoreDNS on
# CPU 1 when there are two. The rate limit exempts loopback by default, so it limits nothing here.
# Output: a markdown table on stdout; raw dnsperf output in bench/results/flood-TIMESTAMP/.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
SECS=${SECS:-8} ROUNDS=${ROUNDS:-2} NAMES=${NAMES:-200000} CLIENTS=${CLIENTS:-4} OUTSTANDING=${OUTSTANDING:-100}
PORT=${PORT:-15400} DENIALS=${DENIALS:-nsec nsec3 black_lies}
for v in SECS ROUNDS NAMES CLIENTS OUTSTANDING PORT; do
	[[ ${!v} =~ ^[0-9]+$ && ${!v} -gt 0 ]] || { echo "flood.sh: $v must be a positive integer, got '${!v}'" >&2; exit 2; }
done
for tool in dnsperf dnssec-keygen; do
	command -v "$tool" >/dev/null || { echo "flood.sh: $tool is missing (apt-get install dnsperf bind9-utils)" >&2; exit 1; }
done

out=$root/bench/results/flood-$(date -u +%Y%m%dT%H%M%SZ)
tmp=$(mktemp -d)
mkdir -p "$out"
pid=
cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

coredns=${COREDNS:-}
if [[ -z $coredns ]]; then
	coredns=$tmp/coredns
	(cd "$root" && go build -o "$coredns" ./cmd/coredns)
fi
pin_load=() pin_srv=()
if command -v taskset >/dev/null && (($(nproc) >= 2)); then
	pin_load=(taskset -c 0) pin_srv=(taskset -c 1)
fi

ksk=$(dnssec-keygen -q -K "$tmp" -a ECDSAP256SHA256 -f KSK example.org)
zsk=$(dnssec-keygen -q -K "$tmp" -a ECDSAP256SHA256 example.org)
echo "www.example.org A" >"$tmp/www.txt"
# Random names, 12 letters each, seeded so that runs compare.
awk -v n="$NAMES" 'BEGIN { srand(1); for (i = 0; i < n; i++) { s = ""; for (j = 0; j < 12; j++) s = s sprintf("%c", 97 + int(rand() * 26)); print s ".example.org A" } }' >"$tmp/random.txt"

start() { # denial
	cat >"$tmp/Corefile" <<-EOF
	example.org:$PORT {
	    bind 127.0.0.1
	    gslb {
	        geoip $root/demo/gslb-demo-City.mmdb
	        asn $root/demo/gslb-demo-ASN.mmdb
	        nodes $root/nodes.example.yaml
	        dnssec $tmp/$ksk $tmp/$zsk {
	            denial $1
	        }
	    }
	}
	EOF
	"${pin_srv[@]}" "$coredns" -conf "$tmp/Corefile" >"$out/coredns-$1.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		dig +short +time=1 +tries=1 -p "$PORT" @127.0.0.1 www.example.org A >/dev/null 2>&1 && return
		sleep 0.1
	done
	echo "flood.sh: CoreDNS did not answer; see $out/coredns-$1.log" >&2
	exit 1
}

perf() { # denial queries round -> qps
	"${pin_load[@]}" dnsperf -s 127.0.0.1 -p "$PORT" -d "$tmp/$2.txt" -l "$SECS" -c "$CLIENTS" -q "$OUTSTANDING" -D \
		>"$out/$1-$2-$3.txt" 2>&1
	awk '/Queries per second/ { print int($4) }' "$out/$1-$2-$3.txt"
}

declare -A www rnd
for round in $(seq "$ROUNDS"); do
	for d in $DENIALS; do
		start "$d"
		www[$d]="${www[$d]:-} $(perf "$d" www "$round")"
		rnd[$d]="${rnd[$d]:-} $(perf "$d" random "$round")"
		kill "$pid" && wait "$pid" 2>/dev/null || true
		pid=
	done
done

best() { tr ' ' '\n' <<<"$1" | sort -n | tail -1; }
echo "| denial | www A, DO (qps) | random name A, DO (qps) | random / www |"
echo "|---|---|---|---|"
for d in $DENIALS; do
	w=$(best "${www[$d]}") r=$(best "${rnd[$d]}")
	printf '| %s | %s | %s | %s |\n' "$d" "$w" "$r" "$(awk -v r="$r" -v w="$w" 'BEGIN { printf "%.2f", (w > 0 ? r / w : 0) }')"
done
echo
echo "Best of $ROUNDS interleaved rounds of ${SECS}s each; raw output in ${out#"$root"/}."
