package integrity

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// fileKey identifies one version of a file without reading it. ctime is
// in the key because a rewrite that restores size and mtime (touch -r)
// cannot restore ctime.
type fileKey struct {
	dev, ino    uint64
	size        int64
	mtime, ctim int64 // ns
}

// digest is what hashing a file yields.
type digest struct {
	sha256, md5 string
	size        int64
}

// hashCache remembers digests by fileKey. It is bounded: past max entries
// it forgets everything and starts again, which costs one rehash per file
// still in use and never grows without bound in a session that builds
// thousands of binaries. Concurrent misses on one key hash once: the
// workers of a build loop's burst wait for the first instead of each
// reading the file.
type hashCache struct {
	mu           sync.Mutex
	max          int
	m            map[fileKey]digest
	inflight     map[fileKey]*hashCall
	hits, misses atomic.Uint64
}

// hashCall is a hash in progress; done closes when d and err are set.
type hashCall struct {
	done chan struct{}
	d    digest
	err  error
}

func newHashCache(max int) *hashCache {
	if max <= 0 {
		max = 4096
	}
	return &hashCache{max: max, m: make(map[fileKey]digest), inflight: make(map[fileKey]*hashCall)}
}

// stat returns f's key, refusing what is not a regular file.
func stat(f *os.File) (fileKey, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return fileKey{}, false, fmt.Errorf("stat: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fileKey{}, false, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	k, ok := keyOf(fi)
	return k, ok, nil
}

// cached returns f's digest if the cache has it, without reading f.
func (c *hashCache) cached(f *os.File) (digest, bool) {
	k, ok, err := stat(f)
	if err != nil || !ok {
		return digest{}, false
	}
	c.mu.Lock()
	d, hit := c.m[k]
	c.mu.Unlock()
	return d, hit // not counted: the digest call that follows counts it
}

// digest returns f's digest, from the cache when f's key is known.
func (c *hashCache) digest(ctx context.Context, f *os.File) (digest, error) {
	k, ok, err := stat(f)
	if err != nil {
		return digest{}, err
	}
	if !ok {
		c.misses.Add(1)
		return hashFile(ctx, f)
	}
	c.mu.Lock()
	if d, hit := c.m[k]; hit {
		c.mu.Unlock()
		c.hits.Add(1)
		return d, nil
	}
	if call, busy := c.inflight[k]; busy {
		c.mu.Unlock()
		<-call.done
		c.hits.Add(1)
		return call.d, call.err
	}
	call := &hashCall{done: make(chan struct{})}
	c.inflight[k] = call
	c.mu.Unlock()
	c.misses.Add(1)

	call.d, call.err = hashFile(ctx, f)
	c.mu.Lock()
	delete(c.inflight, k)
	if call.err == nil {
		if len(c.m) >= c.max {
			clear(c.m)
		}
		c.m[k] = call.d
	}
	c.mu.Unlock()
	close(call.done)
	return call.d, call.err
}

// hashFile reads f from the start once, feeding SHA-256 (what every
// source but dpkg lists) and MD5 (what dpkg's md5sums list). Computing MD5
// for every file costs about a third more on a miss and saves a second
// read of dpkg-owned files.
// It stops when ctx ends: a recording that ends mid-way through a large
// binary does not wait for it.
func hashFile(ctx context.Context, f *os.File) (digest, error) {
	s, m := sha256.New(), md5.New()
	n, err := io.Copy(io.MultiWriter(s, m), ctxReader{ctx, io.NewSectionReader(f, 0, 1<<62)})
	if err != nil {
		return digest{}, fmt.Errorf("read: %w", err)
	}
	return digest{sha256: hex.EncodeToString(s.Sum(nil)), md5: hex.EncodeToString(m.Sum(nil)), size: n}, nil
}

// ctxReader fails reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// Stats counts hash-cache lookups, for the bench and the session's log.
type Stats struct {
	Hits, Misses uint64
}

// HitRate is the share of lookups the cache answered; 0 before any.
func (s Stats) HitRate() float64 {
	if s.Hits+s.Misses == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Hits+s.Misses)
}
