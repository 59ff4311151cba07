// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * polygraph's kernel sensor. Everything hangs off tracepoints, which every
 * kernel with BPF has (fentry/fexit, LSM and kprobes are often refused):
 *  - tp_btf sched_process_{fork,exec,exit} keep the set of traced
 *    processes (map tracked) and report the process tree;
 *  - tp_btf sys_exit reports file and socket operations with their
 *    results, and the DNS messages the tree sends, dispatching on the
 *    syscall number. At exit the arguments and the memory they point to
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
#define SIGNAL_GROUP_EXIT 0x00000004
#define EAGAIN 11
#define O_WRONLY 01
#define O_CREAT 0100
#define O_TRUNC 01000
#define AT_REMOVEDIR 0x200
#define NO_BASE -1000 /* op.dfd value: do not resolve this path */

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

struct scratch {
	__u8 b[SCRATCH_SIZE];
	__u8 span[128]; /* SPAN: fields read with one probe read */
	struct walk_state w;
	__u64 nrec; /* records this CPU sent from the buffer */
};

/* events carries every record to user space. Its size is set by the
 * loader (Options.RingBytes). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

/* lost counts what the kernel side could not deliver: slot 0 records the
 * ring buffer had no room for, slot 1 processes or syscalls the tracking
 * maps had no room for. User space sums the per-CPU values. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
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

static __always_inline void count_lost(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&lost, &slot);
	if (v)
		*v += 1;
}

static __always_inline struct proc_info *current_proc(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	return bpf_map_lookup_elem(&tracked, &tgid);
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

static __always_inline void submit_scratch(struct scratch *s, __u32 data_len)
{
	__u64 size = DATA_OFF + (data_len & 0x1FFFF);
	if (size > SCRATCH_SIZE)
		size = SCRATCH_SIZE;
	/* Asking the ring how full it is costs a helper call and a read of
	 * the line the reader writes: only every WAKEUP_EVERY records. */
	__u64 flags = (++s->nrec & (WAKEUP_EVERY - 1)) ? BPF_RB_NO_WAKEUP : wakeup();
	if (bpf_ringbuf_output(&events, s->b, size, flags))
		count_lost(0);
}

/* dentry_links reads d's parent and name pointer, with one probe read
 * where the kernel keeps them close (d_parent is followed by d_name in
 * every kernel since 2.6; the offsets are CO-RE constants, so the
 * verifier keeps one branch). */
static __always_inline void dentry_links(struct dentry *d, struct dentry **parent, const unsigned char **name)
{
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
 * the way to the table is direct loads; only the slot itself, in an array
 * of pointers the verifier has no type for, takes a probe read. */
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
	if (bpf_map_update_elem(&tracked, &cpid, &ci, BPF_ANY))
		count_lost(1);

	struct ev_fork *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(0);
		return 0;
	}
	fill_header(&e->h, bpf_get_current_task_btf(), EV_FORK, now, pi->image_ns);
	e->child_pid = cpid;
	e->_pad0 = 0;
	e->child_image_ns = now;
	bpf_ringbuf_submit(e, wakeup());
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct proc_info *pi = current_proc();
	if (!pi)
		return 0;
	struct scratch *s = get_scratch();
	if (!s)
		return 0;

	__u64 now = bpf_ktime_get_boot_ns();
	pi->image_ns = now;
	struct ev_exec *e = (void *)s->b;
	__u8 flags = 0;
	fill_header(&e->h, bpf_get_current_task_btf(), EV_EXEC, now, now);
	e->uid = p->cred->uid.val;
	e->_pad0 = 0;

	struct file *f = bprm->file;
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
	/* A script: bprm->interp was replaced by the interpreter's name, and
	 * bprm->file is the interpreter. Keep the script's own name. */
	e->script_len = 0;
	const char *fname = bprm->filename;
	if (bprm->interp != fname) {
		long n = bpf_probe_read_kernel_str(&s->b[OFF(off)], USTR_MAX, fname);
		if (n > 0) {
			e->script_len = n;
			off += n;
		}
	}
	e->h.flags = flags;
	submit_scratch(s, off);
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

	struct ev_exit *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(0);
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
	bpf_ringbuf_submit(e, wakeup());
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

/* inode_identity fills e's identity fields from ino. */
static __always_inline void inode_identity(struct scratch *s, struct inode *ino, struct ev_path *e)
{
	__u64 om = bpf_core_field_offset(struct inode, i_mode);
	__u64 os = bpf_core_field_offset(struct inode, i_sb);
	__u64 oi = bpf_core_field_offset(struct inode, i_ino);
	__u64 on = bpf_core_field_offset(struct inode, i_nlink);
	struct super_block *sb;
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
	e->dev = BPF_CORE_READ(sb, s_dev);
}

