package gslb

import (
	"context"
	"strconv"

	"github.com/coredns/coredns/plugin/metadata"
	"github.com/coredns/coredns/request"

	"github.com/gslbdns/gslb/canary"
	"github.com/gslbdns/gslb/scoring"
)

type mdKey struct{}

// Metadata implements metadata.Provider. The labels read the query's
// decision lazily, once ServeDNS has filled it in.
func (g *GSLB) Metadata(ctx context.Context, state request.Request) context.Context {
	dc := &decision{}
	ctx = context.WithValue(ctx, mdKey{}, dc)
	for _, l := range labels {
		metadata.SetValueFunc(ctx, "gslb/"+l.name, func() string {
			if !dc.client.IsValid() {
				return "-"
			}
			if s := l.value(dc); s != "" {
				return s
			}
			return "-"
		})
	}
	return ctx
}

// setMetadata copies the decision into the holder Metadata put in ctx.
func setMetadata(ctx context.Context, dc *decision) {
	if h, ok := ctx.Value(mdKey{}).(*decision); ok {
		*h = *dc
	}
}

var labels = []struct {
	name  string
	value func(*decision) string
}{
	{"client", func(d *decision) string { return d.client.String() }},
	{"client_source", func(d *decision) string {
		if d.fromECS {
			return "ecs"
		}
		return "remote"
	}},
	{"ecs", func(d *decision) string {
		if d.ecs == nil {
			return ""
		}
		a, _ := ecsAddr(d.ecs)
		return a.String() + "/" + strconv.Itoa(int(d.ecs.SourceNetmask)) + "/" + strconv.Itoa(int(d.scope))
	}},
	{"policy", func(d *decision) string {
		if d.inCan {
			return canary.PolicyCanary
		}
		return canary.PolicyStable
	}},
	{"country", func(d *decision) string { return d.loc.Country }},
	{"province", func(d *decision) string { return d.loc.Province }},
	{"city", func(d *decision) string { return d.loc.City }},
	{"isp", func(d *decision) string { return d.loc.ISP }},
	{"asn", func(d *decision) string {
		if d.loc.ASN == 0 {
			return ""
		}
		return strconv.FormatUint(uint64(d.loc.ASN), 10)
	}},
	{"geo_source", func(d *decision) string {
		if d.loc.Special {
			return "none"
		}
		return d.loc.Source.String()
	}},
	{"tier", func(d *decision) string {
		if d.d.Tier == scoring.TierNone {
			return ""
		}
		return d.d.Tier.String()
	}},
	{"candidates", func(d *decision) string { return strconv.Itoa(d.d.Candidates) }},
	{"node", func(d *decision) string {
		if d.d.Winner == nil {
			return ""
		}
		return d.d.Winner.ID
	}},
	{"node_state", func(d *decision) string { return d.d.State }},
	{"distance_km", func(d *decision) string {
		if d.d.Winner == nil || d.d.DistanceKm < 0 {
			return ""
		}
		return strconv.FormatFloat(d.d.DistanceKm, 'f', 0, 64)
	}},
	{"rtt_ms", func(d *decision) string {
		if d.d.Winner == nil || d.d.RTTMs < 0 {
			return ""
		}
		return strconv.FormatFloat(d.d.RTTMs, 'f', -1, 64)
	}},
	{"score", func(d *decision) string {
		if d.d.Winner == nil {
			return ""
		}
		return strconv.FormatFloat(d.d.Score, 'f', 3, 64)
	}},
}
