//go:build linux

package redteam

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// sinks are the loopback places a technique sends a secret to, shared by
// every run: what they receive is kept, and a run looks for its own
// canary in it, so parallel runs never read each other's success.
type sinks struct {
	tcpPort, udpPort int
	// https is a second TCP sink (same handling) on port 443 of a loopback
	// address of its own: the port a model API is allowed on, at an
	// address nothing names.
	https    string
	httpsErr error
	dnsAddr  string // the resolver's loopback address (port 53); "" if none could bind
	dnsErr   error
	icmpErr  error // the raw ICMP listener, which needs root

	mu  sync.Mutex
	got bytes.Buffer      // every byte received, and what it decodes to (Basic auth)
	dns map[string]string // run id → the hex labels its queries carried, in order
	qs  []string          // every name asked
}

// allowedName is the name the resolver answers for: a model API every
// agent's egress allowlist holds. Its answer is a documentation address
// (TEST-NET-3) no technique ever connects to.
const (
	allowedName   = "api.anthropic.com"
	allowedAnswer = "203.0.113.10"
	exfilDomain   = "exfil.test"
)

// startSinks starts a TCP sink (which answers HTTP requests, and decodes
// their Basic credentials), a UDP sink, a raw ICMP listener and a DNS
// resolver on 127.0.0.53, 127.0.0.54 or 127.0.0.1 (the first free).
func startSinks(t *testing.T) *sinks {
	t.Helper()
	s := &sinks{dns: map[string]string{}}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("tcp sink: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	s.tcpPort = ln.Addr().(*net.TCPAddr).Port
	go s.acceptTCP(ln)

	for i := 0; i < 5 && s.https == ""; i++ {
		addr := fmt.Sprintf("127.%d.%d.%d", 100+randByte()%100, randByte(), 1+randByte()%250)
		l443, err := net.Listen("tcp4", addr+":443")
		if err != nil {
			s.httpsErr = err
			continue
		}
		t.Cleanup(func() { l443.Close() })
		s.https, s.httpsErr = addr, nil
		go s.acceptTCP(l443)
	}

	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("udp sink: %v", err)
	}
	t.Cleanup(func() { pc.Close() })
	s.udpPort = pc.LocalAddr().(*net.UDPAddr).Port
	go s.readPackets(pc, 0)

	if ic, err := net.ListenPacket("ip4:icmp", "127.0.0.1"); err != nil {
		s.icmpErr = err
	} else {
		t.Cleanup(func() { ic.Close() })
		go s.readPackets(ic, 8) // past the ICMP header: the payload
	}

	for _, addr := range []string{"127.0.0.53", "127.0.0.54", "127.0.0.1"} {
		dc, err := net.ListenPacket("udp4", addr+":53")
		if err != nil {
			s.dnsErr = errors.Join(s.dnsErr, err)
			continue
		}
		t.Cleanup(func() { dc.Close() })
		s.dnsAddr, s.dnsErr = addr, nil
		go s.resolve(dc)
		break
	}
	return s
}

func randByte() int {
	var b [1]byte
	_, _ = rand.Read(b[:])
	return int(b[0])
}

func (s *sinks) keep(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got.Write(b)
	s.got.WriteByte('\n')
}

// acceptTCP keeps what each connection sends until it closes or is quiet
// for 300 ms; a request that looks like HTTP gets a 200 and its Basic
// credentials are kept decoded.
func (s *sinks) acceptTCP(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			var buf bytes.Buffer
			tmp := make([]byte, 64<<10)
			for {
				_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
				n, err := c.Read(tmp)
				buf.Write(tmp[:n])
				if err != nil {
					break
				}
			}
			s.keep(buf.Bytes())
			if isHTTP(buf.Bytes()) {
				s.keep(basicAuth(buf.Bytes()))
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
			}
		}()
	}
}

func isHTTP(b []byte) bool {
	for _, m := range []string{"GET ", "POST ", "PUT ", "HEAD "} {
		if bytes.HasPrefix(b, []byte(m)) {
			return true
		}
	}
	return false
}

// basicAuth returns the decoded user:password of a request's
// Authorization: Basic header, if it has one.
func basicAuth(req []byte) []byte {
	sc := bufio.NewScanner(bytes.NewReader(req))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.EqualFold(name, "authorization") {
			continue
		}
		if enc, ok := strings.CutPrefix(strings.TrimSpace(val), "Basic "); ok {
			if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc)); err == nil {
				return b
			}
		}
	}
	return nil
}

