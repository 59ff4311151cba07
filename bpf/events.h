/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Records the sensor writes into the ring buffer. Keep in sync with
 * internal/sensor/decode.go: bpf2go emits these types (-type) and
 * decode_test.go checks the Go decoder's offsets against them.
 *
 * Every record starts with struct ev_header, whose first byte is the kind.
 * Variable-length strings follow the fixed part, in the order and lengths
 * the fixed part gives. Paths walked in the kernel (exec path, cwd, dirfd
 * bases) are written leaf first as NUL-terminated components; user space
 * reverses them.
 */
#ifndef __POLYGRAPH_EVENTS_H
#define __POLYGRAPH_EVENTS_H

/* enum ev_kind, the first byte of every record, is generated from
 * internal/event/kinds.tsv. */
#include "kinds.h"

/* Limits of the variable parts (documented in README, "What is recorded"). */
#define ARGV_MAX 65535      /* bytes of argv, NULs included */
#define USTR_MAX 4096       /* one user-supplied path */
#define ENV_MAX 4096        /* bytes of an exec's environment carried for its HOME */
#define NAME_MAX_ 256       /* one path component */
#define WALK_MAX 4096       /* bytes of one kernel-walked path */
#define WALK_DEPTH 64       /* components of one kernel-walked path */
#define DNS_MAX 512         /* bytes of a DNS message kept */
#define SOCKADDR_MAX 112    /* sockaddr_un is the largest we read */

/* ev_header.flags */
#define EVF_TRUNC_ARGV (1 << 0)
#define EVF_TRUNC_PATH (1 << 1)  /* a walked path hit WALK_MAX/WALK_DEPTH */
#define EVF_TRUNC_USTR (1 << 2)  /* a user path filled USTR_MAX */
#define EVF_PEERS (1 << 3)       /* EV_EXIT: the process has byte counters in peer_bytes */
#define EVF_DELETED (1 << 4)     /* EV_EXEC: the image file has no links left */
#define EVF_COUNTED (1 << 4)     /* EV_OPEN: the image's repeats of this open are counted, not recorded (reopen.h) */
#define EVF_OBJECT (1 << 5)      /* EV_OPEN: ino..obj_len describe the opened file */
#define EVF_TRUNC_OBJ (1 << 6)   /* EV_OPEN: the object's walked path hit WALK_MAX/WALK_DEPTH */

/* ev_header starts every record: who did it and when. image_ns is the
 * boot-clock time the process's current image began (fork or execve),
 * so (pid, image_ns) names one image across pid reuse. */
struct ev_header {
	__u8 kind;
	__u8 flags;
	__u16 _pad0;
	__u32 pid;  /* tgid */
	__u32 tid;
	__u32 ppid; /* real parent's tgid */
	__u64 ts;   /* bpf_ktime_get_boot_ns */
	__u64 image_ns;
	char comm[16];
};

/* EV_EXEC: then path (walked), cwd (walked), argv (NUL-separated), for
 * a script (binfmt_script/misc ran an interpreter) the name the process
 * executed, as it passed it, and the first ENV_MAX bytes of the
 * environment (NUL-separated), which user space reads HOME from and
 * keeps nothing else of. */
struct ev_exec {
	struct ev_header h;
	__u32 uid;
	__u32 argv_len;
	__u16 path_len;
	__u16 cwd_len;
	__u16 script_len;
	__u16 env_len;
};

/* EV_FORK */
struct ev_fork {
	struct ev_header h;
	__u32 child_pid;
	__u32 _pad0;
	__u64 child_image_ns;
};

/* EV_EXIT: exit_code is the kernel's wait status (code << 8 | signal). */
struct ev_exit {
	struct ev_header h;
	__s32 exit_code;
	__u32 _pad0;
	__u64 start_ns;
	__u64 cpu_ns;
	__u64 maxrss_pages;
	__u64 rchar;
	__u64 wchar;
};

/* EV_OPEN and the path kinds (rename, unlink, mkdir, chmod, link): then
 * path (user string), base (walked dirfd/cwd, when path is relative),
 * path2, base2, and for an open that returned an fd (EVF_OBJECT) the
 * path of the file object behind it (walked). For fchmod, path is empty
 * and base is the fd's path.
 *
 * The object's part is what the kernel opened, taken from the fd table
 * at sys_exit: the user string may name it through a symlink or a /proc
 * magic link, or have been rewritten by another thread since the kernel
 * copied it. dev is the kernel's encoding (major << 20 | minor). */
struct ev_path {
	struct ev_header h;
	__s64 result;
	__u32 flags;
	__u32 mode;
	__u16 path_len;
	__u16 base_len;
	__u16 path2_len;
	__u16 base2_len;
	__u64 ino;
	__u32 dev;
	__u32 nlink;
	__u16 imode;
	__u16 obj_len;
	__u32 obj_id; /* EVF_OBJECT: the object-path cache's id of the walk (objcache.h), 0 for none */
};

