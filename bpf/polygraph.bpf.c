// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * polygraph's kernel sensor. Everything hangs off tracepoints, which every
 * kernel with BPF has (fentry/fexit, LSM and kprobes are often refused):
 *  - tp_btf sched_process_{fork,exec,exit} keep the set of traced
 *    processes (map tracked) and report the process tree;
 *  - tp_btf sys_exit reports file and socket operations with their
 *    results, the DNS messages the tree sends and the destinations it
 *    names per message, writes into other processes (ptrace,
 *    process_vm_writev), signals to polygraph, bpf(2) calls and the
 *    kernel keyring's calls (keyctl, add_key, request_key: keyring.h),
 *    dispatching on the syscall number. At exit the arguments and the memory they point to
 *    are still there, so nothing hooks sys_enter: a program there cost
 *    every syscall of the machine ~50 ns more. (Per-syscall tracepoints
 *    would skip unrelated syscalls, but each needs a perf event whose
 *    detach waits for an RCU grace period: 50 of them took 2-3 s to
 *    detach. The raw tracepoint detaches at once.);
 *  - tp_btf sock_{send,recv}_length count bytes per peer.
 * Scope is decided in the kernel: a process is traced when its parent was
 * at fork, so a daemonised or re-parented grandchild stays traced, and a
 * process outside the tree costs one hash lookup and is never recorded.
 */
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "events.h"
#include "syscalls.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AT_FDCWD -100
#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10
#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define S_IFIFO 0010000
#define S_IFREG 0100000
#define S_IFDIR 0040000
#define SIGNAL_GROUP_EXIT 0x00000004
#define EAGAIN 11
#define O_RDONLY 00
#define O_WRONLY 01
#define O_RDWR 02
#define O_CREAT 0100
#define O_TRUNC 01000
#define AT_REMOVEDIR 0x200
#define SOCK_STREAM 1
#define SOCK_DGRAM 2
#define SOCK_RAW 3
#define MSG_FASTOPEN 0x20000000
#define PROC_SUPER_MAGIC 0x9fa0
#define PIDFS_MAGIC 0x50494446
#define PTRACE_POKETEXT 4
#define PTRACE_POKEDATA 5
#define PTRACE_ATTACH 16
#define PTRACE_SEIZE 0x4206
#define BY_HANDLE (1u << 30) /* ev_path.flags of an open_by_handle_at: no path was named */
#define LINK_SYMBOLIC (1u << 31) /* ev_path.flags of a symlink: its target is text */
#define FD_TAKEN (1u << 29) /* ev_path.flags of a pidfd_getfd: another process's open file, named /proc/PID/fd/N */
#define FD_RECEIVED (1u << 28) /* ev_path.flags of a file received in SCM_RIGHTS: no path named */
/* USER_FLAGS is a call's flags as the process passed them, without the
 * bits the records use as markers: open(2) and openat(2) ignore unknown
 * flags, so a process could otherwise set BY_HANDLE on an ordinary open
 * (and the decoder drop the path it asked for), or LINK_SYMBOLIC on a
 * linkat. */
#define USER_FLAGS(x) ((__u32)(x) & ~(BY_HANDLE | LINK_SYMBOLIC | FD_TAKEN | FD_RECEIVED))
#define NO_BASE -1000 /* op.dfd value: do not resolve this path */
#define XATTR_SET 1    /* ev_path.flags of an EV_XATTR: setxattr and its forms */
#define XATTR_REMOVE 2 /* removexattr and its forms */

/* bounded clamps v to at most max and hides the result from the compiler,
 * so the mask the verifier needs is not optimised away. */
#define bounded(v, max) ({ __u64 __v = (v) > (max) ? (max) : (v); asm volatile("" : "+r"(__v)); __v; })

/* Every variable-length record is built in a scratch buffer whose data
 * part starts at DATA_OFF, then copied to the ring buffer with its real
 * length. Offsets into data are masked to 16 bits and each piece is at
 * most 64 KiB, so every access is provably inside the buffer. */
#define DATA_OFF 96
#define DATA_SIZE (2 * 65536 + USTR_MAX)
#define SCRATCH_SIZE (DATA_OFF + DATA_SIZE)
#define OFF(o) (DATA_OFF + ((o) & 0xFFFF))
/* OFF17 is for a piece of at most USTR_MAX bytes that may start past
 * 64 KiB (an exec's script name and environment follow an argv of up to
 * 64 KiB): DATA_SIZE leaves room for it at any 17-bit offset. */
#define OFF17(o) (DATA_OFF + ((o) & 0x1FFFF))
_Static_assert(0x1FFFF + USTR_MAX <= DATA_SIZE && ENV_MAX <= USTR_MAX, "a 17-bit piece leaves the scratch");

/* walk_state is a path walk in progress (see walk_step). */
struct walk_state {
	__u64 d;    /* struct dentry * */
	__u64 vm;   /* struct vfsmount * */
	__u64 root; /* vm's mnt_root, read once per mount */
	__u32 off;
	__u32 start;
	__u32 flags;
	__u32 _pad;
};

_Static_assert(sizeof(struct ev_exec) <= DATA_OFF, "ev_exec overlaps data");
_Static_assert(sizeof(struct ev_path) <= DATA_OFF, "ev_path overlaps data");
_Static_assert(sizeof(struct ev_sock) <= DATA_OFF, "ev_sock overlaps data");
_Static_assert(sizeof(struct ev_dns) <= DATA_OFF, "ev_dns overlaps data");
_Static_assert(sizeof(struct ev_peer) <= DATA_OFF, "ev_peer overlaps data");

/* sensor_pid is polygraph's own pid (set at load): a signal the tree aims
 * at it is a tamper signal. */
const volatile __u32 sensor_pid = 0;
/* sensor_pgid is polygraph's process group, which `run` shares with the
 * command: kill(0) and kill(-pgid) from the tree reach polygraph too. */
const volatile __u32 sensor_pgid = 0;

#include "objcache_types.h"

struct scratch {
	__u8 b[SCRATCH_SIZE];
	__u8 span[128]; /* SPAN: fields read with one probe read */
	struct walk_state w;
	__u64 nrec; /* records this CPU sent from the buffer */
	__u64 objseq; /* object-path cache offers this CPU made (objcache.h) */
	struct obj_key ok; /* the entry an open looked up */
	struct obj_val ov; /* the entry it may make */
	__u8 obj_pend;     /* ov waits for its record to be in the ring */
	struct sec_open_key rk; /* the counted open an open may make (reopen.h) */
	struct reopen_val rv;
};

/* events carries every record to user space. Its size is set by the
 * loader (Options.RingBytes). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

/* sec_events carries the security-relevant records (process tree, network,
 * calls at other processes or the kernel, io_uring set-up, opens of the
 * files in sec_files), so that a storm of ordinary opens filling events
 * cannot push them out. Its size is set by the loader
 * (Options.SecRingBytes). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} sec_events SEC(".maps");

/* file_id names a file by identity: dev in the kernel's encoding
 * (major << 20 | minor), as ev_path.dev. */
struct file_id {
	__u64 ino;
	__u32 dev;
	__u32 _pad0;
};

/* sec_files holds the sensitive files and directories user space found at
 * start (the policy's sensitive, persistence, privilege and agent-config
 * paths): an open of one of them, or of a file directly in one of the
 * directories, goes to sec_events. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct file_id);
	__type(value, __u8);
} sec_files SEC(".maps");

/* sec_repeats counts, per process image, guarded file and access mode
 * (struct sec_open_key), the opens after the first. The first keeps the
 * security ring's priority; the repeats go to events with the ordinary
 * records: a tree opening one guarded file in a loop once filled
 * sec_events and about half the execs beside it were lost. User space sums
 * the counts per file when tracing stops. An LRU map: a flood of distinct
 * keys evicts the oldest, whose next open counts as a first again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct sec_open_key);
	__type(value, __u64);
} sec_repeats SEC(".maps");

/* lost counts what the kernel side could not deliver: slot 0 records
 * events had no room for, slot 1 processes or syscalls the tracking maps
 * had no room for, slot 2 records sec_events had no room for. User space
 * sums the per-CPU values. */
#define LOST_RING 0
#define LOST_TRACK 1
#define LOST_SEC 2
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* tracked holds the traced processes by tgid. User space seeds it with
 * the root of the tree; fork adds children, exit removes them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct proc_info);
} tracked SEC(".maps");

/* op is one file or socket syscall as sys_exit reports it. */
struct op {
	__u8 kind;
	__u8 _pad[3];
	__s32 dfd;
	__s32 dfd2;
	__u32 flags;
	__u32 mode;
	__u32 _pad2;
	__u64 p1;
	__u64 p2;
};

/* scratch: one buffer per CPU (an array indexed by CPU id, because
 * per-CPU maps cap values at 32 KiB). The loader sizes it to the number
 * of possible CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* peer_bytes counts bytes per process and peer; user space drains it
 * when a process exits and when tracing stops. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct peer_key);
	__type(value, struct peer_val);
} peer_bytes SEC(".maps");

/* Force bpf2go to emit the Go types of the records. */
const struct ev_exec *_unused_exec __attribute__((unused));
const struct ev_fork *_unused_fork __attribute__((unused));
const struct ev_exit *_unused_exit __attribute__((unused));
const struct ev_path *_unused_path __attribute__((unused));
const struct ev_sock *_unused_sock __attribute__((unused));
const struct ev_dns *_unused_dns __attribute__((unused));
const struct ev_call *_unused_call __attribute__((unused));
const struct ev_peer *_unused_peer __attribute__((unused));
const struct ev_key *_unused_key __attribute__((unused));
const struct ev_mount *_unused_mount __attribute__((unused));
const struct sec_open_key *_unused_sec_open_key __attribute__((unused));

static __always_inline void count_lost(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&lost, &slot);
	if (v)
		*v += 1;
}

/* current_proc returns the current process's entry in tracked, or 0. A
 * followed process (follow.h) whose time ran out leaves the map here, at its
 * next event. */
static __always_inline struct proc_info *current_proc(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct proc_info *pi = bpf_map_lookup_elem(&tracked, &tgid);
	if (pi && (pi->flags & PI_FOLLOWED) && (bpf_ktime_get_boot_ns() >> 30) > pi->until) {
		bpf_map_delete_elem(&tracked, &tgid);
		return 0;
	}
	return pi;
}

static __always_inline struct scratch *get_scratch(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	return bpf_map_lookup_elem(&scratch, &cpu);
}

