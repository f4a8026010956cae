package sign

import (
	"encoding/hex"
	"fmt"
	"strconv"
)

// Denial is how a signed zone proves that a name or a type does not exist.
type Denial uint8

const (
	// DenialDefault is NSEC, or black lies when the zone falls through:
	// the caller decides, knowing the fallthrough.
	DenialDefault Denial = iota
	// DenialNSEC is an NSEC chain over the zone's names, signed at load.
	DenialNSEC
	// DenialNSEC3 is an NSEC3 chain (RFC 5155) over the hashed names.
	DenialNSEC3
	// DenialBlackLies is an NSEC per query covering the query name alone,
	// signed per name.
	DenialBlackLies
)

var denialNames = [...]string{"default", "nsec", "nsec3", "black_lies"}

func (d Denial) String() string {
	if int(d) < len(denialNames) {
		return denialNames[d]
	}
	return "unknown"
}

// Proof is the denial metrics' label of d: nsec, nsec3 or black_lie.
func (d Denial) Proof() string {
	switch d {
	case DenialNSEC3:
		return "nsec3"
	case DenialBlackLies:
		return "black_lie"
	}
	return "nsec"
}

// MaxIterations bounds the NSEC3 iterations: RFC 9276 asks for 0, and
// validators treat a zone above 100 or so as insecure.
const MaxIterations = 100

// maxSalt bounds the NSEC3 salt in bytes (RFC 9276 asks for none).
const maxSalt = 64

// ParseDenial reads the arguments of `denial nsec|nsec3 [ITERATIONS
// [SALT]]|black_lies` into c. SALT is hex; "-" is the empty salt.
func ParseDenial(c *Config, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("denial: want nsec, nsec3 [ITERATIONS [SALT]] or black_lies")
	}
	switch args[0] {
	case "nsec":
		c.Denial = DenialNSEC
	case "nsec3":
		c.Denial = DenialNSEC3
	case "black_lies":
		c.Denial = DenialBlackLies
	default:
		return fmt.Errorf("denial %q: want nsec, nsec3 or black_lies", args[0])
	}
	rest := args[1:]
	if c.Denial != DenialNSEC3 && len(rest) > 0 {
		return fmt.Errorf("denial %s: unexpected argument %q (iterations and salt are nsec3's)", args[0], rest[0])
	}
	if len(rest) > 2 {
		return fmt.Errorf("denial nsec3: unexpected argument %q", rest[2])
	}
	if len(rest) > 0 {
		n, err := strconv.ParseUint(rest[0], 10, 16)
		if err != nil || n > MaxIterations {
			return fmt.Errorf("denial nsec3: iterations %q: want 0 to %d (RFC 9276: 0)", rest[0], MaxIterations)
		}
		c.NSEC3Iterations = uint16(n)
	}
	if len(rest) > 1 && rest[1] != "-" {
		b, err := hex.DecodeString(rest[1])
		if err != nil || len(b) > maxSalt {
			return fmt.Errorf("denial nsec3: salt %q: want up to %d bytes in hex, or - for none", rest[1], maxSalt)
		}
		c.NSEC3Salt = rest[1]
	}
	return nil
}

// Resolve is c's denial with the default made: an NSEC chain, or black
// lies when the zone falls through (the names the next plugin serves are
// not the chain's to list). A chain with fallthrough would deny those
// names to validating resolvers: an error.
func (c Config) Resolve(fallsThrough bool) (Denial, error) {
	switch {
	case c.Denial == DenialDefault && fallsThrough:
		return DenialBlackLies, nil
	case c.Denial == DenialDefault:
		return DenialNSEC, nil
	case fallsThrough && c.Denial != DenialBlackLies:
		return 0, fmt.Errorf("dnssec denial %s with fallthrough: the chain would deny the names the next plugin serves; use denial black_lies", c.Denial)
	}
	return c.Denial, nil
}
