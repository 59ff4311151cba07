package sensor

import (
	"bytes"
	"io"
	"os"
	"strconv"
)

// environMax bounds what procHome reads of an environment.
const environMax = 64 << 10

// procHome returns the HOME in the environment of process pid, read from
// /proc/PID/environ when its exec event is decoded, or "" when the
// process is gone, has none or it lies past environMax bytes. It reads
// after the fact: a process that has exec'd again since shows its newer
// environment (env -i HOME=x prog shows prog's, which is x), and one that
// has exited shows none, so its image inherits its parent's HOME, as its
// environment most likely did.
func procHome(pid uint32) string {
	f, err := os.Open("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/environ")
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, environMax))
	return envHome(b)
}

// envHome finds HOME in a NUL-separated environment block.
func envHome(env []byte) string {
	for len(env) > 0 {
		kv, rest, _ := bytes.Cut(env, []byte{0})
		if v, ok := bytes.CutPrefix(kv, []byte("HOME=")); ok {
			return string(v)
		}
		env = rest
	}
	return ""
}