static __always_inline void fill_header(struct ev_header *h, struct task_struct *t, __u8 kind, __u64 ts, __u64 image_ns)
{
	/* Direct (BTF) loads: a probe-read helper call per field cost
	 * 0.35 us of every record. */
	h->kind = kind;
	h->flags = 0;
	h->pid = t->tgid;
	h->tid = t->pid;
	h->ppid = t->real_parent->tgid;
	h->ts = ts;
	h->image_ns = image_ns;
	__u64 *c = (__u64 *)h->comm;
	const __u64 *tc = (const __u64 *)t->comm;
	c[0] = tc[0];
	c[1] = tc[1];
}

/* WAKEUP_BYTES: the reader is woken only once this much is waiting; it
 * also drains the buffer on a short timer. Waking it for every record
 * cost a syscall per event, most of the sensor's user-space CPU. */
#define WAKEUP_BYTES (256 << 10)
#define WAKEUP_EVERY 64

static __always_inline __u64 wakeup(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= WAKEUP_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* wakeup_sec: the security ring's records are rare, so it is asked on
 * every one of them. */
static __always_inline __u64 wakeup_sec(void)
{
	return bpf_ringbuf_query(&sec_events, BPF_RB_AVAIL_DATA) >= WAKEUP_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* submit_to sends the record in s to sec_events when sec, else to
 * events. It returns whether the ring took it. */
static __always_inline bool submit_to(struct scratch *s, __u32 data_len, bool sec)
{
	__u64 size = DATA_OFF + (data_len & 0x1FFFF);
	if (size > SCRATCH_SIZE)
		size = SCRATCH_SIZE;
	if (sec) {
		if (bpf_ringbuf_output(&sec_events, s->b, size, wakeup_sec())) {
			count_lost(LOST_SEC);
			return false;
		}
		return true;
	}
	/* Asking the ring how full it is costs a helper call and a read of
	 * the line the reader writes: only every WAKEUP_EVERY records. */
	__u64 flags = (++s->nrec & (WAKEUP_EVERY - 1)) ? BPF_RB_NO_WAKEUP : wakeup();
	if (bpf_ringbuf_output(&events, s->b, size, flags)) {
		count_lost(LOST_RING);
		return false;
	}
	return true;
}

/* submit_scratch sends an ordinary record; submit_sec a security-relevant one. */
#define submit_scratch(s, n) submit_to(s, n, false)
#define submit_sec(s, n) submit_to(s, n, true)

/* bpf_rdonly_cast (6.2+) gives a kernel pointer the sensor only has as a
 * number (read from an array slot, kept in the scratch map) its BTF type,
 * so that its fields are loads (a faulting load, a few ns) instead of
 * probe-read helper calls (~40 ns each). Where it is missing the probe
 * reads are taken. TYPED(T, p) is p as a read-only struct T. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;
#define HAVE_TYPED (&bpf_rdonly_cast != 0)
#define TYPED(T, p) ((struct T *)bpf_rdonly_cast((void *)(p), bpf_core_type_id_kernel(struct T)))

/* dentry_links reads d's parent and name pointer, with one probe read
 * where the kernel keeps them close (d_parent is followed by d_name in
 * every kernel since 2.6; the offsets are CO-RE constants, so the
 * verifier keeps one branch). */
static __always_inline void dentry_links(struct dentry *d, struct dentry **parent, const unsigned char **name)
{
	if (HAVE_TYPED) {
		struct dentry *td = TYPED(dentry, d);
		*parent = td->d_parent;
		*name = td->d_name.name;
		return;
	}
	__u64 po = bpf_core_field_offset(struct dentry, d_parent);
	__u64 no = bpf_core_field_offset(struct dentry, d_name.name);
	if (no > po && no - po <= 24 && !((no - po) & 7)) {
		__u64 span[4] = {};
		bpf_probe_read_kernel(span, sizeof(span), (void *)d + po);
		*parent = (void *)span[0];
		*name = (void *)span[((no - po) >> 3) & 3];
		return;
	}
	*parent = BPF_CORE_READ(d, d_parent);
	*name = BPF_CORE_READ(d, d_name.name);
}

/* walk_step handles one dentry of a path walk; it returns 1 to stop.
 * Running the walk through bpf_loop keeps the verifier's work to one step
 * however deep the path. The walk's state lives in the scratch map, not
 * on the stack: the verifier does not track values loaded from map memory,
 * so every step looks alike to it and verification converges at once
 * (with the offset on the stack it explored each of the 64 steps). ctx
 * holds the scratch pointer, so a step costs no map lookup, and the
 * mount's root is read once per mount, not per step: the walk is paid on
 * every open (the object's path), each helper call of a step ~40 ns. */
static long walk_step(__u64 i, void *ctx)
{
	struct scratch *s = *(struct scratch **)ctx;
	if (!s)
		return 1;
	struct walk_state *w = &s->w;
	struct dentry *d = (void *)w->d;
	if ((__u64)d == w->root) {
		struct vfsmount *vm = (void *)w->vm;
		struct mount *mnt = (void *)vm - bpf_core_field_offset(struct mount, mnt);
		struct mount *mp = BPF_CORE_READ(mnt, mnt_parent);
		if (mp == mnt)
			return 1; /* the global root */
		w->d = (__u64)BPF_CORE_READ(mnt, mnt_mountpoint);
		vm = (void *)mp + bpf_core_field_offset(struct mount, mnt);
		w->vm = (__u64)vm;
		w->root = (__u64)BPF_CORE_READ(vm, mnt_root);
		return 0;
	}
	if (!d)
		return 1;
	struct dentry *parent;
	const unsigned char *name;
	dentry_links(d, &parent, &name);
	__u32 off = w->off;
	if (d == parent && off != w->start)
		return 1; /* the root of a filesystem that is mounted nowhere */
	/* A file whose dentry is its own parent and is not a mount root is a
	 * pseudo file (memfd:, pipe:, anon_inode:): its name is all there is,
	 * and the walk ends after it. */
	if (off - w->start >= WALK_MAX) {
		w->flags |= EVF_TRUNC_PATH;
		return 1;
	}
	long n = bpf_probe_read_kernel_str(&s->b[OFF(off)], NAME_MAX_, name);
	if (n <= 0)
		return 1;
	w->off = off + n;
	w->d = (__u64)parent;
	if (d == parent)
		return 1;
	if (i == WALK_DEPTH - 1)
		w->flags |= EVF_TRUNC_PATH;
	return 0;
}

/* walk_from writes the path of dentry d on mount vm into data at off,
 * leaf component first, each NUL-terminated, following mounts up to the
 * global root, the way d_path does. It returns the bytes written. */
static __always_inline __u32 walk_from(struct dentry *d, struct vfsmount *vm, struct scratch *s, __u32 off, __u8 *flags)
{
	struct walk_state *w = &s->w;
	w->d = (__u64)d;
	w->vm = (__u64)vm;
	w->root = (__u64)BPF_CORE_READ(vm, mnt_root);
	w->off = off;
	w->start = off;
	w->flags = 0;
	struct scratch *ctx = s;
	bpf_loop(WALK_DEPTH, walk_step, &ctx, 0);
	*flags |= w->flags;
	return (w->off - w->start) & 0x3FFF;
}

/* walk_path is walk_from for the dentry and mount of p. */
static __always_inline __u32 walk_path(const struct path *p, struct scratch *s, __u32 off, __u8 *flags)
{
	return walk_from(BPF_CORE_READ(p, dentry), BPF_CORE_READ(p, mnt), s, off, flags);
}

static __always_inline __u32 read_ustr(struct scratch *s, __u32 off, const char *u, __u8 *flags)
{
	if (!u)
		return 0;
	long n = bpf_probe_read_user_str(&s->b[OFF(off)], USTR_MAX, u);
	if (n <= 0)
		return 0;
	if (n >= USTR_MAX)
		*flags |= EVF_TRUNC_USTR;
	return n;
}

/* fd_file returns the file at fd in t's table. The task is BTF-typed, so
 * the way to the table is direct loads. The slot itself is in an array of
 * pointers the verifier has no type for: where bpf_rdonly_cast exists it
 * is typed as the one kernel struct whose first member is a struct file *
 * for sure (struct kiocb), so it is a load too (~5 ns; an untracked open
 * pays it, see edge.h); else it takes a probe read (~40 ns). */
static __always_inline struct file *fd_file(struct task_struct *t, long fd)
{
	struct files_struct *files = t->files;
	if (!files)
		return 0;
	struct fdtable *fdt = files->fdt;
	if (!fdt)
		return 0;
	unsigned int max = fdt->max_fds;
	struct file **fds = fdt->fd;
	struct file *f = 0;

	if (fd < 0 || fd >= max)
		return 0;
	if (HAVE_TYPED)
		return TYPED(kiocb, (void *)fds + fd * sizeof(void *))->ki_filp;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

/* walk_base writes the directory a relative path is resolved against:
 * the cwd for AT_FDCWD, else the path of the file at dfd. */
static __always_inline __u32 walk_base(struct task_struct *t, __s32 dfd, struct scratch *s, __u32 off, __u8 *flags)
{
	if (dfd == AT_FDCWD) {
		struct fs_struct *fs = BPF_CORE_READ(t, fs);
		return walk_path(__builtin_preserve_access_index(&fs->pwd), s, off, flags);
	}
	struct file *f = fd_file(t, dfd);
	if (!f)
		return 0;
	return walk_path(__builtin_preserve_access_index(&f->f_path), s, off, flags);
}

/* in_or_under reports whether the file ino on dev, whose dentry is d, or
 * the directory d is in, is a key of map (a hash keyed by struct file_id:
 * sec_files, watched). */
static __always_inline bool in_or_under(void *map, __u64 ino, __u32 dev, struct dentry *d)
{
	struct file_id k = {.ino = ino, .dev = dev};
	if (bpf_map_lookup_elem(map, &k))
		return true;
	if (HAVE_TYPED)
		k.ino = TYPED(dentry, d)->d_parent->d_inode->i_ino;
	else
		k.ino = BPF_CORE_READ(d, d_parent, d_inode, i_ino);
	return k.ino && bpf_map_lookup_elem(map, &k);
}

#include "objcache.h"
#include "watch.h"
#include "follow.h"

/* ---- process tree ---- */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid;
	struct proc_info *pi = bpf_map_lookup_elem(&tracked, &ptgid);
	if (!pi)
		return 0;
	__u32 cpid = child->pid;
	if (cpid != child->tgid)
		return 0; /* a new thread, not a new process */

	__u64 now = bpf_ktime_get_boot_ns();
	struct proc_info ci = {.image_ns = now};
	if (pi->flags & PI_FOLLOWED) {
		/* a followed process's child is followed until the same time */
		if (follow_expired(pi)) {
			bpf_map_delete_elem(&tracked, &ptgid);
			return 0;
		}
		ci.flags = PI_FOLLOWED;
		ci.until = pi->until;
	}
	if (bpf_map_update_elem(&tracked, &cpid, &ci, BPF_ANY))
		count_lost(1);

	struct ev_fork *e = bpf_ringbuf_reserve(&sec_events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_SEC);
		return 0;
	}
	fill_header(&e->h, bpf_get_current_task_btf(), EV_FORK, now, pi->image_ns);
	e->child_pid = cpid;
	e->_pad0 = 0;
	e->child_image_ns = now;
	bpf_ringbuf_submit(e, wakeup_sec());
	return 0;
}

/* send_exec sends the exec record of image f that task p runs: its
 * path, cwd, argv, script name (fname, or none) and environment, built in
 * s. flags are the header's so far. */
static __always_inline void send_exec(struct scratch *s, struct task_struct *p, struct file *f, const char *fname,
				      __u64 ts, __u64 image_ns, __u8 flags)
{
	struct ev_exec *e = (void *)s->b;
	fill_header(&e->h, bpf_get_current_task_btf(), EV_EXEC, ts, image_ns);
	e->uid = p->cred->uid.val;

	/* An image with no links left (deleted, or a memfd) can only have
	 * run from an fd: fexecve, /proc/self/fd/N. */
	if (BPF_CORE_READ(f, f_inode, i_nlink) == 0)
		flags |= EVF_DELETED;
	__u32 off = walk_path(__builtin_preserve_access_index(&f->f_path), s, 0, &flags);
	e->path_len = off;
	__u32 n = walk_base(p, AT_FDCWD, s, off, &flags);
	e->cwd_len = n;
	off += n;

	struct mm_struct *mm = p->mm;
	unsigned long as = mm->arg_start;
	unsigned long ae = mm->arg_end;
	__u64 alen = ae > as ? ae - as : 0;
	if (alen > ARGV_MAX)
		flags |= EVF_TRUNC_ARGV;
	alen = bounded(alen, ARGV_MAX);
	if (bpf_probe_read_user(&s->b[OFF(off)], alen & 0xFFFF, (void *)as))
		alen = 0;
	e->argv_len = alen;
	off += alen;
	e->script_len = 0;
	if (fname) {
		long n = bpf_probe_read_kernel_str(&s->b[OFF17(off)], USTR_MAX, fname);
		if (n > 0) {
			e->script_len = n;
			off += n;
		}
	}
	/* The environment as the kernel just laid it on the new image's
	 * stack, before any of the image's code ran: its HOME is the one
	 * its "~/" means. Read here, not from /proc later, a process that
	 * exits at once still has one, and one that rewrites its own
	 * environment cannot change what was recorded. */
	unsigned long es = mm->env_start;
	unsigned long ee = mm->env_end;
	__u64 elen = bounded(ee > es ? ee - es : 0, ENV_MAX);
	if (bpf_probe_read_user(&s->b[OFF17(off)], elen, (void *)es))
		elen = 0;
	e->env_len = elen;
	off += elen;
	e->h.flags = flags;
	submit_sec(s, off);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct proc_info *pi = current_proc();
	if (!pi)
		pi = exec_follow(p, bprm->file);
	if (!pi && !watch_exec_all())
		return 0;
	struct scratch *s = get_scratch();
	if (!s)
		return 0;
	/* Watch mode: an exec outside every tree is reported only when it
	 * may be an agent's (watch.h), so the host's other execs cost one
	 * look at names, not a record. */
	if (!pi && !watch_candidate(s, p, bprm))
		return 0;

	__u64 now = bpf_ktime_get_boot_ns();
	if (pi) {
		pi->image_ns = now;
		pi->flags &= ~PI_NET; /* the new image has connected nothing yet */
	}
	/* A script: bprm->interp was replaced by the interpreter's name, and
	 * bprm->file is the interpreter. Keep the script's own name. */
	const char *fname = bprm->filename;
	send_exec(s, p, bprm->file, bprm->interp != fname ? fname : 0, now, now, pi ? 0 : EVF_OUTSIDE);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *p)
{
	__u32 tgid = p->tgid;
	struct proc_info *pi = bpf_map_lookup_elem(&tracked, &tgid);
	if (!pi)
		return 0;
	struct signal_struct *sig = p->signal;
	if (sig->live.counter != 0)
		return 0; /* a thread exits, the process goes on */

	struct ev_exit *e = bpf_ringbuf_reserve(&sec_events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_SEC);
		bpf_map_delete_elem(&tracked, &tgid);
		return 0;
	}
	fill_header(&e->h, bpf_get_current_task_btf(), EV_EXIT, bpf_ktime_get_boot_ns(), pi->image_ns);
	if (pi->flags & PI_PEERS)
		e->h.flags = EVF_PEERS;
	int code = p->exit_code;
	if (sig->flags & SIGNAL_GROUP_EXIT)
		code = sig->group_exit_code;
	e->exit_code = code;
	e->_pad0 = 0;
	e->start_ns = p->group_leader->start_boottime;
	e->cpu_ns = sig->sum_sched_runtime + p->se.sum_exec_runtime;
	e->maxrss_pages = sig->maxrss;
	e->rchar = 0;
	e->wchar = 0;
	if (bpf_core_field_exists(p->ioac)) {
		e->rchar = p->ioac.rchar + sig->ioac.rchar;
		e->wchar = p->ioac.wchar + sig->ioac.wchar;
	}
	bpf_ringbuf_submit(e, wakeup_sec());
	bpf_map_delete_elem(&tracked, &tgid);
	return 0;
}

