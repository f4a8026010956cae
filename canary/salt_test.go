package canary

import (
	"path/filepath"
	"testing"

	"github.com/gslbdns/gslb/admin"
	"github.com/gslbdns/gslb/config"
)

// TestResolveSalt: the canary line's salt first, then the state file's as
// the control plane read it (a new one, to keep, when it has none), then
// the process's when the file cannot be read.
func TestResolveSalt(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.yaml")
	o := func(salt string) *config.Options {
		return &config.Options{Admin: &admin.Config{State: state}, Canary: &config.Canary{File: "candidate.yaml", Salt: salt}}
	}
	if s := ResolveSalt(o("line-salt"), StoredSalt{Salt: "file-salt", Readable: true}); s.Source != SaltOption || s.Keys != KeysOf("line-salt") || s.Stored != "file-salt" {
		t.Errorf("Expected the line's salt, the file's kept, got %+v", s)
	}
	if s := ResolveSalt(o(""), StoredSalt{Salt: "file-salt", Readable: true}); s.Source != SaltState || s.Keys != KeysOf("file-salt") || s.Fresh {
		t.Errorf("Expected the file's salt, got %+v", s)
	}
	state = filepath.Join(t.TempDir(), "other.yaml") // a file this process kept no salt for
	s := ResolveSalt(o(""), StoredSalt{Readable: true})
	if s.Source != SaltState || !s.Fresh || len(s.Stored) != 64 || s.Keys != KeysOf(s.Stored) {
		t.Errorf("Expected a new salt to keep in the file, got %+v", s)
	}
	if again := ResolveSalt(o(""), StoredSalt{Readable: true}); again.Stored != s.Stored {
		t.Errorf("Expected a reload to keep the salt this process made for the file, got %q then %q", s.Stored, again.Stored)
	}
	if s := ResolveSalt(o(""), StoredSalt{}); s.Source != SaltProcess {
		t.Errorf("Expected the process's salt when the file cannot be read, got %+v", s)
	}
}
