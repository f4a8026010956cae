package sign

import (
	"errors"
	"path/filepath"
)

// ParseArgs reads the arguments of gslb's `dnssec KEYFILE... [publish
// KEYFILE...]` option: keys that sign, then keys only published. A
// relative file is under root (the server's root directory), as the dnssec
// plugin has it.
func ParseArgs(root string, args []string) (Config, error) {
	var c Config
	to := &c.Keys
	for _, a := range args {
		if a == "publish" {
			if to == &c.Publish {
				return Config{}, errors.New("dnssec: publish given twice")
			}
			to = &c.Publish
			continue
		}
		if !filepath.IsAbs(a) && root != "" {
			a = filepath.Join(root, a)
		}
		*to = append(*to, a)
	}
	if len(c.Keys) == 0 {
		return Config{}, errors.New("dnssec: no key file signs: want dnssec KEYFILE... [publish KEYFILE...]")
	}
	if to == &c.Publish && len(c.Publish) == 0 {
		return Config{}, errors.New("dnssec: publish without a key file")
	}
	return c, nil
}