/* ---- file and socket operations, reported at sys_exit with their result ---- */

static __always_inline __u32 path_and_base(struct task_struct *t, struct scratch *s, __u32 off, __u64 up,
					   __s32 dfd, __u16 *plen, __u16 *blen, __u8 *flags)
{
	__u32 n = read_ustr(s, off, (const char *)up, flags);
	__u32 b = 0;
	*plen = n;
	if (dfd != NO_BASE && (n == 0 || s->b[OFF(off)] != '/'))
		b = walk_base(t, dfd, s, off + n, flags);
	*blen = b;
	return n + b;
}

/* SPAN is the window one probe read takes of a struct whose fields are
 * read together (see file_links, inode_identity): one helper call (~40 ns)
 * instead of one per field. Field offsets are CO-RE constants, so where a
 * kernel spreads the fields wider the verifier keeps the other branch;
 * the masks (SPAN is a power of two, the offsets aligned) are for it. */
#define SPAN 128
#define IN_SPAN(lo, o, size) ((o) >= (lo) && (o) - (lo) + (size) <= SPAN)
#define SPAN_AT(s, o, T) (*(T *)&(s)->span[(o) & (SPAN - sizeof(T))])

/* file_links reads f's inode, mount and dentry. */
static __always_inline void file_links(struct scratch *s, struct file *f, struct inode **ino, struct vfsmount **vm,
				       struct dentry **d)
{
	if (HAVE_TYPED) {
		struct file *tf = TYPED(file, f);
		*ino = tf->f_inode;
		*vm = tf->f_path.mnt;
		*d = tf->f_path.dentry;
		return;
	}
	__u64 oi = bpf_core_field_offset(struct file, f_inode);
	__u64 om = bpf_core_field_offset(struct file, f_path.mnt);
	__u64 od = bpf_core_field_offset(struct file, f_path.dentry);
	__u64 lo = oi < om ? oi : om;
	if (IN_SPAN(lo, oi, 8) && IN_SPAN(lo, om, 8) && IN_SPAN(lo, od, 8) && !((oi | om | od | lo) & 7)) {
		if (bpf_probe_read_kernel(s->span, SPAN, (void *)f + lo))
			__builtin_memset(s->span, 0, SPAN);
		*ino = SPAN_AT(s, oi - lo, struct inode *);
		*vm = SPAN_AT(s, om - lo, struct vfsmount *);
		*d = SPAN_AT(s, od - lo, struct dentry *);
		return;
	}
	*ino = BPF_CORE_READ(f, f_inode);
	*vm = BPF_CORE_READ(f, f_path.mnt);
	*d = BPF_CORE_READ(f, f_path.dentry);
}

/* inode_identity fills e's identity fields from ino, but for dev: it
 * returns ino's superblock, whose s_dev the caller reads where it needs
 * it (a cached object has it). */
static __always_inline struct super_block *inode_identity(struct scratch *s, struct inode *ino, struct ev_path *e)
{
	__u64 om = bpf_core_field_offset(struct inode, i_mode);
	__u64 os = bpf_core_field_offset(struct inode, i_sb);
	__u64 oi = bpf_core_field_offset(struct inode, i_ino);
	__u64 on = bpf_core_field_offset(struct inode, i_nlink);
	struct super_block *sb;
	if (HAVE_TYPED) {
		struct inode *ti = TYPED(inode, ino);
		e->imode = ti->i_mode;
		e->ino = ti->i_ino;
		e->nlink = ti->i_nlink;
		return ti->i_sb;
	}
	if (IN_SPAN(0, om, 2) && IN_SPAN(0, os, 8) && IN_SPAN(0, oi, 8) && IN_SPAN(0, on, 4) &&
	    !((om & 1) | (os & 7) | (oi & 7) | (on & 3))) {
		if (bpf_probe_read_kernel(s->span, SPAN, ino))
			__builtin_memset(s->span, 0, SPAN);
		e->imode = SPAN_AT(s, om, __u16);
		sb = SPAN_AT(s, os, struct super_block *);
		e->ino = SPAN_AT(s, oi, __u64);
		e->nlink = SPAN_AT(s, on, __u32);
	} else {
		e->imode = BPF_CORE_READ(ino, i_mode);
		sb = BPF_CORE_READ(ino, i_sb);
		e->ino = BPF_CORE_READ(ino, i_ino);
		e->nlink = BPF_CORE_READ(ino, i_nlink);
	}
	return sb;
}

/* sensitive reports whether the file e names, or the directory d is in,
 * is one of sec_files. */
static __always_inline bool sensitive(struct ev_path *e, struct dentry *d)
{
	return in_or_under(&sec_files, e->ino, e->dev, d);
}

/* sec_repeat reports whether an open of the sensitive file e names is a
 * repeat (sec_repeats): the same process image opened it with the same
 * access mode before. It counts the repeat, and notes a first. */
static __always_inline bool sec_repeat(struct proc_info *pi, __u32 tgid, struct ev_path *e, __u32 flags)
{
	struct sec_open_key k = {
		.ino = e->ino, .image_ns = pi->image_ns, .dev = e->dev, .tgid = tgid, .acc = flags & 3, ._pad = 0,
	};
	__u64 *n = bpf_map_lookup_elem(&sec_repeats, &k);
	if (n) {
		__sync_fetch_and_add(n, 1);
		return true;
	}
	__u64 zero = 0;
	bpf_map_update_elem(&sec_repeats, &k, &zero, BPF_NOEXIST);
	return false;
}

