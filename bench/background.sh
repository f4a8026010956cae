#!/usr/bin/env bash
# Background work in the tail: gslb's p50/p99 at a fixed rate, quiet against busy, in one CoreDNS.
# Quiet: the node table has no probes and does not change. Background: the same nodes, each with an
# http probe (load_field) of a real listener on 127.0.0.1 (`gen backends`) that reports a new load on
# every probe, and the node table rewritten with a real change (one node's cost) every 2 x RELOAD
# seconds, so that gslb reloads it as often as its settling allows (a change is read on two checks
# in a row). Rounds interleave the phases (quiet first in odd rounds, background first in even ones).
#
# Usage: bench/background.sh [flags]   or   make bench-background [VAR=value ...]
#   --rounds N          ROUNDS=3           interleaved rounds (each phase once per round)
#   --lat-secs S        LAT_SECS=20        seconds of each fixed-rate latency run
#   --rate Q            RATE=20000         the fixed rate (qps)
#   --nodes N           NODES=100          nodes in the table, all probed in the background phase
#   --probe-interval D  PROBE_INTERVAL=1s  the probes' interval
#   --reload D          RELOAD=1s          the gslb block's reload interval (1s at least)
#   --warm N            WARM=20000         distinct /24s cycling in the queries
#   --precompute P      PRECOMPUTE=        the gslb block's precompute (SIZE or off; empty: the plugin's
#                                          default, on): with it, new views' decisions are prepared ahead
#   --clients N         CLIENTS=4          dnsperf -c
#   --outstanding N     OUTSTANDING=100    dnsperf -q
#   --seed N            SEED=1             seed of the node table and subnet samples
#   --offline           OFFLINE=1          no npm fetch: use bench/data/ as is, else demo/
#   --quick             QUICK=1            smoke run: 1 round of 5 s, small samples, no waiting for quiet
#   COREDNS=PATH        use this CoreDNS binary instead of building ./cmd/coredns (A/B runs)
#   GCTRACE=1           run the server with GODEBUG=gctrace=1 (in raw/server.log)
#   ISOLATE=1           keep the kernel's periodic memory monitor (kdamond threads) off the server's
#                       CPU while it runs, as isolcpus would (root; their CPUs are put back at exit)
#   PROFILE=1           serve pprof on BASE_PORT+3 and save a CPU profile and an execution trace of
#                       every run, and the heap after each (raw/PHASE-rN.{cpu,trace,heap})
#   BASE_PORT=17400 (the server on BASE_PORT+1, its ready endpoint on +2, pprof on +3, metrics on +4, the
#                      backends on BASE_PORT+100.., 127.0.0.1 only);
#   QUIET_MAX=25, QUIET_WAIT=60, NOISE_MAX=25, RETRIES=1: as in bench/dns.sh.
# Needs: go, dnsperf, dig, curl; taskset to pin (dnsperf, the backends and the rewrites on CPU 0, the
# server on CPU 1).
# Output: a markdown table on stdout; everything raw in bench/results/background-TIMESTAMP/.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cmdline="bench/background.sh $*"

while (($#)); do
	case $1 in
	--rounds) ROUNDS=$2; shift ;;
	--lat-secs) LAT_SECS=$2; shift ;;
	--rate) RATE=$2; shift ;;
	--nodes) NODES=$2; shift ;;
	--probe-interval) PROBE_INTERVAL=$2; shift ;;
	--reload) RELOAD=$2; shift ;;
	--warm) WARM=$2; shift ;;
	--precompute) PRECOMPUTE=$2; shift ;;
	--clients) CLIENTS=$2; shift ;;
	--outstanding) OUTSTANDING=$2; shift ;;
	--seed) SEED=$2; shift ;;
	--offline) OFFLINE=1 ;;
	--quick) QUICK=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "background.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

QUICK=${QUICK:-0}
if [[ $QUICK == 1 ]]; then
	: "${ROUNDS:=1}" "${LAT_SECS:=5}" "${WARM:=2000}" "${QUIET_WAIT:=5}" "${RETRIES:=0}"