/* EV_MOUNT: a mount(2), umount2 or a call of the new mount API (op,
 * MOUNT_OP_*). Then path and base (the target, or the path open_tree
 * names, with the directory a relative one is resolved against: for
 * mount(2) and fsconfig's strings always the cwd, which the source and an
 * overlay's layers are resolved against too), path2 and base2 (a bind's
 * or move's source, move_mount's from, an fsconfig path's or descriptor's
 * directory), type (mount's and fsopen's filesystem type, fsconfig's key)
 * and data (mount's option string, fsconfig's string value), as the
 * process passed them. */
struct ev_mount {
	struct ev_header h;
	__s64 result;
	__u64 flags;  /* mount: MS_*; umount2, open_tree, move_mount, fsopen, fsmount: theirs; fsconfig: the command */
	__s32 fd;     /* fsconfig, fsmount: the filesystem context; move_mount: from_dfd; -1 for none */
	__u8 op;
	__u8 _pad0;
	__u16 path_len;
	__u16 base_len;
	__u16 path2_len;
	__u16 base2_len;
	__u16 type_len;
	__u16 data_len;
	__u16 _pad1;
};

/* ev_mount.op */
#define MOUNT_OP_MOUNT 1
#define MOUNT_OP_UMOUNT 2
#define MOUNT_OP_OPEN_TREE 3
#define MOUNT_OP_MOVE_MOUNT 4
#define MOUNT_OP_FSOPEN 5
#define MOUNT_OP_FSCONFIG 6
#define MOUNT_OP_FSMOUNT 7

/* EV_PEER: a FIFO opened by a process of the tree and, at its other end,
 * by one outside it: sent by whichever open returned second (the tree's,
 * after its open record; or the outside one's). The header is the tree's
 * opener's (for the outside open, as it opened); then path_len bytes of
 * the FIFO's path and exe_len of the outside process's executable (both
 * walked). flags is the outside process's open flags (for the tree's
 * open, just the access mode of its side). */
struct ev_peer {
	struct ev_header h;
	__u64 ino;
	__u32 dev;
	__u32 peer_pid; /* the outside opener (tgid) */
	__u32 flags;    /* its open flags */
	__u16 imode;
	__u16 path_len;
	__u16 exe_len;
	__u16 _pad0;
	__u32 _pad1;
};

/* EV_CONNECT, EV_BIND, EV_ACCEPT, EV_SEND: then addr_len bytes of
 * sockaddr, built from the socket (accept; connect whose socket has a
 * peer: SF_SOCK) or as the process passed it (bind; a connect that left no
 * peer on the socket, a send's destination: SF_USER), then for a Unix
 * connect whose peer the kernel knows, exe_len bytes of the peer's
 * executable (walked). */
struct ev_sock {
	struct ev_header h;
	__s64 result;
	__u32 fd;
	__u16 addr_len;
	__u16 proto;
	__u32 peer_pid; /* unix connect: the tgid that listened (sk_peer_pid) */
	__u16 sock_type;
	__u16 exe_len;
	__u8 sflags; /* SF_* */
	__u8 _pad0[7];
};

/* ev_sock.sflags */
#define SF_SOCK (1 << 0)        /* the address was read from the socket */
#define SF_USER (1 << 1)        /* the address was read from user memory at sys_exit */
#define SF_FASTOPEN (1 << 2)    /* connect: a TCP Fast Open sendto/sendmsg */
#define SF_PEER_TRACKED (1 << 3) /* unix connect: the peer is in the traced tree */

/* EV_INJECT, EV_MEMREAD, EV_SIGNAL, EV_BPF: a call aimed at another process or at
 * the kernel. method is CALL_*; arg the ptrace request, the signal or the
 * bpf command.
 * EV_FOLLOW has the same layout: the header is the followed process's (its
 * image_ns the new image it is traced under), target and target_image_ns
 * the tree's process that reached it, method the channel (CALL_FOLLOW_*),
 * arg the socket type (CALL_FOLLOW_UNIX) or the file's inode (low 32 bits). */
struct ev_call {
	struct ev_header h;
	__s64 result;
	__u32 target; /* tgid (inject, signal), as the caller named it */
	__u32 arg;
	__u8 method;
	__u8 adopted; /* inject: the target was outside the tree and is traced from now */
	__u8 ns_local; /* inject: the caller is in a child pid namespace: target is its number there */
	__u8 _pad0;
	__u32 exe_len; /* inject, memread of an outside process: its executable, walked at the call, at DATA_OFF */
	__u64 target_image_ns; /* inject, memread: the target's image where it is in the tree or adopted (0: outside) */
};