/* on_procfs reports whether sb is a /proc. */
static __always_inline bool on_procfs(struct super_block *sb)
{
	return (HAVE_TYPED ? TYPED(super_block, sb)->s_magic : BPF_CORE_READ(sb, s_magic)) == PROC_SUPER_MAGIC;
}

#define FMODE_READ 0x1
#define FMODE_WRITE 0x2
#define FMODE_PATH 0x4000

/* file_flags is how file f was opened, its f_flags (0 for none): for the
 * opens that name no flags (a file taken or received from another
 * process). */
static __always_inline __u32 file_flags(struct file *f)
{
	if (!f)
		return 0;
	return HAVE_TYPED ? TYPED(file, f)->f_flags : BPF_CORE_READ(f, f_flags);
}

/* file_acc is how file f is open, from the kernel's f_mode, not the flags
 * the process passed: O_RDONLY, O_WRONLY or O_RDWR, or -1 for an O_PATH
 * file (or none), through which nothing can be read or written. */
static __always_inline int file_acc(struct file *f)
{
	if (!f)
		return -1;
	__u32 m = HAVE_TYPED ? TYPED(file, f)->f_mode : BPF_CORE_READ(f, f_mode);
	if (m & FMODE_PATH)
		return -1;
	switch (m & (FMODE_READ | FMODE_WRITE)) {
	case FMODE_READ:
		return O_RDONLY;
	case FMODE_WRITE:
		return O_WRONLY;
	case FMODE_READ | FMODE_WRITE:
		return O_RDWR;
	}
	return -1;
}

/* open_object fills e's object part from the file fd now refers to: its
 * identity and, walked at off, its path, or the id of the same walk done
 * a moment ago (objcache.h). It returns the bytes written, and sets *sec
 * when the file is sensitive.
 * The fd was installed by this very call and the task is still in it, so
 * only another thread of the process could have replaced it (close and
 * reopen in between); then the identity and path are still one file's. */
static __always_inline __u32 open_object(struct task_struct *t, long fd, struct ev_path *e, struct scratch *s,
					 __u32 off, __u8 *flags, bool *sec)
{
	struct file *f = fd_file(t, fd);
	if (!f)
		return 0;
	struct inode *ino;
	struct vfsmount *vm;
	struct dentry *d;
	file_links(s, f, &ino, &vm, &d);
	struct super_block *sb = inode_identity(s, ino, e);
	*flags |= EVF_OBJECT;
	if (obj_cached(s, e, d, vm, ino, sb))
		return 0;
	e->dev = HAVE_TYPED ? TYPED(super_block, sb)->s_dev : BPF_CORE_READ(sb, s_dev);
	*sec = sensitive(e, d);
	__u8 wf = 0;
	__u32 n = walk_from(d, vm, s, off, &wf);
	e->obj_len = n;
	if (wf & EVF_TRUNC_PATH)
		*flags |= EVF_TRUNC_OBJ;
	else if (!*sec && n && !on_procfs(sb))
		obj_offer(s, e); /* /proc is walked every time: /proc/PID/mem is judged by its walked name */
	return n;
}

static __always_inline __u32 proc_mem_target(struct task_struct *t, long fd, const __u8 *leaf);
static __always_inline int report_call(struct proc_info *pi, __u8 kind, __u8 method, __u32 target, __u32 arg, long ret,
				       bool adopt);
static __always_inline void fifo_tracked(struct proc_info *pi, struct task_struct *t, long fd);

/* taken_name writes the name of another process's open file, the one a
 * pidfd_getfd took (pid and fd of the call), at the start of the record's
 * data: /proc/PID/fd/N, the path that would open it. */
static const char taken_fmt[] = "/proc/%u/fd/%u";
static const char pidfd_fmt[] = "/proc/%u";
#define NO_FD 0xffffffffu /* taken_name's fd of a pidfd_open: the process, no descriptor */
static __always_inline __u32 taken_name(struct scratch *s, __u32 pid, __u32 fd)
{
	__u64 args[2] = {pid, fd};
	long n = fd == NO_FD ? bpf_snprintf((char *)&s->b[OFF(0)], 32, pidfd_fmt, args, sizeof(args[0]))
			     : bpf_snprintf((char *)&s->b[OFF(0)], 32, taken_fmt, args, sizeof(args));
	return n > 0 ? n : 0;
}

#include "reopen.h"

static __always_inline int report_path(struct proc_info *pi, struct op v, long ret)
{
	/* A repeated read-only open is counted, not recorded (reopen.h). */
	if (v.kind == EV_OPEN && ret >= 0 && reopen_open(ret, v.flags, pi->flags, pi->image_ns))
		return 0;
	struct scratch *s = get_scratch();
	if (!s)
		return 0;

	struct task_struct *t = bpf_get_current_task_btf();

	struct ev_path *e = (void *)s->b;
	__u8 flags = 0;
	fill_header(&e->h, t, v.kind, bpf_ktime_get_boot_ns(), pi->image_ns);
	e->result = ret;
	e->flags = v.flags;
	e->mode = v.mode;
	__u32 off;
	if (v.kind == EV_OPEN && (v.flags & FD_TAKEN)) {
		off = taken_name(s, v.dfd, v.dfd2);
		e->path_len = off;
		e->base_len = 0;
	} else if (v.kind == EV_OPEN && (v.flags & FD_RECEIVED)) {
		off = 0;
		e->path_len = 0;
		e->base_len = 0;
	} else {
		off = path_and_base(t, s, 0, v.p1, v.dfd, &e->path_len, &e->base_len, &flags);
	}
	e->path2_len = 0;
	e->base2_len = 0;
	if (v.p2)
		off += path_and_base(t, s, off, v.p2, v.dfd2, &e->path2_len, &e->base2_len, &flags);
	e->ino = 0;
	e->dev = 0;
	e->nlink = 0;
	e->imode = 0;
	e->obj_len = 0;
	e->obj_id = 0;
	s->obj_pend = 0;
	__u32 target = 0;
	bool sec = false;
	bool fifo = false;
	if (v.kind == EV_OPEN && ret >= 0) {
		__u32 n = open_object(t, ret, e, s, off, &flags, &sec);
		/* /proc/PID/mem: opened for writing an inject, else a memread */
		if (n >= 4)
			target = proc_mem_target(t, ret, &s->b[OFF(off)]);
		off += n;
		fifo = (e->imode & S_IFMT) == S_IFIFO && !(pi->flags & PI_OUTSIDE);
		flags |= reopen_mark(e->imode, v.flags, sec);
	}
	e->h.flags = flags | (pi->flags & PI_OUTSIDE ? EVF_OUTSIDE : 0);
	/* A process's first open of a guarded file keeps the security ring;
	 * its repeats go with the ordinary records (sec_repeats). */
	if (sec && sec_repeat(pi, t->tgid, e, v.flags))
		sec = false;
	if (submit_to(s, off, sec)) {
		obj_remember(s);
		reopen_note(flags);
	}
	/* after the open's record: it reuses the buffer (a followed process's
	 * FIFO is an outside end: edge_open noted it) */
	if (fifo && !(pi->flags & PI_FOLLOWED))
		fifo_tracked(pi, t, ret);
	if (target && target != t->tgid) {
		/* how the kernel opened it: an O_PATH open reads and writes nothing */
		int acc = file_acc(fd_file(t, ret));
		if (acc >= 0)
			report_call(pi, acc != O_RDONLY ? EV_INJECT : EV_MEMREAD, CALL_PROC_MEM, target, v.flags, ret,
				    acc != O_RDONLY);
	}
	return 0;
}

/* ---- sockets ---- */

static __always_inline struct sock *fd_sock(struct task_struct *t, long fd)
{
	struct file *f = fd_file(t, fd);
	if (!f)
		return 0;
	umode_t mode = BPF_CORE_READ(f, f_inode, i_mode);
	if ((mode & S_IFMT) != S_IFSOCK)
		return 0;
	struct socket *sock = BPF_CORE_READ(f, private_data);
	return BPF_CORE_READ(sock, sk);
}

/* sock_view is what the socket paths ask of a socket. */
struct sock_view {
	__u32 daddr;
	__u16 dport;
	__u16 family;
	__u16 type;
	__u16 proto;
};

/* read_sock_view fills v from sk with two probe reads where the kernel
 * keeps the fields together (the head of sock_common: daddr, dport,
 * family; sk_type next to sk_protocol), instead of one per field: a send
 * pays it on every call, a connect on each. */
static __always_inline void read_sock_view(struct sock *sk, struct sock_view *v)
{
	__u64 oa = bpf_core_field_offset(struct sock, __sk_common.skc_daddr);
	__u64 op = bpf_core_field_offset(struct sock, __sk_common.skc_dport);
	__u64 of = bpf_core_field_offset(struct sock, __sk_common.skc_family);
	if (oa == 0 && op <= 30 && of <= 30 && !((op | of) & 1)) {
		__u8 head[32] = {};
		bpf_probe_read_kernel(head, sizeof(head), sk);
		v->daddr = *(__u32 *)head;
		v->dport = *(__u16 *)&head[op & 30];
		v->family = *(__u16 *)&head[of & 30];
	} else {
		v->daddr = BPF_CORE_READ(sk, __sk_common.skc_daddr);
		v->dport = BPF_CORE_READ(sk, __sk_common.skc_dport);
		v->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	}
	__u64 ot = bpf_core_field_offset(struct sock, sk_type);
	__u64 opr = bpf_core_field_offset(struct sock, sk_protocol);
	if (opr == ot + 2 || ot == opr + 2) {
		__u64 lo = ot < opr ? ot : opr;
		__u32 w = 0; /* both, little-endian (x86-64 and arm64 are) */
		bpf_probe_read_kernel(&w, sizeof(w), (void *)sk + lo);
		v->type = ot == lo ? w & 0xFFFF : w >> 16;
		v->proto = ot == lo ? w >> 16 : w & 0xFFFF;
	} else {
		v->type = BPF_CORE_READ(sk, sk_type);
		v->proto = BPF_CORE_READ(sk, sk_protocol);
	}
}

/* view_addr builds a sockaddr_in/in6 of sk's peer (v is its view) in
 * data at off. */
