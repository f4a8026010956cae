package gslb

// Ready implements ready.Readiness: not ready until every probed node has
// its first probe result.
func (g *GSLB) Ready() bool {
	g.rt.mu.Lock()
	c := g.rt.checker
	g.rt.mu.Unlock()
	return c.Ready()
}
