#!/usr/bin/env bash
# make test-zonemaster: Zonemaster (zonemaster-cli) and DNSViz (dnsviz probe
# and grok) check two gslb instances that serve the same files, the way two
# name servers of one zone would, inside a network namespace that has only
# loopback: nothing leaves the machine. A fake root and org. are served by
# CoreDNS's file plugin; the root hints of both tools point at them.
#
# Served, each by ns1 (127.0.0.11) and ns2 (127.0.0.12), started apart:
#   example.org       gslb + fallthrough + file (the README's Example 1)
#   example-gslb.org  gslb alone, its synthesized SOA and the node table's NS,
#                     signed by gslb's dnssec with a KSK and a ZSK made by the
#                     README's dnssec-keygen commands, the KSK's DS in org.
#
# Fails on any WARNING, ERROR or CRITICAL from Zonemaster, and any error or
# warning from DNSViz, that is not in the allowed loopback artefacts below.
# Needs root (unshare, mount) and Debian's zonemaster-cli and dnsviz, which
# it installs with apt-get when missing.
#
# KEEP=1 keeps the work directory; GO=... picks the go binary; DENIAL=nsec3
# (or black_lies) signs example-gslb.org's denials that way (default nsec).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

# Loopback artefacts: what the tools say only because every address here is
# 127.0.0.x. Zonemaster, by message tag:
ZM_ALLOWED=(
	NAMESERVER_IP_PRIVATE_NETWORK # ERROR: 127.0.0.0/8 is special-purpose (RFC 6890)
)
# DNSViz, by error or warning code: none; grok -P accepts private (here
# loopback) server addresses, which it would otherwise reject.
DV_ALLOWED=()

if [ "${GSLB_ZM_INSIDE:-}" != 1 ]; then
	if ! command -v dnssec-keygen >/dev/null; then
		echo "test-zonemaster needs dnssec-keygen: run make deps (bind9-utils)" >&2
		exit 1
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "test-zonemaster needs root (unshare -n, mount)" >&2
		exit 1
	fi
	if ! command -v zonemaster-cli >/dev/null || ! command -v dnsviz >/dev/null; then
		echo "installing zonemaster-cli and dnsviz"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zonemaster-cli dnsviz >/dev/null
	fi
	work=$(mktemp -d /tmp/gslb-zonemaster.XXXXXX)
	if [ "${KEEP:-}" != 1 ]; then
		trap 'rm -rf "$work"' EXIT
	fi
	(cd "$repo" && "${GO:-go}" build -o "$work/coredns" ./cmd/coredns)
	# A new network namespace (only lo) and mount namespace (for DNSViz's
	# root hints and resolv.conf); both end with the script.
	rc=0
	GSLB_ZM_INSIDE=1 unshare -n -m --propagation private "$0" "$work" || rc=$?
	exit $rc
fi

work=$1
cd "$work"
ip link set lo up
if ip -4 route get 192.0.2.1 >/dev/null 2>&1 || ip -6 route get 2001:db8::1 >/dev/null 2>&1; then
	echo "the namespace has a route off the machine" >&2
	exit 1
fi

# example-gslb.org's keys, as the README makes them; org. carries the KSK's DS.
mkdir -p src
KSK=$(cd src && dnssec-keygen -q -a ECDSAP256SHA256 -f KSK example-gslb.org)
ZSK=$(cd src && dnssec-keygen -q -a ECDSAP256SHA256 example-gslb.org)
DS=$(cd src && dnssec-dsfromkey -2 "$KSK.key" | awk '{print $1, 86400, $2, $3, $4, $5, $6, $7}')

# The fake root: the root zone, with the loopback name servers' PTRs, and org.
cat >root.db <<'EOF'
$ORIGIN .
@                  86400  IN SOA a.root-servers. hostmaster.nic.org. 2026120100 14400 3600 1209600 86400
@                 518400  IN NS  a.root-servers.
a.root-servers.   518400  IN A   127.0.0.1
org.              172800  IN NS  a0.nic.org.
a0.nic.org.       172800  IN A   127.0.0.2
1.0.0.127.in-addr.arpa.   86400 IN PTR a.root-servers.
2.0.0.127.in-addr.arpa.   86400 IN PTR a0.nic.org.
11.0.0.127.in-addr.arpa.  86400 IN PTR ns1.example.org.
12.0.0.127.in-addr.arpa.  86400 IN PTR ns2.example.org.
EOF
cat >org.db <<'EOF'
$ORIGIN org.
@                 86400  IN SOA a0.nic.org. hostmaster.nic.org. 2026120100 14400 3600 1209600 3600
@                 86400  IN NS  a0.nic.org.
a0.nic            86400  IN A   127.0.0.2
nic               86400  IN MX  10 a0.nic.org.
example           86400  IN NS  ns1.example.org.
example           86400  IN NS  ns2.example.org.
ns1.example       86400  IN A   127.0.0.11
ns2.example       86400  IN A   127.0.0.12
example-gslb      86400  IN NS  ns1.example.org.
example-gslb      86400  IN NS  ns2.example.org.
EOF
echo "$DS" >>org.db
cat >Corefile.root <<'EOF'
. {
    bind 127.0.0.1
    file root.db .
}
org {
    bind 127.0.0.2
    file org.db org
}
EOF
cat >hints.zone <<'EOF'
.                 3600000 IN NS a.root-servers.
a.root-servers.   3600000 IN A  127.0.0.1
EOF
cp hints.zone named.root
mount --bind "$work/named.root" /usr/share/dnsviz/hints/named.root
echo "nameserver 127.0.0.1" >resolv.conf
mount --bind "$work/resolv.conf" /etc/resolv.conf