static __always_inline __u32 view_addr(struct sock *sk, struct sock_view *v, struct scratch *s, __u32 off)
{
	__u8 *d = &s->b[OFF(off)];
	__builtin_memset(d, 0, 28);
	*(__u16 *)d = v->family;
	*(__u16 *)(d + 2) = v->dport;
	if (v->family == AF_INET) {
		*(__u32 *)(d + 4) = v->daddr;
		return 16;
	}
	if (v->family == AF_INET6) {
		/* not BPF_CORE_READ_INTO: it reads sizeof(*dst), 1 byte here */
		bpf_core_read(d + 8, 16, &sk->__sk_common.skc_v6_daddr);
		return 28;
	}
	return 2;
}

/* unix_peer writes the executable of sk's peer process (the one that
 * listened: the kernel copies its pid into the connecting socket) at off
 * and fills e's peer fields. It returns the bytes written. */
static __always_inline __u32 unix_peer(struct sock *sk, struct ev_sock *e, struct scratch *s, __u32 off)
{
	struct pid *pp = BPF_CORE_READ(sk, sk_peer_pid);
	if (!pp)
		return 0;
	__u32 pid = BPF_CORE_READ(pp, numbers[0].nr);
	e->peer_pid = pid;
	if (bpf_map_lookup_elem(&tracked, &pid))
		e->sflags |= SF_PEER_TRACKED;
	/* the task whose pid it is: tasks[PIDTYPE_PID] links its pid_links[0] */
	struct hlist_node *first = BPF_CORE_READ(pp, tasks[0].first);
	if (!first)
		return 0;
	struct task_struct *pt = (void *)first - bpf_core_field_offset(struct task_struct, pid_links);
	struct file *exe = BPF_CORE_READ(pt, mm, exe_file);
	if (!exe)
		return 0;
	__u8 wf = 0;
	__u32 n = walk_path(__builtin_preserve_access_index(&exe->f_path), s, off, &wf);
	e->exe_len = n;
	return n;
}

/* connect_addr writes the peer a connect reached (and sets addr_len;
 * it returns the bytes written, a Unix peer's exe included): from the socket where
 * it has one (what the kernel connected to, whatever a second thread did
 * to the sockaddr since), else the sockaddr as the process passed it (a
 * failed connect, AF_UNSPEC). */
static __always_inline __u32 connect_addr(struct sock *sk, struct sock_view *v, struct ev_sock *e, struct scratch *s,
					  __u64 uaddr, __u32 ulen, long ret)
{
	if (sk && (v->family == AF_INET || v->family == AF_INET6) && v->dport) {
		e->sflags |= SF_SOCK;
		e->addr_len = view_addr(sk, v, s, 0);
		return e->addr_len;
	}
	__u32 n = bounded(ulen, SOCKADDR_MAX);
	if (bpf_probe_read_user(&s->b[OFF(0)], n & 0x7F, (void *)uaddr))
		return 0;
	e->sflags |= SF_USER;
	e->addr_len = n;
	if (sk && ret == 0 && *(__u16 *)&s->b[OFF(0)] == AF_UNIX)
		n += unix_peer(sk, e, s, n);
	return n;
}

/* sock_event starts an ev_sock in the scratch buffer. */
static __always_inline struct ev_sock *sock_event(struct scratch *s, struct proc_info *pi, struct task_struct *t, __u8 kind, long ret, __u32 fd)
{
	struct ev_sock *e = (void *)s->b;
	fill_header(&e->h, t, kind, bpf_ktime_get_boot_ns(), pi->image_ns);
	e->result = ret;
	e->fd = fd;
	e->addr_len = 0;
	e->proto = 0;
	e->peer_pid = 0;
	e->sock_type = 0;
	e->exe_len = 0;
	e->sflags = 0;
	__builtin_memset(e->_pad0, 0, sizeof(e->_pad0));
	return e;
}

static __always_inline int report_sock(struct proc_info *pi, struct op v, long ret)
{
	if (v.kind == EV_ACCEPT && ret == -EAGAIN)
		return 0; /* a non-blocking accept found nobody: not an event */
	struct scratch *s = get_scratch();
	if (!s)
		return 0;

	struct task_struct *t = bpf_get_current_task_btf();
	struct ev_sock *e = sock_event(s, pi, t, v.kind, ret, v.dfd);
	__u32 n = 0;
	struct sock_view sv = {};
	struct sock *sk = fd_sock(t, v.kind == EV_ACCEPT ? ret : v.dfd);
	if (v.kind == EV_ACCEPT && ret < 0)
		sk = 0;
	if (sk)
		read_sock_view(sk, &sv);
	if (v.kind == EV_ACCEPT) {
		if (sk) {
			n = view_addr(sk, &sv, s, 0);
			e->sflags |= SF_SOCK;
			e->addr_len = n;
			if (sv.family == AF_UNIX) /* the connecting process */
				n += unix_peer(sk, e, s, n);
		}
	} else if (v.kind == EV_CONNECT) {
		n = connect_addr(sk, &sv, e, s, v.p1, v.flags, ret);
	} else {
		n = bounded(v.flags, SOCKADDR_MAX);
		if (bpf_probe_read_user(&s->b[OFF(0)], n & 0x7F, (void *)v.p1))
			n = 0;
	}
	if (v.kind == EV_BIND)
		e->addr_len = n & 0xFFFF;
	e->proto = sv.proto;
	e->sock_type = sv.type;
	submit_sec(s, n);
	return 0;
}

/* ---- sends: DNS messages, and destinations named per message ---- */

/* peer_of fills k from a sockaddr_in/in6. */
static __always_inline bool peer_of(struct peer_key *k, const __u8 *sa, __u32 n)
{
	__u16 family = *(__u16 *)sa;
	k->family = family;
	k->port = bpf_ntohs(*(__u16 *)(sa + 2));
	if (family == AF_INET && n >= 8) {
		__builtin_memcpy(k->addr, sa + 4, 4);
		return true;
	}
	if (family == AF_INET6 && n >= 24) {
		__builtin_memcpy(k->addr, sa + 8, 16);
		return true;
	}
	return false;
}

/* report_fastopen reports a TCP Fast Open sendto/sendmsg as the connect
 * it is: the socket has its peer by sys_exit, read from there. */
static __always_inline int report_fastopen(struct proc_info *pi, struct sock *sk, struct sock_view *v, long fd,
					   __u64 uaddr, __u32 alen, long ret)
{
	struct scratch *s = get_scratch();
	if (!s)
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	struct ev_sock *e = sock_event(s, pi, t, EV_CONNECT, ret, fd);
	e->sflags = SF_FASTOPEN;
	__u32 n = connect_addr(sk, v, e, s, uaddr, alen, ret);
	e->proto = v->proto;
	e->sock_type = v->type;
	submit_sec(s, n);
	return 0;
}

/* report_send counts the bytes of a send on an unconnected datagram or
 * raw socket against the destination the process named (sa, n bytes),
 * and reports the first send of the process to each destination
 * (EV_SEND): the socket has no peer (sock_send_length would count them
 * against 0.0.0.0, so count_bytes leaves them here), and the kernel keeps
 * no record of where the message went, so the destination is the one read
 * from the sender's memory at sys_exit (a second thread could have
 * changed it since the kernel copied it; SF_USER says so). */
static __always_inline int report_send(struct proc_info *pi, struct sock_view *v, long fd, const __u8 *sa, __u32 n,
				       long ret)
{
	if (ret <= 0 || (v->type != SOCK_DGRAM && v->type != SOCK_RAW))
		return 0;
	if (v->dport || v->daddr)
		return 0; /* connected: count_bytes counted it against the peer */
	struct peer_key k = {};
	if (!peer_of(&k, sa, n))
		return 0;
	k.pid = bpf_get_current_pid_tgid() >> 32;
	__u64 now = bpf_ktime_get_boot_ns();
	struct peer_val *pv = bpf_map_lookup_elem(&peer_bytes, &k);
	if (pv) {
		__sync_fetch_and_add(&pv->sent, ret);
		pv->last_ns = now;
		return 0;
	}
	struct peer_val z = {.sent = ret, .last_ns = now};
	pi->flags |= PI_PEERS;
	bpf_map_update_elem(&peer_bytes, &k, &z, BPF_NOEXIST);
	struct scratch *s = get_scratch();
	if (!s)
		return 0;
	struct ev_sock *e = sock_event(s, pi, bpf_get_current_task_btf(), EV_SEND, ret, fd);
	e->sflags = SF_USER;
	e->proto = v->proto;
	e->sock_type = v->type;
	e->addr_len = n;
	__builtin_memcpy(&s->b[OFF(0)], sa, 28);
	submit_sec(s, n);
	return 0;
}

/* report_dns emits a DNS message if the destination (the n bytes at sa,
 * when the process named one, else the socket's peer) is port 53. */
static __always_inline int report_dns(struct proc_info *pi, struct sock *sk, struct sock_view *v, const __u8 *sa,
				      __u32 n, __u64 buf, __u64 len)
{
	if (v->family != AF_INET && v->family != AF_INET6)
		return 0;
	__u16 port = n ? *(__u16 *)(sa + 2) : v->dport;
	if (bpf_ntohs(port) != 53)
		return 0;
	struct scratch *s = get_scratch();
	if (!s)
		return 0;
	struct ev_dns *e = (void *)s->b;
	fill_header(&e->h, bpf_get_current_task_btf(), EV_DNS, bpf_ktime_get_boot_ns(), pi->image_ns);
	e->proto = v->proto;
	e->_pad0 = 0;
	if (n)
		__builtin_memcpy(&s->b[OFF(0)], sa, 28);
	else
		n = view_addr(sk, v, s, 0);
	e->addr_len = n;
	__u32 dl = bounded(len, DNS_MAX);
	if (bpf_probe_read_user(&s->b[OFF(n)], dl & 0x3FF, (void *)buf))
		dl = 0;
	e->data_len = dl;
	submit_sec(s, n + dl);
	return 0;
}

static __always_inline void report_unix_send(struct proc_info *pi, struct sock_view *v, long fd, __u64 uaddr,
					     __u32 alen, long ret);

/* report_sent handles a send: its DNS message, and its destination where
 * it names one (read once, for both). The socket lookup is paid here
 * only, on sends. */
static __always_inline int report_sent(struct proc_info *pi, long fd, __u64 uaddr, __u32 alen, __u32 mflags,
				       __u64 buf, __u64 len, long ret)
{
	struct sock *sk = fd_sock(bpf_get_current_task_btf(), fd);
	if (!sk)
		return 0;
	struct sock_view v;
	read_sock_view(sk, &v);
	if (v.type == SOCK_STREAM && (mflags & MSG_FASTOPEN) && uaddr)
		report_fastopen(pi, sk, &v, fd, uaddr, alen, ret);
	if (v.family == AF_UNIX && v.type == SOCK_DGRAM && uaddr)
		report_unix_send(pi, &v, fd, uaddr, alen, ret);
	__u8 sa[28] = {};
	__u32 n = 0;
	if (uaddr && v.type != SOCK_STREAM) { /* a connected stream ignores the address */
		n = bounded(alen, 28);
		if (n < 4 || bpf_probe_read_user(sa, n & 0x1F, (void *)uaddr))
			n = 0;
	}
	report_dns(pi, sk, &v, sa, n, buf, len);
	if (n)
		report_send(pi, &v, fd, sa, n, ret);
	return 0;
}