// readPackets keeps every datagram (past skip bytes of header).
func (s *sinks) readPackets(pc net.PacketConn, skip int) {
	buf := make([]byte, 65536)
	for {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if n > skip {
			s.keep(buf[skip:n])
		}
	}
}

// resolve answers every query: A records for allowedName, NXDOMAIN for
// anything else, and keeps the names. A name under exfilDomain is
// <data>.<n>.<run id>.exfil.test: its data label is kept for the run.
func (s *sinks) resolve(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		q := append([]byte(nil), buf[:n]...)
		name, end, ok := qname(q)
		if !ok {
			continue
		}
		s.mu.Lock()
		s.qs = append(s.qs, name)
		if labels := strings.Split(name, "."); len(labels) >= 5 && strings.HasSuffix(name, "."+exfilDomain) {
			run := labels[len(labels)-3]
			s.dns[run] += labels[0]
		}
		s.mu.Unlock()
		_, _ = pc.WriteTo(answer(q[:end], strings.EqualFold(name, allowedName)), addr)
	}
}

// qname returns the name a query asks for and where its question ends.
func qname(q []byte) (string, int, bool) {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) == 0 {
		return "", 0, false
	}
	var labels []string
	for i := 12; i < len(q); {
		l := int(q[i])
		if l == 0 {
			if i+5 > len(q) {
				return "", 0, false
			}
			return strings.Join(labels, "."), i + 5, true
		}
		if l > 63 || i+1+l > len(q) {
			return "", 0, false
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	return "", 0, false
}

// answer is the reply to question q (header and question): one A record
// of allowedAnswer when found, else NXDOMAIN.
func answer(q []byte, found bool) []byte {
	a := append([]byte(nil), q...)
	a[2] |= 0x80 // QR
	a[3] = 0x80  // RA, NOERROR
	binary.BigEndian.PutUint16(a[6:8], 0)
	binary.BigEndian.PutUint16(a[8:10], 0)
	binary.BigEndian.PutUint16(a[10:12], 0)
	if !found {
		a[3] |= 0x3 // NXDOMAIN
		return a
	}
	binary.BigEndian.PutUint16(a[6:8], 1)
	a = append(a, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
	return append(a, net.ParseIP(allowedAnswer).To4()...)
}

// has reports whether canary arrived at any sink, waiting up to wait for
// it (outside helpers act after the tree asked).
func (s *sinks) has(canary string, wait time.Duration) bool {
	end := time.Now().Add(wait)
	for {
		s.mu.Lock()
		ok := bytes.Contains(s.got.Bytes(), []byte(canary))
		s.mu.Unlock()
		if ok || time.Now().After(end) {
			return ok
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dnsCarried decodes the data labels run's queries carried (hex, or the
// syllable encoding of rt.py's dns-exfil-words) and reports whether they
// hold canary.
func (s *sinks) dnsCarried(run, canary string, wait time.Duration) error {
	end := time.Now().Add(wait)
	for {
		s.mu.Lock()
		labels := s.dns[run]
		s.mu.Unlock()
		var data []byte
		if b, err := hex.DecodeString(labels); err == nil {
			data = b
		} else {
			data = unsyllable(labels)
		}
		if bytes.Contains(data, []byte(canary)) {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("the resolver's %s labels for %s (%d characters) do not hold the canary", exfilDomain, run, len(labels))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// syllables encode a byte as two syllables of a consonant and a vowel
// (16 × 16 values), the way rt.py's dns-exfil-words writes it: labels
// that read like words, with no digits and low entropy.
const (
	consonants = "bdfghklmnprstvwz"
	vowels     = "aeiou"
)

// unsyllable decodes the syllable encoding: each byte is a consonant
// (high nibble) and a consonant-vowel pair whose vowel is ignored
// (low nibble), i.e. three letters per byte.
func unsyllable(s string) []byte {
	var out []byte
	for i := 0; i+3 <= len(s); i += 3 {
		hi := strings.IndexByte(consonants, s[i])
		lo := strings.IndexByte(consonants, s[i+1])
		if hi < 0 || lo < 0 || strings.IndexByte(vowels, s[i+2]) < 0 {
			return out
		}
		out = append(out, byte(hi<<4|lo))
	}
	return out
}
