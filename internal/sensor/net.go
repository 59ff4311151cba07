package sensor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
)

// Flags of an ev_sock record (bpf/events.h, SF_*).
const (
	sfSock        = 1 << 0
	sfUser        = 1 << 1
	sfFastOpen    = 1 << 2
	sfPeerTracked = 1 << 3
)

// sockaddr decodes a struct sockaddr as a process passes it.
func sockaddr(b []byte) (family, addr string, port uint16) {
	if len(b) < 2 {
		return "", "", 0
	}
	switch binary.LittleEndian.Uint16(b) {
	case 1: // AF_UNIX
		p := b[2:]
		if len(p) > 0 && p[0] == 0 {
			return "unix", "@" + cstring(p[1:]), 0
		}
		return "unix", cstring(p), 0
	case 2: // AF_INET
		if len(b) < 8 {
			return "ipv4", "", 0
		}
		a := netip.AddrFrom4([4]byte(b[4:8]))
		return "ipv4", a.String(), binary.BigEndian.Uint16(b[2:4])
	case 10: // AF_INET6
		if len(b) < 24 {
			return "ipv6", "", 0
		}
		a := netip.AddrFrom16([16]byte(b[8:24]))
		return "ipv6", a.String(), binary.BigEndian.Uint16(b[2:4])
	case 0:
		return "unspec", "", 0
	default:
		return fmt.Sprintf("af%d", binary.LittleEndian.Uint16(b)), "", 0
	}
}

func (d *Decoder) decodeSock(b []byte) (*event.Event, error) {
	r, err := castHeader[polygraphEvSock](b)
	if err != nil {
		return nil, err
	}
	ps, err := pieces(b, int(r.AddrLen), int(r.ExeLen))
	if err != nil {
		return nil, err
	}
	ab := ps[0]
	kind := recordKinds[r.H.Kind]
	e := d.base(&r.H, kind)
	e.Network.Family, e.Network.Addr, e.Network.Port = sockaddr(ab)
	e.Result = d.i64.Ptr(r.Result)
	e.Network.Proto = protoName(r.Proto, r.SockType)
	if kind == event.KindConnect || kind == event.KindSend {
		e.Network.AddrUser = r.Sflags&sfUser != 0
		e.Network.FastOpen = r.Sflags&sfFastOpen != 0
	}
	if r.PeerPid != 0 {
		e.Network.PeerPID = r.PeerPid
		e.Network.PeerExe = walked(ps[1])
		in := r.Sflags&sfPeerTracked != 0
		e.Network.PeerInTree = &in
	}
	return e, nil
}

// sockRaw is SOCK_RAW, an ev_sock's sock_type.
const sockRaw = 3

// protoName names a socket's protocol; a raw socket's is "raw" with the
// IP protocol it carries ("raw:icmp").
func protoName(p, sockType uint16) string {
	name := ""
	switch p {
	case 6:
		name = "tcp"
	case 17:
		name = "udp"
	case 1:
		name = "icmp"
	case 58:
		name = "icmpv6"
	case 0:
	default:
		name = fmt.Sprintf("proto%d", p)
	}
	if sockType == sockRaw {
		if name == "" {
			return "raw"
		}
		return "raw:" + name
	}
	return name
}

func (d *Decoder) decodeDNS(b []byte) (*event.Event, error) {
	r, err := castHeader[polygraphEvDns](b)
	if err != nil {
		return nil, err
	}
	ps, err := pieces(b, int(r.AddrLen), int(r.DataLen))
	if err != nil {
		return nil, err
	}
	ab, msg := ps[0], ps[1]
	e := d.base(&r.H, event.KindDNS)
	e.Network.Family, e.Network.Addr, e.Network.Port = sockaddr(ab)
	e.Network.Proto = protoName(r.Proto, 0)
	if r.Proto == 6 && len(msg) >= 2 {
		msg = msg[2:] // DNS over TCP: a 2-byte length comes first
	}
	e.Network.QName, e.Network.QType, _ = ParseDNSQuestion(msg)
	return e, nil
}

// ParseDNSQuestion returns the name and type of the first question of a
// DNS message.
func ParseDNSQuestion(msg []byte) (name, qtype string, err error) {
	if len(msg) < 12 {
		return "", "", fmt.Errorf("dns message of %d bytes: %w", len(msg), ErrShort)
	}
	if binary.BigEndian.Uint16(msg[4:6]) == 0 {
		return "", "", errors.New("dns message without a question")
	}
	i := 12
	var labels []string
	for {
		if i >= len(msg) {
			return "", "", fmt.Errorf("dns name: %w", ErrShort)
		}
		l := int(msg[i])
		i++
		if l == 0 {
			break
		}
		if l&0xc0 != 0 || i+l > len(msg) || len(labels) > 127 {
			return "", "", errors.New("dns name: bad label")
		}
		labels = append(labels, string(msg[i:i+l]))
		i += l
	}
	name = strings.Join(labels, ".")
	if name == "" {
		name = "."
	}
	if i+2 > len(msg) {
		return name, "", nil
	}
	return name, QTypeName(binary.BigEndian.Uint16(msg[i : i+2])), nil
}

// QTypeName names a DNS query type.
func QTypeName(t uint16) string {
	switch t {
	case 1:
		return "A"
	case 2:
		return "NS"
	case 5:
		return "CNAME"
	case 6:
		return "SOA"
	case 12:
		return "PTR"
	case 15:
		return "MX"
	case 16:
		return "TXT"
	case 28:
		return "AAAA"
	case 33:
		return "SRV"
	case 64:
		return "SVCB"
	case 65:
		return "HTTPS"
	case 255:
		return "ANY"
	}
	return fmt.Sprintf("TYPE%d", t)
}
