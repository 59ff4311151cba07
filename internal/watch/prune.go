package watch

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/session"
)

// Prune deletes watch-mode sessions (and only those: what `run` recorded
// is the user's) older than keep, then the oldest until the rest fit in
// maxSize bytes. Sessions in open are being written and are kept. It
// returns the ids it deleted.
func Prune(home string, keep time.Duration, maxSize int64, open map[string]bool, now time.Time) ([]string, error) {
	metas, err := session.List(home) // newest first
	if err != nil {
		return nil, err
	}
	var gone []string
	var total int64
	for _, m := range metas {
		if m.Mode != "watch" || open[m.ID] || m.Path == "" {
			continue
		}
		size := fileSize(m.Path)
		old := keep > 0 && now.Sub(m.StartedAt) > keep
		if !old && (maxSize <= 0 || total+size <= maxSize) {
			total += size
			continue
		}
		for _, suf := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(m.Path + suf); err != nil && !os.IsNotExist(err) {
				slog.Warn("watch: prune", "session", m.ID, "error", err)
			}
		}
		gone = append(gone, m.ID)
	}
	slices.Sort(gone)
	return gone, nil
}

// fileSize is a session's size on disk, its SQLite side files included.
func fileSize(path string) int64 {
	var n int64
	for _, suf := range []string{"", "-wal", "-shm"} {
		if fi, err := os.Stat(path + suf); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// ParseAge reads a retention age: a Go duration, or a number of days
// ("7d").
func ParseAge(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		d, err := strconv.ParseFloat(n, 64)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("bad age %q: want a duration such as 12h or 7d", s)
		}
		return time.Duration(d * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad age %q: want a duration such as 12h or 7d", s)
	}
	return d, nil
}

// ParseSize reads a size in bytes with an optional K, M, G or T suffix
// (powers of 1024).
func ParseSize(s string) (int64, error) {
	mult := int64(1)
	t := strings.TrimSuffix(strings.ToUpper(s), "B")
	if t != "" {
		if i := strings.IndexByte("KMGT", t[len(t)-1]); i >= 0 {
			mult = 1 << (10 * (i + 1))
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q: want bytes such as 500M or 1G", s)
	}
	return int64(n * float64(mult)), nil
}
