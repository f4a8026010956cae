package geo

import (
	"hash/maphash"
	"net/netip"
	"slices"
	"strings"
)

// A Format is one kind of local database. Everything that names a
// database's kind, its Corefile option, its step in explain or its
// precedence reads Formats: a new format is a file with its reader and one
// entry there.
type Format struct {
	Kind    string // Metadata.Kind, FileError.Kind, the db_build metric's label
	Option  string // the Corefile option that takes its files
	Explain string // its step in explain and audit; formats of one name answer together
	Source  Source // Location.Source of the addresses it decided
	// Rank is the precedence: a database of a higher rank lays its answer
	// over those of the lower ones. Rank 0 is the base (MaxMind), whose
	// step is in every explanation.
	Rank     int
	MaxFiles int    // files its option takes
	Args     string // what an option of several files wants, for its error
	// Alone: a deployment may have this database and no other; Noun names
	// it in the error of one that has none of those.
	Alone bool
	Noun  string
	// open adds the database at paths to d. Errors name the file.
	open func(d *DB, f *Format, paths []string, h *maphash.Hash) error
}

// Formats are the local databases, in the order explain lists them and
// OpenFiles opens them. Set in init: their open functions name them.
var Formats []*Format

func init() {
	Formats = []*Format{
		{Kind: "city", Option: "geoip", Explain: "geoip", Source: SourceDB, Rank: 0, MaxFiles: 1, Alone: true, Noun: "a City", open: openCity},
		{Kind: "asn", Option: "asn", Explain: "geoip", Source: SourceDB, Rank: 0, MaxFiles: 1, open: openASN},
		{Kind: "ipdb", Option: "ipdb", Explain: "ipdb", Source: SourceIPDB, Rank: 2, MaxFiles: 1, Alone: true, Noun: "an IPIP.net", open: openIPDB},
		{Kind: "ip2region", Option: "ip2region", Explain: "ip2region", Source: SourceIP2Region, Rank: 1, MaxFiles: 2,
			Args: "one or two xdb files (IPv4, IPv6)", Alone: true, Noun: "an ip2region", open: openIP2Region},
	}
	for _, f := range Formats {
		overBase[f.Source] = f.Rank > 0
	}
}

// FormatOf is the format of a kind, nil for none.
func FormatOf(kind string) *Format {
	for _, f := range Formats {
		if f.Kind == kind {
			return f
		}
	}
	return nil
}

// FormatByOption is the format a Corefile option takes, nil for none.
func FormatByOption(option string) *Format {
	for _, f := range Formats {
		if f.Option == option {
			return f
		}
	}
	return nil
}

// Options are the formats' Corefile options.
func Options() []string {
	out := make([]string, len(Formats))
	for i, f := range Formats {
		out[i] = f.Option
	}
	return out
}

// Files names the local databases by kind; some format that may serve
// alone is required.
type Files map[string][]string

// Paths are the files f names, in the order of Formats.
func (f Files) Paths() []string {
	var out []string
	for _, fm := range Formats {
		for _, p := range f[fm.Kind] {
			if p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// Enough reports whether f names a database that serves alone.
func (f Files) Enough() bool {
	for _, fm := range Formats {
		if fm.Alone && slices.ContainsFunc(f[fm.Kind], func(p string) bool { return p != "" }) {
			return true
		}
	}
	return false
}

// Required names, in the Corefile's words, the options of which one is
// required: "geoip FILE is required (or ipdb FILE, or ip2region FILE)".
func Required() string {
	var first string
	var rest []string
	for _, f := range Formats {
		switch {
		case !f.Alone:
		case first == "":
			first = f.Option + " FILE is required"
		default:
			rest = append(rest, f.Option+" FILE")
		}
	}
	return first + " (or " + strings.Join(rest, ", or ") + ")"
}

// nouns are the databases that serve alone: "a City, an IPIP.net or an
// ip2region".
func nouns() string {
	var n []string
	for _, f := range Formats {
		if f.Alone {
			n = append(n, f.Noun)
		}
	}
	if len(n) < 2 {
		return strings.Join(n, "")
	}
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}

// giveTo is the hint naming the option that takes a database of kind.
func giveTo(kind string) string {
	if f := FormatOf(kind); f != nil {
		return ": give it to " + f.Option
	}
	return ""
}

// A layer is one rank's open databases.
type layer interface {
	// over lays what the databases say of addr over loc, what the lower
	// ranks said, and returns the length of the network in which they
	// say the same (UnknownNet when they cannot tell).
	over(addr netip.Addr, loc Location) (Location, uint8)
}

// overBase marks the Sources of the formats above the base: the Chinese
// databases, whose carrier names decide over the ASN.
var overBase [256]bool