/* open_object fills e's object part from the file fd now refers to: its
 * identity and, walked at off, its path. It returns the bytes written.
 * The fd was installed by this very call and the task is still in it, so
 * only another thread of the process could have replaced it (close and
 * reopen in between); then the identity and path are still one file's. */
static __always_inline __u32 open_object(struct task_struct *t, long fd, struct ev_path *e, struct scratch *s,
					 __u32 off, __u8 *flags)
{
	struct file *f = fd_file(t, fd);
	if (!f)
		return 0;
	struct inode *ino;
	struct vfsmount *vm;
	struct dentry *d;
	file_links(s, f, &ino, &vm, &d);
	inode_identity(s, ino, e);
	__u8 wf = 0;
	__u32 n = walk_from(d, vm, s, off, &wf);
	e->obj_len = n;
	*flags |= EVF_OBJECT | (wf & EVF_TRUNC_PATH ? EVF_TRUNC_OBJ : 0);
	return n;
}

static __always_inline int report_path(struct proc_info *pi, struct op v, long ret)
{
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
	__u32 off = path_and_base(t, s, 0, v.p1, v.dfd, &e->path_len, &e->base_len, &flags);
	e->path2_len = 0;
	e->base2_len = 0;
	if (v.p2)
		off += path_and_base(t, s, off, v.p2, v.dfd2, &e->path2_len, &e->base2_len, &flags);
	e->ino = 0;
	e->dev = 0;
	e->nlink = 0;
	e->imode = 0;
	e->obj_len = 0;
	e->_pad0 = 0;
	if (v.kind == EV_OPEN && ret >= 0)
		off += open_object(t, ret, e, s, off, &flags);
	e->h.flags = flags;
	submit_scratch(s, off);
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

/* sock_addr builds a sockaddr_in/in6 of sk's peer in data at off. */
static __always_inline __u32 sock_addr(struct sock *sk, struct scratch *s, __u32 off)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
	__u8 *d = &s->b[OFF(off)];
	__builtin_memset(d, 0, 28);
	*(__u16 *)d = family;
	*(__u16 *)(d + 2) = BPF_CORE_READ(sk, __sk_common.skc_dport);
	if (family == AF_INET) {
		*(__u32 *)(d + 4) = BPF_CORE_READ(sk, __sk_common.skc_daddr);
		return 16;
	}
	if (family == AF_INET6) {
		BPF_CORE_READ_INTO(d + 8, sk, __sk_common.skc_v6_daddr);
		return 28;
	}
	return 2;
}

static __always_inline int report_sock(struct proc_info *pi, struct op v, long ret)
{
	if (v.kind == EV_ACCEPT && ret == -EAGAIN)
		return 0; /* a non-blocking accept found nobody: not an event */
	struct scratch *s = get_scratch();
	if (!s)
		return 0;

	struct task_struct *t = bpf_get_current_task_btf();
	struct ev_sock *e = (void *)s->b;
	fill_header(&e->h, t, v.kind, bpf_ktime_get_boot_ns(), pi->image_ns);
	e->result = ret;
	e->fd = v.dfd;
	e->proto = 0;
	__u32 n = 0;
	if (v.kind == EV_ACCEPT) {
		if (ret >= 0) {
			struct sock *sk = fd_sock(t, ret);
			if (sk) {
				n = sock_addr(sk, s, 0);
				e->proto = BPF_CORE_READ(sk, sk_protocol);
			}
		}
	} else {
		n = bounded(v.flags, SOCKADDR_MAX);
		if (bpf_probe_read_user(&s->b[OFF(0)], n & 0x7F, (void *)v.p1))
			n = 0;
		struct sock *sk = fd_sock(t, v.dfd);
		if (sk)
			e->proto = BPF_CORE_READ(sk, sk_protocol);
	}
	e->addr_len = n;
	submit_scratch(s, n);
	return 0;
}

/* ---- DNS: messages the tree sends to port 53 ---- */

/* report_dns emits a DNS message if the destination (uaddr, when the
 * process named one, else the socket's peer) is port 53. */
static __always_inline int report_dns(struct proc_info *pi, long fd, __u64 uaddr, __u32 alen, __u64 buf, __u64 len)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct sock *sk = fd_sock(t, fd);
	if (!sk)
		return 0;
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family != AF_INET && family != AF_INET6)
		return 0;
	__u16 proto = BPF_CORE_READ(sk, sk_protocol);
	__u16 port;
	if (uaddr) {
		__u16 sa[2] = {};
		bpf_probe_read_user(&sa, sizeof(sa), (void *)uaddr);
		port = bpf_ntohs(sa[1]);
	} else {
		port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	}
	if (port != 53)
		return 0;
	struct scratch *s = get_scratch();
	if (!s)
		return 0;
	struct ev_dns *e = (void *)s->b;
	fill_header(&e->h, bpf_get_current_task_btf(), EV_DNS, bpf_ktime_get_boot_ns(), pi->image_ns);
	e->proto = proto;
	e->_pad0 = 0;
	__u32 n;
	if (uaddr) {
		n = bounded(alen, 28);
		if (bpf_probe_read_user(&s->b[OFF(0)], n & 0x1F, (void *)uaddr))
			n = 0;
	} else {
		n = sock_addr(sk, s, 0);
	}
	e->addr_len = n;
	__u32 dl = bounded(len, DNS_MAX);
	if (bpf_probe_read_user(&s->b[OFF(n)], dl & 0x3FF, (void *)buf))
		dl = 0;
	e->data_len = dl;
	submit_scratch(s, n + dl);
	return 0;
}

