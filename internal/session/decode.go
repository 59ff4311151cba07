package session

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/polygraph/polygraph/internal/event"
)

// maxReadInterned bounds an interner, as maxInterned bounds the writer's
// path cache: past it the interner starts over, so a read of a week-long
// `watch` streamed through a callback that keeps nothing stays flat.
const maxReadInterned = 1 << 17

// interner hands out one copy of each repeated string an Events call
// reads. A session repeats the same few thousand paths, comms, exec ids
// and access modes a million times; without it every event read would
// hold its own copies. It also allocates the events, slabEvents at a
// time.
type interner struct {
	m    map[string]string
	slab []event.Event
}

// slabEvents is how many events are allocated together: as many as fit
// 16 KiB, one of the allocator's size classes, where one event alone
// would be rounded up from its 496 bytes to 512. A slab lives as long as
// any of its events: a caller keeping one event in thirty keeps them
// all, one keeping every event (the report) saves 3 % of its memory and
// most of the time allocating them takes.
const slabEvents = 16 << 10 / int(unsafe.Sizeof(event.Event{}))

// event returns a new zero event.
func (in *interner) event() *event.Event {
	if len(in.slab) == 0 {
		in.slab = make([]event.Event, slabEvents)
	}
	ev := &in.slab[0]
	in.slab = in.slab[1:]
	return ev
}

func newInterner() *interner { return &interner{m: make(map[string]string, 1024)} }

// str returns the shared copy of s, which the caller owns and lets the
// interner keep (a string the driver just allocated).
func (in *interner) str(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := in.m[s]; ok {
		return v
	}
	in.add(s)
	return s
}

// bytes returns the shared copy of b as a string; b is not kept.
func (in *interner) bytes(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if v, ok := in.m[string(b)]; ok { // no allocation: a map lookup by string(b)
		return v
	}
	s := string(b)
	in.add(s)
	return s
}

func (in *interner) add(s string) {
	if len(in.m) >= maxReadInterned {
		clear(in.m)
	}
	in.m[s] = s
}

// kind returns the event.Kind constant spelled s (or an interned copy of
// an unknown kind: a newer polygraph's session).
func (in *interner) kind(s string) event.Kind {
	if k, ok := kindByName[s]; ok {
		return k
	}
	return event.Kind(in.str(s))
}

// kindByName maps the kinds' names to the constants.
var kindByName = func() map[string]event.Kind {
	m := make(map[string]event.Kind, len(event.Kinds))
	for _, k := range event.Kinds {
		m[string(k)] = k
	}
	return m
}()

// decodeDataInterned is decodeData through decodeDataFast where it can.
func decodeDataInterned(data []byte, ev *event.Event, in *interner) error {
	if decodeDataFast(data, ev, in) {
		return nil
	}
	*ev = columnsOf(ev)
	return decodeData(data, ev)
}

// decodeDataFast fills the non-column fields of ev from a data column
// like decodeData, about ten times faster and sharing repeated strings
// through in. It reads the JSON appendData writes: an object of the keys
// of dataView with integers, booleans, arrays of strings and strings
// without escapes. It returns false for anything else (an escape, a
// null, a fraction, a key it does not know, such as a field added to
// event.Event since it was written, or JSON that is not valid), having
// possibly set some fields of ev: the caller then resets them and uses
// decodeData, which decides.
func decodeDataFast(data []byte, ev *event.Event, in *interner) bool {
	p := dataParser{b: data, in: in}
	p.space()
	if !p.byte('{') {
		return false
	}
	p.space()
	if p.byte('}') {
		return p.end()
	}
	for {
		key, ok := p.rawString()
		if !ok {
			return false
		}
		p.space()
		if !p.byte(':') {
			return false
		}
		p.space()
		if !p.field(key, ev) {
			return false
		}
		p.space()
		if p.byte(',') {
			p.space()
			continue
		}
		if p.byte('}') {
			return p.end()
		}
		return false
	}
}

// dataParser walks one data column for decodeDataFast.
type dataParser struct {
	b   []byte
	i   int
	in  *interner
	esc []byte // an unescaped string
}