fi
ROUNDS=${ROUNDS:-3} LAT_SECS=${LAT_SECS:-20} RATE=${RATE:-20000} NODES=${NODES:-100}
PROBE_INTERVAL=${PROBE_INTERVAL:-1s} RELOAD=${RELOAD:-1s} WARM=${WARM:-20000} PRECOMPUTE=${PRECOMPUTE:-}
CLIENTS=${CLIENTS:-4} OUTSTANDING=${OUTSTANDING:-100} SEED=${SEED:-1}
OFFLINE=${OFFLINE:-0} BASE_PORT=${BASE_PORT:-17400} GCTRACE=${GCTRACE:-0} PROFILE=${PROFILE:-0} ISOLATE=${ISOLATE:-0}
QUIET_MAX=${QUIET_MAX:-25} QUIET_WAIT=${QUIET_WAIT:-60} NOISE_MAX=${NOISE_MAX:-25} RETRIES=${RETRIES:-1}
[[ $cmdline == "bench/background.sh " ]] && cmdline="bench/background.sh"
for v in ROUNDS LAT_SECS RATE NODES WARM CLIENTS OUTSTANDING SEED BASE_PORT QUIET_MAX QUIET_WAIT NOISE_MAX RETRIES; do
	[[ ${!v} =~ ^[0-9]+$ && (${!v} -gt 0 || $v == RETRIES) ]] || { echo "background.sh: $v must be a positive integer (RETRIES may be 0), got '${!v}'" >&2; exit 2; }
done
[[ $ISOLATE =~ ^[01]$ ]] || { echo "background.sh: ISOLATE must be 0 or 1, got '$ISOLATE'" >&2; exit 2; }
[[ $RELOAD =~ ^[0-9]+s$ ]] || { echo "background.sh: RELOAD must be whole seconds such as 1s, got '$RELOAD'" >&2; exit 2; }
[[ $PROBE_INTERVAL =~ ^[0-9]+(ms|s)$ ]] || { echo "background.sh: PROBE_INTERVAL must be like 1s or 500ms, got '$PROBE_INTERVAL'" >&2; exit 2; }
reload_s=${RELOAD%s} every=$((2 * ${RELOAD%s}))
settings="ROUNDS=$ROUNDS LAT_SECS=$LAT_SECS RATE=$RATE NODES=$NODES PROBE_INTERVAL=$PROBE_INTERVAL RELOAD=$RELOAD WARM=$WARM PRECOMPUTE=${PRECOMPUTE:-default} CLIENTS=$CLIENTS OUTSTANDING=$OUTSTANDING SEED=$SEED"

for t in go dnsperf dig curl; do
	command -v "$t" >/dev/null || { echo "background.sh: $t missing (apt-get install dnsperf dnsutils curl; Go from go.dev)" >&2; exit 1; }
done

stamp=$(date -u +%Y%m%dT%H%M%SZ)
res=$here/results/background-$stamp
raw=$res/raw conf=$res/conf
mkdir -p "$raw" "$conf" "$here/bin" "$here/data/gen"
# shellcheck source=bench/lib.sh
. "$here/lib.sh" # log, warn, all_busy, wait_quiet, wait_ready

pin_load=() pin_srv=()
if command -v taskset >/dev/null && (($(nproc) >= 2)); then
	pin_load=(taskset -c 0) pin_srv=(taskset -c 1)
	pinning="dnsperf, the backends and the rewrites on CPU 0, the server on CPU 1 (taskset)"
else
	pinning="not pinned ($(nproc) CPU(s) or no taskset)"
	warn "nothing is pinned: $pinning"
