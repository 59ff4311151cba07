package session

import (
	"encoding/json"
	"net/url"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// schemaVersion is stored as PRAGMA user_version. Bump it when a column's
// meaning changes; Open refuses files from a newer polygraph. Version 1
// kept an events row per event (schemaV1Events); version 2 keeps them in
// chunks (chunk.go); version 3 adds each chunk's checksum and hash chain
// (integrity.go); version 4 adds the exec_verdicts table (verdicts.go),
// which the seal covers. The reader reads all four; the writer writes the
// newest.
const schemaVersion = 4

// applicationID marks the file as ours in the SQLite header (PRAGMA
// application_id), "plgr" in ASCII, so `file(1)` and Open can tell a
// session from any other SQLite database.
const applicationID = 0x706c6772

// schema is the layout of a session file. Events are stored a chunk of
// consecutive events per row, in the binary encoding chunk.go describes;
// the strings their records refer to by id (paths, comms, exec ids, argv
// words: they repeat heavily, every exec opens the same libraries) are
// stored once in strings. A chunk's strings are committed in the same
// transaction as the chunk.
const schema = `
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL           -- JSON
);
CREATE TABLE strings (
	id INTEGER PRIMARY KEY,
	s  TEXT NOT NULL
);
CREATE TABLE chunks (
	first_seq INTEGER PRIMARY KEY,   -- seq of the first event; seqs are 1, 2, 3, ... gap-free
	count     INTEGER NOT NULL,      -- events in the chunk
	first_ts  INTEGER NOT NULL,      -- unix ns of the first event; the others' are relative to it
	min_ts    INTEGER NOT NULL,      -- earliest and latest event time in the chunk, unix ns
	max_ts    INTEGER NOT NULL,
	strs_from INTEGER NOT NULL,      -- the strings ids the chunk introduced: strs_from+1 .. strs_end
	strs_end  INTEGER NOT NULL,
	sum       BLOB NOT NULL,         -- SHA-256 of the chunk's content (sumChunk, integrity.go)
	chain     BLOB NOT NULL,         -- SHA-256 of the previous chunk's chain and this sum
	data      BLOB NOT NULL          -- the events, one length-delimited record each; last, so that
	                                 -- damage to its overflow pages leaves the columns above readable
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
CREATE TABLE exec_verdicts (
	exec_id TEXT NOT NULL,            -- the exec event's exec_id
	role    TEXT NOT NULL,            -- binary, script
	path    TEXT NOT NULL,
	sha256  TEXT NOT NULL,            -- '' when the file could not be hashed
	status  TEXT NOT NULL,            -- verified, modified, unknown, unavailable
	data    TEXT NOT NULL,            -- JSON of integrity.Verdict (source, expected hash, package, location)
	PRIMARY KEY (exec_id, role)
);
`

// schemaV1Events is the events table of version 1 files, which Open still
// reads: the fields queries filter on as columns, the rest as JSON in
// data, paths as strings ids. Version 1 has the same meta, strings, lost
// and leftovers tables.
const schemaV1Events = `
CREATE TABLE events (
	seq            INTEGER PRIMARY KEY,
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
`

// dataView is the JSON of a version 1 data column: every field of
// event.Event except those stored as columns. Each column field is shadowed by a
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

// decodeData fills the non-column fields of ev from a version 1 data
// column.
func decodeData(data []byte, ev *event.Event) error {
	return json.Unmarshal(data, &dataView{Event: ev})
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
