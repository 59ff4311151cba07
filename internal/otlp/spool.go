package otlp

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// spool holds the requests waiting to be sent, oldest first. While the
// backend answers they wait in memory (up to memSpool bytes), for the
// milliseconds until they are sent; once it stops answering, or is too
// slow to keep that short, they go to disk when the spool has a
// directory, and so does whatever is left at close: what could not be
// delivered outlives the process. It is bounded by bytes: past the bound
// the oldest are dropped and counted.
//
// On disk, every exporter has its own directory under the spool's root,
// <start>-<pid>, holding a lock file it keeps locked while it lives and
// one file per request, <seq>-<signal>-<items>.pb. A new exporter adopts
// the directories whose lock it can take (their exporter is gone: killed,
// crashed, or stopped with the backend down) and sends them first.
type spool struct {
	root, dir string
	lock      *os.File
	max       int64

	mu      sync.Mutex
	items   []*item
	bytes   int64
	mem     int64 // of bytes, those held in memory
	down    bool  // the backend is not answering: write to disk at once
	seq     uint64
	dropped [2]int64 // items dropped for room, by signal (traces, logs)
	adopted int      // requests taken over from earlier exporters
}

// memSpool bounds the bytes waiting in memory before they go to disk.
const memSpool = 4 << 20

// item is one spooled request.
type item struct {
	name string // the file, on disk
	seq  uint64 // its place in the order, which its file name keeps
	sig  signal
	n    int // spans or log records
	size int64
	data []byte // in memory only
}

// openSpool opens a spool under root ("" for memory only), adopting what
// earlier exporters left there.
func openSpool(root string, max int64) (*spool, error) {
	if max <= 0 {
		max = defaultSpoolMax
	}
	s := &spool{root: root, max: max}
	if root == "" {
		return s, nil
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("OTLP spool: %w", err)
	}
	s.dir = filepath.Join(root, fmt.Sprintf("%019d-%d", time.Now().UnixNano(), os.Getpid()))
	if err := os.Mkdir(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("OTLP spool: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("OTLP spool: %w", err)
	}
	if !tryLock(lock) {
		lock.Close()
		return nil, fmt.Errorf("OTLP spool: %s is locked", s.dir)
	}
	s.lock = lock
	s.adopt()
	return s, nil
}

// adopt moves the requests of every directory under the root whose
// exporter is gone into this one, oldest directory first.
func (s *spool) adopt() {
	ents, err := os.ReadDir(s.root)
	if err != nil {
		return
	}
	var dirs []string
	for _, e := range ents {
		if p := filepath.Join(s.root, e.Name()); e.IsDir() && p != s.dir {
			dirs = append(dirs, p)
		}
	}
	sort.Strings(dirs) // by start time
	for _, d := range dirs {
		lock, err := os.OpenFile(filepath.Join(d, "lock"), os.O_RDWR, 0)
		if err != nil {
			continue // being removed by its adopter, or not a spool
		}
		if !tryLock(lock) {
			lock.Close()
			continue // its exporter is alive
		}
		files, _ := os.ReadDir(d)
		names := make([]string, 0, len(files))
		for _, f := range files {
			if strings.HasSuffix(f.Name(), ".pb") {
				names = append(names, f.Name())
			}
		}
		sort.Strings(names)
		for _, name := range names {
			sig, n, ok := parseItemName(name)
			if !ok {
				continue
			}
			fi, err := os.Stat(filepath.Join(d, name))
			if err != nil {
				continue
			}
			s.seq++
			it := &item{sig: sig, n: n, size: fi.Size(), seq: s.seq}
			it.name = it.fileName()
			if os.Rename(filepath.Join(d, name), filepath.Join(s.dir, it.name)) != nil {
				continue
			}
			s.items = append(s.items, it)
			s.bytes += it.size
			s.adopted++
		}
		os.RemoveAll(d)
		lock.Close()
	}
	s.trim()
}

// fileName names the request's file.
func (it *item) fileName() string { return fmt.Sprintf("%012d-%c-%d.pb", it.seq, it.sig, it.n) }

// parseItemName reads a request file's signal and item count.
func parseItemName(name string) (signal, int, bool) {
	parts := strings.Split(strings.TrimSuffix(name, ".pb"), "-")
	if len(parts) != 3 || len(parts[1]) != 1 {
		return 0, 0, false
	}
	n, err := strconv.Atoi(parts[2])
	sig := signal(parts[1][0])
	if err != nil || sig != signalTraces && sig != signalLogs {
		return 0, 0, false
	}
	return sig, n, true
}

// put adds a request of n items: in memory while the backend answers
// and there is room, else on disk. A write that fails (a full disk)
// keeps it in memory instead: the bound still holds.
func (s *spool) put(sig signal, n int, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	it := &item{sig: sig, n: n, size: int64(len(data)), seq: s.seq, data: data}
	s.mem += it.size
	s.items = append(s.items, it)
	s.bytes += it.size
	if s.down || s.mem > memSpool {
		s.spill()
	}
	s.trim()
}

// setDown says whether the backend answers; when it stops, what waits in
// memory goes to disk.
func (s *spool) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
	if down {
		s.spill()
	}
}

