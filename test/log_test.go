package test

import (
	"context"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/redis/go-redis/v9"
)

// Tests that read log lines set the output themselves (captureLog).
func init() {
	clog.Discard()
	redis.SetLogger(quietRedis{})
}

// quietRedis drops go-redis's own dial errors, expected once Redis is stopped.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
