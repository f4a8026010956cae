package test

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dnstap "github.com/dnstap/golang-dnstap"
	"github.com/miekg/dns"
	"google.golang.org/protobuf/proto"
)

// TestResolversTool: gslb resolvers over a CoreDNS log (journalctl's
// short-iso times before the README's format) finds the resolver that
// keeps 60 s answers for 300 s, the share of ECS and its prefixes, and
// sums the resolvers per province and carrier with -conf; a line without a
// time is an error naming the file and line.
func TestResolversTool(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	line := func(at time.Time, res, via string) {
		ecs := "-"
		if via == "ecs" {
			ecs = "202.101.172.0/24/24"
		}
		fmt.Fprintf(&b, "%s ns1 coredns[7]: [INFO] %s A www.example.org. NOERROR client=%s via=%s ecs=%s loc=CN/ZJ/Hangzhou isp=telecom tier=province_isp node=hz-telecom\n",
			at.Format("2006-01-02T15:04:05-0700"), res, res, via, ecs)
	}
	for i := range 20 {
		line(start.Add(time.Duration(i)*62*time.Second), "202.101.172.35", "remote") // keeps the ttl
		line(start.Add(time.Duration(i)*301*time.Second), "202.106.0.20", "remote")  // keeps 300 s
		line(start.Add(time.Duration(i)*65*time.Second), "202.101.172.36", "ecs")    // sends ECS
	}
	log := writeFile(t, dir, "query.log", b.String())
	conf := writeFile(t, dir, "Corefile", gslbCorefile(t, repoFile(t, "nodes.example.yaml"), ""))
	out, stderr, code := runTool(t, "resolvers", "-json", "-conf", conf, log)
	var r struct {
		Queries   int
		Stretched int
		Resolvers []struct {
			Resolver    string
			ECSShare    float64     `json:"ecs_share"`
			ECSPrefixes map[int]int `json:"ecs_prefixes"`
			TTLKept     float64     `json:"ttl_kept_s"`
			Stretched   bool
		}
		Places []struct {
			Province, ISP        string
			Resolvers, Stretched int
		}
	}
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("gslb resolvers: exit %d, %v: %s%s", code, err, out, stderr)
	}
	if r.Queries != 60 || r.Stretched != 1 {
		t.Errorf("Queries %d, stretched %d; want 60 and 1: %s", r.Queries, r.Stretched, out)
	}
	for _, res := range r.Resolvers {
		want := res.Resolver == "202.106.0.20"
		if res.Stretched != want || res.Resolver == "202.101.172.36" && (res.ECSShare != 1 || res.ECSPrefixes[24] != 20) {
			t.Errorf("Resolver %+v", res)
		}
	}
	if len(r.Places) != 2 {
		t.Errorf("Places %+v, want ZJ telecom and BJ unicom", r.Places)
	}
	text, _, code := runTool(t, "resolvers", log)
	if code != 0 || !strings.Contains(text, "202.106.0.20") || !strings.Contains(text, "301s") {
		t.Errorf("The text report: exit %d:\n%s", code, text)
	}
	// The same from a dnstap file of client queries.
	file := filepath.Join(dir, "queries.dnstap")
	output, err := dnstap.NewFrameStreamOutputFromFilename(file)
	if err != nil {
		t.Fatal(err)
	}
	go output.RunOutputLoop()
	tap := func(at time.Time, res string) {
		m := new(dns.Msg)
		m.SetQuestion("www.example.org.", dns.TypeA)
		raw, _ := m.Pack()
		typ, sec, nsec := dnstap.Message_CLIENT_QUERY, uint64(at.Unix()), uint32(0)
		frame, _ := proto.Marshal(&dnstap.Dnstap{Type: dnstap.Dnstap_MESSAGE.Enum(), Message: &dnstap.Message{Type: &typ,
			QueryAddress: net.ParseIP(res).To4(), QueryTimeSec: &sec, QueryTimeNsec: &nsec, QueryMessage: raw}})
		output.GetOutputChannel() <- frame
	}
	for i := range 20 {
		tap(start.Add(time.Duration(i)*62*time.Second), "202.101.172.35")
		tap(start.Add(time.Duration(i)*301*time.Second), "202.106.0.20")
	}
	output.Close()
	out, stderr, code = runTool(t, "resolvers", "-json", file)
	r.Stretched, r.Queries = 0, 0
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Queries != 40 || r.Stretched != 1 {
		t.Errorf("gslb resolvers on dnstap: exit %d, %v, %d queries, %d stretched; want 40 and 1: %s%s", code, err, r.Queries, r.Stretched, out, stderr)
	}
	bad := writeFile(t, dir, "bad.log", "[INFO] 202.106.0.20 A www.example.org. NOERROR client=202.106.0.20 via=remote\n")
	if _, stderr, code := runTool(t, "resolvers", bad); code != 1 || !strings.Contains(stderr, bad+":1: no time") {
		t.Errorf("A line without a time: exit %d, %s", code, stderr)
	}
}
