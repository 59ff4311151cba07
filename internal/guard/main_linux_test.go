package guard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the isolation helper and as the small
// network client and session owner the tests run, so they need only sh.
func TestMain(m *testing.M) {
	MaybeRunHelper()
	if len(os.Args) > 2 {
		switch os.Args[1] {
		case "__dial":
			os.Exit(dial(os.Args[2], os.Args[3]))
		case "__lookup_dial":
			os.Exit(lookupDial(os.Args[2], os.Args[3], os.Args[4]))
		case "__owner":
			os.Exit(owner(os.Args[2]))
		}
	}
	os.Exit(m.Run())
}

// __dial's statuses: the kernel refused with EPERM; io_uring is not
// available here.
const (
	exitEPERM   = 13
	exitNoUring = 77
)

// dial connects (tcp) or sends one datagram (udp, unconnected sendto) to
// addr and reports EPERM by its exit status.
func dial(network, addr string) int {
	var err error
	switch network {
	case "tcp":
		var c net.Conn
		if c, err = net.DialTimeout(network, addr, 3*time.Second); err == nil {
			c.Close()
		}
	case "tcp6":
		// A raw AF_INET6 socket: Go's dialer will not connect one to an
		// IPv4-mapped address, which is the case this is for.
		var ap netip.AddrPort
		var fd int
		if ap, err = netip.ParseAddrPort(addr); err == nil {
			if fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_STREAM, 0); err == nil {
				err = unix.Connect(fd, &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()})
				unix.Close(fd)
			}
		}
	case "uring":
		var ap netip.AddrPort
		if ap, err = netip.ParseAddrPort(addr); err == nil {
			err = uringConnect(ap)
		}
		if errors.Is(err, errNoUring) {
			fmt.Fprintln(os.Stderr, err)
			return exitNoUring
		}
	case "raw":
		// A raw ICMP socket (root's CAP_NET_RAW); only its creation counts.
		var fd int
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP); err == nil {
			unix.Close(fd)
		}
	case "ping":
		// An unprivileged ICMP echo socket (net.ipv4.ping_group_range).
		var fd int
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP); err == nil {
			ap := netip.MustParseAddrPort(addr)
			echo := []byte{8, 0, 0, 0, 0, 1, 0, 1}
			err = unix.Sendto(fd, echo, 0, &unix.SockaddrInet4{Addr: ap.Addr().As4()})
			unix.Close(fd)
		}
	case "udp", "udp6":
		var ua *net.UDPAddr
		var pc net.PacketConn
		if ua, err = net.ResolveUDPAddr(network, addr); err == nil {
			if pc, err = net.ListenPacket(network, ":0"); err == nil {
				_, err = pc.WriteTo([]byte("x"), ua)
				pc.Close()
			}
		}
	default:
		err = fmt.Errorf("unknown network %s", network)
	}
	if errors.Is(err, syscall.EPERM) {
		return exitEPERM
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// owner starts session id with a long sleep in it and blocks, so a test
// can SIGKILL it as polygraph would be killed.
func owner(id string) int {
	pid, err := startOwned(id)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(pid)
	time.Sleep(time.Hour)
	return 0
}

func startOwned(id string) (int, error) {
	s, err := Start(context.Background(), Options{ID: id, Egress: &Egress{}})
	if err != nil {
		return 0, err
	}
	c, err := s.Command(context.Background(), "sleep", "300")
	if err != nil {
		return 0, err
	}
	if err := s.Apply(c); err != nil {
		return 0, err
	}
	if err := c.Start(); err != nil {
		return 0, err
	}
	return c.Process.Pid, nil
}

// sessionID gives each test its own session name.
func sessionID(t testing.TB) string {
	return "test-" + strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()) + fmt.Sprint(os.Getpid())
}