/* ev_call.method */
#define CALL_PTRACE 1
#define CALL_VM_WRITEV 2
#define CALL_PROC_MEM 3 /* open of /proc/PID/mem for writing */
#define CALL_KILL 4
#define CALL_TKILL 5
#define CALL_TGKILL 6
#define CALL_PIDFD 7 /* pidfd_send_signal */
#define CALL_BPF 8
#define CALL_VM_READV 9 /* process_vm_readv (memread) */
#define CALL_FOLLOW_UNIX 10 /* follow: it received a message the tree sent on a Unix socket */
#define CALL_FOLLOW_FIFO 11 /* follow: it holds the other end of a FIFO the tree opened */
#define CALL_FOLLOW_FILE 12 /* follow: it opened a file the tree wrote */
#define CALL_FOLLOW_EXEC 13 /* follow: it executed a file the tree wrote */

/* EV_KEY: a kernel keyring call (keyctl, add_key, request_key); then
 * type_len bytes of the key's type and desc_len of its description, each
 * NUL-terminated and at most KEYSTR_MAX: the strings the call named
 * (add_key, request_key, KEYCTL_SEARCH; KEYCTL_JOIN_SESSION_KEYRING's
 * name), or for KEYCTL_DESCRIBE the kernel's answer
 * ("type;uid;gid;perm;description") from the caller's buffer. The
 * payload a KEYCTL_READ hands over is never read: only its length. */
struct ev_key {
	struct ev_header h;
	__s64 result;
	__u32 op;     /* the keyctl command, or KEY_OP_ADD, KEY_OP_REQUEST */
	__s32 serial; /* the key operated on, found or added (0: none) */
	__s32 ring;   /* the keyring searched, linked into or added to (0: none) */
	__u32 bytes;  /* KEYCTL_READ: the payload bytes copied to the caller */
	__u16 type_len;
	__u16 desc_len;
	__u32 _pad0;
};

#define KEYSTR_MAX 256       /* bytes of a key's type or description kept */
#define KEY_OP_ADD 0x100     /* ev_key.op of an add_key */
#define KEY_OP_REQUEST 0x101 /* ev_key.op of a request_key */

/* EV_DNS: a message the tree sent to port 53; then addr (sockaddr of the
 * server, may be empty) and data_len bytes of the DNS message. */
struct ev_dns {
	struct ev_header h;
	__u16 addr_len;
	__u16 data_len;
	__u16 proto;
	__u16 _pad0;
};

/* Key and value of the per-peer byte counters (map peer_bytes). */
struct peer_key {
	__u32 pid;
	__u16 family;
	__u16 port; /* host order */
	__u8 addr[16];
};

struct peer_val {
	__u64 sent;
	__u64 recv;
	__u64 last_ns;
};

/* reopen_val counts, per process image and file (struct sec_open_key),
 * the read-only opens after the recorded one that were not recorded
 * (reopen.h). Keep in sync with polygraphReopenVal (internal/sensor/reopen_linux.go). */
struct reopen_val {
	__u64 count;   /* opens counted, not recorded */
	__u64 last_ns; /* boot clock of the last counted */
	__u64 ctime;   /* the file's change time at the last recorded open */
	__u64 wgen;    /* reopen_gen at the last recorded open */
};

/* Key of maps sec_repeats and reopen: one process image's opens of one
 * file with one access mode (O_RDONLY, O_WRONLY, O_RDWR; for reopen 0, or
 * REOPEN_ACC_PATH for O_PATH); dev in the kernel's encoding, as ev_path
 * carries it. Keep in sync with the Go type bpf2go emits
 * (polygraphSecOpenKey, read in internal/sensor/secring_linux.go). */
struct sec_open_key {
	__u64 ino;
	__u64 image_ns;
	__u32 dev;
	__u32 tgid;
	__u32 acc;
	__u32 _pad;
};

/* Value of map tracked: one per process of the traced tree. */
struct proc_info {
	__u64 image_ns;
	__u32 flags; /* PI_* */
	__u32 until; /* PI_FOLLOWED: followed until this boot time (ns >> 30, about seconds) */
};

/* proc_info.flags */
#define PI_PEERS (1 << 0)   /* count_bytes made an entry in peer_bytes */
#define PI_ADOPTED (1 << 1) /* an inject from the tree brought it in */
/* PI_FOLLOWED: a process outside the tree that the tree reached (a Unix
 * socket's message, a FIFO, a file it wrote), traced for a while as acting
 * for the tree (edge.h, follow). 1 << 2 is watch.h's PI_OUTSIDE. */
#define PI_FOLLOWED (1 << 3)
/* PI_NET: the image connected a socket. An agent's own process talks to
 * its model, and its in-process reads are matched to tool calls by time:
 * none of its opens is counted instead of recorded (reopen.h). */
#define PI_NET (1 << 4)

#endif
