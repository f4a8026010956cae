package config

import "github.com/gslbdns/gslb/geo"

// properties are the Corefile properties of the gslb block ("") and of
// each of its sub-blocks, for the "did you mean" hint of an unknown one.
// TestPropertiesKnown checks that the parser takes every one.
var properties = map[string][]string{
	"": append(geo.Options(), "carrier_lists", "overrides", "nodes", "ttl", "ladder", "ladder6",
		"spread_prefix", "ecs_min_prefix", "trust_ecs", "weights", "max_load", "spread", "shed_load", "cooldown",
		"answers", "quality", "quality_max_age", "max_loss", "fallthrough", "all_down", "reload", "cache_size", "precompute",
		"max_file_size", "cache_ttl", "redis", "online", "admin", "canary", "fleet", "soa", "dnssec", "rrl", "feed", "max_error_rate", "carrier_lists_priority", "resolvers"),
	"admin":     {"token_file", "state"},
	"canary":    {"rollback_cross", "rollback_min", "rollback_window", "salt", "steps", "dwell", "guard", "min_samples", "source_share"},
	"redis":     {"username", "password", "db", "tls", "master", "timeout", "ttl"},
	"online":    {"header", "timeout", "max_qps", "breaker", "format"},
	"fleet":     {"vantage", "probe_source", "quorum", "probers", "member"},
	"soa":       {"serial", "refresh", "retry", "expire", "minimum", "mname", "rname"},
	"dnssec":    {"denial"},
	"feed":      {"cycle", "half_life", "max_age", "min_samples", "hysteresis", "max_rows", "max_body", "source"},
	"source":    {"token_file", "nodes", "rate"},
	"resolvers": {"beacon", "key_file", "beacon_ttl", "window", "half_life", "max_resolvers", "min_samples", "source_joins", "cycle", "population"},
	"rrl":       {"answers", "denials", "errors", "window", "slip", "prefix", "exempt", "log_only"},
}
