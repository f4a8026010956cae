package testsupport

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricNames lists the names of the collectors' metrics, sorted, with or
// without series: a registry gathers one constant series per description.
func MetricNames(cs ...prometheus.Collector) ([]string, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(described(cs)); err != nil {
		return nil, err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	slices.Sort(names)
	return names, nil
}

// described collects, for each description of its collectors, one
// series with empty label values.
type described []prometheus.Collector

func (d described) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range d {
		c.Describe(ch)
	}
}

func (d described) Collect(ch chan<- prometheus.Metric) {
	descs := make(chan *prometheus.Desc)
	go func() { d.Describe(descs); close(descs) }()
	for desc := range descs {
		// The description does not say how many labels it has: the
		// first count it takes is it.
		for n := 0; n <= 16; n++ {
			if m, err := prometheus.NewConstMetric(desc, prometheus.UntypedValue, 0, make([]string, n)...); err == nil {
				ch <- m
				break
			}
		}
	}
}
