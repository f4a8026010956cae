package ip2region_test

import (
	"net/netip"
	"testing"

	"github.com/gslbdns/gslb/geo/ip2regiongen"
)

var (
	zjTelecom = ip2regiongen.Region("中国", "浙江省", "杭州市", "电信", "CN")
	gdUnicom  = ip2regiongen.Region("中国", "广东省", "深圳市", "联通", "CN")
	bjMobile  = ip2regiongen.Region("中国", "北京市", "北京市", "移动", "CN")
	brisbane  = ip2regiongen.Region("Australia", "Queensland", "Brisbane", "", "AU")
)

func rng(first, last, region string) ip2regiongen.Rec {
	return ip2regiongen.Rec{Start: netip.MustParseAddr(first), End: netip.MustParseAddr(last), Region: region}
}

func pfx(p, region string) ip2regiongen.Rec {
	return ip2regiongen.PrefixRec(netip.MustParsePrefix(p), region)
}

var recs4 = []ip2regiongen.Rec{
	pfx("1.0.0.0/24", brisbane),
	pfx("202.101.172.0/24", zjTelecom),
	// Across four /16s: the generator splits it per vector cell.
	rng("113.64.0.0", "113.67.255.255", gdUnicom),
	rng("36.110.0.1", "36.110.0.6", bjMobile), // not a prefix
	pfx("198.51.100.0/24", ""),                // empty region: not found
}

var recs6 = []ip2regiongen.Rec{
	pfx("240e:388::/32", gdUnicom),
	pfx("2409:8a00::/32", bjMobile),
	pfx("2001:da8:8000::/48", zjTelecom),
}

func build(tb testing.TB, m ip2regiongen.Meta, recs []ip2regiongen.Rec) []byte {
	tb.Helper()
	b, err := ip2regiongen.Build(m, recs)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func v4(tb testing.TB) []byte {
	return build(tb, ip2regiongen.Meta{IPVersion: 4, Created: 1735689600}, recs4)
}

func v6(tb testing.TB) []byte {
	return build(tb, ip2regiongen.Meta{IPVersion: 6, Created: 1735689600}, recs6)
}
