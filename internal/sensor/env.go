package sensor

import "bytes"

// envVar finds variable name in a NUL-separated environment block. Only
// a variable its NUL ends counts: a block cut short (ENV_MAX, the first
// read of /proc/PID/environ) ends in part of one, and a value cut there
// is not the process's. found is false when no whole name= variable is
// in env.
func envVar(env []byte, name string) (value string, found bool) {
	for len(env) > 0 {
		kv, rest, ended := bytes.Cut(env, []byte{0})
		if !ended {
			return "", false
		}
		if len(kv) > len(name) && kv[len(name)] == '=' && string(kv[:len(name)]) == name {
			return string(kv[len(name)+1:]), true
		}
		env = rest
	}
	return "", false
}

// envHome is envVar(env, "HOME").
func envHome(env []byte) (home string, found bool) {
	return envVar(env, "HOME")
}
