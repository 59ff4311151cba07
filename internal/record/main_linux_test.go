package record

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the shim and as a small network client the
// workload scripts call, so the kernel-tier tests need nothing but sh.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case ShimArg:
			os.Exit(ShimMain(os.Args[2:]))
		case "__connect":
			// __connect NETWORK ADDR: open a TCP connection, write a line, close.
			c, err := net.DialTimeout(os.Args[2], os.Args[3], 5*time.Second)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Fprintln(c, "hello")
			c.Close()
			os.Exit(0)
		case "__memfd":
			// __memfd: run /bin/true from an anonymous memory file.
			fd, err := unix.MemfdCreate("polygraph-test", 0)
			if err == nil {
				var b []byte
				if b, err = os.ReadFile("/bin/true"); err == nil {
					_, err = unix.Write(fd, b)
				}
			}
			if err == nil {
				err = unix.Exec(fmt.Sprintf("/proc/self/fd/%d", fd), []string{"memtrue"}, nil)
			}
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		case "__listen":
			// __listen: bind a loopback port, connect to it and accept.
			l, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			go func() {
				if c, err := net.Dial("tcp4", l.Addr().String()); err == nil {
					c.Close()
				}
			}()
			// Never wait for ever: the workload must end for the test to.
			l.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
			if c, err := l.Accept(); err == nil {
				c.Close()
			}
			fmt.Println(l.Addr().(*net.TCPAddr).Port)
			os.Exit(0)
		case "__resolve":
			// __resolve NAME SERVER: look NAME up with Go's resolver at SERVER.
			r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "udp", os.Args[3])
			}}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			r.LookupHost(ctx, os.Args[2]) // the fake server answers NXDOMAIN: only the query matters
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}
