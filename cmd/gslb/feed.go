package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gslbdns/gslb/edgeagent"
	"github.com/gslbdns/gslb/feed"
)

const feedUsage = `usage: gslb feed -log FILE -url URL -token-file FILE -node ID [flags]

Tails an nginx access log, counts what the node served per client network
(/24, IPv6 /48) every -interval, and posts the rows to gslb's POST /v1/feed.
Undelivered rows wait in -spool-dir and go out, oldest first, when gslb
answers; the offset file and the spool keep every line counted once across
restarts and log rotation (rename and nginx -s reopen, or copytruncate).

Log formats (-format), the nginx log_format line to paste:

  json:
    %s
  combined:
    %s

Then: access_log /var/log/nginx/access.log gslb_json;
The TTFB is $upstream_response_time when an upstream answered (a miss), else
$request_time (a cache hit); a 5xx counts as an error, HIT, STALE, UPDATING
and REVALIDATED as cache hits.

Flags:
`

func feedAgent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("feed", flag.ContinueOnError)
	var c edgeagent.Config
	fs.StringVar(&c.Log, "log", "", "the access log to tail (required)")
	fs.StringVar(&c.Format, "format", edgeagent.FormatJSON, "the log's format: json or combined (see above)")
	fs.StringVar(&c.URL, "url", "", "gslb's feed endpoint, e.g. http://10.0.0.53:9154/v1/feed (required)")
	fs.StringVar(&c.TokenFile, "token-file", "", "the file holding this source's token, the feed block's token_file of the source (required)")
	fs.StringVar(&c.Node, "node", "", "the node id of the node table this edge serves for (required)")
	fs.StringVar(&c.Edge, "edge", "", "this host's name, when several edges send for one node (default: none)")
	fs.DurationVar(&c.Interval, "interval", 10*time.Second, "how often to read the log, send a window of rows and print the summary line")
	fs.StringVar(&c.OffsetFile, "offset-file", "", "where the position in the log is kept across restarts (default: LOG.gslb-offset)")
	fs.StringVar(&c.SpoolDir, "spool-dir", "", "where rows wait while gslb is unreachable (default: LOG.gslb-spool)")
	spoolMax := fs.Int64("spool-max", 64<<20, "the spool's bound in bytes: past it the oldest rows are dropped, and counted in the summary")
	fs.DurationVar(&c.Timeout, "timeout", 10*time.Second, "the time a POST may take")
	fs.DurationVar(&c.MaxBackoff, "max-backoff", time.Minute, "the longest wait between failed deliveries (it doubles from 1s)")
	fs.IntVar(&c.MaxRows, "max-rows", feed.DefaultMaxRows, "rows per request: at most the feed block's max_rows")
	fs.BoolVar(&c.FromStart, "from-start", false, "on the first run (no offset file), read the log from its start rather than its end")
	fs.StringVar(&c.Beacon, "beacon", "", "the resolvers block's beacon name (e.g. b.example.org): fetches of LABEL.NAME (the json format's host) are reported to -beacon-url (default: none)")
	fs.StringVar(&c.BeaconURL, "beacon-url", "", "where beacon fetches go (default: -url with /v1/feed replaced by /v1/beacons)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, feedUsage, edgeagent.LogFormatJSON, edgeagent.LogFormatCombined)
		fs.PrintDefaults()
	}
	if ok, st := parse(fs, args, stderr); !ok {
		return st
	}
	if fs.NArg() != 0 || c.Log == "" || c.URL == "" || c.TokenFile == "" || c.Node == "" ||
		c.Format != edgeagent.FormatJSON && c.Format != edgeagent.FormatCombined || c.Interval <= 0 || c.MaxRows < 1 || *spoolMax < 1 {
		fs.Usage()
		return exitUsage
	}
	c.SpoolMax = *spoolMax
	c.Beacon = strings.ToLower(strings.TrimSuffix(c.Beacon, "."))
	if c.Beacon != "" && c.BeaconURL == "" {
		c.BeaconURL = strings.TrimSuffix(c.URL, "/v1/feed") + "/v1/beacons"
	}
	if c.OffsetFile == "" {
		c.OffsetFile = c.Log + ".gslb-offset"
	}
	if c.SpoolDir == "" {
		c.SpoolDir = c.Log + ".gslb-spool"
	}
	c.Out = stdout
	a, err := edgeagent.New(c)
	if err != nil {
		return fail(stderr, err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := a.Run(ctx); err != nil {
		return fail(stderr, err)
	}
	return exitOK
}
