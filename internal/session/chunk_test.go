package session

import (
	"database/sql/driver"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"

	"google.golang.org/protobuf/encoding/protowire"
)

// memIDs is a strings table in memory, for encoding chunks without a file.
type memIDs struct {
	ids  map[string]int64
	strs *pathTable
}

func newMemIDs() *memIDs {
	return &memIDs{ids: map[string]int64{}, strs: &pathTable{dense: []string{""}}}
}

func (m *memIDs) id(s string) int64 {
	if id, ok := m.ids[s]; ok {
		return id
	}
	id := int64(len(m.strs.dense))
	m.ids[s] = id
	m.strs.add(id, s)
	return id
}

// chunkSamples are events to encode: every kind, every field set, odd
// strings, strings too long to intern, a record too long for the
// two-byte length, a zero time and an unknown kind.
func chunkSamples(t testing.TB) []*event.Event {
	full := &event.Event{}
	v := reflect.ValueOf(full).Elem()
	for i := range v.NumField() {
		fill(t, v.Field(i), v.Type().Field(i).Name, i+1)
	}
	odd := *sampleEvents()[1]
	odd.Process.Argv = []string{"sh", "-c", "echo \"<&>\" \\ \t\x01 \xff\xfe ünï \u2028", "", strings.Repeat("x", maxInternLen+1)}
	odd.Process.Cwd = "/tmp/\n"
	huge := *sampleEvents()[1]
	huge.Process.Argv = []string{"node", strings.Repeat("a", 40000), strings.Repeat("b", 25000)}
	huge.Process.ArgvTruncated = true
	neg := *sampleEvents()[14]
	neg.Process.ExitCode, neg.Process.Signal = event.Ptr(-1), -9
	neg.TS = t0.Add(-time.Hour) // before the chunk's first event
	return append(append(sampleEvents(), kernelTruthSamples()...), full, &odd, &huge, &neg,
		&event.Event{Kind: event.KindFork, Process: &event.Process{}},
		&event.Event{TS: t0, Kind: "from-the-future", PID: 1})
}

