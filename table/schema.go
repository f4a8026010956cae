package table

import "github.com/gslbdns/gslb/health"

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
	Country  string       `yaml:"country"`
	Province string       `yaml:"province"`
	City     string       `yaml:"city"`
	ISP      string       `yaml:"isp"`
	Lat      *float64     `yaml:"lat"`
	Lon      *float64     `yaml:"lon"`
	Cost     *float64     `yaml:"cost"`
	Load     *float64     `yaml:"load"`
	Probe    *health.Spec `yaml:"probe"`
}

type recordEntry struct {
	Name  string   `yaml:"name"`
	TTL   *uint32  `yaml:"ttl"`
	Nodes []string `yaml:"nodes"`
}

type carrierEntry struct {
	ASN   map[uint32]string `yaml:"asn"`
	Names map[string]string `yaml:"names"`
}
