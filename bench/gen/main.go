// Command gen generates the inputs of the side-by-side DNS benchmark
// (bench/dns.sh). Every output is deterministic for a given -seed.
//
//	go run ./bench/gen asn -out asn.mmdb asn-ipv4.csv [asn-ipv6.csv]
//	go run ./bench/gen nodes -seed 1 -out nodes.yaml
//	go run ./bench/gen subnets -seed 1 -csv asn-ipv4.csv -n 850000 -out cold.txt
//	go run ./bench/gen queries -subnets cold.txt -mode cold -out cold.bin
//	go run ./bench/gen queries -subnets warm.txt -mode warm -distinct 20000 -out warm.bin
//	go run ./bench/gen peers -templates bench/peers -out DIR -set port_pdns=5305 ...
//	go run ./bench/gen latency < dnsperf-v-output.txt
//	go run ./bench/gen scopes -city City.mmdb -asn asn.mmdb -subnets cold.txt
//	go run ./bench/gen precompute [-city City.mmdb -asn asn.mmdb] [-scale 10 -records 1000]
//	go run ./bench/gen nodes -count 100 -probe-port 16000 -variant 3 -out nodes.yaml
//	go run ./bench/gen backends -port 16000 -n 100 [-vary]
//
// asn converts @ip-location-db/asn CSV ranges (start,end,asn,org) to a
// GeoLite2-ASN mmdb with geo/mmdbgen. nodes writes a node table of 31
// provinces × 3 carriers. subnets samples /24s of Chinese carrier address
// space from the same CSV, one CIDR a line. queries writes a dnsperf -B input
// (each wire-format query preceded by its 2-byte big-endian length) of
// www.example.org A with EDNS0 and an ECS option. peers renders the
// PowerDNS and gdnsd configuration templates with the same sites. latency
// reads `dnsperf -v` output and prints p50 and p99 in milliseconds. backends
// serves the probed nodes' health endpoints on loopback (bench/background.sh).
package main

import (
	"fmt"
	"os"
)

const usage = `usage: gen asn|nodes|subnets|queries|peers|latency|scopes|distance|precompute|backends [flags]; gen CMD -h for flags`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{
		"asn":        cmdASN,
		"nodes":      cmdNodes,
		"subnets":    cmdSubnets,
		"queries":    cmdQueries,
		"peers":      cmdPeers,
		"latency":    cmdLatency,
		"scopes":     cmdScopes,
		"distance":   cmdDistance,
		"precompute": cmdPrecompute,
		"backends":   cmdBackends,
	}
	f, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err := f(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "gen %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