func TestChunkRoundTrip(t *testing.T) {
	evs := chunkSamples(t)
	ids := newMemIDs()
	firstTS := tsOf(evs[0].TS)
	var data []byte
	for i, ev := range evs {
		ev.Seq = uint64(100 + i)
		data = appendEvent(data, ev, firstTS, ids)
	}
	d := &chunkDecoder{strs: ids.strs, in: newInterner()}
	var got []*event.Event
	if err := d.decode(data, 100, len(evs), firstTS, func(ev *event.Event) error { got = append(got, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(evs) {
		t.Fatalf("decoded %d events, encoded %d", len(got), len(evs))
	}
	for i, want := range evs {
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("event %d (%s):\n got %s\nwant %s", i, want.Kind, jsonOf(got[i]), jsonOf(want))
		}
	}
	// A count that disagrees with the records is damage.
	err := d.decode(data, 100, len(evs)+1, firstTS, func(*event.Event) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "holds") {
		t.Errorf("wrong count: error %v", err)
	}
}

// TestChunkSkipsUnknownFields: a record with a field this reader does
// not know (a newer writer's) still reads.
func TestChunkSkipsUnknownFields(t *testing.T) {
	ids := newMemIDs()
	ev := sampleEvents()[2]
	ev.Seq = 1
	rec := appendEvent(nil, ev, tsOf(ev.TS), ids)
	msg, n := protowire.ConsumeBytes(rec)
	if n != len(rec) {
		t.Fatal("bad record")
	}
	msg = append([]byte(nil), msg...)
	msg = protowire.AppendString(protowire.AppendTag(msg, 1000, protowire.BytesType), "new")
	msg = protowire.AppendFixed32(protowire.AppendTag(msg, 1001, protowire.Fixed32Type), 7)
	data := protowire.AppendBytes(nil, msg)
	d := &chunkDecoder{strs: ids.strs, in: newInterner()}
	var got *event.Event
	if err := d.decode(data, 1, 1, tsOf(ev.TS), func(e *event.Event) error { got = e; return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ev) {
		t.Errorf("got %s\nwant %s", jsonOf(got), jsonOf(ev))
	}
}

func TestChunkDamage(t *testing.T) {
	ids := newMemIDs()
	ev := sampleEvents()[1]
	ev.Seq = 1
	rec := appendEvent(nil, ev, 0, ids)
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"cut", rec[:len(rec)-3], "event 1"},
		{"unknown string", appendEvent(nil, ev, 0, &memIDs{ids: map[string]int64{}, strs: &pathTable{dense: []string{""}}}), "no string"},
		{"bytes for a number", protowire.AppendBytes(nil, protowire.AppendString(protowire.AppendTag(nil, fPID, protowire.BytesType), "x")), "bytes where a number"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := &chunkDecoder{strs: ids.strs, in: newInterner()}
			if tt.name == "unknown string" {
				d.strs = &pathTable{dense: []string{""}}
			}
			err := d.decode(tt.data, 1, 1, 0, func(*event.Event) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

func FuzzChunk(f *testing.F) {
	ids := newMemIDs()
	var data []byte
	for _, ev := range sampleEvents() {
		data = appendEvent(data, ev, 0, ids)
	}
	f.Add(data, 3)
	f.Add(data[:len(data)/2], 2)
	f.Fuzz(func(t *testing.T, data []byte, count int) {
		d := &chunkDecoder{strs: ids.strs, in: newInterner()}
		d.decode(data, 1, count, 0, func(*event.Event) error { return nil })
	})
}

// TestReadVersion1 reads a file in the first format, a row per event,
// which sessions recorded before chunks were introduced have.
func TestReadVersion1(t *testing.T) {
	evs := sampleEvents()
	path := writeVersion1(t, evs)
	r := openT(t, path)
	got := readAll(t, r, Filter{})
	if len(got) != len(evs) {
		t.Fatalf("read %d events, wrote %d", len(got), len(evs))
	}
	for i := range evs {
		if !reflect.DeepEqual(got[i], evs[i]) {
			t.Errorf("event %d:\n got %s\nwant %s", i+1, jsonOf(got[i]), jsonOf(evs[i]))
		}
	}
	opens := readAll(t, r, Filter{Kinds: []event.Kind{event.KindOpen}, PIDs: []uint32{101}})
	if len(opens) != 2 {
		t.Errorf("filter read %d opens of pid 101, want 2", len(opens))
	}
	if m := r.Meta(); !m.CleanClose || m.Command[0] != "npm" {
		t.Errorf("meta %+v", m)
	}
}

// writeVersion1 writes evs (numbering them 1, 2, 3, ...) to a new file in
// the first format and returns its path.
func writeVersion1(t *testing.T, evs []*event.Event) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "v1.db")
	w, err := newWriter(path, Meta{Mode: "run", Command: []string{"npm", "install"}, StartedAt: t0, EndedAt: t0.Add(time.Second), CleanClose: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.stop()
	must := func(q string, args ...driver.Value) {
		t.Helper()
		if err := w.exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must("DROP TABLE chunks")
	must(schemaV1Events)
	must("PRAGMA user_version=1")
	ids := map[string]int64{}
	pathID := func(s string) driver.Value {
		if s == "" {
			return nil
		}
		if _, ok := ids[s]; !ok {
			ids[s] = int64(len(ids) + 1)
			must("INSERT INTO strings (id, s) VALUES (?, ?)", ids[s], s)
		}
		return ids[s]
	}
	for i, ev := range evs {
		ev.Seq = uint64(i + 1)
		data, err := json.Marshal(dataView{Event: ev})
		if err != nil {
			t.Fatal(err)
		}
		var parent driver.Value
		if ev.ParentExecID != "" {
			parent = ev.ParentExecID
		}
		must("INSERT INTO events (seq, ts, kind, pid, tid, ppid, comm, exec_id, parent_exec_id, path, path2, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			int64(ev.Seq), tsOf(ev.TS), string(ev.Kind), int64(ev.PID), int64(ev.TID), int64(ev.PPID), ev.Comm, ev.ExecID, parent,
			pathID(ev.Path), pathID(ev.Path2), string(data))
	}
	if err := w.closeConn(); err != nil {
		t.Fatal(err)
	}
	return path
}
