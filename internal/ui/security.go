package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ErrNeedsToken is returned for a listen address that is not loopback
// when no token may be made up (Options.Token "" and NoToken set): a page
// that shows what an agent did on this machine is never served to the
// network without one.
var ErrNeedsToken = errors.New("a listen address other than loopback needs a token")

// csp is the pages' Content-Security-Policy: the page's own style sheet,
// script and event streams, and nothing else, from anywhere.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// tokenCookie carries the token once a browser has shown it in a URL.
const tokenCookie = "polygraph_ui_token"

// loopbackListen reports whether addr (host:port) listens on loopback
// only: an IP in 127.0.0.0/8 or ::1, or "localhost".
func loopbackListen(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false, nil // a name: it could be anything
	}
	return ip.IsLoopback(), nil
}

// newToken is a random token for a server on the network.
func newToken() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// loopbackHost reports whether a request's Host names loopback: a page
// served on 127.0.0.1 answers only to names that mean this machine, so a
// web site cannot rebind its own name to 127.0.0.1 and read the pages
// from a visitor's browser.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// guard wraps the server's handler: the security headers on every
// answer, only GET and HEAD, and either a loopback Host (token "") or the
// token, from the cookie, an Authorization: Bearer header or a ?token=
// in the URL (which sets the cookie and is taken out of the URL).
func guard(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "read only", http.StatusMethodNotAllowed)
			return
		}
		if token == "" {
			if !loopbackHost(r.Host) {
				http.Error(w, "polygraph ui answers only to loopback names (localhost, 127.0.0.1, [::1])", http.StatusMisdirectedRequest)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if q := r.URL.Query().Get("token"); q != "" && same(q, token) {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			u := *r.URL
			v := u.Query()
			v.Del("token")
			u.RawQuery = v.Encode()
			http.Redirect(w, r, u.String(), http.StatusSeeOther)
			return
		}
		if c, err := r.Cookie(tokenCookie); err == nil && same(c.Value, token) {
			next.ServeHTTP(w, r)
			return
		}
		if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && same(b, token) {
			next.ServeHTTP(w, r)
			return
		}
		http.Error(w, "polygraph ui: open the URL with the token it printed", http.StatusUnauthorized)
	})
}

// same compares two secrets in constant time.
func same(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
