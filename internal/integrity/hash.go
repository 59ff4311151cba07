package integrity

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
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

// digest is what hashing a file yields. md5 is "" until a source that
// lists MD5s (dpkg) asks for it (hashCache.md5): most files a session runs
// that dpkg does not own (an agent's own runtime from npm, the workspace's
// builds) are never read for it.
type digest struct {
	sha256, md5 string
	size        int64
	key         fileKey // the version hashed, when keyed
	keyed       bool
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
		return hashFile(ctx, f, true)
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

	call.d, call.err = hashFile(ctx, f, false)
	call.d.key, call.d.keyed = k, true
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

// md5 returns the MD5 of the file d was hashed from, f, reading f again
// for it the first time it is asked (the cache then keeps it with d).
// The second read is of the same open file and must find the same
// version: a file changed between the two reads is refused, not judged
// by a digest of one version and an MD5 of another.
func (c *hashCache) md5(ctx context.Context, f *os.File, d digest) (string, error) {
	if sum, ok := c.knownMD5(d); ok {
		return sum, nil
	}
	m := md5.New()
	if _, err := io.Copy(m, ctxReader{ctx, io.NewSectionReader(f, 0, 1<<62)}); err != nil {
		return "", fmt.Errorf("read for md5: %w", err)
	}
	if k, ok, err := stat(f); err != nil || !ok || k != d.key {
		return "", errors.New("changed while it was hashed")
	}
	sum := hex.EncodeToString(m.Sum(nil))
	c.mu.Lock()
	if e, ok := c.m[d.key]; ok && e.sha256 == d.sha256 {
		e.md5 = sum
		c.m[d.key] = e
	}
	c.mu.Unlock()
	return sum, nil
}

// knownMD5 is the MD5 of the file d was hashed from, when it is known
// without reading the file.
func (c *hashCache) knownMD5(d digest) (string, bool) {
	if d.md5 != "" || !d.keyed {
		return d.md5, true // hashFile computed it with the SHA-256
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[d.key]
	return e.md5, ok && e.md5 != ""
}

// hashFile reads f from the start once, feeding SHA-256 (what every
// source but dpkg lists) and, withMD5, MD5 (what dpkg's md5sums list).
// MD5 costs about half again as much as SHA-256 with the CPU's SHA
// instructions, so a cached file gets it only when asked (hashCache.md5);
// an uncached one (no stable key to keep it under) gets both at once.
// It stops when ctx ends: a recording that ends mid-way through a large
// binary does not wait for it.
func hashFile(ctx context.Context, f *os.File, withMD5 bool) (digest, error) {
	s := sha256.New()
	var w io.Writer = s
	var m hash.Hash
	if withMD5 {
		m = md5.New()
		w = io.MultiWriter(s, m)
	}
	n, err := io.Copy(w, ctxReader{ctx, io.NewSectionReader(f, 0, 1<<62)})
	if err != nil {
		return digest{}, fmt.Errorf("read: %w", err)
	}
	d := digest{sha256: hex.EncodeToString(s.Sum(nil)), size: n}
	if m != nil {
		d.md5 = hex.EncodeToString(m.Sum(nil))
	}
	return d, nil
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
