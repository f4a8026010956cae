package gslb

// Ready implements ready.Readiness: not ready until every probed node has
// its first probe result.
func (g *GSLB) Ready() bool { return g.ctl.Ready() }
