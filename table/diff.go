package table

import "strings"

// Change says which parts of a table differ from another's.
type Change uint8

const (
	ChangeNodes    Change = 1 << iota // a node's addresses, place, carrier, cost, weight or table load
	ChangeProbes                      // a probe spec, or which nodes are probed
	ChangeRecords                     // names, TTLs, priorities, members, or the name servers
	ChangeTopology                    // neighbours or regions
	ChangeCarriers                    // the carrier additions
)

var changeNames = []string{"nodes", "probes", "records", "topology", "carriers"}

func (c Change) String() string {
	var parts []string
	for i, n := range changeNames {
		if c&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ",")
}

// sums are the fingerprints Diff compares.
type sums struct {
	nodes, probes, records, topology, carriers [32]byte
}

func fingerprint(t *Table, f *file) sums {
	return sums{
		nodes:    sum(t.Nodes),
		probes:   sum(t.Probes),
		records:  sum([]any{t.Records, t.Nameservers}),
		topology: sum([]any{f.Neighbors, f.Regions}),
		carriers: sum(f.Carriers),
	}
}

// Diff says what changed from old to t; a nil old is all of it.
func (t *Table) Diff(old *Table) Change {
	if old == nil {
		return ChangeNodes | ChangeProbes | ChangeRecords | ChangeTopology | ChangeCarriers
	}
	var c Change
	for _, p := range []struct {
		a, b [32]byte
		c    Change
	}{
		{t.sums.nodes, old.sums.nodes, ChangeNodes},
		{t.sums.probes, old.sums.probes, ChangeProbes},
		{t.sums.records, old.sums.records, ChangeRecords},
		{t.sums.topology, old.sums.topology, ChangeTopology},
		{t.sums.carriers, old.sums.carriers, ChangeCarriers},
	} {
		if p.a != p.b {
			c |= p.c
		}
	}
	return c
}
