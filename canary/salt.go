package canary

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"sync"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/internal/splitmix"
)

// Keys key the canary's hashes of a subnet: pick chooses the subnets in
// the canary, seen places them in the window's set. Both come from the
// deployment's secret salt, so a client cannot compute which subnets are
// in the canary, nor aim at a slot of the set.
type Keys struct{ pick, seen uint64 }

// KeysOf derives the keys from a salt.
func KeysOf(salt string) Keys {
	h := sha256.Sum256([]byte("gslb canary salt\x00" + salt))
	return Keys{pick: binary.BigEndian.Uint64(h[:8]), seen: binary.BigEndian.Uint64(h[8:16])}
}

// keyedHash mixes x under key with the splitmix64 finalizer; the second
// round keeps x's structure (neighbouring subnets) from showing through
// the key.
func keyedHash(x, key uint64) uint64 {
	return splitmix.Mix(splitmix.Mix(x^key) ^ bits.RotateLeft64(key, 32))
}

// SaltSource is where a canary salt comes from.
type SaltSource uint8

// Sources of a salt.
const (
	SaltNone    SaltSource = iota // no canary line
	SaltOption                    // the canary line's salt
	SaltState                     // the admin state file's canary_salt
	SaltProcess                   // this process's: new at each start
)

// Salt is a control plane's salt. Stored is the state file's canary_salt,
// written back on every save (with or without a canary line); Fresh: it
// was generated now and is saved once the instance starts.
type Salt struct {
	Keys   Keys
	Source SaltSource
	Stored string
	Fresh  bool
}

// Kept reports whether the salt outlives this process: the canary's
// subnets shown are the server's.
func (s *Salt) Kept() bool { return s.Source != SaltProcess && !s.Fresh }

// processSalt is the salt of canaries without a salt or a state file:
// the same across Corefile reloads, new at each start.
var processSalt = sync.OnceValue(newSalt)

func newSalt() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// keptSalts is, by state file, the salt this process last used from it
// or for it: a Corefile reload after the file was removed keeps the
// canary's subnets (and writes the salt back).
var keptSalts sync.Map // path -> string

// StoredSalt is the admin state file's canary_salt as the control plane
// read it: Readable is false when the file exists and cannot be read.
type StoredSalt struct {
	Salt     string
	Readable bool
}

// ResolveSalt picks the canary's salt: the canary line's `salt`, else the
// admin state file's (stored: generated at the first start and kept
// there; read even when the file's entries do not load), else the
// process's, with a warning: the canary's subnets then change at every
// start.
func ResolveSalt(o *config.Options, stored StoredSalt) Salt {
	var s Salt
	stateFile := ""
	if o.Admin != nil && o.Admin.State != "" {
		stateFile = o.Admin.State
		switch {
		case stored.Salt != "":
			s.Stored = stored.Salt
		case !stored.Readable:
			stateFile = ""
		}
	}
	kept := func() string {
		if v, ok := keptSalts.Load(o.Admin.State); ok {
			return v.(string)
		}
		return ""
	}
	switch {
	case o.Canary == nil:
	case o.Canary.Salt != "":
		s.Keys, s.Source = KeysOf(o.Canary.Salt), SaltOption
	case stateFile != "":
		if s.Stored == "" {
			if s.Stored = kept(); s.Stored == "" {
				s.Stored = newSalt()
			}
			s.Fresh = true
		}
		keptSalts.Store(stateFile, s.Stored)
		s.Keys, s.Source = KeysOf(s.Stored), SaltState
	default:
		salt := processSalt()
		if o.Admin != nil && o.Admin.State != "" {
			if k := kept(); k != "" {
				salt = k
			}
		}
		s.Keys, s.Source = KeysOf(salt), SaltProcess
		log.Warningf("canary %s: no salt and no readable admin state file: the canary's subnets are drawn anew at every start; "+
			"set `salt SECRET` in the canary block (the same on every instance) or `admin ADDRESS { state FILE }`", o.Canary.File)
	}
	return s
}
