package sign

import (
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/cache"

	"github.com/miekg/dns"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	signatures = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "dnssec_signatures_total",
		Help:      "Counter of RRSIGs made, by zone: a cached answer and a denial from the chain make none.",
	}, []string{"zone"})

	expiryDesc = prometheus.NewDesc(prometheus.BuildFQName(plugin.Namespace, "gslb", "dnssec_signature_expiry_timestamp_seconds"),
		"Unix time of the earliest expiration of the signatures the zone may still serve: its denial chain and its signature cache.",
		[]string{"zone"}, nil)

	// Expiry is the collector of the signatures' earliest expiry.
	Expiry prometheus.Collector = expiryCollector{}
)

func init() { prometheus.MustRegister(Expiry) }

// Collectors are the package's metrics, for tests that list them.
var Collectors = []prometheus.Collector{signatures, Expiry}

// expiryCollector reads the live Signers when scraped.
type expiryCollector struct{}

func (expiryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- expiryDesc }

func (expiryCollector) Collect(ch chan<- prometheus.Metric) {
	registry.Lock()
	var live []*Signer
	for _, p := range registry.m {
		if s := p.Value(); s != nil {
			live = append(live, s)
		}
	}
	registry.Unlock()
	earliest := map[string]int64{}
	for _, s := range live {
		if e, ok := s.earliestExpiry(); ok {
			if cur, seen := earliest[s.zone]; !seen || e < cur {
				earliest[s.zone] = e
			}
		}
	}
	for zone, e := range earliest {
		ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, float64(e), zone)
	}
}

// earliestExpiry is the earliest expiration among the signatures s may
// still serve: those of its chain and the cached ones not due for refresh.
func (s *Signer) earliestExpiry() (int64, bool) {
	now := s.now().Unix()
	e, ok := int64(0), false
	note := func(sigs []dns.RR) {
		for _, rr := range sigs {
			if sig, is := rr.(*dns.RRSIG); is && (!ok || int64(sig.Expiration) < e) {
				e, ok = int64(sig.Expiration), true
			}
		}
	}
	if ch := s.chain.Load(); ch != nil {
		for i := range ch.links {
			if p := ch.links[i].signed.Load(); p != nil {
				note(p.sigs)
			}
		}
	}
	for _, c := range []*cache.Cache[*entry]{s.pos, s.neg} {
		c.Walk(func(m map[uint64]*entry, _ uint64) bool {
			for _, en := range m {
				if now < en.until {
					note(en.sigs)
				}
			}
			return true
		})
	}
	return e, ok
}
