// Package metricset is where every gslb metric registers: Registerer keeps
// its name, for the tools and the dashboard's test, and registers it with
// Prometheus's default registry, which CoreDNS's prometheus plugin serves.
package metricset

import (
	"regexp"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Registerer is the registerer of every gslb metric.
var Registerer prometheus.Registerer = &recorder{Registerer: prometheus.DefaultRegisterer}

var (
	mu    sync.Mutex
	names = map[string]bool{}
)

type recorder struct{ prometheus.Registerer }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.Registerer.Register(c); err != nil {
		return err
	}
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	mu.Lock()
	defer mu.Unlock()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			names[m[1]] = true
		}
	}
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Names lists the registered metrics' names, sorted.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	var out []string
	for n := range names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
