package table

import (
	"fmt"

	"github.com/gslbdns/gslb/health"

	"go.yaml.in/yaml/v3"
)

// file is the node table's YAML schema (README "The node table").
type file struct {
	Nodes         []nodeEntry         `yaml:"nodes"`
	Records       []recordEntry       `yaml:"records"`
	Neighbors     map[string][]string `yaml:"neighbors"`
	Regions       map[string][]string `yaml:"regions"`
	Carriers      carrierEntry        `yaml:"carriers"`
	ProbeDefaults health.Spec         `yaml:"probe_defaults"`
	Nameservers   []string            `yaml:"nameservers"`
}

type nodeEntry struct {
	ID       string       `yaml:"id"`
	IPv4     []string     `yaml:"ipv4"`
	IPv6     []string     `yaml:"ipv6"`
	CNAME    string       `yaml:"cname"`
	Country  string       `yaml:"country"`
	Province string       `yaml:"province"`
	City     string       `yaml:"city"`
	ISP      string       `yaml:"isp"`
	Lat      *float64     `yaml:"lat"`
	Lon      *float64     `yaml:"lon"`
	Cost     *float64     `yaml:"cost"`
	Load     *float64     `yaml:"load"`
	Weight   *float64     `yaml:"weight"`
	Probe    *health.Spec `yaml:"probe"`
}

type recordEntry struct {
	Name     string   `yaml:"name"`
	TTL      *ttlPair `yaml:"ttl"`
	Nodes    []string `yaml:"nodes"`
	Priority string   `yaml:"priority"`
	Fallback string   `yaml:"fallback"`
	// HTTPS are the SvcParams of the record's HTTPS answer: key to a
	// value or a list of values, in the dns library's presentation form.
	HTTPS map[string]any `yaml:"https"`
}

// ttlPair is a record's ttl: MAX, or [MAX, MIN] for answers that may
// change soon.
type ttlPair struct {
	max, min uint32
	hasMin   bool
}

func (p *ttlPair) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&p.max)
	}
	var l []uint32
	if n.Kind != yaml.SequenceNode || n.Decode(&l) != nil || len(l) == 0 || len(l) > 2 {
		return fmt.Errorf("line %d: field ttl: want seconds, or [MAX, MIN] in seconds", n.Line)
	}
	p.max = l[0]
	if len(l) == 2 {
		p.min, p.hasMin = l[1], true
	}
	return nil
}

type carrierEntry struct {
	ASN   map[uint32]string `yaml:"asn"`
	Names map[string]string `yaml:"names"`
}
