package scoring

import (
	"fmt"
	"testing"
)

// benchNodes spreads n nodes over provinces and carriers.
func benchNodes(n int) ([]Node, []int) {
	provs := []string{"BJ", "SH", "ZJ", "JS", "GD", "SC", "HB", "SD", "FJ", "HA"}
	isps := []string{"telecom", "unicom", "mobile"}
	nodes := make([]Node, n)
	cand := make([]int, n)
	for i := range nodes {
		nodes[i] = Node{
			ID: fmt.Sprintf("node-%03d", i), Country: "CN", Continent: "AS",
			Province: provs[i%len(provs)], ISP: isps[i%len(isps)],
			Lat: 20 + float64(i%20), Lon: 100 + float64(i%25),
			Cost: float64(i % 7), Load: float64(i%8) / 10,
		}
		cand[i] = i
	}
	return nodes, cand
}

func BenchmarkChoose(b *testing.B) {
	topo := DefaultTopology()
	nodes, cand := benchNodes(50)
	benches := []struct {
		name string
		c    Client
	}{
		{"province_isp", hzTelecom},
		{"neighbor", Client{Country: "CN", Continent: "AS", Province: "XZ", ISP: "edu", HasCoords: true, Lat: 29.65, Lon: 91.1}},
		{"location_free", Client{}},
	}
	for _, bc := range benches {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				Choose(&bc.c, nodes, cand, topo, &DefaultParams, uint64(i))
			}
		})
	}
}

var keep *Prepared

// BenchmarkPrepare: a preparation kept for later picks (the decision
// cache's and the warm-up's), allocated once.
func BenchmarkPrepare(b *testing.B) {
	topo := DefaultTopology()
	nodes, cand := benchNodes(100)
	for _, bc := range []struct {
		name string
		c    Client
	}{
		{"province_isp", hzTelecom},
		{"location_free", Client{}},
		{"country_coords", Client{Country: "CN", Continent: "AS", HasCoords: true, Lat: 30, Lon: 110}},
	} {
		c := bc.c
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				keep = Prepare(&Input{Client: &c, Nodes: nodes, Cand: cand, Topo: topo, Params: &DefaultParams})
			}
		})
	}
}
