package redact

import (
	"sort"
	"strings"
)

// masker collects the byte ranges of s to mask; apply builds the result.
// Each pass adds ranges; overlapping ranges merge.
type masker struct {
	s    string
	cuts []cut
}

// cut is one range [from, to) of s to replace by Mask.
type cut struct{ from, to int }

func (m *masker) add(from, to int) {
	if from < to {
		m.cuts = append(m.cuts, cut{from, to})
	}
}

// masked reports whether byte i is in a range already cut.
func (m *masker) masked(i int) bool {
	for _, c := range m.cuts {
		if i >= c.from && i < c.to {
			return true
		}
	}
	return false
}

// apply returns s with the ranges replaced (overlapping and adjacent
// ranges as one), or s itself when there are none.
func (m *masker) apply() string {
	if len(m.cuts) == 0 {
		return m.s
	}
	sort.Slice(m.cuts, func(i, j int) bool { return m.cuts[i].from < m.cuts[j].from })
	var b strings.Builder
	b.Grow(len(m.s))
	at := 0
	for i := 0; i < len(m.cuts); {
		from, to := m.cuts[i].from, m.cuts[i].to
		for i++; i < len(m.cuts) && m.cuts[i].from <= to; i++ {
			to = max(to, m.cuts[i].to)
		}
		b.WriteString(m.s[at:from])
		b.WriteString(Mask)
		at = to
	}
	b.WriteString(m.s[at:])
	return b.String()
}

// pem masks the body of PEM private key blocks, from the end of the
// BEGIN line to the END line (or the end of s, for a block cut short).
func (m *masker) pem() {
	s := m.s
	for off := 0; ; {
		i := strings.Index(s[off:], "-----BEGIN ")
		if i < 0 {
			return
		}
		i += off
		hdrEnd := strings.Index(s[i+11:], "-----")
		if hdrEnd < 0 {
			return
		}
		hdrEnd += i + 11
		label := s[i+11 : hdrEnd]
		body := hdrEnd + 5
		if !strings.Contains(label, "PRIVATE KEY") {
			off = body
			continue
		}
		end := strings.Index(s[body:], "-----END")
		if end < 0 {
			m.add(body, len(s))
			return
		}
		m.add(body, body+end)
		off = body + end + 8
	}
}

// tokenByte reports whether c can be part of a key-shaped token.
func tokenByte(c byte) bool { return tokenBytes[c] }

// tokenBytes and shapeStart are tables: a string is scanned a byte at a
// time, and every path of a session is.
var tokenBytes, shapeStart [256]bool

func init() {
	for c := range 256 {
		b := byte(c)
		tokenBytes[c] = alnum(b) || b == '_' || b == '-' || b == '.'
	}
	for _, k := range keyShapes {
		shapeStart[k.prefix[0]] = true
	}
}

// shapes masks every token that has the shape of a vendor's credential.
func (m *masker) shapes() {
	s := m.s
	for i := 0; i < len(s); {
		if !tokenByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && tokenByte(s[j]) {
			j++
		}
		if j-i >= 16 && shapeStart[s[i]] {
			if n := keyShape(s[i:j]); n > 0 {
				m.add(i, i+n)
			}
		}
		i = j
	}
}

// keyShape returns the length of the credential tok begins with (0 for
// none). The shapes are the vendors' documented prefixes with the length
// and alphabet of what follows, so a directory called sk-learn is not a key.
func keyShape(tok string) int {
	for _, k := range keyShapes {
		if !strings.HasPrefix(tok, k.prefix) {
			continue
		}
		body := tok[len(k.prefix):]
		n := 0
		for n < len(body) && k.alphabet(body[n]) {
			n++
		}
		if n < k.min || k.max > 0 && n > k.max {
			continue
		}
		if k.digit && !hasDigit(body[:n]) {
			continue
		}
		if k.dots > 0 && strings.Count(body[:n], ".") != k.dots {
			continue
		}
		return len(k.prefix) + n
	}
	return 0
}

// shape is one vendor's credential format.
type shape struct {
	prefix   string
	min, max int               // length of what follows the prefix (max 0: any)
	alphabet func(c byte) bool // what may follow it
	digit    bool              // it has a digit (random strings do, words do not)
	dots     int               // it has exactly this many dots (JWTs)
}

