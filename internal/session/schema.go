package session

import (
	"encoding/json"
	"net/url"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// schemaVersion is stored as PRAGMA user_version. Bump it when a column's
// meaning changes; Open refuses files from a newer polygraph.
const schemaVersion = 1

// applicationID marks the file as ours in the SQLite header (PRAGMA
// application_id), "plgr" in ASCII, so `file(1)` and Open can tell a
// session from any other SQLite database.
const applicationID = 0x706c6772

// schema is the layout of a session file. Events keep the fields every
// query filters or joins on as columns and the rest as a JSON object in
// data; paths, which repeat heavily (every exec opens the same libraries),
// are stored once in strings and referenced by id. events_view puts the
// strings back for anyone poking at a file with the sqlite3 shell.
// The indexes on events come at Close (see indexes).
const schema = `
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL           -- JSON
);
CREATE TABLE strings (
	id INTEGER PRIMARY KEY,
	s  TEXT NOT NULL
);
CREATE TABLE events (
	seq            INTEGER PRIMARY KEY,  -- 1, 2, 3, ... gap-free
	ts             INTEGER NOT NULL,     -- unix ns
	kind           TEXT NOT NULL,
	pid            INTEGER NOT NULL,
	tid            INTEGER NOT NULL,
	ppid           INTEGER NOT NULL,
	comm           TEXT NOT NULL,
	exec_id        TEXT NOT NULL,
	parent_exec_id TEXT,                 -- NULL when unknown
	path           INTEGER,              -- strings.id, NULL when empty
	path2          INTEGER,              -- strings.id, NULL when empty
	data           TEXT                  -- JSON of the other fields, NULL when none
);
CREATE TABLE lost (
	stage TEXT PRIMARY KEY,
	count INTEGER NOT NULL
);
CREATE TABLE leftovers (
	pid     INTEGER NOT NULL,
	exec_id TEXT NOT NULL,
	comm    TEXT NOT NULL,
	argv    TEXT NOT NULL             -- JSON array
);
CREATE VIEW events_view AS
	SELECT e.seq, e.ts, e.kind, e.pid, e.tid, e.ppid, e.comm, e.exec_id, e.parent_exec_id,
	       p.s AS path, p2.s AS path2, e.data
	FROM events e
	LEFT JOIN strings p ON p.id = e.path
	LEFT JOIN strings p2 ON p2.id = e.path2;
`

// indexes are built when the session is closed rather than kept up to
// date on every insert, which would cost the writer a third of its
// throughput. A session whose writer was killed has none; its queries
// scan, which is still fast at the sizes one recording reaches.
const indexes = `
CREATE INDEX IF NOT EXISTS events_kind ON events(kind);
CREATE INDEX IF NOT EXISTS events_pid ON events(pid);
`

// dataView is the JSON of the data column: every field of event.Event
// except those stored as columns. Each column field is shadowed by a
// shallower field of the same JSON name that is always zero and so always
// omitted; encoding/json lets the shallower field win both ways. A field
// added to event.Event therefore lands in data without a change here.
type dataView struct {
	*event.Event
	Seq          omitted `json:"seq,omitzero"`
	TS           omitted `json:"ts,omitzero"`
	Kind         omitted `json:"kind,omitzero"`
	PID          omitted `json:"pid,omitzero"`
	TID          omitted `json:"tid,omitzero"`
	PPID         omitted `json:"ppid,omitzero"`
	Comm         omitted `json:"comm,omitzero"`
	ExecID       omitted `json:"exec_id,omitzero"`
	ParentExecID omitted `json:"parent_exec_id,omitzero"`
	Path         omitted `json:"path,omitzero"`
	Path2        omitted `json:"path2,omitzero"`
}

// omitted is a placeholder that never appears in JSON (see dataView).
type omitted struct{}

// decodeData fills the non-column fields of ev from a data column. It is
// the reference decodeDataFast defers to for what it does not handle.
func decodeData(data []byte, ev *event.Event) error {
	return json.Unmarshal(data, &dataView{Event: ev})
}

// columnsOf returns ev with only the fields stored as columns, those
// dataView shadows, set.
func columnsOf(ev *event.Event) event.Event {
	return event.Event{Seq: ev.Seq, TS: ev.TS, Kind: ev.Kind, PID: ev.PID, TID: ev.TID, PPID: ev.PPID,
		Comm: ev.Comm, ExecID: ev.ExecID, ParentExecID: ev.ParentExecID, Path: ev.Path, Path2: ev.Path2}
}

// tsOf converts an event time to the ts column; the zero time is stored as 0.
func tsOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// timeOf is the inverse of tsOf. Times come back in UTC.
func timeOf(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// dsn builds a modernc.org/sqlite data source name for path as a SQLite
// URI, so that characters like '?' and '#' in the path cannot be mistaken
// for parameters, with SQLite URI parameters and driver _pragma values.
func dsn(path string, params url.Values) string {
	u := url.URL{Scheme: "file", Path: path, OmitHost: true}
	s := u.String()
	if len(params) > 0 {
		s += "?" + params.Encode()
	}
	return s
}