fi
timer=()
[[ -x /usr/bin/time ]] && timer=(/usr/bin/time -f 'cpu %U %S %e')
((${#timer[@]})) || warn "/usr/bin/time missing (apt-get install time): noisy runs cannot be detected"
clk=$(getconf CLK_TCK)

srv_pid="" back_pid="" writer_pid=""
moved=() # pid:cpus of the kernel threads ISOLATE moved
cleanup() {
	local p
	for p in $writer_pid $srv_pid $back_pid; do kill "$p" 2>/dev/null || true; done
	for p in $writer_pid $srv_pid $back_pid; do wait "$p" 2>/dev/null || true; done
	for p in "${moved[@]}"; do taskset -pc "${p#*:}" "${p%%:*}" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# ISOLATE: on a VM the kernel's memory monitor (DAMON's kdamond) wakes every half second for about 2 ms;
# on the server's CPU it stalls the queries, which a busier server takes longer to catch up on.
isolation="none"
if [[ $ISOLATE == 1 && ${#pin_load[@]} -gt 0 ]]; then
	for p in $(pgrep '^kdamond' || true); do
		cpus=$(taskset -pc "$p" 2>/dev/null | sed 's/.*: //')
		[[ -n $cpus ]] && taskset -pc 0 "$p" >/dev/null 2>&1 && moved+=("$p:$cpus")
	done
	isolation="${#moved[@]} kdamond thread(s) moved to CPU 0 for the run"
	((${#moved[@]})) || warn "ISOLATE=1: no kdamond thread could be moved (none, or not root)"
fi

proc_cpu() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$1/stat" 2>/dev/null || echo 0; } # utime + stime


# --- data and builds -----------------------------------------------------------------------------
log "gslb background benchmark: $settings; $pinning; results in ${res#"$root"/}"
if [[ $OFFLINE != 1 ]]; then
	"$here/fetch.sh" 2>&1 | tee -a "$res/log.txt" >&2 || warn "bench/fetch.sh failed for some data (offline?)"
fi
data=$here/data
if [[ -s $data/GeoLite2-City.mmdb && -s $data/asn.mmdb && -s $data/asn-ipv4.csv ]]; then
	datamode=real geoip=$data/GeoLite2-City.mmdb asn=$data/asn.mmdb subnet_src=(-csv "$data/asn-ipv4.csv")
	datadesc="real: GeoLite2-City.mmdb and asn.mmdb from bench/data; /24s of the Chinese carriers from asn-ipv4.csv"
else
	datamode=demo geoip=$root/demo/gslb-demo-City.mmdb asn=$root/demo/gslb-demo-ASN.mmdb subnet_src=(-random)
	datadesc="DEMO: demo/gslb-demo-City.mmdb + demo/gslb-demo-ASN.mmdb, random public /24s"
	warn "REAL DATA MISSING: falling back to the demo databases (bench/fetch.sh fetches the real ones)"
fi

gen=$here/bin/gen coredns=${COREDNS:-$here/bin/coredns}
[[ -z ${COREDNS:-} || -x $COREDNS ]] || { echo "background.sh: COREDNS=$COREDNS is not an executable" >&2; exit 1; }
log "building ./bench/gen${COREDNS:+ (CoreDNS given: $COREDNS)}${COREDNS:-" and ./cmd/coredns"} into bench/bin/"
if ! (cd "$root" && go build -o "$gen" ./bench/gen && { [[ -n ${COREDNS:-} ]] || go build -o "$coredns" ./cmd/coredns; }) >"$raw/build.log" 2>&1; then
	cat "$raw/build.log" >&2
	echo "background.sh: build failed (the tree may be mid-edit: retry later)" >&2
	exit 1
fi
coredns_rev=""
if [[ -z ${COREDNS:-} ]]; then
	coredns_rev=$(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo "?")
	[[ -n $(cd "$root" && git --no-optional-locks status --porcelain 2>/dev/null) ]] && coredns_rev+=" + uncommitted changes"
fi

g=$data/gen/$datamode-s$SEED
[[ -s $g-warm-$WARM.txt ]] || "$gen" subnets "${subnet_src[@]}" -seed "$SEED" -n "$WARM" -out "$g-warm-$WARM.txt" 2>&1 | tee -a "$res/log.txt" >&2
queries=$g-warm-$WARM.bin
[[ -s $queries ]] || "$gen" queries -subnets "$g-warm-$WARM.txt" -mode warm -distinct "$WARM" -out "$queries" 2>&1 | tee -a "$res/log.txt" >&2

port=$((BASE_PORT + 1)) rport=$((BASE_PORT + 2)) pport=$((BASE_PORT + 3)) mport=$((BASE_PORT + 4)) bport=$((BASE_PORT + 100))
nodes=$conf/nodes.yaml
# table VARIANT [probed]: writes the node table beside the serving one and renames it into place.
table() {
	local probe=()
	[[ ${2:-} == probed ]] && probe=(-probe-port "$bport" -probe-interval "$PROBE_INTERVAL")
	"${pin_load[@]}" "$gen" nodes -seed "$SEED" -count "$NODES" -variant "$1" "${probe[@]}" -out "$nodes.tmp" && mv "$nodes.tmp" "$nodes"
}
table 0
cat >"$conf/Corefile" <<EOF
# bench/background.sh: gslb over the generated $NODES-node table, reloaded every $RELOAD.
example.org:$port {
    bind 127.0.0.1
    ready 127.0.0.1:$rport$( ((PROFILE)) && printf '\n    pprof 127.0.0.1:%s' "$pport" || true)
    gslb {
        geoip $geoip
        asn $asn
        nodes $nodes
        reload $RELOAD${PRECOMPUTE:+
        precompute $PRECOMPUTE}
    }
}

# The metrics, outside the measured block: a quiet phase waits for the warm-up of its view.
metrics.invalid:$port {
    bind 127.0.0.1
    prometheus 127.0.0.1:$mport
}
EOF

# --- processes -------------------------------------------------------------------------------------
for p in "$port" "$rport" "$pport" "$mport" $(seq "$bport" $((bport + NODES - 1))); do
	if ss -Hltun "sport = :$p" 2>/dev/null | grep -q .; then
		echo "background.sh: port $p is in use (BASE_PORT=$BASE_PORT)" >&2
		exit 1
	fi
done
"${pin_load[@]}" "$gen" backends -port "$bport" -n "$NODES" >"$raw/backends.log" 2>&1 &
back_pid=$!
srvlog=$raw/server.log
env=()
[[ $GCTRACE == 1 ]] && env=(GODEBUG=gctrace=1)
env "${env[@]}" "${pin_srv[@]}" "$coredns" -conf "$conf/Corefile" -quiet >"$srvlog" 2>&1 &
srv_pid=$!
up=0
for ((i = 0; i < 150; i++)); do
	if dig @127.0.0.1 -p "$port" www.example.org A +subnet=202.101.172.0/24 +time=1 +tries=1 +short 2>/dev/null | grep -q .; then
		up=1
		break
	fi
	kill -0 "$srv_pid" 2>/dev/null || break
	sleep 0.2
done
((up)) || { cat "$srvlog" >&2; echo "background.sh: the server did not answer on 127.0.0.1:$port" >&2; exit 1; }
# Ready: gslb's precomputation walked and its first view warmed.
wait_ready "$rport" "$srv_pid" || warn "the server was not ready after 120 s"
log "  sample: 202.101.172.0/24 (ZJ telecom) -> $(dig @127.0.0.1 -p "$port" www.example.org A +subnet=202.101.172.0/24 +short | paste -sd, -)"

reloads() { grep -c 'Reloaded node table' "$srvlog" || true; }
# await_reload N: waits (at most 20 s) until the server logged more than N node table reloads.
await_reload() {
	local i
	for ((i = 0; i < 100; i++)); do
		(($(reloads) > $1)) && return 0
		sleep 0.2
	done
	warn "the server did not reload the node table within 20 s (log: $srvlog)"
	return 1
}
warmed() { curl -s "http://127.0.0.1:$mport/metrics" | awk '/^coredns_gslb_warmed_views_total\{policy="stable"\}/{print $2; f=1} END{if (!f) print 0}'; }
# await_warmed N: waits (at most 20 s) until more than N views were warmed.
await_warmed() {
	local i
	for ((i = 0; i < 100; i++)); do
		awk -v a="$(warmed)" -v n="$1" 'BEGIN{exit !(a > n)}' && return 0
		sleep 0.2
	done
	warn "the server did not warm its view within 20 s"
	return 1
}
variant=0
# phase quiet|background: puts the server in that phase and waits until it serves it; quiet, until
# the view of its table is warmed too, so that no background work is left in the quiet phase.
phase() {
	local n w
	n=$(reloads)
	variant=$((variant + 1))
	if [[ $1 == quiet ]]; then
		kill -USR2 "$back_pid"
		table "$variant"
		await_reload "$n"
		w=$(warmed)
		await_warmed "$w"
	else
		kill -USR1 "$back_pid"
		table "$variant" probed
		await_reload "$n"
		sleep $((2 * reload_s)) # the probes' first results
	fi
}
# writer: rewrites the probed table with a new variant every 2 x RELOAD seconds until killed.
writer() {
	local v=$1
	while :; do
		sleep "$every"
		v=$((v + 1))
		table "$v" probed
	done
}

# run PHASE ROUND: one fixed-rate latency run; appends to the R_* arrays.
declare -A R_P50=() R_P99=() R_QPS=() R_RELOADS=() R_NOISE=() R_TO=() R_CPU=()
run() {
	local ph=$1 r=$2 a out s0 s1 b0 b1 u0 u1 n0 n1 du p
	for ((a = 0; a <= RETRIES; a++)); do
		phase "$ph"
		[[ $ph == background ]] && { writer "$variant" & writer_pid=$!; }
		wait_quiet
		out=$raw/$ph-r$r.txt
		((a)) && out=$raw/$ph-r$r.retry$a.txt
		n0=$(reloads) s0=$(proc_cpu "$srv_pid") b0=$(proc_cpu "$back_pid") u0=$(all_busy)
		echo "dnsperf -s 127.0.0.1 -p $port -B -d $queries -l $LAT_SECS -Q $RATE -c $CLIENTS -q $OUTSTANDING -v" >"$out.cmd"
		prof_pid=""
		if ((PROFILE)); then
			{
				tr=$((LAT_SECS >= 8 ? 3 : 1))
				curl -s -o "$out.cpu" "http://127.0.0.1:$pport/debug/pprof/profile?seconds=$((LAT_SECS > tr + 2 ? LAT_SECS - tr - 1 : 1))"
				curl -s -o "$out.trace" "http://127.0.0.1:$pport/debug/pprof/trace?seconds=$tr"
			} &
			prof_pid=$!
		fi
		"${timer[@]}" "${pin_load[@]}" dnsperf -s 127.0.0.1 -p "$port" -B -d "$queries" -l "$LAT_SECS" -Q "$RATE" -c "$CLIENTS" -q "$OUTSTANDING" -v >"$out.v" 2>"$out.stderr" || true
		n1=$(reloads) s1=$(proc_cpu "$srv_pid") b1=$(proc_cpu "$back_pid") u1=$(all_busy)
		if [[ -n $prof_pid ]]; then
			wait "$prof_pid" || true
			curl -s -o "$out.heap" "http://127.0.0.1:$pport/debug/pprof/heap"
		fi
		if [[ -n $writer_pid ]]; then
			kill "$writer_pid" 2>/dev/null || true
			wait "$writer_pid" 2>/dev/null || true
			writer_pid=""
		fi
		du=0
		((${#timer[@]})) && du=$(awk '/^cpu /{print int(($2 + $3) * '"$clk"')}' "$out.stderr")
		QPS=$(awk '/Queries per second/{print $4}' "$out.v")
		RUN=$(awk '/Run time/{print $4}' "$out.v")
		OTHER=$(awk -v d="$((u1 - u0 - (s1 - s0) - (b1 - b0) - du))" -v t="${RUN:-0}" -v c="$clk" 'BEGIN{o=(t>0 ? 100*d/(t*c) : 0); print (o<0 ? 0 : int(o))}')
		((${#timer[@]})) || OTHER=0
		SRVCPU=$(awk -v d="$((s1 - s0))" -v t="${RUN:-0}" -v c="$clk" 'BEGIN{print (t>0 ? int(100*d/(t*c)) : 0)}')
		read -r -a p < <("$gen" latency -in "$out.v" || echo "0 0 0 0")
		grep -v '^> ' "$out.v" >"$out"
		gzip -f "$out.v"
		echo "qps=$QPS reloads=$((n1 - n0)) other_cpu=$OTHER% server_cpu=$SRVCPU%" >>"$out"
		((OTHER <= NOISE_MAX)) && break
		((a < RETRIES)) && log "  $ph: other processes used ${OTHER}% of a CPU, measuring again"
	done
	R_P50[$ph]+="${p[0]} " R_P99[$ph]+="${p[1]} " R_QPS[$ph]+="${QPS:-0} " R_RELOADS[$ph]+="$((n1 - n0)) " R_TO[$ph]+="${p[3]} "
	# The server's CPU per 1,000 queries answered, in ms: what the background work adds, less
	# exposed than the latencies to other processes taking the CPU.
	R_CPU[$ph]+="$(awk -v d="$((s1 - s0))" -v c="$clk" -v q="${QPS:-0}" -v t="${RUN:-0}" 'BEGIN{printf "%.1f", (q*t > 0 ? 1e6*d/c/(q*t) : 0)}') "
	((OTHER > NOISE_MAX)) && R_NOISE[$ph]=1
	log "  $ph: p50 ${p[0]} ms, p99 ${p[1]} ms (achieved ${QPS:-0} qps, ${p[3]} timeouts, $((n1 - n0)) node table reloads, server CPU $SRVCPU%, other processes ${OTHER}% of a CPU)"
}

log "prewarming: one pass of the queries"
"${pin_load[@]}" dnsperf -s 127.0.0.1 -p "$port" -B -d "$queries" -n 1 -l 120 -c "$CLIENTS" -q "$OUTSTANDING" >"$raw/prewarm.txt" 2>&1 || true
for ((r = 1; r <= ROUNDS; r++)); do
	order=(quiet background)
	((r % 2 == 0)) && order=(background quiet)
	log "round $r/$ROUNDS: ${order[*]}"
	for ph in "${order[@]}"; do run "$ph" "$r"; done
done
kill "$srv_pid" "$back_pid" 2>/dev/null || true
wait "$srv_pid" "$back_pid" 2>/dev/null || true
srv_pid="" back_pid=""

# --- report --------------------------------------------------------------------------------------------
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END{if (NR == 0) print ""; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratios=()
read -r -a q99 <<<"${R_P99[quiet]}"
read -r -a b99 <<<"${R_P99[background]}"
for i in "${!q99[@]}"; do ratios+=("$(awk -v b="${b99[$i]}" -v q="${q99[$i]}" 'BEGIN{printf "%.2f", (q > 0 ? b/q : 0)}')"); done
mq=$(median <<<"${R_P99[quiet]}") mb=$(median <<<"${R_P99[background]}")
ratio=$(awk -v b="$mb" -v q="$mq" 'BEGIN{printf "%.2f", (q > 0 ? b/q : 0)}')
{
	echo "| phase | p50 per round (ms) | p99 per round (ms) | p50 (median) | p99 (median) | achieved qps | server CPU per 1k queries (ms) | node table reloads per run | timeouts |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for ph in quiet background; do
		desc="quiet (no probes, no reloads)"
		[[ $ph == background ]] && desc="background ($NODES probed nodes every $PROBE_INTERVAL, a new load each probe; table rewritten every ${every}s)"
		[[ -n ${R_NOISE[$ph]:-} ]] && desc+=" †"
		printf '| %s | %s | %s | %.3f ms | %.3f ms | %.0f | %s | %s | %s |\n' "$desc" "$(echo "${R_P50[$ph]}" | xargs | sed 's/ / \/ /g')" \
			"$(echo "${R_P99[$ph]}" | xargs | sed 's/ / \/ /g')" "$(median <<<"${R_P50[$ph]}")" "$(median <<<"${R_P99[$ph]}")" \
			"$(median <<<"${R_QPS[$ph]}")" "$(echo "${R_CPU[$ph]}" | xargs | sed 's/ / \/ /g')" "$(echo "${R_RELOADS[$ph]}" | xargs | sed 's/ / \/ /g')" "$(echo "${R_TO[$ph]}" | xargs | sed 's/ / \/ /g')"
	done
	echo
	echo "| target | measured | goal | pass |"
	echo "|---|---|---|---|"
	echo "| p99 background ÷ p99 quiet @ $((RATE / 1000))k qps (medians) | $ratio (per round: ${ratios[*]}) | <= 1.10 | $(awk -v r="$ratio" 'BEGIN{print (r <= 1.10 ? "pass" : "**FAIL**")}') |"
	echo
	echo "Command: \`$cmdline\` ($settings${COREDNS:+ COREDNS=$COREDNS}; $(nproc) CPUs, $pinning; isolation: $isolation)"
	echo "CoreDNS: ${COREDNS:-./cmd/coredns at ${coredns_rev:-?}}; $(go version | cut -d' ' -f3); $(dnsperf -h 2>&1 | sed -n 's/^Version /dnsperf /p'); $(uname -sr)"
	echo "Data: $datadesc; $WARM distinct /24s cycling, prewarmed by one pass."
	echo "Latency: dnsperf -Q $RATE -l $LAT_SECS -c $CLIENTS -q $OUTSTANDING -v, p50/p99 of the per-query latencies."
	[[ -n ${R_NOISE[quiet]:-}${R_NOISE[background]:-} ]] && echo "† other processes used more than $NOISE_MAX% of a CPU during at least one run: noisy."
	echo "Raw outputs: ${res#"$root"/}/"
	if ((${#warnings[@]})); then
		echo
		echo "Warnings:"
		printf -- '- %s\n' "${warnings[@]}" | sort -u
	fi
} | tee "$res/summary.md"
