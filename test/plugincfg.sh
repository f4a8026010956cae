#!/usr/bin/env bash
# test/plugincfg.sh: build CoreDNS v1.15.0 from its own source with gslb added
# through plugin.cfg, the way README "Building CoreDNS with gslb" says, and check
# the result: `coredns -plugins` lists gslb and the demo Corefile answers.
#
# It runs offline, from the module cache (GOFLAGS=-mod=mod GOPROXY=off): the
# CoreDNS source is copied from $(go env GOMODCACHE)/github.com/coredns/coredns@v1.15.0,
# which any build of this repository puts there. Two steps exist only because
# the cache holds just the modules a gslb build needs (online they are not
# needed):
#   - CoreDNS's go.mod requirements are replaced by this repository's, and the
#     stock plugins whose modules are not in the cache (kubernetes, route53,
#     tls, ...) are taken out of plugin.cfg;
#   - `go mod tidy` is left out: it wants the test dependencies of every
#     package in the CoreDNS tree; `go build` with -mod=mod records what the
#     build itself needs.
# Usage: test/plugincfg.sh (from anywhere); KEEP=1 keeps the work directory.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
export GOFLAGS=-mod=mod GOPROXY=off
cache=$(go env GOMODCACHE)
src=$cache/github.com/coredns/coredns@v1.15.0
if [ ! -d "$src" ]; then
	echo "plugincfg: $src is missing: run 'go mod download' in $repo first" >&2
	exit 1
fi

work=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	if [ "${KEEP:-}" = 1 ]; then echo "plugincfg: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

cp -r "$src" "$work/coredns"
chmod -R u+w "$work/coredns"
cd "$work/coredns"

# Offline only: this repository's requirements (all in the cache) instead of
# CoreDNS's, and its checksums.
drops=$(go mod edit -json | sed -n 's/^[[:space:]]*"Path": "\(.*\)",$/\1/p' | grep -v '^github.com/coredns/coredns$' | sed 's/^/-droprequire=/')
# shellcheck disable=SC2086
go mod edit $drops
reqs=$(cd "$repo" && go mod edit -json | awk -F'"' '/"Require"/{r=1} /"Exclude"|"Replace"|"Tool"/{r=0} r&&$2=="Path"{p=$4} r&&$2=="Version"&&p!="github.com/coredns/coredns"{print "-require=" p "@" $4}')
# shellcheck disable=SC2086
go mod edit $reqs
cat "$repo/go.sum" >>go.sum
# Offline only: drop the stock plugins whose modules are not in the cache.
missing=$(go list -e -deps -f '{{if or .Error .DepsErrors}}{{.ImportPath}}{{end}}' ./plugin/... 2>/dev/null |
	sed -n 's#^github.com/coredns/coredns/plugin/\([a-z0-9_]*\)$#\1#p' | sort -u)
for p in $missing; do sed -i "/^$p:/d" plugin.cfg; done
echo "plugincfg: left out (modules not in the cache):" $missing

# The documented route.
sed -i 's#^cache:cache$#gslb:github.com/gslbdns/gslb\ncache:cache#' plugin.cfg
grep -q '^gslb:github.com/gslbdns/gslb$' plugin.cfg
go mod edit -replace github.com/gslbdns/gslb="$repo"
go mod edit -require github.com/gslbdns/gslb@v0.0.0
# go generate reads the old generated files first and names the plugins it
# no longer finds; only its result matters.
go generate 2>generate.log || { cat generate.log >&2; exit 1; }
go build -o coredns
built=$(date +%s)

./coredns -plugins | grep -qx '[[:space:]]*gslb' || { echo "plugincfg: coredns -plugins does not list gslb" >&2; ./coredns -plugins >&2; exit 1; }
# gslb must come before cache in the generated chain.
order=$(sed -n 's/^[[:space:]]*"\(gslb\|cache\)",$/\1/p' core/dnsserver/zdirectives.go | tr '\n' ' ')
[ "$order" = "gslb cache " ] || { echo "plugincfg: directive order is '$order', want gslb before cache" >&2; exit 1; }

# The demo: the repository's Corefile.example on a free loopback port
# (without its fixed prometheus and ready ports), asked by a small miekg/dns client.
port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p demo-run/q
sed -e "s/^example.org:1053 {/example.org:$port {/" -e '/^[[:space:]]*\(prometheus\|ready\) /d' "$repo/Corefile.example" >demo-run/Corefile
grep -q "^example.org:$port {" demo-run/Corefile
cat >demo-run/q/main.go <<'GO'
package main

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/miekg/dns"
)

// Asks os.Args[1] for www.example.org A with ECS 202.101.172.0/24 until it answers.
func main() {
	m := new(dns.Msg)
	m.SetQuestion("www.example.org.", dns.TypeA)
	o := new(dns.OPT)
	o.Hdr.Name, o.Hdr.Rrtype = ".", dns.TypeOPT
	o.Option = append(o.Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.ParseIP("202.101.172.0")})
	m.Extra = append(m.Extra, o)
	c := &dns.Client{Timeout: 500 * time.Millisecond}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, _, err := c.Exchange(m, os.Args[1])
		if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
			for _, rr := range r.Answer {
				if a, ok := rr.(*dns.A); ok {
					fmt.Println(a.A)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "no answer:", err, r)
			os.Exit(1)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
GO
go build -o demo-run/query ./demo-run/q
(cd "$repo" && exec "$work/coredns/coredns" -conf "$work/coredns/demo-run/Corefile") >demo-run/log 2>&1 &
pid=$!
if ! answer=$(demo-run/query "127.0.0.1:$port"); then
	echo "plugincfg: the demo did not answer on 127.0.0.1:$port" >&2
	cat demo-run/log >&2
	exit 1
fi
end=$(date +%s)
echo "plugincfg: ok: -plugins lists gslb, the demo answered $answer; build $((built - start))s, total $((end - start))s"
