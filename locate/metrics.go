package locate

import (
	"github.com/coredns/coredns/plugin"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	// GeoLookups counts lookups per layer (override, lru, carrier_list, db, redis, online) and result (hit, miss, error, auth).
	GeoLookups = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "geo_lookups_total",
		Help:      "Counter of client location lookups per layer and result.",
	}, []string{"layer", "result"})

	// OnlineRequests counts online API calls by result (ok, invalid, auth, timeout, error, refused).
	OnlineRequests = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "online_requests_total",
		Help:      "Counter of online geo API requests by result.",
	}, []string{"result"})

	// OnlineBreakerOpen is 1 while the online API's breaker is open.
	OnlineBreakerOpen = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "online_breaker_open",
		Help:      "1 while the online geo API's circuit breaker is open.",
	})

	// RedisErrors counts failed Redis commands.
	RedisErrors = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "redis_errors_total",
		Help:      "Counter of failed Redis commands of the shared location cache.",
	})

	// Disagreements counts the addresses MaxMind and the IPIP.net database
	// both place in China but on another province or carrier.
	Disagreements = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "geo_disagreements_total",
		Help:      "Counter of database lookups where MaxMind and the IPIP.net database disagree, by field (province, carrier).",
	}, []string{"field"})

	// CacheEntries is the number of entries in the in-process location cache.
	CacheEntries = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "cache_entries",
		Help:      "Number of entries in the in-process location cache.",
	})

	// PrecomputedRanges is the number of IPv4 ranges in the table of the
	// databases' networks walked at load time.
	PrecomputedRanges = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "precomputed_ranges",
		Help:      "Number of IPv4 ranges whose location was precomputed from the databases.",
	})

	// PrecomputedBytes is the table's size.
	PrecomputedBytes = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "precomputed_bytes",
		Help:      "Bytes of the table of precomputed IPv4 locations.",
	})

	// PrecomputeSeconds is how long the last table took to build.
	PrecomputeSeconds = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "gslb",
		Name:      "precompute_seconds",
		Help:      "Seconds the last table of precomputed IPv4 locations took to build.",
	})
)

// Resolved once: WithLabelValues on the hot path would hash the labels.
var (
	overrideHit       = GeoLookups.WithLabelValues("override", "hit")
	cacheHit          = GeoLookups.WithLabelValues("lru", "hit")
	cacheMiss         = GeoLookups.WithLabelValues("lru", "miss")
	listHitCount      = GeoLookups.WithLabelValues("carrier_list", "hit")
	listMiss          = GeoLookups.WithLabelValues("carrier_list", "miss")
	dbHit             = GeoLookups.WithLabelValues("db", "hit")
	dbMiss            = GeoLookups.WithLabelValues("db", "miss")
	precomputedHit    = GeoLookups.WithLabelValues("precomputed", "hit")
	precomputedMiss   = GeoLookups.WithLabelValues("precomputed", "miss")
	redisHit          = GeoLookups.WithLabelValues("redis", "hit")
	redisMiss         = GeoLookups.WithLabelValues("redis", "miss")
	redisError        = GeoLookups.WithLabelValues("redis", "error")
	redisAuth         = GeoLookups.WithLabelValues("redis", "auth")
	onlineHit         = GeoLookups.WithLabelValues("online", "hit")
	onlineMiss        = GeoLookups.WithLabelValues("online", "miss")
	onlineLookupError = GeoLookups.WithLabelValues("online", "error")
	onlineLookupAuth  = GeoLookups.WithLabelValues("online", "auth")

	disagreeProvince = Disagreements.WithLabelValues("province")
	disagreeCarrier  = Disagreements.WithLabelValues("carrier")

	onlineOK           = OnlineRequests.WithLabelValues("ok")
	onlineInvalid      = OnlineRequests.WithLabelValues("invalid")
	onlineAuth         = OnlineRequests.WithLabelValues("auth")
	onlineTimeout      = OnlineRequests.WithLabelValues("timeout")
	onlineRequestError = OnlineRequests.WithLabelValues("error")
	onlineRefused      = OnlineRequests.WithLabelValues("refused")
)

// Collectors are the package's metrics, for tests that list them.
var Collectors = []prometheus.Collector{GeoLookups, OnlineRequests, OnlineBreakerOpen, RedisErrors, Disagreements, CacheEntries,
	PrecomputedRanges, PrecomputedBytes, PrecomputeSeconds}
