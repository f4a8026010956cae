package scoring

import "math"

// The score's terms, by index into Weights. A term is one entry here, one
// in terms below, and its line in values and dot. They are written out,
// not a table of funcs: calls through func values (or a switch over the
// terms) cost 20-40% of a location-free Choose.
const (
	Distance  = iota // nearness: 1/(1 + km/100)
	Load             // spare capacity: 1 - load
	Cost             // cheapness: 1 - cost/highest cost in the tier
	Quality          // the network: 1/(1 + rtt_ms/50) × (1 - loss), 0 without a row
	Stability        // steadiness: 1/(1 + failed probes + 2 × flaps) over the health window
	Hit              // the edges' cache hit ratio for the client's place, 0 without a feed cell
	NumTerms
)

// Weights of the score's terms, indexed by Distance, Load, Cost, Quality,
// Stability, Hit; the ones left out weigh 0.
type Weights [NumTerms]float64

// terms are the score's parts, in Weights order; scorer.values computes
// them.
var terms = [NumTerms]string{Distance: "distance", Load: "load", Cost: "cost", Quality: "quality", Stability: "stability", Hit: "hit"}

// TermNames lists the terms in Weights order.
func TermNames() []string {
	names := make([]string, NumTerms)
	copy(names, terms[:])
	return names
}

// scorer scores one tier's nodes for one client.
type scorer struct {
	c        *Client
	w        *Weights
	withDist bool    // distance counts only with the client's coordinates
	maxCost  float64 // the tier's highest cost
	quality  *Links  // nil: no matrix
	rtt      float64 // the last node's round trip, -1 without a row
	cosLat   float64 // the cosine of the client's latitude, once per client
}

func newScorer(c *Client, w *Weights, maxCost float64, quality *Links) scorer {
	s := scorer{c: c, w: w, withDist: c != nil && c.HasCoords, maxCost: maxCost, quality: quality}
	if s.withDist {
		s.cosLat = math.Cos(c.Lat * rad)
	}
	return s
}

// values puts each term's value for node i, in 0..1, into v; a term that
// does not apply to this client is 0. It returns n's distance, -1 when not
// measured.
func (s *scorer) values(i int, n *Node, v *[NumTerms]float64) float64 {
	km := -1.0
	v[Distance] = 0
	if s.withDist && !n.NoCoords {
		if s.c.ProvinceLevel && n.Province == s.c.Province && n.Country == s.c.Country {
			km = 0
		} else {
			km = haversine(s.c.Lat, s.cosLat, s.c.Lon, n.Lat, n.Lon)
		}
		v[Distance] = 1 / (1 + km/100)
	}
	v[Load] = 1 - n.Load
	v[Cost] = 1
	if s.maxCost > 0 {
		v[Cost] = 1 - n.Cost/s.maxCost
	}
	v[Quality], v[Hit], s.rtt = 0, 0, -1
	if s.quality != nil && s.c != nil {
		if l, ok := s.quality.Link(s.c.Province, s.c.ISP, i); ok {
			if l.RTTMs >= 0 {
				v[Quality], s.rtt = 1/(1+l.RTTMs/50)*(1-l.Loss), l.RTTMs
			}
			v[Hit] = max(l.Hit, 0)
		}
	}
	v[Stability] = 1
	if n.Fails|n.Flaps != 0 { // a division per node costs a location-free decision 10%
		v[Stability] = 1 / (1 + float64(n.Fails) + 2*float64(n.Flaps))
	}
	return km
}

// dot is the weighted sum of a node's term values: its score.
func (w *Weights) dot(v *[NumTerms]float64) float64 {
	return w[Distance]*v[Distance] + w[Load]*v[Load] + w[Cost]*v[Cost] + w[Quality]*v[Quality] + w[Stability]*v[Stability] + w[Hit]*v[Hit]
}

// Haversine returns the great-circle distance in km between two points
// given in degrees (R = 6371 km).
func Haversine(lat1, lon1, lat2, lon2 float64) float64 {
	return haversine(lat1, math.Cos(lat1*rad), lon1, lat2, lon2)
}

const rad = math.Pi / 180

// haversine is Haversine given cos1, the cosine of lat1: a scorer takes it
// once per client. Each sine is taken once; the result is the same to the
// bit.
func haversine(lat1, cos1, lon1, lat2, lon2 float64) float64 {
	const r = 6371.0
	dphi := (lat2 - lat1) * rad
	dlmb := (lon2 - lon1) * rad
	sp, sl := math.Sin(dphi/2), math.Sin(dlmb/2)
	a := sp*sp + cos1*math.Cos(lat2*rad)*sl*sl
	return 2 * r * math.Atan2(math.Sqrt(a), math.Sqrt(1-a))
}
