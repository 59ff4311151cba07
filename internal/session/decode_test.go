package session

import (
	"reflect"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// dataSamples are data columns: what appendData writes for every kind,
// then JSON it never writes, which decodeDataFast must leave to
// encoding/json or read exactly as it does.
func dataSamples() (written, odd []string) {
	full := &event.Event{}
	v := reflect.ValueOf(full).Elem()
	for i := range v.NumField() {
		fill(nil, v.Field(i), v.Type().Field(i).Name, i+1)
	}
	escaped := *sampleEvents()[1]
	escaped.Argv = []string{"sh", "-c", "echo \"<&>\" \\ \t\x01 \xff\xfe ünï \u2028 😀 /"}
	escaped.Cwd = "/tmp/\n"
	for _, ev := range append(sampleEvents(), full, &escaped) {
		written = append(written, string(appendData(nil, ev)))
	}
	odd = []string{
		`{}`, ` { } `, "{\n\t\"cwd\" : \"/x\" ,\r\"port\":1}", `{"cwd":"/x"} x`, `{"cwd":"/x"`, `{"cwd":"/x",}`, `{,}`, `[]`, `null`, `"x"`,
		`{"cwd":null}`, `{"uid":null}`, `{"argv":null}`, `{"argv":[]}`, `{"argv":[ ]}`, `{"argv":["a",]}`, `{"argv":["a" "b"]}`,
		`{"argv_truncated":false}`, `{"argv_truncated":true}`, `{"argv_truncated":tru}`, `{"argv_truncated":1}`,
		`{"CWD":"/x"}`, `{"Cwd":"/x"}`, `{"nope":1}`, `{"seq":5}`, `{"path":"/x"}`, `{"kind":"open"}`,
		`{"cwd":"/a","cwd":"/b"}`, `{"argv":["a"],"argv":["b","c"]}`, `{"result":1,"result":-2}`,
		`{"port":65535}`, `{"port":65536}`, `{"port":-1}`, `{"uid":4294967295}`, `{"uid":4294967296}`,
		`{"result":-9223372036854775808}`, `{"result":9223372036854775807}`, `{"result":9223372036854775808}`,
		`{"result":-9223372036854775809}`, `{"duration_ns":18446744073709551615}`, `{"duration_ns":18446744073709551616}`,
		`{"result":-0}`, `{"result":0}`, `{"result":01}`, `{"result":1.0}`, `{"result":1e3}`, `{"result":-}`, `{"result":"1"}`,
		`{"exit_code":-1}`, `{"signal":9}`, `{"flags":0}`, `{"mode":420}`,
		`{"cwd":"a\"b\\c\/d\b\f\n\r\t"}`, `{"cwd":"\u0026\u003c\u003e\u00e9\u2028\ufffd"}`, `{"cwd":"\u00"}`, `{"cwd":"\u00zz"}`,
		`{"cwd":"\ud83d\ude00"}`, `{"cwd":"\ud83d"}`, `{"cwd":"\x"}`, "{\"cwd\":\"a\x01b\"}", "{\"cwd\":\"\xff\"}", "{\"cwd\":\"\\n\xff\"}",
		`{"cwd":"ünï"}`, `{"c\u0077d":"/x"}`, `{"access":"read","flags":524288,"result":3}`,
	}
	return written, odd
}

func TestDecodeDataFast(t *testing.T) {
	written, odd := dataSamples()
	in := newInterner()
	for _, data := range written {
		var ev event.Event
		if !decodeDataFast([]byte(data), &ev, in) {
			t.Errorf("decodeDataFast leaves appendData's %s to encoding/json", data)
		}
	}
	for _, data := range append(written, odd...) {
		checkDecode(t, in, data)
	}
}

// checkDecode checks that decodeDataInterned decodes data as decodeData.
func checkDecode(t *testing.T, in *interner, data string) {
	t.Helper()
	cols := event.Event{Seq: 7, Kind: event.KindOpen, PID: 1, Comm: "c", ExecID: "1-1", Path: "/p"}
	got, want := cols, cols
	gerr := decodeDataInterned([]byte(data), &got, in)
	werr := decodeData([]byte(data), &want)
	switch {
	case (gerr == nil) != (werr == nil):
		t.Errorf("%q: error %v, encoding/json's %v", data, gerr, werr)
	case gerr == nil && !reflect.DeepEqual(got, want):
		t.Errorf("%q: decoded\n%s\nencoding/json decodes\n%s", data, jsonOf(got), jsonOf(want))
	}
}

func FuzzDecodeData(f *testing.F) {
	written, odd := dataSamples()
	for _, s := range append(written, odd...) {
		f.Add(s)
	}
	in := newInterner()
	f.Fuzz(func(t *testing.T, data string) { checkDecode(t, in, data) })
}
