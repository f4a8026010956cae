package admin

import (
	"net/http"
	"strconv"
)

// ResolverMapper is a Backend with a resolver map: POST /v1/beacons
// carries a feed source's token, which BeaconHandler checks, not the admin
// token.
type ResolverMapper interface {
	BeaconHandler() http.Handler    // nil: no beacon
	ResolverMap() (any, error)      // GET /v1/resolvers
	MintBeacons(n int) (any, error) // GET /v1/beacons?n=N
}

// MaxMint bounds the names one GET /v1/beacons mints.
const MaxMint = 1000

func (s *server) resolverRoutes(m *http.ServeMux) {
	m.HandleFunc("POST /v1/beacons", func(w http.ResponseWriter, r *http.Request) {
		if rm := s.mapper(w); rm != nil {
			if h := rm.BeaconHandler(); h != nil {
				h.ServeHTTP(w, r)
				return
			}
			writeError(w, http.StatusNotFound, "no beacon in this gslb block's resolvers block")
		}
	})
	m.HandleFunc("GET /v1/beacons", func(w http.ResponseWriter, r *http.Request) {
		n := 1
		if q := r.URL.Query().Get("n"); q != "" {
			var err error
			if n, err = strconv.Atoi(q); err != nil || n < 1 || n > MaxMint {
				writeError(w, http.StatusBadRequest, "n: a count in 1..1000")
				return
			}
		}
		if rm := s.mapper(w); rm != nil {
			v, err := rm.MintBeacons(n)
			reply(w, v, err)
		}
	})
	m.HandleFunc("GET /v1/resolvers", func(w http.ResponseWriter, _ *http.Request) {
		if rm := s.mapper(w); rm != nil {
			v, err := rm.ResolverMap()
			reply(w, v, err)
		}
	})
}

// mapper is the backend's resolver map, or a 404 written.
func (s *server) mapper(w http.ResponseWriter) ResolverMapper {
	b := s.backend(w)
	if b == nil {
		return nil
	}
	rm, ok := b.(ResolverMapper)
	if !ok {
		writeError(w, http.StatusNotFound, "no resolvers block in this gslb block")
		return nil
	}
	return rm
}
