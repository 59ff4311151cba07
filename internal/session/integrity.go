package session

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
)

// Every chunk of a version 3 file carries two digests (see
// docs/integrity-of-record.md for what they prove):
//
//   - sum, the SHA-256 of the chunk's content: its row (first_seq, count,
//     the times, strs_end), its event records, and the strings rows it
//     introduced (ids strs_end of the previous chunk + 1 .. its own). A
//     chunk whose sum does not match was damaged (or edited); the reader
//     skips it and says so, and reads the rest.
//   - chain, the SHA-256 of the previous chunk's chain and this sum, the
//     first chunk's starting from chainSeed of the session id. A chain
//     that does not link means chunks were removed, reordered or
//     replaced after recording.
//
// Close stores the seal: the chunk count, the last chain and a digest of
// that chain with the final metadata, lost counters and leftovers. A
// reader that finds the chain ending elsewhere, or the metadata changed,
// reports the session modified after recording. Chunks dropped while
// recording (disk full) never enter the chain, so the gap they leave
// links and is reported as lost, not as tampering.

// Integrity values, the outcome of a check (Meta.Integrity).
const (
	// IntegrityIntact: every chunk matches its sum, the chain links and
	// the seal matches.
	IntegrityIntact = "intact"
	// IntegrityUnsealed: what is there checks out, but the session was
	// never closed (or is still being written), so its end is unproven.
	IntegrityUnsealed = "unsealed"
	// IntegrityDamaged: chunks are unreadable or fail their sum (storage
	// damage, or an edit); the rest was read.
	IntegrityDamaged = "damaged"
	// IntegrityModified: the chain or the seal does not match: the
	// session was modified after recording.
	IntegrityModified = "modified"
	// IntegrityUnverifiable: a format older than version 3, without digests.
	IntegrityUnverifiable = "unverifiable"
)

// Damage is one problem a Reader found: a range of events it could not
// read, or a break in the record's integrity.
type Damage struct {
	FirstSeq uint64 `json:"first_seq,omitempty"` // first event concerned; 0 when none
	Count    uint64 `json:"count,omitempty"`     // events concerned; 0 when unknown
	Problem  string `json:"problem"`             // one line
	Modified bool   `json:"modified,omitempty"`  // evidence of change after recording, not just damage
}

// String is the one-line warning.
func (d Damage) String() string {
	switch {
	case d.FirstSeq == 0:
		return d.Problem
	case d.Count == 0:
		return fmt.Sprintf("events from %d on: %s", d.FirstSeq, d.Problem)
	case d.Count == 1:
		return fmt.Sprintf("event %d: %s", d.FirstSeq, d.Problem)
	}
	return fmt.Sprintf("events %d-%d (%d): %s", d.FirstSeq, d.FirstSeq+d.Count-1, d.Count, d.Problem)
}

// chainSeed starts the chain of session id, so that chunks cannot be
// moved between sessions unnoticed.
func chainSeed(id string) [32]byte {
	return sha256.Sum256([]byte("polygraph session chain v3\x00" + id))
}

// link is the chain value of a chunk with sum after prev.
func link(prev, sum [32]byte) [32]byte {
	var b [64]byte
	copy(b[:32], prev[:])
	copy(b[32:], sum[:])
	return sha256.Sum256(b[:])
}

// chunkRow is what a chunk's sum covers besides its data and strings.
type chunkRow struct {
	firstSeq, count, firstTS, minTS, maxTS int64
	strsFrom, strsEnd                      int64 // its strings are ids strsFrom+1 .. strsEnd
}

// sumChunk is a chunk's sum. str returns the string with an id; a
// missing one (a damaged strings table) makes the sum wrong.
func sumChunk(r chunkRow, data []byte, str func(id int64) (string, bool)) [32]byte {
	h := sha256.New()
	var buf []byte
	buf = append(buf, "polygraph chunk v3\x00"...)
	for _, v := range [...]int64{r.firstSeq, r.count, r.firstTS, r.minTS, r.maxTS, r.strsFrom, r.strsEnd} {
		buf = binary.AppendVarint(buf, v)
	}
	buf = binary.AppendUvarint(buf, uint64(len(data)))
	h.Write(buf)
	h.Write(data)
	for id := r.strsFrom + 1; id <= r.strsEnd; id++ {
		s, ok := str(id)
		if !ok {
			h.Write([]byte{0xff})
			continue
		}
		buf = binary.AppendUvarint(buf[:0], uint64(len(s)))
		h.Write(buf)
		h.Write([]byte(s))
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// accept gives b its place in the chain: the strings ids it covers
// (with those of batches dropped since the last kept one), its sum and
// its chain value. Owned by store.
func (w *Writer) accept(b *batch) {
	if len(w.carry) > 0 {
		b.strings = append(w.carry, b.strings...)
		w.carry = nil
	}
	b.strsFrom, b.strsEnd = w.strsEnd, w.strsEnd
	if n := len(b.strings); n > 0 {
		b.strsEnd = b.strings[n-nStrCols].(int64)
	}
	strs := b.strings
	b.sum = sumChunk(chunkRow{int64(b.firstSeq), int64(b.n), b.firstTS, b.minTS, b.maxTS, b.strsFrom, b.strsEnd}, b.data,
		func(id int64) (string, bool) {
			i := int(id-b.strsFrom-1) * nStrCols
			if i < 0 || i+1 >= len(strs) || strs[i].(int64) != id {
				return "", false
			}
			return strs[i+1].(string), true
		})
	b.chain = link(w.chain, b.sum)
	w.chain, w.strsEnd = b.chain, b.strsEnd
}

// stateHash digests the final metadata, lost counters and leftovers, in
// the order both the writer and the reader go through them.
type stateHash struct{ h hash.Hash }

func newStateHash(meta, writer string) *stateHash {
	s := &stateHash{h: sha256.New()}
	s.str("polygraph state v3")
	s.str(meta)
	s.str(writer)
	return s
}

func (s *stateHash) str(v string) {
	s.h.Write(binary.AppendUvarint(nil, uint64(len(v))))
	s.h.Write([]byte(v))
}

func (s *stateHash) int(v int64) { s.h.Write(binary.AppendVarint(nil, v)) }

func (s *stateHash) lost(stage string, n int64) {
	s.str("lost")
	s.str(stage)
	s.int(n)
}

func (s *stateHash) leftover(pid int64, execID, comm, argv string) {
	s.str("leftover")
	s.int(pid)
	s.str(execID)
	s.str(comm)
	s.str(argv)
}

func (s *stateHash) sum() [32]byte {
	var out [32]byte
	s.h.Sum(out[:0])
	return out
}

// seal is the meta row 'seal' Close writes.
type seal struct {
	Chunks int64  `json:"chunks"` // chunks in the file
	Events uint64 `json:"events"` // events in them
	Chain  string `json:"chain"`  // hex: the last chunk's chain (the seed when there is none)
	State  string `json:"state"`  // hex: stateHash of the final metadata
	Digest string `json:"digest"` // hex: SHA-256 of chain and state, the session's final digest
}

func newSeal(chunks int64, events uint64, chain, state [32]byte) seal {
	return seal{Chunks: chunks, Events: events, Chain: hex.EncodeToString(chain[:]), State: hex.EncodeToString(state[:]),
		Digest: sealDigest(chain, state)}
}

// sealDigest is the session's final digest.
func sealDigest(chain, state [32]byte) string {
	d := sha256.Sum256(append(append([]byte("polygraph seal v3\x00"), chain[:]...), state[:]...))
	return hex.EncodeToString(d[:])
}