/* user_msghdr: name (0), namelen (8), iov (16), iovlen (24), ... size 56 */
static __always_inline int report_msg(struct proc_info *pi, long fd, __u64 umsg)
{
	__u64 m[4] = {};
	__u64 iov[2] = {};
	if (bpf_probe_read_user(&m, sizeof(m), (void *)umsg))
		return 0;
	if (!m[2] || !m[3] || bpf_probe_read_user(&iov, sizeof(iov), (void *)m[2]))
		return 0;
	return report_dns(pi, fd, m[0], (__u32)m[1], iov[0], iov[1]);
}

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
	case NR_connect: case NR_bind: case NR_accept: case NR_accept4:
	case NR_sendto: case NR_write: case NR_sendmsg: case NR_sendmmsg:
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
	}
	return report_path(pi, v, ret);
}

/* sys_exit reports the file and socket syscalls with their results. Their
 * arguments are still in the saved registers (the syscall changes only
 * the return register, and arm64 keeps x0 in orig_x0), and the strings
 * they point to were just read by the kernel, so nothing needs carrying
 * from sys_enter. */
SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	long id = SYSNR(regs);
	if (!at_exit(id))
		return 0;
	struct proc_info *pi = current_proc();
	if (!pi)
		return 0;
#define report(...) report_op(pi, __VA_ARGS__, ret)
	switch (id) {
	case NR_openat:
		return report(EV_OPEN, A(0), A(1), NO_BASE, 0, A(2), A(3));
	case NR_open:
		return report(EV_OPEN, AT_FDCWD, A(0), NO_BASE, 0, A(1), A(2));
	case NR_creat:
		return report(EV_OPEN, AT_FDCWD, A(0), NO_BASE, 0, O_CREAT | O_WRONLY | O_TRUNC, A(1));
	case NR_openat2: {
		__u64 how[2] = {}; /* struct open_how: u64 flags, u64 mode, ... */
		bpf_probe_read_user(&how, sizeof(how), (void *)A(2));
		return report(EV_OPEN, A(0), A(1), NO_BASE, 0, how[0], how[1]);
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
	/* link kinds: p1 is the existing target, p2 the new name. A
	 * symlink's target is text, resolved against nothing; flags bit 31
	 * marks a symbolic link for user space. */
	case NR_link:
		return report(EV_LINK, AT_FDCWD, A(0), AT_FDCWD, A(1), 0, 0);
	case NR_linkat:
		return report(EV_LINK, A(0), A(1), A(2), A(3), A(4), 0);
	case NR_symlink:
		return report(EV_LINK, NO_BASE, A(0), AT_FDCWD, A(1), 1u << 31, 0);
	case NR_symlinkat:
		return report(EV_LINK, NO_BASE, A(0), A(1), A(2), 1u << 31, 0);
	case NR_connect:
		return report(EV_CONNECT, A(0), A(1), 0, 0, A(2), 0);
	case NR_bind:
		return report(EV_BIND, A(0), A(1), 0, 0, A(2), 0);
	case NR_accept:
	case NR_accept4:
		return report(EV_ACCEPT, A(0), 0, 0, 0, 0, 0);
	/* DNS: what the tree sends to port 53, however it sends it. The
	 * message is still in the sender's memory when the call returns. */
	case NR_sendto:
		return report_dns(pi, A(0), A(4), A(5), A(1), A(2));
	case NR_write:
		return report_dns(pi, A(0), 0, 0, A(1), A(2));
	case NR_sendmsg:
		return report_msg(pi, A(0), A(1));
	case NR_sendmmsg: {
		/* glibc sends the A and AAAA queries together with sendmmsg. */
		__u64 fd = A(0), vec = A(1);
		report_msg(pi, fd, vec);
		if (A(2) > 1)
			report_msg(pi, fd, vec + 64); /* sizeof(struct mmsghdr) */
		return 0;
	}
	}
#undef report
	return 0;
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
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(handle_recv_length, struct sock *sk, int ret, int flags)
{
	count_bytes(sk, ret, false);
	return 0;
}

#include "uring.h"
