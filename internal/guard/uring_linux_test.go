package guard

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// errNoUring says the kernel has io_uring off or compiled out.
var errNoUring = errors.New("io_uring not available")

// uringConnect connects a TCP socket to ap through io_uring's
// IORING_OP_CONNECT instead of connect(2), to show whether the cgroup
// connect hook sees it. Raw syscalls: the tests take no io_uring module.
func uringConnect(ap netip.AddrPort) error {
	const (
		sysSetup, sysEnter = 425, 426 // the same on amd64 and arm64
		opConnect          = 16
		offSQRing, offSQEs = 0, 0x10000000
		offCQRing          = 0x8000000
		enterGetEvents     = 1
	)
	var p struct {
		sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
		resv                                                                   [3]uint32
		sqOff                                                                  [10]uint32 // head, tail, ring_mask, ring_entries, flags, dropped, array, resv1, user_addr
		cqOff                                                                  [10]uint32 // head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1, user_addr
	}
	fd, _, errno := unix.Syscall(sysSetup, 4, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return fmt.Errorf("%w: io_uring_setup: %w", errNoUring, errno)
	}
	defer unix.Close(int(fd))
	sq, err := unix.Mmap(int(fd), offSQRing, int(p.sqOff[6]+p.sqEntries*4), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap sq ring: %w", err)
	}
	defer unix.Munmap(sq)
	cq, err := unix.Mmap(int(fd), offCQRing, int(p.cqOff[5]+p.cqEntries*16), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap cq ring: %w", err)
	}
	defer unix.Munmap(cq)
	sqes, err := unix.Mmap(int(fd), offSQEs, int(p.sqEntries*64), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap sqes: %w", err)
	}
	defer unix.Munmap(sqes)

	s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	sa := unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ap.Addr().As4()}
	sa.Port = ap.Port()>>8 | ap.Port()<<8 // network order on a little-endian host
	if !littleEndian() {
		sa.Port = ap.Port()
	}
	sqe := sqes[:64]
	clear(sqe)
	sqe[0] = opConnect
	*(*int32)(unsafe.Pointer(&sqe[4])) = int32(s)
	*(*uint64)(unsafe.Pointer(&sqe[8])) = uint64(unsafe.Sizeof(sa)) // off: addrlen
	*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(unsafe.Pointer(&sa)))
	*(*uint64)(unsafe.Pointer(&sqe[32])) = 1 // user_data

	u32 := func(b []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }
	tail := atomic.LoadUint32(u32(sq, p.sqOff[1]))
	mask := *u32(sq, p.sqOff[2])
	*u32(sq, p.sqOff[6]+(tail&mask)*4) = 0
	atomic.StoreUint32(u32(sq, p.sqOff[1]), tail+1)
	if _, _, errno := unix.Syscall6(sysEnter, fd, 1, 1, enterGetEvents, 0, 0); errno != 0 {
		return fmt.Errorf("io_uring_enter: %w", errno)
	}
	runtime.KeepAlive(&sa)
	head := atomic.LoadUint32(u32(cq, p.cqOff[0]))
	cqe := p.cqOff[5] + (head&*u32(cq, p.cqOff[2]))*16
	res := *(*int32)(unsafe.Pointer(&cq[cqe+8]))
	atomic.StoreUint32(u32(cq, p.cqOff[0]), head+1)
	if res < 0 {
		return syscall.Errno(-res)
	}
	return nil
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}
