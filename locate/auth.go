package locate

import (
	"errors"
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
