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
// lower-case to upper-case steps) is token, secret, password, passwd,
// passphrase, pass, pwd (not PWD alone), credential(s), auth, cookie,
// apikey, or key after a word that makes it a credential (API_KEY,
// SECRET_KEY, ANTHROPIC_API_KEY, AWS_SECRET_ACCESS_KEY, --api-key; not
// --sort-key, PUBLIC_KEY).
func SecretName(name string) bool {
	w := nameWords(name)
	if len(w) == 0 {
		return false
	}
	if len(w) > 1 && switchWord[w[0]] {
		return false // --no-auth, --ask-pass, ENABLE_AUTH: a switch, not the secret
	}
	last := w[len(w)-1]
	switch last {
	case "token", "secret", "secrets", "password", "passwd", "passphrase",
		"credential", "credentials", "auth", "cookie", "apikey", "accesstoken", "authtoken", "privatekey",
		"secretkey", "accesskey", "clientsecret", "sessiontoken", "pass":
		return true
	case "pwd":
		return len(w) > 1 && w[len(w)-2] != "old" // MYSQL_PWD, not PWD or OLDPWD
	case "key":
		return len(w) > 1 && !neutralKey[w[len(w)-2]]
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
	w := nameWords(name)
	if len(w) == 0 {
		return false
	}
	switch w[len(w)-1] {
	case "password", "passwd", "passphrase", "pass", "pwd":
		return true
	}
	return false
}

// nameWords splits a name into lower-case words at _ - . : / and spaces
// and where a lower-case letter is followed by an upper-case one
// (authToken → auth, token), dropping empty words. The last words are
// also joined where they spell a compound the vendors write as one word
// (api + key → apikey stays "key" after "api", so both forms match).
func nameWords(name string) []string {
	var words []string
	start := -1
	flush := func(i int) {
		if start >= 0 && i > start {
			words = append(words, strings.ToLower(name[start:i]))
		}
		start = -1
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' || c == '-' || c == '.' || c == ':' || c == '/' || c == ' ' || c == '$' || c == '{' || c == '}':
			flush(i)
		case c >= 'A' && c <= 'Z' && i > 0 && name[i-1] >= 'a' && name[i-1] <= 'z':
			flush(i)
			start = i
		default:
			if start < 0 {
				start = i
			}
		}
	}
	flush(len(name))
	return words
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
