package locate

import (
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// errAuth marks an online API answer that refused our credentials (401,
// 403): a wrong or missing key, which no retry fixes.
var errAuth = errors.New("credentials refused")

// isRedisAuth reports a Redis NOAUTH or WRONGPASS error: a wrong or
// missing password, which no retry fixes.
func isRedisAuth(err error) bool { return redis.IsAuthError(err) }

// authLogEvery bounds the credential warnings: one per source per period.
const authLogEvery = 30 * time.Second

// everyLog logs a warning at most once every authLogEvery.
type everyLog struct {
	mu   sync.Mutex
	last time.Time
}

func (e *everyLog) warningf(format string, v ...any) {
	e.mu.Lock()
	now := time.Now()
	if !e.last.IsZero() && now.Sub(e.last) < authLogEvery {
		e.mu.Unlock()
		return
	}
	e.last = now
	e.mu.Unlock()
	log.Warningf(format, v...)
}