// field decodes the value of key into ev.
func (p *dataParser) field(key []byte, ev *event.Event) bool {
	var ok bool
	switch string(key) { // no allocation: the conversion is the switch's
	case "argv":
		ev.Argv, ok = p.strings()
	case "argv_truncated":
		ev.ArgvTruncated, ok = p.bool()
	case "path_truncated":
		ev.PathTruncated, ok = p.bool()
	case "cwd":
		ev.Cwd, ok = p.string()
	case "script":
		ev.Script, ok = p.string()
	case "uid":
		var v uint64
		if v, ok = p.uint(32); ok {
			ev.UID = event.Ptr(uint32(v))
		}
	case "sha256":
		ev.SHA256, ok = p.string()
	case "child_pid":
		var v uint64
		v, ok = p.uint(32)
		ev.ChildPID = uint32(v)
	case "child_exec_id":
		ev.ChildExecID, ok = p.string()
	case "exit_code":
		var v int64
		if v, ok = p.int(strconv.IntSize); ok {
			ev.ExitCode = event.Ptr(int(v))
		}
	case "signal":
		var v int64
		v, ok = p.int(strconv.IntSize)
		ev.Signal = int(v)
	case "duration_ns":
		ev.DurationNS, ok = p.uint(64)
	case "cpu_ns":
		ev.CPUNS, ok = p.uint(64)
	case "max_rss_kb":
		ev.MaxRSSKB, ok = p.uint(64)
	case "read_bytes":
		ev.ReadBytes, ok = p.uint(64)
	case "write_bytes":
		ev.WriteBytes, ok = p.uint(64)
	case "flags":
		var v uint64
		if v, ok = p.uint(32); ok {
			ev.Flags = event.Ptr(uint32(v))
		}
	case "mode":
		var v uint64
		if v, ok = p.uint(32); ok {
			ev.Mode = event.Ptr(uint32(v))
		}
	case "access":
		ev.Access, ok = p.string()
	case "result":
		var v int64
		if v, ok = p.int(64); ok {
			ev.Result = event.Ptr(v)
		}
	case "family":
		ev.Family, ok = p.string()
	case "proto":
		ev.Proto, ok = p.string()
	case "addr":
		ev.Addr, ok = p.string()
	case "port":
		var v uint64
		v, ok = p.uint(16)
		ev.Port = uint16(v)
	case "host":
		ev.Host, ok = p.string()
	case "qname":
		ev.QName, ok = p.string()
	case "qtype":
		ev.QType, ok = p.string()
	case "answers":
		ev.Answers, ok = p.strings()
	case "bytes_sent":
		ev.BytesSent, ok = p.uint(64)
	case "bytes_recv":
		ev.BytesRecv, ok = p.uint(64)
	}
	return ok
}

func (p *dataParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// byte consumes c if it is next.
func (p *dataParser) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (p *dataParser) end() bool {
	p.space()
	return p.i == len(p.b)
}

// rawString consumes a string and returns its bytes: an alias of the
// column when the string has no escapes, else p.esc unescaped. It leaves
// to encoding/json the strings whose meaning takes its rules (invalid
// UTF-8, \u escapes of surrogates) and those that are not JSON.
func (p *dataParser) rawString() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start, ascii := p.i, true
	for ; p.i < len(p.b); p.i++ {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			return s, ascii || utf8.Valid(s)
		case c == '\\':
			return p.escaped(start)
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// escaped finishes rawString for a string (from start) with escapes:
// what encoding/json writes for '<', '>', '&', quotes, backslashes and
// control characters.
func (p *dataParser) escaped(start int) ([]byte, bool) {
	p.esc = append(p.esc[:0], p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.esc, utf8.Valid(p.esc)
		case c < 0x20:
			return nil, false
		case c != '\\':
			p.esc = append(p.esc, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			return nil, false
		}
		e := p.b[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			p.esc = append(p.esc, e)
		case 'b':
			p.esc = append(p.esc, '\b')
		case 'f':
			p.esc = append(p.esc, '\f')
		case 'n':
			p.esc = append(p.esc, '\n')
		case 'r':
			p.esc = append(p.esc, '\r')
		case 't':
			p.esc = append(p.esc, '\t')
		case 'u':
			if p.i+4 > len(p.b) {
				return nil, false
			}
			v, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 16)
			if err != nil || utf16.IsSurrogate(rune(v)) {
				return nil, false
			}
			p.esc = utf8.AppendRune(p.esc, rune(v))
			p.i += 4
		default:
			return nil, false
		}
	}
	return nil, false
}

// string consumes a string and returns its shared copy.
func (p *dataParser) string() (string, bool) {
	b, ok := p.rawString()
	if !ok {
		return "", false
	}
	return p.in.bytes(b), true
}

// strings consumes an array of strings. An empty array gives an empty,
// non-nil slice, as encoding/json does.
func (p *dataParser) strings() ([]string, bool) {
	if !p.byte('[') {
		return nil, false
	}
	out := []string{}
	p.space()
	if p.byte(']') {
		return out, true
	}
	for {
		s, ok := p.string()
		if !ok {
			return nil, false
		}
		out = append(out, s)
		p.space()
		if p.byte(']') {
			return out, true
		}
		if !p.byte(',') {
			return nil, false
		}
		p.space()
	}
}

func (p *dataParser) bool() (bool, bool) {
	rest := p.b[p.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		p.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		p.i += 5
		return false, true
	}
	return false, false
}

// digits consumes a JSON integer's digits (no sign, no leading zero, no
// fraction or exponent after them) and returns their value; false on
// overflow of a uint64 or anything else.
func (p *dataParser) digits() (uint64, bool) {
	start := p.i
	var v uint64
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c < '0' || c > '9' {
			break
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
		p.i++
	}
	n := p.i - start
	if n == 0 || (n > 1 && p.b[start] == '0') {
		return 0, false
	}
	if p.i < len(p.b) {
		if c := p.b[p.i]; c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	return v, true
}

// uint consumes a non-negative integer that fits bits.
func (p *dataParser) uint(bits int) (uint64, bool) {
	v, ok := p.digits()
	if !ok || (bits < 64 && v >= 1<<bits) {
		return 0, false
	}
	return v, true
}

// int consumes an integer that fits a signed integer of bits.
func (p *dataParser) int(bits int) (int64, bool) {
	neg := p.byte('-')
	v, ok := p.digits()
	if !ok {
		return 0, false
	}
	limit := uint64(1) << (bits - 1) // |min|; max is limit-1
	if neg {
		if v > limit {
			return 0, false
		}
		return -int64(v), true // v == 1<<63 wraps to MinInt64, as it should
	}
	if v >= limit {
		return 0, false
	}
	return int64(v), true
}
