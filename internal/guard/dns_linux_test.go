package guard

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/testenv"
)

func TestNameHashMatchesWireFormat(t *testing.T) {
	// The BPF side hashes the wire form it reads from a question.
	tests := []struct{ a, b string }{
		{"api.example.com", "API.Example.COM"},
		{"api.example.com", "api.example.com."},
	}
	for _, tt := range tests {
		if nameHash(tt.a) != nameHash(tt.b) {
			t.Errorf("nameHash(%q) != nameHash(%q)", tt.a, tt.b)
		}
	}
	if nameHash("a.bc") == nameHash("ab.c") {
		t.Error("label boundaries do not change the hash")
	}
}

// dnsQuery is a one-question A query for name.
func dnsQuery(name string) []byte {
	b := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, l := range strings.Split(name, ".") {
		b = append(b, byte(len(l)))
		b = append(b, l...)
	}
	return append(b, 0, 0, 1, 0, 1)
}

// dnsAnswer answers query with one A record for addr, its owner name a
// compression pointer to the question.
func dnsAnswer(query []byte, addr netip.Addr) []byte {
	b := append([]byte(nil), query...)
	b[2], b[3] = 0x81, 0x80
	b[7] = 1 // ancount
	b = append(b, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
	a := addr.As4()
	return append(b, a[:]...)
}

// questionName reads the name back out of a query.
func questionName(q []byte) string {
	var labels []string
	for i := 12; i < len(q) && q[i] != 0; i += int(q[i]) + 1 {
		labels = append(labels, string(q[i+1:i+1+int(q[i])]))
	}
	return strings.Join(labels, ".")
}

// lookupDial resolves name at server over UDP and connects to the
// answer at port: __lookup_dial inside the tree.
func lookupDial(server, name, port string) int {
	pc, err := net.ListenPacket("udp4", ":0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pc.Close()
	sa, _ := net.ResolveUDPAddr("udp4", server)
	if _, err := pc.WriteTo(dnsQuery(name), sa); err != nil {
		fmt.Fprintln(os.Stderr, "query:", err)
		return 1
	}
	pc.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 512)
	n, _, err := pc.ReadFrom(buf)
	if err != nil || n < 4 {
		fmt.Fprintln(os.Stderr, "answer:", err)
		return 1
	}
	addr := netip.AddrFrom4([4]byte(buf[n-4 : n]))
	return dial("tcp", net.JoinHostPort(addr.String(), port))
}

// fakeResolver answers every A query at 127.0.0.2:53 with 127.0.0.1,
// except that a question for a spoof.* name is answered from
// 127.0.0.3:53, a source the session does not trust.
func fakeResolver(t *testing.T) netip.AddrPort {
	t.Helper()
	srv, err := net.ListenPacket("udp4", "127.0.0.2:53")
	if err != nil {
		t.Skipf("cannot serve DNS on 127.0.0.2:53: %v", err)
	}
	spoof, err := net.ListenPacket("udp4", "127.0.0.3:53")
	if err != nil {
		srv.Close()
		t.Skipf("cannot serve DNS on 127.0.0.3:53: %v", err)
	}
	t.Cleanup(func() { srv.Close(); spoof.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := srv.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			out := srv
			if strings.HasPrefix(questionName(q), "spoof.") {
				out = spoof
			}
			out.WriteTo(dnsAnswer(q, netip.MustParseAddr("127.0.0.1")), from)
		}
	}()
	return netip.MustParseAddrPort("127.0.0.2:53")
}

func TestDNSAnswersAllowNames(t *testing.T) {
	testenv.RequireRoot(t)
	resolver := fakeResolver(t)
	port := func() uint16 { p, _ := listen(t, "tcp"); return p }
	api, other, spoofed := port(), port(), port()
	s := start(t, Options{Egress: &Egress{
		Allow: []Endpoint{{resolver.Addr(), 53}},
		Names: []Name{
			{Host: "api.example.test", Ports: []uint16{api}},
			{Host: "spoof.example.test", Ports: []uint16{spoofed}},
		},
	}})
	self := exposedSelf(t)
	tests := []struct {
		name, host string
		port       uint16
		want       int
	}{
		{"allowed name, any case", "API.Example.Test", api, 0},
		{"name not allowed", "other.example.test", other, exitEPERM},
		{"allowed name, port not allowed", "api.example.test", other, exitEPERM},
		{"answer from an untrusted source", "spoof.example.test", spoofed, exitEPERM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := run(t, s, nobody, nil, self, "__lookup_dial", resolver.String(), tt.host, fmt.Sprint(tt.port))
			if code != tt.want {
				t.Errorf("lookup %s and dial port %d inside the tree: exited %d, want %d: %s", tt.host, tt.port, code, tt.want, out)
			}
		})
	}
}
