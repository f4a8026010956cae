// Package quality reads the network-quality matrix: the round trip and loss
// that probe agents inside each carrier measured from a province's
// networks to each node. A row is trusted while it is fresh.
package quality

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gslbdns/gslb/geo"
	"github.com/gslbdns/gslb/internal/yamlfile"
	"github.com/gslbdns/gslb/scoring"
)

// Row is one measurement.
type Row struct {
	Province string // "" for every province
	ISP      string // "" for every carrier
	Node     string
	RTTMs    float64
	Loss     float64
	Measured time.Time
	Line     int
}

// Matrix is the file's rows.
type Matrix struct {
	Rows []Row
}

type file struct {
	Quality []rowYAML `yaml:"quality"`
}

type rowYAML struct {
	From     fromYAML       `yaml:"from"`
	Node     string         `yaml:"node"`
	RTTMs    *float64       `yaml:"rtt_ms"`
	Loss     *float64       `yaml:"loss"`
	Measured *yamlfile.Time `yaml:"measured"`
}

type fromYAML struct {
	Province string `yaml:"province"`
	ISP      string `yaml:"isp"`
}

// Load reads a quality file.
func Load(path string) (*Matrix, error) {
	data, err := yamlfile.ReadFile(path, yamlfile.DefaultMaxSize)
	if err != nil {
		return nil, fmt.Errorf("quality: %w", err)
	}
	return Parse(path, data)
}

// Parse validates a quality file read from path. Errors name the file, the
// line, the entry and the field.
func Parse(path string, data []byte) (*Matrix, error) {
	defer yamlfile.Release(len(data))
	m, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("quality %s: %w", path, err)
	}
	return m, nil
}

func parse(data []byte) (*Matrix, error) {
	var f file
	doc, err := yamlfile.Decode(data, &f)
	if err != nil {
		if errors.Is(err, yamlfile.ErrEmpty) {
			return &Matrix{}, nil
		}
		return nil, err
	}
	lines := yamlfile.EntryLines(doc, "quality")
	m := &Matrix{}
	type key struct{ p, i, n string }
	first := map[key]int{}
	for i, y := range f.Quality {
		at := yamlfile.Where("quality", lines, i)
		r, err := y.row()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		r.Line = yamlfile.LineAt(lines, i)
		k := key{r.Province, r.ISP, r.Node}
		if l, dup := first[k]; dup {
			return nil, fmt.Errorf("%s: a second row from the same network to %s, first at line %d", at, r.Node, l)
		}
		first[k] = r.Line
		m.Rows = append(m.Rows, r)
	}
	return m, nil
}

func (y *rowYAML) row() (Row, error) {
	r := Row{Node: strings.TrimSpace(y.Node), ISP: geo.NormalizeCarrier(y.From.ISP)}
	if y.From.Province != "" {
		p, ok := geo.NormalizeProvince("CN", y.From.Province)
		if !ok {
			key, err := scoring.ParseProvinceKey(y.From.Province)
			if err != nil {
				return r, fmt.Errorf("field from.province: %w", err)
			}
			p = key.Province
		}
		r.Province = p
	}
	switch {
	case r.Province == "" && r.ISP == "":
		return r, errors.New("field from: a province, a carrier, or both")
	case r.Node == "":
		return r, errors.New("field node: missing")
	case y.RTTMs == nil || math.IsNaN(*y.RTTMs) || *y.RTTMs < 0 || math.IsInf(*y.RTTMs, 0):
		return r, errors.New("field rtt_ms: a round trip of 0 or more milliseconds is required")
	case y.Loss == nil || math.IsNaN(*y.Loss) || *y.Loss < 0 || *y.Loss > 1:
		return r, errors.New("field loss: a rate in 0..1 is required")
	case y.Measured == nil:
		return r, errors.New("field measured: the time of the measurement is required")
	}
	r.RTTMs, r.Loss, r.Measured = *y.RTTMs, *y.Loss, y.Measured.Time
	return r, nil
}

// Links resolves the rows measured within maxAge of now against the node
// table's indices (index reports a node's); rows older than that, or for a
// node the table doesn't have, are left out. It counts the fresh and stale
// rows and says when the next fresh one goes stale (zero: none).
func (m *Matrix) Links(index func(id string) (int, bool), now time.Time, maxAge time.Duration) (links *scoring.Links, fresh, stale int, next time.Time) {
	if m == nil {
		return nil, 0, 0, time.Time{}
	}
	links = scoring.NewLinks()
	for _, r := range m.Rows {
		until := r.Measured.Add(maxAge)
		if !until.After(now) {
			stale++
			continue
		}
		i, ok := index(r.Node)
		if !ok {
			continue
		}
		fresh++
		links.Set(r.Province, r.ISP, i, scoring.Link{RTTMs: r.RTTMs, Loss: r.Loss})
		if next.IsZero() || until.Before(next) {
			next = until
		}
	}
	return links, fresh, stale, next
}