/* user_msghdr: name (0), namelen (8), iov (16), iovlen (24), ... size 56;
 * struct mmsghdr adds msg_len (56), the bytes the kernel sent of it. */
static __always_inline int report_msg(struct proc_info *pi, long fd, __u64 umsg, __u32 mflags, long ret)
{
	__u64 m[4] = {};
	__u64 iov[2] = {};
	if (bpf_probe_read_user(&m, sizeof(m), (void *)umsg))
		return 0;
	if (m[2] && m[3])
		bpf_probe_read_user(&iov, sizeof(iov), (void *)m[2]);
	return report_sent(pi, fd, m[0], (__u32)m[1], mflags, iov[0], iov[1], ret);
}

/* report_mmsg is report_msg for message i of a sendmmsg that sent ret. */
static __always_inline void report_mmsg(struct proc_info *pi, long fd, __u64 vec, __u32 i, __u32 mflags, long ret)
{
	if (i >= ret)
		return;
	__u32 sent = 0;
	__u64 mh = vec + i * 64; /* sizeof(struct mmsghdr) */
	bpf_probe_read_user(&sent, sizeof(sent), (void *)(mh + 56));
	report_msg(pi, fd, mh, mflags, sent);
}

/* mmsg_ctx is a sendmmsg's walk in progress (see mmsg_step). */
struct mmsg_ctx {
	struct proc_info *pi;
	__u64 fd;
	__u64 vec;
	long ret;
	__u32 mflags;
	__u32 _pad;
};

/* MMSG_MAX bounds the messages of one sendmmsg that are looked at. */
#define MMSG_MAX 64

/* mmsg_step reports message i of a sendmmsg. Through bpf_loop the
 * verifier checks one step however many messages there are. */
static long mmsg_step(__u64 i, void *ctx)
{
	struct mmsg_ctx *c = ctx;
	if (!c->pi)
		return 1;
	report_mmsg(c->pi, c->fd, c->vec, i, c->mflags, c->ret);
	return 0;
}

/* ---- calls aimed at other processes and at the kernel ---- */

/* bpf_task_from_pid (kernel >= 6.2, weak: 0 where missing) finds a task by
 * its pid in the initial namespace. */
extern struct task_struct *bpf_task_from_pid(s32 pid) __weak __ksym;
extern void bpf_task_release(struct task_struct *p) __weak __ksym;

/* tgid_of returns the process of thread pid (ptrace names threads; the
 * tracked map is keyed by process), or pid itself where the kernel
 * cannot say. */
static __always_inline __u32 tgid_of(__u32 pid)
{
	if (!bpf_task_from_pid || !bpf_task_release)
		return pid;
	struct task_struct *p = bpf_task_from_pid(pid);
	if (!p)
		return pid;
	__u32 tgid = p->tgid;
	bpf_task_release(p);
	return tgid;
}

/* initial_pid_ns reports whether the current task's pids are those of
 * the initial pid namespace, the numbers the sensor keys processes by. */
static __always_inline bool initial_pid_ns(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	return t->thread_pid->level == 0;
}

/* report_call sends an ev_call. An inject that worked on a process
 * outside the tree brings the target in: it is tracked from now, with
 * the record's time as the image_ns its events carry, which the record
 * names, so user space links those events to the injector. polygraph
 * itself is never adopted (it would trace its own reads). */
static __always_inline struct file *task_exe(__u32 pid);

static __always_inline int report_call(struct proc_info *pi, __u8 kind, __u8 method, __u32 target, __u32 arg, long ret,
				       bool adopt)
{
	/* built in the scratch (its callers have sent their own record by
	 * now): an outside target's executable follows it */
	struct scratch *s = get_scratch();
	if (!s)
		return 0;
	_Static_assert(sizeof(struct ev_call) <= DATA_OFF, "ev_call overflows DATA_OFF");
	struct ev_call *e = (void *)s->b;
	__u32 n = 0;
	__u64 now = bpf_ktime_get_boot_ns();
	fill_header(&e->h, bpf_get_current_task_btf(), kind, now, pi->image_ns);
	e->result = ret;
	e->target = target;
	e->arg = arg;
	e->method = method;
	e->adopted = 0;
	e->ns_local = 0;
	e->_pad0 = 0;
	e->exe_len = 0;
	e->target_image_ns = 0;
	if (method != CALL_PROC_MEM && !initial_pid_ns()) {
		/* the number is the caller's namespace's: another process's
		 * here, so nothing is looked up or adopted under it */
		e->ns_local = 1;
	} else if ((kind == EV_INJECT || kind == EV_MEMREAD) && target && (target = tgid_of(target)) != sensor_pid) {
		e->target = target;
		struct proc_info *tpi = bpf_map_lookup_elem(&tracked, &target);
		if (!tpi) {
			/* outside: which program it is, now, not when the record
			 * is read (it may have exec'd or gone by then) */
			struct file *exe = task_exe(target);
			__u8 wf = 0;
			if (exe)
				n = walk_path(__builtin_preserve_access_index(&exe->f_path), s, 0, &wf);
			e->exe_len = n;
			e->h.flags |= wf & EVF_TRUNC_PATH;
		}
		if (tpi) {
			e->target_image_ns = tpi->image_ns;
		} else if (adopt) {
			struct proc_info ci = {.image_ns = now, .flags = PI_ADOPTED};
			if (!bpf_map_update_elem(&tracked, &target, &ci, BPF_NOEXIST)) {
				e->adopted = 1;
				e->target_image_ns = now;
			} else {
				count_lost(1);
			}
		}
	}
	submit_sec(s, n);
	return 0;
}

/* proc_mem_target returns the pid whose memory the file at fd is (an open
 * of /proc/PID/mem), else 0. The caller walked the file's path at leaf: its
 * first component is the file's name, so most opens cost no read here. */
static __always_inline __u32 proc_mem_target(struct task_struct *t, long fd, const __u8 *leaf)
{
	if (leaf[0] != 'm' || leaf[1] != 'e' || leaf[2] != 'm' || leaf[3] != 0)
		return 0;
	struct file *f = fd_file(t, fd);
	if (!f)
		return 0;
	struct inode *ino = BPF_CORE_READ(f, f_inode);
	if (BPF_CORE_READ(ino, i_sb, s_magic) != PROC_SUPER_MAGIC)
		return 0;
	struct proc_inode *pin = (void *)ino - bpf_core_field_offset(struct proc_inode, vfs_inode);
	return BPF_CORE_READ(pin, pid, numbers[0].nr);
}

/* pidfd_target returns the pid a pidfd refers to: the inode's (pidfs,
 * kernel >= 6.9) or the file's (an anonymous inode before). */
static __always_inline __u32 pidfd_target(long fd)
{
	struct file *f = fd_file(bpf_get_current_task_btf(), fd);
	if (!f)
		return 0;
	struct inode *ino = BPF_CORE_READ(f, f_inode);
	struct pid *p;
	if (BPF_CORE_READ(ino, i_sb, s_magic) == PIDFS_MAGIC)
		p = BPF_CORE_READ(ino, i_private);
	else
		p = BPF_CORE_READ(f, private_data);
	return BPF_CORE_READ(p, numbers[0].nr);
}

/* at_sensor reports whether a signal to pid (a kill(2) target) reaches
 * polygraph: its pid, every process (-1), its process group (-pgid, or 0
 * from a process of that group). A caller in a child pid namespace names
 * other processes by those numbers (and cannot see polygraph's). */
static __always_inline bool at_sensor(__s32 pid, __u32 sig)
{
	if (pid != (__s32)sensor_pid && !(pid == -1 && sig != 0) && pid != -(__s32)sensor_pgid && pid != 0)
		return false;
	if (!initial_pid_ns())
		return false;
	if (pid == 0) {
		struct task_struct *t = bpf_get_current_task_btf();
		return sensor_pgid && t->signal->pids[2]->numbers[0].nr == sensor_pgid;
	}
	return true;
}

#include "edge.h"
#include "keyring.h"
#include "mount.h"

/* ---- the syscall dispatch ---- */

#define A(i) SYSARG##i(regs)

/* at_exit reports whether sys_exit reports this syscall. It tests the
 * number before any map lookup: the program runs for every syscall of
 * every process, and most are none of the hooked ones. */
static __always_inline bool at_exit(long id)
{
	switch (id) {
	case NR_openat: case NR_open: case NR_creat: case NR_openat2:
	case NR_rename: case NR_renameat: case NR_renameat2:
	case NR_unlink: case NR_rmdir: case NR_unlinkat:
	case NR_mkdir: case NR_mkdirat:
	case NR_chmod: case NR_fchmodat: case NR_fchmodat2: case NR_fchmod:
	case NR_link: case NR_linkat: case NR_symlink: case NR_symlinkat:
	case NR_connect: case NR_bind: case NR_accept: case NR_accept4: case NR_socket:
	case NR_sendto: case NR_write: case NR_sendmsg: case NR_sendmmsg: case NR_recvmsg:
	case NR_open_by_handle_at: case NR_name_to_handle_at: case NR_pidfd_getfd: case NR_pidfd_open:
	case NR_ptrace: case NR_process_vm_writev: case NR_process_vm_readv:
	case NR_kill: case NR_tkill: case NR_tgkill: case NR_pidfd_send_signal:
	case NR_bpf:
	case NR_mount: case NR_umount2: case NR_move_mount: case NR_pivot_root:
	case NR_open_tree: case NR_fsopen: case NR_fsconfig: case NR_fsmount:
	case NR_chown: case NR_fchown: case NR_lchown: case NR_fchownat:
	case NR_setxattr: case NR_lsetxattr: case NR_fsetxattr: case NR_setxattrat:
	case NR_removexattr: case NR_lremovexattr: case NR_fremovexattr: case NR_removexattrat:
	case NR_keyctl: case NR_add_key: case NR_request_key:
		return true;
	}
	return false;
}

