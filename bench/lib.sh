# Shared by bench/dns.sh and bench/background.sh; sourced once res (the results directory),
# QUIET_MAX and QUIET_WAIT are set.
# shellcheck shell=bash

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" | tee -a "$res/log.txt" >&2; }
warn() { log "WARNING: $*"; warnings+=("$*"); }
warnings=()

all_busy() { awk '/^cpu /{print $2 + $3 + $4; exit}' /proc/stat; } # user+nice+system

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

# wait_ready PORT PID: waits (at most 120 s, while PID runs) until the ready endpoint on
# 127.0.0.1:PORT answers 200.
wait_ready() {
	local i
	for ((i = 0; i < 600; i++)); do
		curl -fs -o /dev/null "http://127.0.0.1:$1/ready" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}
