// Package resolvers is the resolver map: for each resolver that sends no
// usable ECS, where its clients are (a distribution over places learned
// from beacons and from the ECS it sends on some queries), bounded in
// memory and decaying, published as an immutable snapshot that decisions
// read lock-free.
package resolvers

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"sync"
	"time"
)

// A beacon label is TTTTTTTTNNNNNNNN-MMMMMMMMMMMMMMMM: the minting time (unix
// seconds) and a nonce in hex, then the first 8 bytes of their HMAC-SHA256
// under the beacon key. Only labels gslb minted verify; the time bounds how
// long one may be used.
const (
	stampLen = 16 // 8 hex digits of seconds, 8 of nonce
	macLen   = 16
	LabelLen = stampLen + 1 + macLen
	// MinKeyLen is the shortest beacon key accepted, in bytes.
	MinKeyLen = 16
)

// Labeler mints and checks beacon labels under one key.
type Labeler struct {
	key  []byte
	pool sync.Pool
}

// NewLabeler returns a Labeler for key (at least MinKeyLen bytes).
func NewLabeler(key []byte) (*Labeler, error) {
	if len(key) < MinKeyLen {
		return nil, errors.New("a beacon key has at least 16 bytes")
	}
	l := &Labeler{key: append([]byte(nil), key...)}
	l.pool.New = func() any { return hmac.New(sha256.New, l.key) }
	return l, nil
}

// Mint returns a label minted at t with nonce n.
func (l *Labeler) Mint(t time.Time, n uint32) string {
	var b [LabelLen]byte
	var raw [8]byte
	binary.BigEndian.PutUint32(raw[:4], uint32(t.Unix()))
	binary.BigEndian.PutUint32(raw[4:], n)
	hex.Encode(b[:stampLen], raw[:])
	b[stampLen] = '-'
	l.mac(b[:stampLen], b[stampLen+1:])
	return string(b[:])
}

// mac writes the hex MAC of stamp into dst (macLen bytes).
func (l *Labeler) mac(stamp, dst []byte) {
	h := l.pool.Get().(hash.Hash)
	h.Reset()
	h.Write(stamp)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	l.pool.Put(h)
	hex.Encode(dst, sum[:macLen/2])
}

// Fresh is a label minted at t with a random nonce.
func (l *Labeler) Fresh(t time.Time) string {
	var n [4]byte
	rand.Read(n[:])
	return l.Mint(t, binary.BigEndian.Uint32(n[:]))
}

// Check reports whether label is one this key minted, and when; labels
// are compared in lower case, as DNS names are.
func (l *Labeler) Check(label string) (time.Time, bool) {
	if len(label) != LabelLen || label[stampLen] != '-' {
		return time.Time{}, false
	}
	var lb [LabelLen]byte
	for i := range LabelLen {
		c := label[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lb[i] = c
	}
	var raw [8]byte
	if _, err := hex.Decode(raw[:], lb[:stampLen]); err != nil {
		return time.Time{}, false
	}
	var want [macLen]byte
	l.mac(lb[:stampLen], want[:])
	if !hmac.Equal(want[:], lb[stampLen+1:]) {
		return time.Time{}, false
	}
	return time.Unix(int64(binary.BigEndian.Uint32(raw[:4])), 0), true
}
