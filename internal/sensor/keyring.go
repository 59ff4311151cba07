package sensor

import (
	"strconv"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
)

// keyOps names ev_key.op (bpf/keyring.h): the keyctl commands the sensor
// reports, and its codes for add_key and request_key.
var keyOps = map[uint32]string{1: "join_session_keyring", 2: "update", 6: "describe", 8: "link", 10: "search",
	11: "read", 22: "get_persistent", 30: "move", 0x100: "add", 0x101: "request"}

// keyDescribeFields is how many ';'-separated fields KEYCTL_DESCRIBE's
// answer has: type, uid, gid, permissions, then the description (which
// may itself hold ';').
const keyDescribeFields = 5

// decodeKey decodes an EV_KEY record: a keyring call, with the type and
// description it named, or for a describe the kernel's answer, which
// gives both.
func (d *Decoder) decodeKey(b []byte) (*event.Event, error) {
	r, err := castHeader[polygraphEvKey](b)
	if err != nil {
		return nil, err
	}
	ps, err := pieces(b, int(r.TypeLen), int(r.DescLen))
	if err != nil {
		return nil, err
	}
	e := d.base(&r.H, event.KindKey)
	e.Result = d.i64.Ptr(r.Result)
	k := &event.Key{KeySerial: r.Serial, KeyRing: r.Ring, KeyBytes: r.Bytes, KeyType: cstring(ps[0]), KeyDesc: cstring(ps[1])}
	k.KeyOp = keyOps[r.Op]
	if k.KeyOp == "" {
		k.KeyOp = "keyctl_" + strconv.FormatUint(uint64(r.Op), 10)
	}
	if k.KeyOp == "describe" {
		if f := strings.SplitN(k.KeyDesc, ";", keyDescribeFields); len(f) == keyDescribeFields {
			k.KeyType, k.KeyDesc = f[0], f[4]
		} else {
			k.KeyDesc = ""
		}
	}
	e.Key = k
	return e, nil
}