/* report sends one file or socket operation with its result. */
static __always_inline int report_op(struct proc_info *pi, __u8 kind, __s32 dfd, __u64 p1, __s32 dfd2, __u64 p2, __u32 flags, __u32 mode, long ret)
{
	struct op v = {
		.kind = kind, .dfd = dfd, .dfd2 = dfd2, .flags = flags, .mode = mode, .p1 = p1, .p2 = p2,
	};
	switch (kind) {
	case EV_CONNECT:
	case EV_BIND:
	case EV_ACCEPT:
		return report_sock(pi, v, ret);
	case EV_KEY:
		return report_key(pi, v, ret);
	}
	return report_path(pi, v, ret);
}

#define SCM_RIGHTS 1
#define SOL_SOCKET 1
#define SCM_MAX_SEEN 4

/* scm_rights_fd returns the file descriptor a recvmsg (its msghdr at umsg
 * in the caller's memory, filled by the call) received in an SCM_RIGHTS
 * control message, -1 for none: of the first SCM_MAX_SEEN in the first
 * control message, the first sensitive one (sec_files, or directly in a
 * guarded directory, as open_object judges an open), else the first
 * regular file or directory; sockets and pipes passed around are no
 * file read. *n is how many the message carried. The fds are read from
 * the receiver's memory after the call: another thread could change
 * them, but only to fds the process holds anyway. */
static __always_inline long scm_rights_fd(struct task_struct *t, __u64 umsg, __u32 *n)
{
	__u64 mh[6]; /* msg_name, msg_namelen, msg_iov, msg_iovlen, msg_control, msg_controllen */
	if (bpf_probe_read_user(mh, sizeof(mh), (void *)umsg))
		return -1;
	if (!mh[4] || mh[5] < 20)
		return -1;
	struct {
		__u64 len;
		__s32 level;
		__s32 type;
		__s32 fds[SCM_MAX_SEEN];
	} c = {};
	/* as much of it as the call wrote, up to c */
	__u32 sz = mh[5] < sizeof(c) ? mh[5] : sizeof(c);
	if (bpf_probe_read_user(&c, bounded(sz, sizeof(c)), (void *)mh[4]))
		return -1;
	if (c.level != SOL_SOCKET || c.type != SCM_RIGHTS || c.len < 20)
		return -1;
	*n = (c.len - 16) / 4;
	__u32 seen = (sz - 16) / 4;
	long pick = -1;
#pragma unroll
	for (int i = 0; i < SCM_MAX_SEEN; i++) {
		if (i >= *n || i >= seen)
			break;
		struct file *f = fd_file(t, c.fds[i]);
		if (!f)
			continue;
		struct inode *ino = HAVE_TYPED ? TYPED(file, f)->f_inode : BPF_CORE_READ(f, f_inode);
		umode_t mode = HAVE_TYPED ? TYPED(inode, ino)->i_mode : BPF_CORE_READ(ino, i_mode);
		if ((mode & S_IFMT) != S_IFREG && (mode & S_IFMT) != S_IFDIR)
			continue;
		struct super_block *sb = HAVE_TYPED ? TYPED(inode, ino)->i_sb : BPF_CORE_READ(ino, i_sb);
		__u64 nr = HAVE_TYPED ? TYPED(inode, ino)->i_ino : BPF_CORE_READ(ino, i_ino);
		__u32 dev = HAVE_TYPED ? TYPED(super_block, sb)->s_dev : BPF_CORE_READ(sb, s_dev);
		struct dentry *d = HAVE_TYPED ? TYPED(file, f)->f_path.dentry : BPF_CORE_READ(f, f_path.dentry);
		if (in_or_under(&sec_files, nr, dev, d)) /* as open_object judges an open */
			return c.fds[i];
		if (pick < 0)
			pick = c.fds[i];
	}
	return pick;
}

/* sys_exit reports the hooked syscalls with their results. Their
 * arguments are still in the saved registers (the syscall changes only
 * the return register, and arm64 keeps x0 in orig_x0), and the strings
 * they point to were just read by the kernel, so nothing needs carrying
 * from sys_enter. It is one switch with a case per syscall, hence long. */
SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	long id = SYSNR(regs);
	if (!at_exit(id))
		return 0;
	if (ret == 0 && (changes_paths(id) || (id == NR_unlinkat && (A(2) & AT_REMOVEDIR))))
		paths_changed();
	struct proc_info *pi = current_proc();
	/* The opens at the tree's edge (edge.h): a file the tree opens for
	 * writing is noted; a process outside the tree (or followed) that opens
	 * a file the tree wrote, or a FIFO the tree holds the other end of,
	 * becomes followed, and its open is then reported below as the tree's
	 * are. One call of a global function, verified once on its own: its
	 * tests of the syscall and its result, inlined here, would split the
	 * verifier's states before the switch below (twice its cost). */
	if (edge_open(id, ret, pi ? pi->flags : PI_OUTSIDE) && !pi)
		pi = current_proc();
	if (!pi)
		return watch_open(id, regs, ret);
	/* Every path and socket operation leaves the switch with its
	 * arguments in v and is sent by the one report_op below: each call
	 * of it is a copy for the verifier, and a copy per syscall cost a
	 * second at every start. */
	struct op v = {};
	struct mnt_op mo = {};
	long res = ret; /* the result the record carries (the fd of a received file) */
#define report(k, d1, u1, d2, u2, fl, md)                                                                   \
	({                                                                                                  \
		v = (struct op){.kind = (k), .dfd = (d1), .p1 = (u1), .dfd2 = (d2), .p2 = (u2), .flags = (fl), \
				.mode = (md)};                                                                 \
		goto send_op;                                                                               \
		0;                                                                                          \
	})
