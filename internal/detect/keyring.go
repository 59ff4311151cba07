package detect

import (
	"strconv"

	"github.com/polygraph/polygraph/internal/event"
)

// The kernel keyring holds secrets that live in no file (tokens put
// there with keyctl or add_key, Kerberos tickets, the kernel's own
// logon keys). A key event names a key by its serial; what key it is
// (type and description) the session learns from the calls that named
// it: the add that made it, a search or request that found it, a describe
// the kernel answered. The reads that hand a secret to the tree are a
// KEYCTL_READ that copied a key's payload and a request_key of a user or
// logon key, of a key the tree did not make (or update) itself before.

// keyName is what the session knows of one key.
type keyName struct{ typ, desc string }

// keyRead is one read of a key the tree did not make: the event and the
// key's name as far as the session knows it.
type keyRead struct {
	i    int32
	name keyName
}

// keyringReads returns the tree's secret reads of the kernel keyring, in
// event order.
func (s *facts) keyringReads() []keyRead {
	known := map[int32]keyName{}
	own := map[int32]uint64{} // the first add or update of the key by the tree
	var cands []int32
	for i, e := range s.events {
		if e.Kind != event.KindKey || e.Key == nil || e.Failed() {
			continue
		}
		k := e.Key
		switch k.KeyOp {
		case "add", "search", "request", "describe":
			if k.KeySerial > 0 && (k.KeyType != "" || k.KeyDesc != "") {
				n := known[k.KeySerial]
				if k.KeyType != "" {
					n.typ = k.KeyType
				}
				if k.KeyDesc != "" {
					n.desc = k.KeyDesc
				}
				known[k.KeySerial] = n
			}
		case "join_session_keyring", "get_persistent":
			if k.KeySerial > 0 {
				known[k.KeySerial] = keyName{typ: "keyring", desc: known[k.KeySerial].desc}
			}
		}
		switch k.KeyOp {
		case "add", "update":
			if _, ok := own[k.KeySerial]; !ok && k.KeySerial > 0 {
				own[k.KeySerial] = e.Seq
			}
		case "read":
			// Negative serials are the caller's special keyrings (@u,
			// @s, ...): reading one lists its keys. A length query
			// copies nothing.
			if k.KeySerial > 0 && k.KeyBytes > 0 {
				cands = append(cands, int32(i))
			}
		case "request":
			if k.KeyType == "user" || k.KeyType == "logon" {
				cands = append(cands, int32(i))
			}
		}
	}
	var out []keyRead
	for _, i := range cands {
		e := s.events[i]
		serial := e.Key.KeySerial
		if at, ok := own[serial]; ok && at < e.Seq {
			continue // its own key: what it reads back is what it put there
		}
		n := known[serial]
		if e.Key.KeyOp == "request" {
			n = keyName{typ: e.Key.KeyType, desc: e.Key.KeyDesc}
		}
		if n.typ == "keyring" {
			continue // a keyring's content is the list of its keys' serials
		}
		out = append(out, keyRead{i: i, name: n})
	}
	return out
}

// label names the key for a finding: its description and type where the
// session learnt them.
func (n keyName) label(serial int32) string {
	id := "key " + strconv.Itoa(int(serial))
	switch {
	case n.desc != "" && n.typ != "":
		return id + " (" + n.typ + " \"" + n.desc + "\")"
	case n.desc != "":
		return id + " (\"" + n.desc + "\")"
	case n.typ != "":
		return id + " (" + n.typ + ")"
	}
	return id
}
