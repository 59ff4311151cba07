/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Syscall numbers and argument registers per architecture, for the
 * raw sys_enter/sys_exit tracepoints (which pass struct pt_regs and the
 * syscall number). A negative number marks a syscall the architecture does not
 * have (distinct, so they can share a switch).
 *
 * The registers are read with direct (BTF) loads, not BPF_CORE_READ: the
 * number is read for every syscall on the machine, and a probe-read
 * helper call there cost ~50 ns per syscall (bpf_stats, file storm), the
 * argument reads another ~30 ns per reported call.
 */
#ifndef __POLYGRAPH_SYSCALLS_H
#define __POLYGRAPH_SYSCALLS_H

#if defined(__TARGET_ARCH_x86)

#define NR_write 1
#define NR_open 2
#define NR_creat 85
#define NR_openat 257
#define NR_openat2 437
#define NR_rename 82
#define NR_renameat 264
#define NR_renameat2 316
#define NR_unlink 87
#define NR_rmdir 84
#define NR_unlinkat 263
#define NR_mkdir 83
#define NR_mkdirat 258
#define NR_chmod 90
#define NR_fchmod 91
#define NR_fchmodat 268
#define NR_fchmodat2 452
#define NR_link 86
#define NR_linkat 265
#define NR_symlink 88
#define NR_symlinkat 266
#define NR_connect 42
#define NR_socket 41
#define NR_bind 49
#define NR_accept 43
#define NR_accept4 288
#define NR_sendto 44
#define NR_sendmsg 46
#define NR_sendmmsg 307
#define NR_recvmsg 47
#define NR_name_to_handle_at 303
#define NR_open_by_handle_at 304
#define NR_ptrace 101
#define NR_process_vm_writev 311
#define NR_process_vm_readv 310
#define NR_kill 62
#define NR_tkill 200
#define NR_tgkill 234
#define NR_pidfd_send_signal 424
#define NR_pidfd_getfd 438
#define NR_pidfd_open 434
#define NR_bpf 321
#define NR_pivot_root 155
#define NR_mount 165
#define NR_umount2 166
#define NR_move_mount 429
#define NR_open_tree 428
#define NR_fsopen 430
#define NR_fsconfig 431
#define NR_fsmount 432
#define NR_chown 92
#define NR_fchown 93
#define NR_lchown 94
#define NR_fchownat 260
#define NR_setxattr 188
#define NR_lsetxattr 189
#define NR_fsetxattr 190
#define NR_removexattr 197
#define NR_lremovexattr 198
#define NR_fremovexattr 199
#define NR_setxattrat 463
#define NR_removexattrat 466
#define NR_add_key 248
#define NR_request_key 249
#define NR_keyctl 250

/* x86-64 syscall arguments: rdi, rsi, rdx, r10, r8, r9. */
#define SYSARG0(r) ((r)->di)
#define SYSARG1(r) ((r)->si)
#define SYSARG2(r) ((r)->dx)
#define SYSARG3(r) ((r)->r10)
#define SYSARG4(r) ((r)->r8)
#define SYSARG5(r) ((r)->r9)
/* The syscall number, still there at sys_exit. */
#define SYSNR(r) ((r)->orig_ax)

#elif defined(__TARGET_ARCH_arm64)

/* asm-generic numbering: no open, creat, rename, unlink, rmdir, mkdir,
 * chmod, link or symlink; their *at forms do the work. */
#define NR_write 64
#define NR_open -1
#define NR_creat -2
#define NR_openat 56
#define NR_openat2 437
#define NR_rename -3
#define NR_renameat 38
#define NR_renameat2 276
#define NR_unlink -4
#define NR_rmdir -5
#define NR_unlinkat 35
#define NR_mkdir -6
#define NR_mkdirat 34
#define NR_chmod -7
#define NR_fchmod 52
#define NR_fchmodat 53
#define NR_fchmodat2 452
#define NR_link -8
#define NR_linkat 37
#define NR_symlink -9
#define NR_symlinkat 36
#define NR_connect 203
#define NR_socket 198
#define NR_bind 200
#define NR_accept 202
#define NR_accept4 242
#define NR_sendto 206
#define NR_sendmsg 211
#define NR_sendmmsg 269
#define NR_recvmsg 212
#define NR_name_to_handle_at 264
#define NR_open_by_handle_at 265
#define NR_ptrace 117
#define NR_process_vm_writev 271
#define NR_process_vm_readv 270
#define NR_kill 129
#define NR_tkill 130
#define NR_tgkill 131
#define NR_pidfd_send_signal 424
#define NR_pidfd_getfd 438
#define NR_pidfd_open 434
#define NR_bpf 280
#define NR_umount2 39
#define NR_mount 40
#define NR_pivot_root 41
#define NR_move_mount 429
#define NR_open_tree 428
#define NR_fsopen 430
#define NR_fsconfig 431
#define NR_fsmount 432
#define NR_chown -10
#define NR_fchown 55
#define NR_lchown -11
#define NR_fchownat 54
#define NR_setxattr 5
#define NR_lsetxattr 6
#define NR_fsetxattr 7
#define NR_removexattr 14
#define NR_lremovexattr 15
#define NR_fremovexattr 16
#define NR_setxattrat 463
#define NR_removexattrat 466
#define NR_add_key 217
#define NR_request_key 218
#define NR_keyctl 219

/* arm64: x0..x5; x0 is overwritten by the return value, orig_x0 keeps it. */
#define SYSARG0(r) ((r)->orig_x0)
#define SYSARG1(r) ((r)->regs[1])
#define SYSARG2(r) ((r)->regs[2])
#define SYSARG3(r) ((r)->regs[3])
#define SYSARG4(r) ((r)->regs[4])
#define SYSARG5(r) ((r)->regs[5])
#define SYSNR(r) ((r)->syscallno)

#else
#error "polygraph's sensor knows the syscalls of x86-64 and arm64 only"
#endif

#endif
