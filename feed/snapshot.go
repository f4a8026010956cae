package feed

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
)

// Snapshot is a GET /v1/feed answer saved to a file: the cells a tool
// judges decisions by.
type Snapshot struct {
	cells map[Key]Cell // the fresh ones with a TTFB
	fresh []Cell
}

// maxSnapshot bounds a snapshot file.
const maxSnapshot = 256 << 20

// ReadSnapshot reads a saved GET /v1/feed answer.
func ReadSnapshot(path string) (*Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSnapshot+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSnapshot {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxSnapshot)
	}
	var v CellsJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: not a GET /v1/feed answer: %w", path, err)
	}
	s := &Snapshot{cells: map[Key]Cell{}}
	for i, c := range v.Cells {
		if c.Node == "" || !finite(c.P50) || !finite(c.P95) || c.P50 < 0 || c.P95 < c.P50 || c.P95 > MaxTTFBMs {
			return nil, fmt.Errorf("%s: cells[%d]: a node and TTFBs 0 <= ttfb_p50_ms <= ttfb_p95_ms <= %d are required", path, i, MaxTTFBMs)
		}
		if c.State != Fresh {
			continue
		}
		s.fresh = append(s.fresh, c)
		if c.P50 > 0 {
			s.cells[c.Key] = c
		}
	}
	return s, nil
}

// Cells is the snapshot's fresh cells, for decisions to be made with.
func (s *Snapshot) Cells() *Cells {
	c := &Cells{Cells: slices.Clone(s.fresh), Count: map[string]int{Fresh: len(s.fresh), Thin: 0, Stale: 0}}
	sort.Slice(c.Cells, func(i, j int) bool { return less(c.Cells[i].Key, c.Cells[j].Key) })
	return c
}

// Cell is the most specific fresh cell for clients of province and isp on
// node: province and carrier, then carrier, then province.
func (s *Snapshot) Cell(province, isp, node string) (Cell, bool) {
	for _, k := range []Key{{province, isp, node}, {"", isp, node}, {province, "", node}} {
		if (k.Province != "" || k.ISP != "") && (k.Province == province || k.Province == "") && (k.ISP == isp || k.ISP == "") {
			if c, ok := s.cells[k]; ok {
				return c, true
			}
		}
	}
	return Cell{}, false
}

// Expected is the TTFB a set of decisions should give, from the cells of
// the nodes they chose.
type Expected struct {
	hist    Hist
	With    int // queries whose place and node have a fresh cell
	Without int
}

// Add counts n queries of a client of province and isp answered by node.
func (e *Expected) Add(s *Snapshot, province, isp, node string, n int) {
	c, ok := s.Cell(province, isp, node)
	if !ok || node == "" {
		e.Without += n
		return
	}
	e.With += n
	e.hist.addQuantiles(float64(n), c.P50, c.P95)
}

// Quantile is the expected TTFB quantile in ms; 0 without a cell.
func (e *Expected) Quantile(q float64) float64 { return e.hist.Quantile(q) }