# The two gslb instances, each with its own copy of the same files (cp -p
# keeps the modification times, as rsync -t does).
cp -p "$repo/demo/gslb-demo-City.mmdb" "$repo/demo/gslb-demo-ASN.mmdb" src/
cat >src/db.example.org <<'EOF'
$ORIGIN example.org.
@        3600 IN SOA ns1.example.org. hostmaster.example.org. 2026120101 14400 3600 1209600 300
@        3600 IN NS  ns1
@        3600 IN NS  ns2
@        3600 IN MX  10 mail
ns1      3600 IN A   127.0.0.11
ns2      3600 IN A   127.0.0.12
mail     3600 IN A   192.0.2.25
EOF
nodes='nodes:
  - {id: hz-telecom, ipv4: [192.0.2.10], country: CN, province: ZJ, isp: telecom, lat: 30.27, lon: 120.16}
  - {id: bj-unicom, ipv4: [198.51.100.10], country: CN, province: BJ, isp: unicom, lat: 39.90, lon: 116.41}
nameservers: [ns1.example.org, ns2.example.org]'
printf '%s\nrecords:\n  - {name: www.example.org}\n  - {name: api.example.org}\n' "$nodes" >src/nodes.yaml
printf '%s\nrecords:\n  - {name: example-gslb.org}\n  - {name: www.example-gslb.org}\n' "$nodes" >src/nodes-gslb.yaml
touch -d '2026-11-30 12:00:00 UTC' src/*
for i in 1 2; do
	mkdir -p "ns$i"
	cp -p src/* "ns$i/"
	cat >"ns$i/Corefile" <<EOF
example.org {
    bind 127.0.0.1$i
    gslb {
        geoip gslb-demo-City.mmdb
        asn gslb-demo-ASN.mmdb
        nodes nodes.yaml
        ttl 30
        fallthrough
    }
    cache
    file db.example.org
}
example-gslb.org {
    bind 127.0.0.1$i
    gslb {
        geoip gslb-demo-City.mmdb
        asn gslb-demo-ASN.mmdb
        nodes nodes-gslb.yaml
        ttl 30
        dnssec $KSK $ZSK {
            denial ${DENIAL:-nsec}
        }
    }
}
EOF
done

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
# waitdns ADDR NAME: until ADDR answers NAME's SOA.
waitdns() {
	for _ in $(seq 100); do
		if perl -MNet::DNS -e '
			my $r = Net::DNS::Resolver->new(nameservers => [$ARGV[0]], recurse => 0, udp_timeout => 1, retry => 1);
			exit(($r->send($ARGV[1], "SOA") // exit 1)->header->rcode eq "NOERROR" ? 0 : 1)' "$1" "$2"; then
			return 0
		fi
		sleep 0.1
	done
	echo "no answer from $1 for $2" >&2
	return 1
}
(exec "$work/coredns" -conf Corefile.root -quiet >root.log 2>&1) &
pids+=($!)
waitdns 127.0.0.1 .
waitdns 127.0.0.2 org
for i in 1 2; do
	(cd "ns$i" && exec "$work/coredns" -conf Corefile -quiet >../ns$i.log 2>&1) &
	pids+=($!)
	waitdns "127.0.0.1$i" example.org
	waitdns "127.0.0.1$i" example-gslb.org
	# Start the second instance on a later second: the serial must not care.
	[ "$i" = 2 ] || sleep 2
done

fail=0
allowed() { # allowed WORD LIST...: whether WORD is in LIST
	local w=$1
	shift
	for a in "$@"; do [ "$a" = "$w" ] && return 0; done
	return 1
}

for zone in example.org example-gslb.org; do
	echo "== Zonemaster: $zone"
	zonemaster-cli --hints hints.zone --no-ipv6 --raw --no-time --show-module --level INFO \
		--no-progress --count "$zone" >"zm-$zone.txt" 2>&1 || true
	# Lines: [SECONDS] LEVEL MODULE TAG args...
	n=0 bad=0
	while read -r level module tag rest; do
		if [[ "$level" =~ ^[0-9.]+$ ]]; then
			level=$module module=$tag
			read -r tag rest <<<"$rest"
		fi
		case "$level" in WARNING | ERROR | CRITICAL) ;; *) continue ;; esac
		[[ "$tag" =~ ^[A-Z0-9_]+$ ]] || continue # the --count summary
		n=$((n + 1))
		if allowed "$tag" "${ZM_ALLOWED[@]}"; then
			echo "   allowed  $level $module $tag $rest"
		else
			echo "   FAIL     $level $module $tag $rest"
			bad=$((bad + 1))
		fi
	done <"zm-$zone.txt"
	if ! grep -q -E ' (CONSISTENCY|ZONE) ' "zm-$zone.txt"; then
		echo "   FAIL     no Consistency or Zone results: zonemaster-cli did not test"
		bad=$((bad + 1))
	fi
	if [ "$zone" = example-gslb.org ] && ! grep -q -E ' DNSSEC +ALGORITHM_OK ' "zm-$zone.txt"; then
		echo "   FAIL     no DNSSEC results: Zonemaster found no DNSKEY for the signed zone"
		bad=$((bad + 1))
	fi
	if grep -q -i -E 'died|error loading|can.t locate' "zm-$zone.txt"; then
		echo "   FAIL     zonemaster-cli did not run:"
		sed 's/^/     /' "zm-$zone.txt"
		bad=$((bad + 1))
	fi
	levels=$(awk '$3 == "entries." && $1 ~ /^[A-Z]+$/ && $1 !~ /^DEBUG/ {printf "%s%s %s", sep, $1, $2; sep = ", "}' "zm-$zone.txt")
	echo "   $n messages at WARNING or above, $bad not allowed (all: ${levels:-none})"
	[ "$bad" = 0 ] || fail=1
done

echo "== DNSViz: example.org example-gslb.org"
if ! dnsviz probe -A -4 -a . -o probe.json example.org example-gslb.org 2>dnsviz-probe.log; then
	echo "   FAIL     dnsviz probe:" && sed 's/^/     /' dnsviz-probe.log
	exit 1
fi
dnsviz grok -P -l info -r probe.json -o grok-info.json 2>dnsviz-grok.log
# With nothing at warning or above, grok writes nothing.
dnsviz grok -P -l warning -r probe.json -o grok.json 2>>dnsviz-grok.log
[ -s grok.json ] || echo '{}' >grok.json
read -r n bad < <(python3 - "${DV_ALLOWED[@]}" <<'EOF'
import json, sys
allowed = set(sys.argv[1:])
found = []
def walk(o, path):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("errors", "warnings") and isinstance(v, list):
                for e in v:
                    found.append((k[:-1], path, e.get("code", "?"), e.get("description", "")))
            else:
                walk(v, path + "/" + str(k))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            walk(v, path)
walk(json.load(open("grok.json")), "")
bad = 0
for kind, path, code, desc in found:
    ok = code in allowed
    bad += not ok
    print("   %-8s %s %s %s: %s" % ("allowed" if ok else "FAIL", kind, code, path, desc), file=sys.stderr)
print(len(found), bad)
EOF
)
echo "   $n errors and warnings, $bad not allowed"
[ "$bad" = 0 ] || fail=1

echo "== one SOA per zone: the apex, gslb's NODATA and NXDOMAIN, on both name servers"
# SOA strings without the TTL, which counts down in caches.
soas() { # soas SERVER NAME TYPE
	perl -MNet::DNS -e '
		my $r = Net::DNS::Resolver->new(nameservers => [$ARGV[0]], recurse => 0);
		my $p = $r->send($ARGV[1], $ARGV[2]) // die "no answer from $ARGV[0]\n";
		for ($p->answer, $p->authority) {
			next unless $_->type eq "SOA";
			printf "%s SOA %s %s %d %d %d %d %d\n", $_->owner, $_->mname, $_->rname,
				$_->serial, $_->refresh, $_->retry, $_->expire, $_->minimum;
		}' "$@"
}
for zone in example.org example-gslb.org; do
	for ip in 127.0.0.11 127.0.0.12; do
		for q in "$zone SOA" "www.$zone TXT" "nothere.$zone A"; do
			# shellcheck disable=SC2086
			echo "$(soas $ip $q)"
		done
	done | sort | uniq -c | sed 's/^/   /' >"soa-$zone.txt"
	cat "soa-$zone.txt"
	if [ "$(wc -l <"soa-$zone.txt")" != 1 ] || ! grep -q '^ *6 ' "soa-$zone.txt"; then
		echo "   FAIL     $zone: want one SOA in all 6 answers"
		fail=1
	fi
done

if [ "$fail" != 0 ]; then
	echo "FAIL: see above; the tools' output is in $work (KEEP=1 keeps it)"
	exit 1
fi
echo "ok: no warning or error beyond the loopback artefacts"