func upperDigit(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
func alnum(c byte) bool      { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
func urlsafe(c byte) bool    { return alnum(c) || c == '_' || c == '-' }
func jwtByte(c byte) bool    { return urlsafe(c) || c == '.' }
func letters(c byte) bool    { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

// keyShapes are the credential formats masked wherever they appear.
var keyShapes = []shape{
	// AWS access key ids (long-term, temporary, and the other kinds).
	{prefix: "AKIA", min: 16, max: 16, alphabet: upperDigit},
	{prefix: "ASIA", min: 16, max: 16, alphabet: upperDigit},
	{prefix: "ABIA", min: 16, max: 16, alphabet: upperDigit},
	{prefix: "ACCA", min: 16, max: 16, alphabet: upperDigit},
	// GitHub: personal, OAuth, user-to-server, server-to-server, refresh,
	// fine-grained.
	{prefix: "ghp_", min: 30, alphabet: alnum},
	{prefix: "gho_", min: 30, alphabet: alnum},
	{prefix: "ghu_", min: 30, alphabet: alnum},
	{prefix: "ghs_", min: 30, alphabet: alnum},
	{prefix: "ghr_", min: 30, alphabet: alnum},
	{prefix: "github_pat_", min: 22, alphabet: urlsafe},
	// GitLab personal, deploy and runner tokens.
	{prefix: "glpat-", min: 20, alphabet: urlsafe},
	{prefix: "gldt-", min: 20, alphabet: urlsafe},
	{prefix: "glrt-", min: 20, alphabet: urlsafe},
	// Slack bot, user, app, refresh and config tokens.
	{prefix: "xoxb-", min: 10, alphabet: urlsafe, digit: true},
	{prefix: "xoxp-", min: 10, alphabet: urlsafe, digit: true},
	{prefix: "xoxa-", min: 10, alphabet: urlsafe, digit: true},
	{prefix: "xoxr-", min: 10, alphabet: urlsafe, digit: true},
	{prefix: "xoxs-", min: 10, alphabet: urlsafe, digit: true},
	{prefix: "xoxe-", min: 10, alphabet: urlsafe, digit: true},
	{prefix: "xapp-", min: 10, alphabet: urlsafe, digit: true},
	// Anthropic (sk-ant-api03-…, sk-ant-admin01-…) and OpenAI (sk-…,
	// sk-proj-…, sk-svcacct-…) keys: one prefix, since both begin sk-.
	{prefix: "sk-", min: 20, alphabet: urlsafe, digit: true},
	// Stripe secret and restricted keys.
	{prefix: "sk_live_", min: 16, alphabet: alnum},
	{prefix: "sk_test_", min: 16, alphabet: alnum},
	{prefix: "rk_live_", min: 16, alphabet: alnum},
	// Google API keys, OAuth access tokens and OAuth client secrets.
	{prefix: "AIza", min: 35, max: 35, alphabet: urlsafe},
	{prefix: "ya29.", min: 20, alphabet: urlsafe},
	{prefix: "GOCSPX-", min: 20, alphabet: urlsafe},
	// npm and Hugging Face access tokens.
	{prefix: "npm_", min: 36, alphabet: alnum},
	{prefix: "hf_", min: 30, alphabet: letters},
	// JSON Web Tokens: header.payload.signature, each base64url, the
	// header a JSON object ({" is eyJ).
	{prefix: "eyJ", min: 20, alphabet: jwtByte, dots: 2},
}

// valueEnd returns where an unquoted value starting at i ends.
func valueEnd(s string, i int, url bool) int {
	for j := i; j < len(s); j++ {
		switch c := s[j]; c {
		case ' ', '\t', '\n', '\r', ';', '|', '"', '\'', '`', ')', '<', '>':
			return j
		case '&':
			return j
		case '#':
			if url {
				return j
			}
		}
	}
	return len(s)
}

// quoted returns the range inside the quote that starts at i, and
// whether s[i] is a quote.
func quoted(s string, i int) (from, to int, ok bool) {
	if i >= len(s) || s[i] != '"' && s[i] != '\'' {
		return 0, 0, false
	}
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		if s[j] == '\\' && q == '"' {
			j++
			continue
		}
		if s[j] == q {
			return i + 1, j, true
		}
	}
	return i + 1, len(s), true
}

// nameByte reports whether c can be part of a variable, flag or
// parameter name.
func nameByte(c byte) bool {
	return alnum(c) || c == '_' || c == '-' || c == '.'
}

// assignments masks the values of NAME=VALUE and NAME: VALUE where the
// name says it holds a secret: shell and environment assignments,
// --flag=value, URL query parameters, INI and YAML lines, JSON members
// and header lines.
func (m *masker) assignments() {
	s := m.s
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '=' && c != ':' {
			continue
		}
		if c == ':' && i+2 < len(s) && s[i+1] == '/' && s[i+2] == '/' {
			continue // a URL's scheme
		}
		// The name: left of the separator, past spaces (INI's "key = v")
		// and a closing quote (JSON's "key": "v").
		e := i
		for e > 0 && (s[e-1] == ' ' || s[e-1] == '\t') && i-e < 4 {
			e--
		}
		quotedName := e > 0 && s[e-1] == '"'
		if quotedName {
			e--
		}
		b := e
		for b > 0 && nameByte(s[b-1]) {
			b--
		}
		if b == e {
			continue
		}
		name := s[b:e]
		query := b > 0 && (s[b-1] == '?' || s[b-1] == '&')
		if !secretParam(name, query) && !(c == ':' && authHeader(name)) {
			continue
		}
		// The value: right of the separator, past spaces, quoted or up to
		// a shell or URL delimiter.
		v := i + 1
		for v < len(s) && (s[v] == ' ' || s[v] == '\t') && v-i < 4 {
			v++
		}
		if c == '=' && v < len(s) && s[v] == '=' {
			continue // ==, a comparison
		}
		if c == ':' && !quotedName && v == i+1 {
			// name:value without a space is a host:port, a drive, a
			// scope (npm's //host/:_authToken= is an '=' case).
			continue
		}
		from, to, ok := quoted(s, v)
		if !ok {
			from, to = v, valueEnd(s, v, query)
		}
		if c == ':' && authHeader(name) {
			// The rest of the header line is credentials: keep the scheme
			// (Bearer, Basic, token) and mask what follows it.
			if !ok {
				to = lineEnd(s, from)
			}
			if sp := strings.IndexByte(s[from:to], ' '); sp > 0 && sp < 16 && !strings.EqualFold(name, "cookie") {
				from += sp + 1
			}
		}
		val := s[from:to]
		if val == "" || strings.HasPrefix(val, "$") || strings.HasPrefix(val, "%") || val == Mask || flagWord[strings.ToLower(val)] {
			continue // a reference to a variable, or a switch, not a secret
		}
		if pathLike(val) && !passwordName(name) {
			continue
		}
		m.add(from, to)
		i = to - 1
		if i < e {
			i = e
		}
	}
}

// lineEnd returns where the header line that continues at i ends: at a
// newline or a quote.
func lineEnd(s string, i int) int {
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '\n', '\r', '"', '\'':
			return j
		}
	}
	return len(s)
}

