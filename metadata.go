package gslb

import (
	"context"
	"strconv"

	"github.com/coredns/coredns/plugin/metadata"
	"github.com/coredns/coredns/request"

	"github.com/gslbdns/gslb/decide"
	"github.com/gslbdns/gslb/scoring"
)

type mdKey struct{}

// Metadata implements metadata.Provider. The labels read the query's
// decision lazily, once ServeDNS has filled it in.
func (g *GSLB) Metadata(ctx context.Context, state request.Request) context.Context {
	out := &decide.Outcome{}
	ctx = context.WithValue(ctx, mdKey{}, out)
	for _, l := range labels {
		metadata.SetValueFunc(ctx, "gslb/"+l.name, func() string {
			if !out.Client.IsValid() {
				return "-"
			}
			if s := l.value(out); s != "" {
				return s
			}
			return "-"
		})
	}
	return ctx
}

// setMetadata copies the outcome into the holder Metadata put in ctx.
func setMetadata(ctx context.Context, out *decide.Outcome) {
	if h, ok := ctx.Value(mdKey{}).(*decide.Outcome); ok {
		*h = *out
	}
}

var labels = []struct {
	name  string
	value func(*decide.Outcome) string
}{
	{"client", func(o *decide.Outcome) string { return o.Client.String() }},
	{"client_source", func(o *decide.Outcome) string {
		if o.FromECS {
			return "ecs"
		}
		return "remote"
	}},
	{"ecs", func(o *decide.Outcome) string {
		if o.ECS == nil {
			return ""
		}
		a, _ := decide.ECSAddr(o.ECS)
		return a.String() + "/" + strconv.Itoa(int(o.ECS.SourceNetmask)) + "/" + strconv.Itoa(int(o.Scope))
	}},
	{"policy", func(o *decide.Outcome) string {
		return o.Policy()
	}},
	{"country", func(o *decide.Outcome) string { return o.Loc.Country }},
	{"province", func(o *decide.Outcome) string { return o.Loc.Province }},
	{"city", func(o *decide.Outcome) string { return o.Loc.City }},
	{"isp", func(o *decide.Outcome) string { return o.Loc.ISP }},
	{"asn", func(o *decide.Outcome) string {
		if o.Loc.ASN == 0 {
			return ""
		}
		return strconv.FormatUint(uint64(o.Loc.ASN), 10)
	}},
	{"geo_source", func(o *decide.Outcome) string {
		if o.Loc.Special {
			return "none"
		}
		return o.Loc.Source.String()
	}},
	{"tier", func(o *decide.Outcome) string {
		if o.Decision.Tier == scoring.TierNone {
			return ""
		}
		return o.Decision.Tier.String()
	}},
	{"candidates", func(o *decide.Outcome) string { return strconv.Itoa(o.Decision.Candidates) }},
	{"node", func(o *decide.Outcome) string {
		if o.Decision.Winner == nil || o.Decision.Tier == scoring.TierFallback {
			return ""
		}
		return o.Decision.Winner.ID
	}},
	{"node_state", func(o *decide.Outcome) string { return o.Decision.State }},
	{"node_vantage", func(o *decide.Outcome) string { return o.Decision.Vantage }},
	{"distance_km", func(o *decide.Outcome) string {
		if o.Decision.Winner == nil || o.Decision.DistanceKm < 0 {
			return ""
		}
		return strconv.FormatFloat(o.Decision.DistanceKm, 'f', 0, 64)
	}},
	{"rtt_ms", func(o *decide.Outcome) string {
		if o.Decision.Winner == nil || o.Decision.RTTMs < 0 {
			return ""
		}
		return strconv.FormatFloat(o.Decision.RTTMs, 'f', -1, 64)
	}},
	{"ttl_reason", func(o *decide.Outcome) string {
		if o.Decision.Winner == nil {
			return ""
		}
		return o.TTLReason
	}},
	{"score", func(o *decide.Outcome) string {
		if o.Decision.Winner == nil {
			return ""
		}
		return strconv.FormatFloat(o.Decision.Score, 'f', 3, 64)
	}},
}
