// Package redact is polygraph's one redactor: it masks secrets in the
// strings polygraph shows or sends (command lines, environments, URLs,
// headers, findings' text) before they leave the code that holds them, so
// a report, an event stream or an OTLP export never carries an API key the
// agent passed on a command line.
//
// It masks by context and by shape, never by entropy alone, so paths,
// hashes, tool-call ids and ordinary commands pass unchanged:
//
//   - by context: the value of an assignment, flag, query parameter, JSON
//     member or header whose name says it holds a secret (ANTHROPIC_API_KEY=…,
//     --password X, --token=X, ?access_token=…, "client_secret": "…",
//     Authorization: Bearer …), and the password of a URL's userinfo or of
//     curl's -u user:password;
//   - by shape: the key formats vendors give their credentials (AWS access
//     key ids, GitHub, GitLab, Slack, OpenAI, Anthropic, Google, Stripe,
//     npm and Hugging Face tokens, JWTs) and PEM private key blocks,
//     wherever they appear.
//
// A masked value is replaced by Mask; the name before it stays, so a
// reader still sees which secret was there. The functions allocate only
// when they change something.
package redact

import (
	"path"
	"strings"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// String returns s with every secret in it masked. s may be a command
// line, a shell script, a URL, a header line, an environment assignment
// or any other text.
func String(s string) string {
	if len(s) < 4 {
		return s
	}
	var m masker
	m.s = s
	m.pem()
	m.shapes()
	m.assignments()
	m.words()
	m.urls()
	return m.apply()
}

// Argv returns argv with every secret masked: each argument as String
// masks it, and the argument after a flag whose name says it holds a
// secret (--password X, --token X) or after curl's -u/--user (the
// password of user:password). The slice is argv itself when nothing
// changed.
func Argv(argv []string) []string {
	var out []string
	set := func(i int, v string) {
		if v == argv[i] {
			return
		}
		if out == nil {
			out = append([]string(nil), argv...)
		}
		out[i] = v
	}
	curl := false
	for i, a := range argv {
		if b := path.Base(a); b == "curl" || b == "wget" {
			curl = true
		}
		set(i, String(a))
		if i == 0 {
			continue
		}
		prev := argv[i-1]
		switch {
		case flagTakesSecret(prev) && !strings.HasPrefix(a, "-"):
			if !pathLike(a) || passwordName(flagName(prev)) {
				set(i, Mask)
			}
		case curl && (prev == "-u" || prev == "--user" || prev == "--proxy-user"):
			if c := strings.IndexByte(a, ':'); c >= 0 && c < len(a)-1 {
				set(i, a[:c+1]+Mask)
			}
		}
	}
	if out == nil {
		return argv
	}
	return out
}

// Env returns the environment (KEY=VALUE entries) with the value of every
// variable whose name says it holds a secret masked, and secrets of known
// shapes (or in URLs) masked in the others. The slice is env itself when
// nothing changed.
func Env(env []string) []string {
	var out []string
	for i, kv := range env {
		v := EnvVar(kv)
		if v == kv {
			continue
		}
		if out == nil {
			out = append([]string(nil), env...)
		}
		out[i] = v
	}
	if out == nil {
		return env
	}
	return out
}

// EnvVar masks one KEY=VALUE environment entry (see Env).
func EnvVar(kv string) string {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || v == "" {
		return String(kv)
	}
	if SecretName(k) && !(pathLike(v) && !passwordName(k)) {
		return k + "=" + Mask
	}
	if r := String(v); r != v {
		return k + "=" + r
	}
	return kv
}

// Header returns the value of an HTTP header with its credentials masked:
// all of it for a header that carries them (Cookie, X-Api-Key, a name
// SecretName accepts), all but the scheme for Authorization, and secrets
// of known shapes in any other.
func Header(name, value string) string {
	switch strings.ToLower(name) {
	case "authorization", "proxy-authorization":
		if scheme, _, ok := strings.Cut(strings.TrimSpace(value), " "); ok {
			return scheme + " " + Mask
		}
		return Mask
	case "cookie", "set-cookie":
		return Mask
	}
	if SecretName(name) {
		return Mask
	}
	return String(value)
}

// SecretName reports whether a variable, flag, parameter or header of
// this name holds a secret: its last word (words split at _ - . : / and
// lower-case to upper-case steps) is token, secret(s), password, passwd,
// passphrase, pass, pwd (not PWD alone), credential(s), auth, cookie,
// apikey, or key after a word that makes it a credential (API_KEY,
// SECRET_KEY, ANTHROPIC_API_KEY, AWS_SECRET_ACCESS_KEY, --api-key; not
// --sort-key, PUBLIC_KEY); and its first word does not make it a switch
// (--no-auth, --ask-pass, ENABLE_AUTH).
func SecretName(name string) bool {
	if !secretSuffix(name) {
		return false // the last word, a suffix of the name, cannot be one
	}
	w := splitName(name)
	if w.n == 0 {
		return false
	}
	if w.n > 1 && switchWord[w.first] {
		return false
	}
	switch w.last {
	case "token", "secret", "secrets", "password", "passwd", "passphrase",
		"credential", "credentials", "auth", "cookie", "apikey", "accesstoken", "authtoken", "privatekey",
		"secretkey", "accesskey", "clientsecret", "sessiontoken", "pass":
		return true
	case "pwd":
		return w.n > 1 // MYSQL_PWD, not PWD
	case "key":
		return w.n > 1 && !neutralKey[w.prev]
	}
	return false
}

// secretEnds are the endings of every last word SecretName accepts.
var secretEnds = []string{"token", "secret", "secrets", "password", "passwd", "passphrase", "credential", "credentials",
	"auth", "cookie", "key", "pass", "pwd"}

// secretSuffix reports whether name ends, in any case, with one of
// secretEnds: a test that costs no allocation and rules out nearly every
// name a shell script assigns.
func secretSuffix(name string) bool {
	var buf [16]byte
	tail := name[max(0, len(name)-len(buf)):]
	for i := 0; i < len(tail); i++ {
		c := tail[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	low := buf[:len(tail)]
	for _, e := range secretEnds {
		if len(low) >= len(e) && string(low[len(low)-len(e):]) == e {
			return true
		}
	}
	return false
}

// neutralKey are the words before "key" that do not make a credential of
// it: a sort key, a public key, a cache key.
var neutralKey = map[string]bool{
	"sort": true, "primary": true, "foreign": true, "cache": true, "partition": true, "hash": true,
	"group": true, "index": true, "lookup": true, "public": true, "pub": true, "host": true, "known": true,
	"trusted": true, "id": true, "map": true, "hot": true, "short": true, "dedup": true,
	"unique": true, "composite": true, "shard": true, "routing": true, "idempotency": true,
}

// switchWord are the first words of names that turn a secret on or off,
// or ask for one, rather than hold it.
var switchWord = map[string]bool{
	"no": true, "ask": true, "prompt": true, "show": true, "use": true, "with": true, "without": true,
	"skip": true, "require": true, "requires": true, "allow": true, "disable": true, "enable": true, "is": true, "has": true,
}

// flagWord are values that switch something rather than hold a secret.
var flagWord = map[string]bool{
	"true": true, "false": true, "yes": true, "no": true, "on": true, "off": true, "none": true, "null": true,
}

// passwordName reports whether name is a password's, whose value is
// masked even when it looks like a path.
func passwordName(name string) bool {
	switch splitName(name).last {
	case "password", "passwd", "passphrase", "pass", "pwd":
		return true
	}
	return false
}

// nameParts are the words of a name that SecretName weighs, lower-case:
// the first, the one before the last, the last, and how many there are.
type nameParts struct {
	n                 int
	first, prev, last string
}

// maxWord bounds the words SecretName compares: none it knows is longer,
// so a longer word is kept as "" (matching nothing).
const maxWord = 16

// splitName splits a name into words at _ - . : / space $ { } and where a
// lower-case letter is followed by an upper-case one (authToken → auth,
// token). It is called for every '=' and ':' of every string redacted, so
// it allocates only for a word with upper-case letters it must lower.
func splitName(name string) nameParts {
	var p nameParts
	start := -1
	word := func(end int) {
		if start < 0 || end <= start {
			start = -1
			return
		}
		w := lower(name[start:end])
		p.n++
		if p.n == 1 {
			p.first = w
		}
		p.prev, p.last = p.last, w
		start = -1
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' || c == '-' || c == '.' || c == ':' || c == '/' || c == ' ' || c == '$' || c == '{' || c == '}':
			word(i)
		case c >= 'A' && c <= 'Z' && i > 0 && name[i-1] >= 'a' && name[i-1] <= 'z':
			word(i)
			start = i
		default:
			if start < 0 {
				start = i
			}
		}
	}
	word(len(name))
	return p
}

// lower returns w in lower case, "" for a word longer than maxWord.
func lower(w string) string {
	if len(w) > maxWord {
		return ""
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= 'A' && c <= 'Z' {
			if s, ok := lowered[w]; ok {
				return s
			}
			return strings.ToLower(w)
		}
	}
	return w
}

// lowered holds the upper-case forms of the words SecretName knows, so
// the environment's ANTHROPIC_API_KEY is lowered without allocating.
var lowered = map[string]string{}

func init() {
	for _, w := range []string{"token", "secret", "secrets", "password", "passwd", "passphrase", "credential", "credentials",
		"auth", "cookie", "apikey", "pass", "pwd", "key", "api", "access", "private", "client", "session", "old", "no",
		"enable", "disable", "use", "with", "public", "sort", "id", "path", "file", "dir", "home", "url", "host", "port",
		"user", "name", "mode", "level", "type", "config", "data", "cache", "socket", "sock", "bin", "lib", "tmp", "term", "lang"} {
		lowered[strings.ToUpper(w)] = w
		if len(w) > 1 {
			lowered[strings.ToUpper(w[:1])+w[1:]] = w
		}
	}
}

// flagTakesSecret reports whether arg is a flag without a value whose
// name says the next argument is a secret (--password, --api-key,
// --token).
func flagTakesSecret(arg string) bool {
	if !strings.HasPrefix(arg, "-") || strings.ContainsAny(arg, "= ") || len(arg) < 3 {
		return false
	}
	return SecretName(flagName(arg))
}

// flagName strips a flag's dashes.
func flagName(arg string) string { return strings.TrimLeft(arg, "-") }

// pathLike reports whether a value is a file path rather than a secret:
// the --key or SSH_KEY= of a key file names the file, not the key.
func pathLike(v string) bool {
	v = strings.Trim(v, `"'`)
	return strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") ||
		strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "$") || strings.HasPrefix(v, "@")
}
