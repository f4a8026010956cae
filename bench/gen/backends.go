package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// cmdBackends serves the nodes' health endpoints for bench/background.sh:
// N HTTP listeners on 127.0.0.1:PORT..PORT+N-1, each answering
// {"load": L} on every path. With -vary, L moves on every request, so that
// each probe reports a new load (the probes' worst case: every result
// changes a node's status); else it is fixed per listener. SIGUSR1
// switches varying on, SIGUSR2 off. It runs until SIGTERM or SIGINT.
func cmdBackends(args []string) error {
	fs := flag.NewFlagSet("backends", flag.ExitOnError)
	port := fs.Int("port", 16000, "the first port")
	n := fs.Int("n", 100, "listeners")
	vary := fs.Bool("vary", false, "a new load on every request")
	fs.Parse(args)
	var varying atomic.Bool
	varying.Store(*vary)
	var servers []*http.Server
	for i := range *n {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port+i))
		if err != nil {
			return err
		}
		var hits atomic.Uint64
		base := 0.05 + float64(i%20)/100 // 0.05..0.24: below any shedding watermark
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			load := base
			if varying.Load() {
				load += float64(hits.Add(1)%5) / 100
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, "{\"load\": %.2f}\n", load)
		})}
		servers = append(servers, srv)
		go srv.Serve(ln)
	}
	fmt.Fprintf(os.Stderr, "gen backends: %d listeners on 127.0.0.1:%d-%d, varying %v\n", *n, *port, *port+*n-1, *vary)
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT)
	for s := range sig {
		switch s {
		case syscall.SIGUSR1:
			varying.Store(true)
		case syscall.SIGUSR2:
			varying.Store(false)
		default:
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			for _, srv := range servers {
				srv.Shutdown(ctx)
			}
			cancel()
			return nil
		}
	}
	return nil
}
