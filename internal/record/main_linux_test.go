package record

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the shim and as a small network client the
// workload scripts call, so the kernel-tier tests need nothing but sh.
// One function over 80 lines: it dispatches every helper mode the tests re-execute this binary in.
func TestMain(m *testing.M) {
	isolateHelpers() // isolate_linux_test.go's modes
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
		case "__chroot":
			// __chroot DIR PATH: chroot to DIR and read PATH there. The
			// binary is loaded already, so the jail needs no libraries.
			err := unix.Chroot(os.Args[2])
			if err == nil {
				_, err = os.ReadFile(os.Args[3])
			}
			exitErr(err)
		case "__openat":
			// __openat FD NAME: read NAME relative to the inherited dirfd FD.
			dfd, err := strconv.Atoi(os.Args[2])
			if err == nil {
				var fd int
				if fd, err = unix.Openat(dfd, os.Args[3], unix.O_RDONLY, 0); err == nil {
					unix.Close(fd)
				}
			}
			exitErr(err)
		case "__openflags":
			// __openflags PATH FLAGS: open PATH with these open(2) flags
			// (unknown ones are ignored by the kernel), then linkat PATH
			// to PATH.lnk with the flags of the fourth argument.
			fl, err := strconv.ParseUint(os.Args[3], 0, 32)
			if err == nil {
				var fd int
				if fd, err = unix.Openat(unix.AT_FDCWD, os.Args[2], int(fl), 0); err == nil {
					unix.Close(fd)
				}
			}
			if lf, perr := strconv.ParseUint(os.Args[4], 0, 32); err == nil && perr == nil {
				unix.Linkat(unix.AT_FDCWD, os.Args[2], unix.AT_FDCWD, os.Args[2]+".lnk", int(lf)) // EINVAL, recorded
			}
			exitErr(err)
		case "__openat2":
			// __openat2 PATH: read PATH with openat2(2).
			fd, err := unix.Openat2(unix.AT_FDCWD, os.Args[2], &unix.OpenHow{Flags: unix.O_RDONLY})
			if err == nil {
				unix.Close(fd)
			}
			exitErr(err)
		case "__creat":
			// __creat PATH: creat(2), where the architecture has it.
			exitErr(creat(os.Args[2]))
		case "__fexec":
			// __fexec: run a copy of /bin/true whose file is deleted
			// while open, through /proc/self/fd/N.
			exitErr(fexecDeleted())
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
		case "__bpf":
			// __bpf MARKER: try what a tree must not be able to do to the
			// sensor, print what happened, then read MARKER.
			bpfTamper(os.Args[2])
		case "__storm":
			// __storm FILE N: open FILE N times, as fast as possible.
			n, _ := strconv.Atoi(os.Args[3])
			for i := 0; i < n; i++ {
				if fd, err := unix.Open(os.Args[2], unix.O_RDONLY, 0); err == nil {
					unix.Close(fd)
				}
			}
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

// exitErr ends a test helper mode: 0, or 1 with err on stderr.
func exitErr(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// fexecDeleted copies /bin/true to a temporary file, opens it, unlinks
// it and executes it through the descriptor.
func fexecDeleted() error {
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "polygraph-fexec")
	if err != nil {
		return err
	}
	p := filepath.Join(dir, "deltrue")
	err = os.WriteFile(p, b, 0o755)
	fd := -1
	if err == nil {
		fd, err = unix.Open(p, unix.O_RDONLY, 0)
	}
	os.RemoveAll(dir) // the file lives on while fd is open
	if err != nil {
		return err
	}
	return unix.Exec(fmt.Sprintf("/proc/self/fd/%d", fd), []string{"deltrue"}, nil)
}

// creat calls creat(2), which only x86-64 of the sensor's architectures
// has (arm64 creates with openat).
func creat(p string) error {
	if runtime.GOARCH != "amd64" {
		return fmt.Errorf("no creat(2) on %s", runtime.GOARCH)
	}
	b, err := unix.BytePtrFromString(p)
	if err != nil {
		return err
	}
	const sysCreatAMD64 = 85
	fd, _, errno := unix.Syscall(sysCreatAMD64, uintptr(unsafe.Pointer(b)), 0o644, 0)
	if errno != 0 {
		return errno
	}
	return unix.Close(int(fd))
}
