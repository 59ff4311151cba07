package session

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/polygraph/polygraph/internal/event"
)

// appendData appends the data column (JSON) of ev to buf. It writes what
// encoding/json writes for dataView, about ten times faster: the data
// column is the largest share of the encoding stage's cost per event.
// It only knows the fields of event.Event as they were when it was
// written; fastDataOK tells whether that is still the event model, and
// appendDataJSON takes over when it is not.
func appendData(buf []byte, ev *event.Event) []byte {
	start := len(buf)
	buf = append(buf, '{')
	strs := func(name string, v []string) {
		if len(v) == 0 {
			return
		}
		buf = appendName(buf, name)
		buf = append(buf, '[')
		for i, s := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, s)
		}
		buf = append(buf, ']')
	}
	str := func(name, v string) {
		if v != "" {
			buf = appendString(appendName(buf, name), v)
		}
	}
	flag := func(name string, v bool) {
		if v {
			buf = append(appendName(buf, name), "true"...)
		}
	}
	unum := func(name string, v uint64) {
		if v != 0 {
			buf = strconv.AppendUint(appendName(buf, name), v, 10)
		}
	}
	inum := func(name string, v int64) {
		if v != 0 {
			buf = strconv.AppendInt(appendName(buf, name), v, 10)
		}
	}
	strs("argv", ev.Argv)
	flag("argv_truncated", ev.ArgvTruncated)
	flag("path_truncated", ev.PathTruncated)
	str("cwd", ev.Cwd)
	str("script", ev.Script)
	if ev.UID != nil {
		buf = strconv.AppendUint(appendName(buf, "uid"), uint64(*ev.UID), 10)
	}
	str("sha256", ev.SHA256)
	unum("child_pid", uint64(ev.ChildPID))
	str("child_exec_id", ev.ChildExecID)
	if ev.ExitCode != nil {
		buf = strconv.AppendInt(appendName(buf, "exit_code"), int64(*ev.ExitCode), 10)
	}
	inum("signal", int64(ev.Signal))
	unum("duration_ns", ev.DurationNS)
	unum("cpu_ns", ev.CPUNS)
	unum("max_rss_kb", ev.MaxRSSKB)
	unum("read_bytes", ev.ReadBytes)
	unum("write_bytes", ev.WriteBytes)
	if ev.Flags != nil {
		buf = strconv.AppendUint(appendName(buf, "flags"), uint64(*ev.Flags), 10)
	}
	if ev.Mode != nil {
		buf = strconv.AppendUint(appendName(buf, "mode"), uint64(*ev.Mode), 10)
	}
	str("access", ev.Access)
	if ev.Result != nil {
		buf = strconv.AppendInt(appendName(buf, "result"), *ev.Result, 10)
	}
	str("family", ev.Family)
	str("proto", ev.Proto)
	str("addr", ev.Addr)
	unum("port", uint64(ev.Port))
	str("host", ev.Host)
	str("qname", ev.QName)
	str("qtype", ev.QType)
	strs("answers", ev.Answers)
	unum("bytes_sent", ev.BytesSent)
	unum("bytes_recv", ev.BytesRecv)
	if len(buf) == start+1 {
		return buf[:start] // no fields: NULL
	}
	return append(buf, '}')
}

// fastDataFields is event.Event's field list (name and type) that
// appendData was written for, columns included.
var fastDataFields = []string{
	"Seq uint64", "TS time.Time", "Kind event.Kind", "PID uint32", "TID uint32", "PPID uint32",
	"Comm string", "ExecID string", "ParentExecID string", "Path string", "Path2 string",
	"Argv []string", "ArgvTruncated bool", "PathTruncated bool", "Cwd string", "Script string", "UID *uint32",
	"SHA256 string", "ChildPID uint32", "ChildExecID string", "ExitCode *int", "Signal int",
	"DurationNS uint64", "CPUNS uint64", "MaxRSSKB uint64", "ReadBytes uint64", "WriteBytes uint64",
	"Flags *uint32", "Mode *uint32", "Access string", "Result *int64", "Family string", "Proto string",
	"Addr string", "Port uint16", "Host string", "QName string", "QType string", "Answers []string",
	"BytesSent uint64", "BytesRecv uint64",
}

// eventFields lists event.Event's fields as "Name type".
func eventFields() []string {
	t := reflect.TypeFor[event.Event]()
	out := make([]string, t.NumField())
	for i := range out {
		f := t.Field(i)
		out[i] = f.Name + " " + f.Type.String()
	}
	return out
}

// fastDataOK reports whether appendData still covers event.Event. When a
// field is added the store stays correct through appendDataJSON;
// TestFastEncoderCurrent says it is time to teach appendData the field.
var fastDataOK = slices.Equal(eventFields(), fastDataFields)

// appendDataJSON is appendData through encoding/json and dataView: slower,
// but it follows event.Event wherever it goes.
func appendDataJSON(buf []byte, ev *event.Event) ([]byte, error) {
	b, err := json.Marshal(dataView{Event: ev})
	if err != nil {
		return buf, fmt.Errorf("encode event %d: %w", ev.Seq, err)
	}
	if string(b) == "{}" {
		return buf, nil
	}
	return append(buf, b...), nil
}

// appendName appends `,"name":` (no comma after the opening brace).
func appendName(buf []byte, name string) []byte {
	if buf[len(buf)-1] != '{' {
		buf = append(buf, ',')
	}
	buf = append(buf, '"')
	buf = append(buf, name...)
	return append(buf, '"', ':')
}

// appendString appends s as a JSON string. Plain printable ASCII, nearly
// every path and argument, is copied as is; anything else goes through
// encoding/json, whose escaping (and replacement of invalid UTF-8) then
// matches the slow path exactly.
func appendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			b, _ := json.Marshal(s) // a string always marshals
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}
