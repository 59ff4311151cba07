package sensor

import "bytes"

// envHome finds HOME in a NUL-separated environment block. Only a
// variable its NUL ends counts: a block cut short (ENV_MAX, environMax)
// ends in part of one, and a HOME cut there is not the process's HOME.
// found is false when no whole HOME= variable is in env.
func envHome(env []byte) (home string, found bool) {
	for len(env) > 0 {
		kv, rest, ended := bytes.Cut(env, []byte{0})
		if !ended {
			return "", false
		}
		if v, ok := bytes.CutPrefix(kv, []byte("HOME=")); ok {
			return string(v), true
		}
		env = rest
	}
	return "", false
}
