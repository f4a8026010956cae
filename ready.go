package gslb

// Ready implements ready.Readiness: not ready until every probed node has
// its first probe result.
func (g *GSLB) Ready() bool {
	g.ctl.mu.Lock()
	c := g.ctl.checker
	g.ctl.mu.Unlock()
	return c.Ready()
}