// spill writes the requests held in memory to disk, oldest first.
func (s *spool) spill() {
	if s.dir == "" {
		return
	}
	for _, it := range s.items {
		if it.data == nil {
			continue
		}
		name := it.fileName()
		if writeFileAtomic(filepath.Join(s.dir, name), it.data) != nil {
			return // the disk is full or gone: they stay in memory
		}
		it.name, it.data = name, nil
		s.mem -= it.size
	}
}

// trim drops the oldest requests while the spool is over its bound,
// keeping the newest even if it alone is over.
func (s *spool) trim() {
	for s.bytes > s.max && len(s.items) > 1 {
		it := s.items[0]
		s.items = s.items[1:]
		s.bytes -= it.size
		s.dropped[sigIndex(it.sig)] += int64(it.n)
		s.remove(it)
	}
}

func sigIndex(sig signal) int {
	if sig == signalLogs {
		return 1
	}
	return 0
}

// next returns the oldest requests of one signal, together at most
// maxBytes (at least one), for one request.
func (s *spool) next(maxBytes int64) []*item {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.items) == 0 {
		return nil
	}
	sig := s.items[0].sig
	var out []*item
	var size int64
	for _, it := range s.items {
		if it.sig != sig || len(out) > 0 && size+it.size > maxBytes {
			break
		}
		out = append(out, it)
		size += it.size
	}
	return out
}

// load returns the bytes of a request.
func (s *spool) load(it *item) ([]byte, error) {
	s.mu.Lock()
	data, name := it.data, it.name
	s.mu.Unlock()
	if data != nil || name == "" {
		return data, nil
	}
	return os.ReadFile(filepath.Join(s.dir, name))
}

// done removes requests that were delivered (or refused for good). Those
// trim already dropped are skipped.
func (s *spool) done(items []*item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gone := map[*item]bool{}
	for _, it := range items {
		gone[it] = true
	}
	kept := s.items[:0]
	for _, it := range s.items {
		if gone[it] {
			s.bytes -= it.size
			s.remove(it)
			continue
		}
		kept = append(kept, it)
	}
	s.items = kept
}

// contains reports whether it is still spooled (trim may have dropped it
// while it was being sent).
func (s *spool) contains(it *item) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.items {
		if x == it {
			return true
		}
	}
	return false
}

// remove forgets a request that left the spool.
func (s *spool) remove(it *item) {
	if it.data != nil {
		s.mem -= it.size
	}
	if it.name != "" {
		os.Remove(filepath.Join(s.dir, it.name))
	}
}

// pending returns the items waiting, by signal.
func (s *spool) pending() (traces, logs int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range s.items {
		if it.sig == signalLogs {
			logs += int64(it.n)
		} else {
			traces += int64(it.n)
		}
	}
	return traces, logs
}

// close releases the spool, writing what waits in memory to disk: an
// empty directory is removed; one with requests stays, unlocked, for the
// next exporter to adopt. It returns the items left on disk (spooled)
// and those it could not write (lost with the process), by signal.
func (s *spool) close() (disk, lost [2]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spill()
	for _, it := range s.items {
		if it.name != "" {
			disk[sigIndex(it.sig)] += int64(it.n)
		} else {
			lost[sigIndex(it.sig)] += int64(it.n)
		}
	}
	if s.dir != "" {
		if disk == [2]int64{} {
			os.RemoveAll(s.dir)
		}
		if s.lock != nil {
			s.lock.Close()
		}
	}
	return disk, lost
}

// writeFileAtomic writes data to path through a temporary file, so a
// crash leaves the whole request or none of it.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