// authHeader reports whether name is a header whose value is credentials.
func authHeader(name string) bool {
	switch strings.ToLower(name) {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	return false
}

// secretParam reports whether a name (of an assignment, or of a URL query
// parameter when query) holds a secret. URL parameters add the short
// names signed and keyed URLs use (?key=, ?sig=).
func secretParam(name string, query bool) bool {
	name = strings.TrimLeft(name, "-")
	if SecretName(name) {
		return true
	}
	if !query {
		return false
	}
	switch strings.ToLower(name) {
	case "key", "sig", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token",
		"x-goog-signature", "x-goog-credential", "apikey", "api_key", "access_token", "token":
		return true
	}
	return false
}

// words masks the value after a flag that takes a secret as its next
// word (--password X, --token "X"), and the password of curl's -u
// user:password, in a command line given as one string. Quotes separate
// words, so a flag inside a quoted script (bash -c '… --token X') counts;
// a quoted value is taken whole.
func (m *masker) words() {
	s := m.s
	if !strings.HasPrefix(s, "-") && !strings.Contains(s, " -") && !strings.Contains(s, "\n-") && !strings.Contains(s, "\t-") &&
		!strings.Contains(s, "'-") && !strings.Contains(s, "\"-") {
		return // no flag
	}
	var prev string
	curl, tv := false, false // tv: the word after prev is a value to mask
	for i := 0; i < len(s); {
		for i < len(s) && wordSep[s[i]] && !(tv && (s[i] == '\'' || s[i] == '"')) {
			i++
		}
		if i >= len(s) {
			return
		}
		from, to, ok := quoted(s, i)
		if ok {
			i = min(to+1, len(s))
		} else {
			from = i
			for i < len(s) && !wordSep[s[i]] {
				i++
			}
			to = i
		}
		w := s[from:to]
		if w == "curl" || strings.HasSuffix(w, "/curl") {
			curl = true
		}
		if tv && !strings.HasPrefix(w, "-") && w != "" && !m.masked(from) {
			if prev == "-u" || prev == "--user" || prev == "--proxy-user" {
				if c := strings.IndexByte(w, ':'); c >= 0 && c < len(w)-1 {
					m.add(from+c+1, to)
				}
			} else if !pathLike(w) || passwordName(flagName(prev)) {
				m.add(from, to)
			}
		}
		prev = w
		tv = w != "" && w[0] == '-' && takesValue(w, curl)
	}
}

// wordSep are the bytes that separate the words of a command line for
// the words pass: blanks, quotes, backquotes and semicolons.
var wordSep = [256]bool{' ': true, '\t': true, '\n': true, '\'': true, '"': true, '`': true, ';': true}

// takesValue reports whether the word after prev is a value the words
// pass masks, which may then be quoted.
func takesValue(prev string, curl bool) bool {
	return flagTakesSecret(prev) || curl && (prev == "-u" || prev == "--user" || prev == "--proxy-user")
}

// urls masks the password of every URL's userinfo (scheme://user:pass@host),
// and a userinfo that is a token on its own (https://TOKEN@host).
func (m *masker) urls() {
	s := m.s
	for off := 0; ; {
		i := strings.Index(s[off:], "://")
		if i < 0 {
			return
		}
		start := off + i + 3
		end := start
		for end < len(s) {
			c := s[end]
			if c == '/' || c == '?' || c == '#' || c == ' ' || c == '"' || c == '\'' || c == '\n' || c == '\t' {
				break
			}
			end++
		}
		if at := strings.LastIndexByte(s[start:end], '@'); at > 0 {
			ui := s[start : start+at]
			if c := strings.IndexByte(ui, ':'); c >= 0 {
				if c < len(ui)-1 {
					m.add(start+c+1, start+at)
				}
			} else if len(ui) >= 20 {
				m.add(start, start+at)
			}
		}
		off = end
		if off <= start {
			off = start
		}
	}
}