#define mnt(o, c, d1, u1, d2, u2, ty, da, fl, f)                                                              \
	({                                                                                                  \
		mo = (struct mnt_op){.op = (o), .cwd = (c), .dfd = (d1), .p1 = (u1), .dfd2 = (d2), .p2 = (u2),      \
				     .type = (ty), .data = (da), .flags = (fl), .fd = (f)};                        \
		goto send_mnt;                                                                              \
		0;                                                                                          \
	})
	switch (id) {
	case NR_openat:
		return report(EV_OPEN, A(0), A(1), NO_BASE, 0, USER_FLAGS(A(2)), A(3));
	case NR_open:
		return report(EV_OPEN, AT_FDCWD, A(0), NO_BASE, 0, USER_FLAGS(A(1)), A(2));
	case NR_creat:
		return report(EV_OPEN, AT_FDCWD, A(0), NO_BASE, 0, O_CREAT | O_WRONLY | O_TRUNC, A(1));
	case NR_openat2: {
		__u64 how[2] = {}; /* struct open_how: u64 flags, u64 mode, ... */
		bpf_probe_read_user(&how, sizeof(how), (void *)A(2));
		return report(EV_OPEN, A(0), A(1), NO_BASE, 0, USER_FLAGS(how[0]), how[1]);
	}
	case NR_rename:
		return report(EV_RENAME, AT_FDCWD, A(0), AT_FDCWD, A(1), 0, 0);
	case NR_renameat:
		return report(EV_RENAME, A(0), A(1), A(2), A(3), 0, 0);
	case NR_renameat2:
		return report(EV_RENAME, A(0), A(1), A(2), A(3), A(4), 0);
	case NR_unlink:
		return report(EV_UNLINK, AT_FDCWD, A(0), NO_BASE, 0, 0, 0);
	case NR_rmdir:
		return report(EV_UNLINK, AT_FDCWD, A(0), NO_BASE, 0, AT_REMOVEDIR, 0);
	case NR_unlinkat:
		return report(EV_UNLINK, A(0), A(1), NO_BASE, 0, A(2), 0);
	case NR_mkdir:
		return report(EV_MKDIR, AT_FDCWD, A(0), NO_BASE, 0, 0, A(1));
	case NR_mkdirat:
		return report(EV_MKDIR, A(0), A(1), NO_BASE, 0, 0, A(2));
	case NR_chmod:
		return report(EV_CHMOD, AT_FDCWD, A(0), NO_BASE, 0, 0, A(1));
	case NR_fchmodat:
		return report(EV_CHMOD, A(0), A(1), NO_BASE, 0, 0, A(2));
	case NR_fchmodat2:
		return report(EV_CHMOD, A(0), A(1), NO_BASE, 0, A(3), A(2));
	case NR_fchmod:
		/* no path: the base is the fd's own path */
		return report(EV_CHMOD, A(0), 0, NO_BASE, 0, 0, A(1));
	/* ownership: the uid asked for in flags, the gid in mode */
	case NR_chown: case NR_lchown:
		return report(EV_CHOWN, AT_FDCWD, A(0), NO_BASE, 0, A(1), A(2));
	case NR_fchown:
		return report(EV_CHOWN, A(0), 0, NO_BASE, 0, A(1), A(2));
	case NR_fchownat:
		return report(EV_CHOWN, A(0), A(1), NO_BASE, 0, A(2), A(3));
	/* extended attributes: the attribute's name is the second string, as
	 * the process passed it (NO_BASE: a name, not a path); flags say set
	 * or remove */
	case NR_setxattr: case NR_lsetxattr:
		return report(EV_XATTR, AT_FDCWD, A(0), NO_BASE, A(1), XATTR_SET, 0);
	case NR_fsetxattr:
		return report(EV_XATTR, A(0), 0, NO_BASE, A(1), XATTR_SET, 0);
	case NR_setxattrat:
		return report(EV_XATTR, A(0), A(1), NO_BASE, A(3), XATTR_SET, 0);
	case NR_removexattr: case NR_lremovexattr:
		return report(EV_XATTR, AT_FDCWD, A(0), NO_BASE, A(1), XATTR_REMOVE, 0);
	case NR_fremovexattr:
		return report(EV_XATTR, A(0), 0, NO_BASE, A(1), XATTR_REMOVE, 0);
	case NR_removexattrat:
		return report(EV_XATTR, A(0), A(1), NO_BASE, A(3), XATTR_REMOVE, 0);
	/* link kinds: p1 is the existing target, p2 the new name. A
	 * symlink's target is text, resolved against nothing; LINK_SYMBOLIC
	 * marks a symbolic link for user space. */
	case NR_link:
		return report(EV_LINK, AT_FDCWD, A(0), AT_FDCWD, A(1), 0, 0);
	case NR_linkat:
		return report(EV_LINK, A(0), A(1), A(2), A(3), USER_FLAGS(A(4)), 0);
	case NR_symlink:
		return report(EV_LINK, NO_BASE, A(0), AT_FDCWD, A(1), LINK_SYMBOLIC, 0);
	case NR_symlinkat:
		return report(EV_LINK, NO_BASE, A(0), A(1), A(2), LINK_SYMBOLIC, 0);
	case NR_socket:
		tree_socket(pi, ret);
		return 0;
	case NR_connect:
		pi->flags |= PI_NET; /* none of its opens is counted from now on (reopen.h) */
		return report(EV_CONNECT, A(0), A(1), 0, 0, A(2), 0);
	case NR_bind:
		return report(EV_BIND, A(0), A(1), 0, 0, A(2), 0);
	case NR_accept:
	case NR_accept4:
		return report(EV_ACCEPT, A(0), 0, 0, 0, 0, 0);
	/* open_by_handle_at names no path: the object is all there is
	 * (BY_HANDLE tells user space). name_to_handle_at names one. */
	case NR_open_by_handle_at:
		return report(EV_OPEN, NO_BASE, 0, NO_BASE, 0, USER_FLAGS(A(2)) | BY_HANDLE, 0);
	/* A file received over a Unix socket (SCM_RIGHTS) is an open of it,
	 * no path named: mode is how many fds the message carried. */
	case NR_recvmsg: {
		if (ret < 0)
			return 0;
		__u32 n = 0;
		struct task_struct *t = bpf_get_current_task_btf();
		res = scm_rights_fd(t, A(1), &n);
		if (res < 0)
			return 0;
		return report(EV_OPEN, NO_BASE, 0, NO_BASE, 0, USER_FLAGS(file_flags(fd_file(t, res))) | FD_RECEIVED, n);
	}
	/* pidfd_getfd takes another process's open file, no path named: the
	 * object, /proc/PID/fd/N (pid in dfd, fd in dfd2) as asked for, and
	 * for flags how its owner opened it (no flags were passed). */
	case NR_pidfd_getfd: {
		__u32 ff = ret >= 0 ? file_flags(fd_file(bpf_get_current_task_btf(), ret)) : 0;
		/* the pidfd is known to be one when the call worked, or when the
		 * owner's ptrace check refused it (EPERM comes after the pidfd
		 * was resolved): the attempt then names its target too */
		return report(EV_OPEN, ret >= 0 || ret == -1 /* EPERM */ ? pidfd_target(A(0)) : 0, 0, A(1), 0, USER_FLAGS(ff) | FD_TAKEN, 0);
	}
	/* A refused pidfd_open is the first step of a pidfd_getfd that never
	 * came (in the isolation's PID namespace, ESRCH for a process outside
	 * it): an open of the process, named /proc/PID as a pidfd once was
	 * (taken_name without a descriptor). One that worked is not recorded:
	 * what the pidfd is used for is. */
	case NR_pidfd_open:
		if (ret >= 0)
			return 0;
		return report(EV_OPEN, (__u32)A(0), 0, NO_FD, 0, FD_TAKEN, 0);
	case NR_name_to_handle_at:
		return report(EV_HANDLE, A(0), A(1), NO_BASE, 0, A(4), 0);
	/* Sends: the DNS message (still in the sender's memory when the
	 * call returns) and the destination the call named. */
	case NR_sendto:
		return report_sent(pi, A(0), A(4), A(5), A(3), A(1), A(2), ret);
	case NR_write: {
		struct sock *sk = fd_sock(bpf_get_current_task_btf(), A(0));
		if (!sk)
			return 0;
		struct sock_view v;
		__u8 none[4] = {};
		read_sock_view(sk, &v);
		return report_dns(pi, sk, &v, none, 0, A(1), A(2));
	}
	case NR_sendmsg:
		return report_msg(pi, A(0), A(1), A(2), ret);
	case NR_sendmmsg: {
		/* glibc sends the A and AAAA queries together with sendmmsg. */
		struct mmsg_ctx c = {.pi = pi, .fd = A(0), .vec = A(1), .ret = ret, .mflags = A(3)};
		if (ret > 0)
			bpf_loop(ret < MMSG_MAX ? ret : MMSG_MAX, mmsg_step, &c, 0);
		return 0;
	}
	case NR_ptrace:
		return report_ptrace(pi, A(0), A(1), ret);
	case NR_process_vm_writev:
		return report_call(pi, EV_INJECT, CALL_VM_WRITEV, A(0), 0, ret, ret > 0);
	case NR_process_vm_readv:
		return report_call_once(pi, EV_MEMREAD, CALL_VM_READV, A(0), 0, ret, false);
	case NR_kill:
		if (!at_sensor(A(0), A(1)))
			return 0;
		return report_call(pi, EV_SIGNAL, CALL_KILL, A(0), A(1), ret, false);
	case NR_tkill:
		if ((__u32)A(0) != sensor_pid || !initial_pid_ns())
			return 0;
		return report_call(pi, EV_SIGNAL, CALL_TKILL, A(0), A(1), ret, false);
	case NR_tgkill:
		if ((__u32)A(0) != sensor_pid || !initial_pid_ns())
			return 0;
		return report_call(pi, EV_SIGNAL, CALL_TGKILL, A(0), A(2), ret, false);
	case NR_pidfd_send_signal: {
		__u32 target = pidfd_target(A(0));
		if (target != sensor_pid)
			return 0;
		return report_call(pi, EV_SIGNAL, CALL_PIDFD, target, A(1), ret, false);
	}
	case NR_bpf:
		return report_call(pi, EV_BPF, CALL_BPF, 0, A(0), ret, false);
	/* The kernel keyring (keyring.h): v carries the operation, the key,
	 * the keyring and the addresses of the type and description. */
	case NR_keyctl:
		if (!keyctl_op(&v, A(0), A(1), A(2), A(3), A(4), ret))
			return 0;
		goto send_op;
	case NR_add_key:
		/* type, description, payload, its length, the keyring */
		v = (struct op){.kind = EV_KEY, .flags = KEY_OP_ADD, .dfd = ret > 0 ? ret : 0, .dfd2 = A(4), .p1 = A(0),
				.p2 = A(1)};
		goto send_op;
	case NR_request_key:
		/* type, description, callout info, the keyring to link into */
		v = (struct op){.kind = EV_KEY, .flags = KEY_OP_REQUEST, .dfd = ret > 0 ? ret : 0, .dfd2 = A(3), .p1 = A(0),
				.p2 = A(1)};
		goto send_op;
	/* mounts (mount.h): mount(source, target, type, flags, data) with
	 * the cwd beside the target, since the source and an overlay's
	 * layers are resolved against it too */
	case NR_mount:
		return mnt(MOUNT_OP_MOUNT, 1, AT_FDCWD, A(1), NO_BASE, A(0), A(2), A(4), A(3), -1);
	case NR_umount2:
		return mnt(MOUNT_OP_UMOUNT, 0, AT_FDCWD, A(0), NO_BASE, 0, 0, 0, A(1), -1);
	case NR_open_tree:
		return mnt(MOUNT_OP_OPEN_TREE, 0, A(0), A(1), NO_BASE, 0, 0, 0, A(2), -1);
	case NR_move_mount: /* from (dfd, path) in p2, to (dfd, path) in p1 */
		return mnt(MOUNT_OP_MOVE_MOUNT, 0, A(2), A(3), A(0), A(1), 0, 0, A(4), A(0));
	case NR_fsopen:
		return mnt(MOUNT_OP_FSOPEN, 0, NO_BASE, 0, NO_BASE, 0, A(0), 0, A(1), -1);
	case NR_fsmount:
		return mnt(MOUNT_OP_FSMOUNT, 0, NO_BASE, 0, NO_BASE, 0, 0, 0, A(1), A(0));
	case NR_fsconfig:
		/* fsconfig(fd, cmd, key, value, aux): a string value with the
		 * cwd it is resolved against, a path against aux, a descriptor
		 * as its path; the commands that name nothing are not sent */
		switch (A(1)) {
		case FSCONFIG_SET_FLAG:
		case FSCONFIG_SET_BINARY:
			return mnt(MOUNT_OP_FSCONFIG, 0, NO_BASE, 0, NO_BASE, 0, A(2), 0, A(1), A(0));
		case FSCONFIG_SET_STRING:
			return mnt(MOUNT_OP_FSCONFIG, 1, NO_BASE, 0, NO_BASE, 0, A(2), A(3), A(1), A(0));
		case FSCONFIG_SET_PATH:
		case FSCONFIG_SET_PATH_EMPTY:
			return mnt(MOUNT_OP_FSCONFIG, 0, NO_BASE, 0, A(4), A(3), A(2), 0, A(1), A(0));
		case FSCONFIG_SET_FD:
			return mnt(MOUNT_OP_FSCONFIG, 0, NO_BASE, 0, A(4), 0, A(2), 0, A(1), A(0));
		}
		return 0;
	}
#undef report
#undef mnt
	return 0;
send_op:
	return report_op(pi, v.kind, v.dfd, v.p1, v.dfd2, v.p2, v.flags, v.mode, res);
send_mnt:
	return report_mount(pi, &mo, ret);
}

/* ---- bytes per peer ---- */

static __always_inline void count_bytes(struct sock *sk, int ret, bool sent)
{
	if (ret <= 0)
		return;
	struct proc_info *pi = current_proc();
	if (!pi)
		return;
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family != AF_INET && family != AF_INET6)
		return;
	struct peer_key k = {};
	k.pid = bpf_get_current_pid_tgid() >> 32;
	k.family = family;
	k.port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (family == AF_INET) {
		__u32 a = BPF_CORE_READ(sk, __sk_common.skc_daddr);
		__builtin_memcpy(k.addr, &a, 4);
	} else {
		BPF_CORE_READ_INTO(&k.addr, sk, __sk_common.skc_v6_daddr);
	}
	/* A send on a socket without a peer went where the call said:
	 * report_send counts it there. */
	if (sent && !k.port && !((__u64 *)k.addr)[0] && !((__u64 *)k.addr)[1])
		return;
	struct peer_val *v = bpf_map_lookup_elem(&peer_bytes, &k);
	if (!v) {
		struct peer_val z = {};
		/* user space drains a process's counters when it exits, which
		 * walks the whole map: only where this flag says there are any */
		pi->flags |= PI_PEERS;
		bpf_map_update_elem(&peer_bytes, &k, &z, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&peer_bytes, &k);
		if (!v)
			return;
	}
	if (sent)
		__sync_fetch_and_add(&v->sent, ret);
	else
		__sync_fetch_and_add(&v->recv, ret);
	v->last_ns = bpf_ktime_get_boot_ns();
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(handle_send_length, struct sock *sk, int ret, int flags)
{
	count_bytes(sk, ret, true);
	if (ret > 0 && BPF_CORE_READ(sk, __sk_common.skc_family) == AF_UNIX) {
		struct proc_info *pi = current_proc();
		if (pi)
			tree_sent(pi, sk);
	}
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(handle_recv_length, struct sock *sk, int ret, int flags)
{
	count_bytes(sk, ret, false);
	return 0;
}

#include "uring.h"
