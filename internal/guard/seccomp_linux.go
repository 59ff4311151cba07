package guard

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring calls, the same numbers on amd64 and arm64.
const (
	sysIOUringSetup    = 425
	sysIOUringEnter    = 426
	sysIOUringRegister = 427
)

// auditArch is this build's AUDIT_ARCH_*, what seccomp_data.arch holds
// for a native call.
func auditArch() (uint32, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return 0xc000003e, true // AUDIT_ARCH_X86_64
	case "arm64":
		return 0xc00000b7, true // AUDIT_ARCH_AARCH64
	}
	return 0, false
}

// denyIOUring installs, on every thread of the calling process (TSYNC), a
// seccomp filter under which io_uring_setup, io_uring_enter and
// io_uring_register fail with ENOSYS, as on a kernel built without
// io_uring, and so does every call of another ABI than the native one (a
// 32-bit int 0x80 call, x32): the edge gate, the kill rules and the
// sensor read the native syscall numbers, and a compat connect or open
// would pass them by. Everything else is allowed. The tree inherits the
// filter across fork and exec and cannot remove it. The caller is root
// (CAP_SYS_ADMIN): no no_new_privs is set, so setuid programs in the tree
// keep working.
//
// Why io_uring: the edge gate and the kill rules act at syscall exits,
// and an io_uring operation (a connect, an openat) completes in the
// kernel without one. Programs that use io_uring (libuv, liburing) fall
// back to plain calls on ENOSYS.
func denyIOUring() error {
	arch, ok := auditArch()
	if !ok {
		return fmt.Errorf("deny io_uring: no seccomp arch for %s", runtime.GOARCH)
	}
	const (
		ldW   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeqK  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jsetK = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		retK  = unix.BPF_RET | unix.BPF_K
		x32   = 0x40000000 // __X32_SYSCALL_BIT, under the native x86-64 arch
	)
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	filter := []unix.SockFilter{
		{Code: ldW, K: 4},                          // 0: seccomp_data.arch
		{Code: jeqK, K: arch, Jt: 0, Jf: 6},        // 1: another ABI (int 0x80, compat): -> 8 deny
		{Code: ldW, K: 0},                          // 2: seccomp_data.nr
		{Code: jsetK, K: x32, Jt: 4},               // 3: x32: -> 8 deny
		{Code: jeqK, K: sysIOUringSetup, Jt: 3},    // 4: -> 8 deny
		{Code: jeqK, K: sysIOUringEnter, Jt: 2},    // 5: -> 8 deny
		{Code: jeqK, K: sysIOUringRegister, Jt: 1}, // 6: -> 8 deny
		{Code: retK, K: allow},                     // 7
		{Code: retK, K: deny},                      // 8
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("deny io_uring (seccomp): %w", errno)
	}
	if r != 0 { // TSYNC: the thread that could not take the filter
		return fmt.Errorf("deny io_uring (seccomp): thread %d could not be synchronized", r)
	}
	return nil
}
