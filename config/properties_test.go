package config

import (
	"strings"
	"testing"
)

// blockOf is a gslb block with prop in the sub-block sub ("" for the
// block itself).
func blockOf(sub, prop string) string {
	open := map[string]string{
		"":          "",
		"admin":     "admin 127.0.0.1:9154 {\n",
		"canary":    "canary c.yaml 5 {\n",
		"redis":     "redis 127.0.0.1:6379 {\n",
		"online":    "online http://127.0.0.1/{ip} {\n",
		"fleet":     "fleet f {\n",
		"soa":       "soa {\n",
		"dnssec":    "dnssec Kexample.org.+013+12345 {\n",
		"rrl":       "rrl {\n",
		"feed":      "feed {\n",
		"source":    "feed {\nsource s {\n",
		"resolvers": "resolvers {\n",
	}[sub]
	end := ""
	if sub != "" {
		end = "\n}"
	}
	if sub == "source" {
		end = "\n}\n}"
	}
	return "gslb {\ngeoip g.mmdb\nnodes n.yaml\n" + open + prop + end + "\n}"
}

// TestPropertiesKnown: every property the hints offer is one the parser
// takes, so that a hint never names an unknown one.
func TestPropertiesKnown(t *testing.T) {
	for sub, props := range properties {
		for _, p := range props {
			if _, err := parseBlock(blockOf(sub, p)); err != nil && strings.Contains(err.Error(), "unknown property") {
				t.Errorf("%s %s: %v", sub, p, err)
			}
		}
	}
}

// TestUnknownPropertyHint: a typo of a property gets the one it was
// meant to be; a word like none gets no hint.
func TestUnknownPropertyHint(t *testing.T) {
	tests := []struct{ sub, prop, want string }{
		{"", "tll 30", `unknown property "tll" (did you mean ttl?)`},
		{"", "ladder7 all", `unknown property "ladder7" (did you mean ladder?)`},
		{"", "fallthruogh", `unknown property "fallthruogh" (did you mean fallthrough?)`},
		{"", "nonsense 1", `unknown property "nonsense"`},
		{"admin", "token_fiel t", `admin: unknown property "token_fiel" (did you mean token_file?)`},
		{"canary", "slat 0123456789abcdef", `canary: unknown property "slat" (did you mean salt?)`},
		{"redis", "pasword x", `redis: unknown property "pasword" (did you mean password?)`},
		{"online", "timout 1s", `online: unknown property "timout" (did you mean timeout?)`},
		{"fleet", "quorom 2", `fleet: unknown property "quorom" (did you mean quorum?)`},
		{"soa", "mnmae ns1.example.net", `soa: unknown property "mnmae" (did you mean mname?)`},
		{"dnssec", "denail nsec", `dnssec: unknown property "denail" (did you mean denial?)`},
		{"rrl", "windwo 5s", `rrl: unknown property "windwo" (did you mean window?)`},
		{"feed", "half_lfie 5m", `feed: unknown property "half_lfie" (did you mean half_life?)`},
		{"source", "token_fiel t", `feed: source s: unknown property "token_fiel" (did you mean token_file?)`},
		{"resolvers", "populaton off", `resolvers: unknown property "populaton" (did you mean population?)`},
	}
	for _, tc := range tests {
		_, err := parseBlock(blockOf(tc.sub, tc.prop))
		if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("%s %q: %v, want an error ending in %s", tc.sub, tc.prop, err, tc.want)
		}
	}
}
