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

// locationIndex numbers locationVars, for execEnv's one pass.
var locationIndex = func() map[string]int {
	if len(locationVars) > 64 {
		panic("sensor: more than 64 locationVars")
	}
	m := make(map[string]int, len(locationVars))
	for i, n := range locationVars {
		m[n] = i
	}
	return m
}()

// execEnv is what an exec records of its environment: its HOME and the
// locationVars it set, found in one pass over the block (a scan per
// variable had cost every exec ~15 passes over its environment).
type execEnv struct {
	home    string
	hasHome bool
	set     uint64   // bit i: locationVars[i] was found
	vals    []string // by locationVars index, made at the first found
}

// scan takes from env the variables not found yet: the first of a name
// wins, as envVar's does, and only a variable its NUL ends counts.
// skipEmpty leaves an empty value unfound (a read of /proc/PID/environ
// after the fact, where "" has always meant none).
func (f *execEnv) scan(env []byte, skipEmpty bool) {
	for len(env) > 0 {
		i := bytes.IndexByte(env, 0)
		if i < 0 {
			return
		}
		kv := env[:i]
		env = env[i+1:]
		eq := bytes.IndexByte(kv, '=')
		if eq <= 0 || skipEmpty && eq == len(kv)-1 {
			continue
		}
		name := kv[:eq]
		if string(name) == "HOME" {
			if !f.hasHome {
				f.home, f.hasHome = string(kv[eq+1:]), true
			}
			continue
		}
		j, ok := locationIndex[string(name)]
		if !ok || f.set&(1<<j) != 0 {
			continue
		}
		if f.vals == nil {
			f.vals = make([]string, len(locationVars))
		}
		f.vals[j] = string(kv)
		f.set |= 1 << j
	}
}

// complete says whether every variable execEnv looks for was found.
func (f *execEnv) complete() bool {
	return f.hasHome && f.set == 1<<len(locationVars)-1
}

// location returns the locationVars found, as NAME=value, in
// locationVars' order.
func (f *execEnv) location() []string {
	if f.set == 0 {
		return nil
	}
	out := make([]string, 0, 4)
	for _, v := range f.vals {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
