package scoring

import "math"

// The score's terms, by index into Weights. A term is one entry here and
// one in terms below.
const (
	Distance = iota // nearness: 1/(1 + km/100)
	Load            // spare capacity: 1 - load
	Cost            // cheapness: 1 - cost/highest cost in the tier
	NumTerms
)

// Weights of the score's terms, indexed by Distance, Load, Cost.
type Weights [NumTerms]float64

// terms are the score's parts, in Weights order; scorer.values computes
// them.
var terms = [NumTerms]string{Distance: "distance", Load: "load", Cost: "cost"}

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
}

// values puts each term's value for node n, in 0..1, into v; a term that
// does not apply to this client is 0. It returns n's distance, -1 when not
// measured.
func (s *scorer) values(n *Node, v *[NumTerms]float64) float64 {
	km := -1.0
	v[Distance] = 0
	if s.withDist {
		if s.c.ProvinceLevel && n.Province == s.c.Province && n.Country == s.c.Country {
			km = 0
		} else {
			km = Haversine(s.c.Lat, s.c.Lon, n.Lat, n.Lon)
		}
		v[Distance] = 1 / (1 + km/100)
	}
	v[Load] = 1 - n.Load
	v[Cost] = 1
	if s.maxCost > 0 {
		v[Cost] = 1 - n.Cost/s.maxCost
	}
	return km
}

// dot is the weighted sum of a node's term values: its score.
func (w *Weights) dot(v *[NumTerms]float64) float64 {
	return w[Distance]*v[Distance] + w[Load]*v[Load] + w[Cost]*v[Cost]
}

// Haversine returns the great-circle distance in km between two points
// given in degrees (R = 6371 km).
func Haversine(lat1, lon1, lat2, lon2 float64) float64 {
	const r, rad = 6371.0, math.Pi / 180
	dphi := (lat2 - lat1) * rad
	dlmb := (lon2 - lon1) * rad
	a := math.Sin(dphi/2)*math.Sin(dphi/2) +
		math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dlmb/2)*math.Sin(dlmb/2)
	return 2 * r * math.Atan2(math.Sqrt(a), math.Sqrt(1-a))
}
