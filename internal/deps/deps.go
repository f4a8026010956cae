//go:build tools

// Package deps pins modules while the packages that use them are written.
package deps

import (
	_ "github.com/coredns/caddy"
	_ "github.com/hashicorp/golang-lru/v2/expirable"
	_ "github.com/maxmind/mmdbwriter"
	_ "github.com/oschwald/geoip2-golang/v2"
	_ "github.com/oschwald/maxminddb-golang/v2"
	_ "github.com/redis/go-redis/v9"
	_ "golang.org/x/sync/singleflight"
	_ "golang.org/x/time/rate"
	_ "gopkg.in/yaml.v3"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/miekg/dns"
)
