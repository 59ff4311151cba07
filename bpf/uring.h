/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * io_uring: the operations a traced process submits through a ring never
 * pass sys_exit, so they are read from the io_uring tracepoints:
 *  - tp_btf io_uring_create: a process made a ring (its use is on record
 *    even for an operation the programs below miss);
 *  - tp_btf io_uring_submit_req: the request is prepared, so the path
 *    operations hold the kernel's copy of their path names (getname at
 *    prep time); they are kept in map uring_pend by request until
 *  - tp_btf io_uring_complete: the result. An open, rename, unlink,
 *    mkdir, link, connect or accept becomes a record of its syscall twin's
 *    shape (EV_URING with twin set), with the opened file's object where
 *    an fd came back; every other operation (read, write, send, socket,
 *    ...) is reported once per process, operation and file (map
 *    uring_seen), with the file's path and, for a socket, its peer.
 * Completions can run in an io-wq worker, in task work, or in a kworker
 * when the submitter is exiting, so who did it is the request's task
 * (req->tctx->task), not current. These tracepoints fire only for rings,
 * so ordinary syscalls pay nothing for them.
 *
 * Included at the end of polygraph.bpf.c: it uses its maps and helpers.
 */
#ifndef __POLYGRAPH_URING_H
#define __POLYGRAPH_URING_H

/* ---- records (user space: internal/sensor/uring.go) ---- */

/* EV_URING (kinds.h) is the record kind of everything below; its twin
 * field names the kind of ev_path/ev_sock record the operation stands for. */

/* ev_uring.uflags */
#define URF_NORESULT (1 << 0)   /* reported at submission: no result known */
#define URF_OBJECT (1 << 1)     /* a file's walked path and uring_ident follow the paths */
#define URF_TRUNC_PATH (1 << 2) /* a path or base hit its limit */
#define URF_TRUNC_OBJ (1 << 3)  /* the file's walked path hit WALK_MAX/WALK_DEPTH */

/* EV_URING: one io_uring operation (op is its IORING_OP_*, IOP_SETUP for
 * a ring's creation). Then path, base, path2, base2 (as in ev_path: the
 * kernel's copies of the names, the walked bases of relative ones), for
 * URF_OBJECT the walked path of the file (the one an open returned, or
 * the one the operation was on) followed by its struct uring_ident, and
 * addr_len bytes of the socket's peer (a sockaddr). fd is the fd the
 * request named (-1 for none); for IOP_SETUP result is the ring's fd,
 * flags its setup flags and mode its SQ size. */
struct ev_uring {
	struct ev_header h;
	__s64 result;
	__u32 flags;
	__u32 mode;
	__u8 op;
	__u8 twin;
	__u8 uflags;
	__u8 proto;
	__s32 fd;
	__u16 path_len;
	__u16 base_len;
	__u16 path2_len;
	__u16 base2_len;
	__u16 obj_len;
	__u16 addr_len;
	__u32 _pad0;
	__u64 file_key; /* the file's struct inode *, as map uring_seen keys it */
};

/* uring_ident is a file's identity, as in ev_path. */
struct uring_ident {
	__u64 ino;
	__u32 dev;
	__u32 nlink;
	__u16 imode;
	__u16 _pad0;
	__u32 _pad1;
};

/* Key and value of map uring_seen. The file is its struct inode * (one
 * probe read; the record carries it as file_key, so user space matches
 * the totals it drains at exit to the first record) and its inode
 * number, so an inode freed and reused for another file is another key. */
struct uring_key {
	__u32 pid;
	__u8 op;
	__u8 _pad0[3];
	__u64 inode;
	__u64 ino;
};

struct uring_val {
	__u64 ops;
	__u64 bytes; /* bytes moved, for the operations that move data */
	__u64 last_ns;
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct filename {
	const char *name;
};

struct open_how {
	__u64 flags;
	__u64 mode;
};

struct io_uring_task {
	struct task_struct *task;
};

struct io_cqe {
	__u64 user_data;
	__s32 res;
	union {
		__u32 flags;
		int fd; /* until completion: the fd the request named */
	};
};

struct io_uring_cqe {
	__u64 user_data;
	__s32 res;
	__u32 flags;
};

/* A ring's table of fixed files (6.13+: one resource node a slot, its
 * file pointer tagged in the two low bits). */
struct io_rsrc_node {
	unsigned long file_ptr;
};

struct io_rsrc_data {
	unsigned int nr;
	struct io_rsrc_node **nodes;
};

struct io_file_table {
	struct io_rsrc_data data;
};

struct io_ring_ctx {
	struct io_file_table file_table;
};

struct io_kiocb {
	struct file *file;
	struct io_ring_ctx *ctx;
	u8 opcode;
	u64 flags; /* io_req_flags_t */
	struct io_cqe cqe;
	struct io_uring_task *tctx;
	void *async_data;
};

/* The per-operation commands live in the request's first 64 bytes. */
struct io_open {
	struct file *file;
	int dfd;
	u32 file_slot;
	struct filename *filename;
	struct open_how how;
};

struct io_rename {
	struct file *file;
	int old_dfd;
	int new_dfd;
	struct filename *oldpath;
	struct filename *newpath;
	int flags;
};

struct io_unlink {
	struct file *file;
	int dfd;
	int flags;
	struct filename *filename;
};

struct io_mkdir {
	struct file *file;
	int dfd;
	umode_t mode;
	struct filename *filename;
};

struct io_link {
	struct file *file;
	int old_dfd;
	int new_dfd;
	struct filename *oldpath;
	struct filename *newpath;
	int flags;
};

struct io_connect {
	struct file *file;
	void *addr; /* user pointer */
	int addr_len;
};

struct msghdr {
	void *msg_name;
	int msg_namelen;
};

struct io_async_msghdr {
	struct msghdr msg;
};

struct io_sr_msg {
	struct file *file;
	void *umsg; /* user_msghdr for SENDMSG, the buffer for SEND */
};

#pragma clang attribute pop

/* IORING_OP_* this file names (include/uapi/linux/io_uring.h: the
 * numbers are ABI). */
#define IOP_SENDMSG 9
#define IOP_ACCEPT 13
#define IOP_CONNECT 16
#define IOP_OPENAT 18
#define IOP_OPENAT2 28
#define IOP_RENAMEAT 35
#define IOP_UNLINKAT 36
#define IOP_MKDIRAT 37
#define IOP_SYMLINKAT 38
#define IOP_LINKAT 39
#define IOP_SETUP 255 /* not an opcode: the ring's creation */

#define REQ_F_FIXED_FILE (1 << 0)
#define REQ_F_CQE_SKIP (1 << 6) /* IOSQE_CQE_SKIP_SUCCESS: no completion on success */
#define BPF_F_NO_PREALLOC (1U << 0)

/* uring_pend is a path operation between submission and completion. */
struct uring_pend {
	__u8 twin;
	__u8 op;
	__u16 len1;
	__u16 len2;
	__u8 fixed; /* an open into a fixed-file slot: no fd comes back */
	__u8 _pad0;
	__s32 dfd;
	__s32 dfd2;
	__u32 flags;
	__u32 mode;
	__u32 slot; /* an open's file_slot: 0 none, IORING_FILE_INDEX_ALLOC, else slot + 1 */
	__u32 _pad1;
	char p1[USTR_MAX];
	char p2[USTR_MAX];
};

/* uring_pend holds the path operations in flight, by request. Entries
 * are allocated as used (8 KiB each); when it is full the operation is
 * reported at submission, without its result (URF_NORESULT). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct uring_pend);
} uring_pend SEC(".maps");

/* uring_seen bounds the operations without a twin to one record per
 * process, opcode and file (inode), counting the rest. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct uring_key);
	__type(value, struct uring_val);
} uring_seen SEC(".maps");

const struct ev_uring *_unused_uring __attribute__((unused));
const struct uring_ident *_unused_ident __attribute__((unused));

/* The scratch area a submission builds its uring_pend in: past every
 * offset OFF() reaches, so a record can be built beside it. */
#define PEND_OFF (DATA_OFF + 65536)
_Static_assert(PEND_OFF + sizeof(struct uring_pend) <= SCRATCH_SIZE, "uring_pend outside scratch");
_Static_assert(sizeof(struct ev_uring) <= DATA_OFF, "ev_uring overlaps data");

/* URING_TASK: the request names its task (req->tctx->task, 6.13+). */
#define URING_TASK bpf_core_field_exists(((struct io_kiocb *)0)->tctx)

/* uring_twin is the record kind an opcode reports as, 0 for none. */
static __always_inline __u8 uring_twin(__u8 op)
{
	switch (op) {
	case IOP_OPENAT:
	case IOP_OPENAT2:
		return EV_OPEN;
	case IOP_RENAMEAT:
		return EV_RENAME;
	case IOP_UNLINKAT:
		return EV_UNLINK;
	case IOP_MKDIRAT:
		return EV_MKDIR;
	case IOP_SYMLINKAT:
	case IOP_LINKAT:
		return EV_LINK;
	case IOP_CONNECT:
		return EV_CONNECT;
	case IOP_ACCEPT:
		return EV_ACCEPT;
	}
	return 0;
}

/* uring_header is fill_header for a task reached through the request,
 * which the verifier does not type: every field is a probe read. */
static __always_inline void uring_header(struct ev_header *h, struct task_struct *t, __u64 image_ns)
{
	h->kind = EV_URING;
	h->flags = 0;
	h->_pad0 = 0;
	h->pid = BPF_CORE_READ(t, tgid);
	h->tid = BPF_CORE_READ(t, pid);
	h->ppid = BPF_CORE_READ(t, real_parent, tgid);
	h->ts = bpf_ktime_get_boot_ns();
	h->image_ns = image_ns;
	BPF_CORE_READ_INTO(&h->comm, t, comm);
}

/* uring_fd_file is fd_file for such a task. */
static __always_inline struct file *uring_fd_file(struct task_struct *t, long fd)
{
	struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
	if (!fdt)
		return 0;
	unsigned int max = BPF_CORE_READ(fdt, max_fds);
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *f = 0;
	if (fd < 0 || fd >= max)
		return 0;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

#define IORING_FILE_INDEX_ALLOC (~0U)
#define FFS_MASK (~3UL) /* a fixed file's pointer without FFS_NOWAIT and FFS_ISREG */

/* uring_fixed_file returns the file an open into a fixed-file slot put
 * there: file_slot as the open named it, res its result (the slot chosen
 * for IORING_FILE_INDEX_ALLOC). No fd comes back, so the file is read
 * from the ring's table; 0 before 6.13's table of resource nodes. */
static __always_inline struct file *uring_fixed_file(struct io_kiocb *req, __u32 file_slot, __s32 res)
{
	if (!bpf_core_field_exists(struct io_file_table, data) || res < 0 || !file_slot)
		return 0;
	__u32 slot = file_slot == IORING_FILE_INDEX_ALLOC ? (__u32)res : file_slot - 1;
	struct io_ring_ctx *ctx = BPF_CORE_READ(req, ctx);
	if (slot >= BPF_CORE_READ(ctx, file_table.data.nr))
		return 0;
	struct io_rsrc_node **nodes = BPF_CORE_READ(ctx, file_table.data.nodes);
	struct io_rsrc_node *node = 0;
	bpf_probe_read_kernel(&node, sizeof(node), &nodes[slot]);
	if (!node)
		return 0;
	return (struct file *)(BPF_CORE_READ(node, file_ptr) & FFS_MASK);
}

/* uring_base is walk_base for such a task. */
static __always_inline __u32 uring_base(struct task_struct *t, __s32 dfd, struct scratch *s, __u32 off, __u8 *flags)
{
	if (dfd == AT_FDCWD) {
		struct fs_struct *fs = BPF_CORE_READ(t, fs);
		return walk_path(__builtin_preserve_access_index(&fs->pwd), s, off, flags);
	}
	struct file *f = uring_fd_file(t, dfd);
	if (!f)
		return 0;
	return walk_path(__builtin_preserve_access_index(&f->f_path), s, off, flags);
}

/* uring_name copies the kernel's copy of a path name into p. */
static __always_inline __u16 uring_name(char *p, struct filename *fn)
{
	const char *name = BPF_CORE_READ(fn, name);
	if (!name)
		return 0;
	long n = bpf_probe_read_kernel_str(p, USTR_MAX, name);
	return n > 0 ? n : 0;
}

/* uring_prep fills p from a path operation's command; it returns 0 for
 * an opcode that is not one. */
static __always_inline int uring_prep(struct io_kiocb *req, __u8 op, struct uring_pend *p)
{
	void *cmd = req;
	if (!bpf_core_type_exists(struct io_open))
		return 0; /* before 6.0 the commands were members of io_kiocb */
	p->op = op;
	p->twin = uring_twin(op);
	p->len1 = p->len2 = 0;
	p->dfd = p->dfd2 = NO_BASE;
	p->flags = p->mode = 0;
	p->fixed = 0;
	switch (op) {
	case IOP_OPENAT:
	case IOP_OPENAT2: {
		struct io_open *o = cmd;
		p->dfd = BPF_CORE_READ(o, dfd);
		p->flags = BPF_CORE_READ(o, how.flags);
		p->mode = BPF_CORE_READ(o, how.mode);
		p->slot = BPF_CORE_READ(o, file_slot);
		p->fixed = p->slot != 0;
		p->len1 = uring_name(p->p1, BPF_CORE_READ(o, filename));
		return 1;
	}
	case IOP_RENAMEAT:
	case IOP_LINKAT:
	case IOP_SYMLINKAT: {
		struct io_rename *r = cmd; /* io_link has the same layout, checked by CO-RE below */
		struct io_link *l = cmd;
		p->dfd = op == IOP_RENAMEAT ? BPF_CORE_READ(r, old_dfd) : BPF_CORE_READ(l, old_dfd);
		p->dfd2 = op == IOP_RENAMEAT ? BPF_CORE_READ(r, new_dfd) : BPF_CORE_READ(l, new_dfd);
		p->flags = USER_FLAGS(op == IOP_RENAMEAT ? BPF_CORE_READ(r, flags) : BPF_CORE_READ(l, flags));
		p->len1 = uring_name(p->p1, op == IOP_RENAMEAT ? BPF_CORE_READ(r, oldpath) : BPF_CORE_READ(l, oldpath));
		p->len2 = uring_name(p->p2, op == IOP_RENAMEAT ? BPF_CORE_READ(r, newpath) : BPF_CORE_READ(l, newpath));
		if (op == IOP_SYMLINKAT) {
			/* the target is text, resolved against nothing */
			p->dfd = NO_BASE;
			p->flags = LINK_SYMBOLIC;
		}
		return 1;
	}
	case IOP_UNLINKAT: {
		struct io_unlink *u = cmd;
		p->dfd = BPF_CORE_READ(u, dfd);
		p->flags = BPF_CORE_READ(u, flags);
		p->len1 = uring_name(p->p1, BPF_CORE_READ(u, filename));
		return 1;
	}
	case IOP_MKDIRAT: {
		struct io_mkdir *m = cmd;
		p->dfd = BPF_CORE_READ(m, dfd);
		p->mode = BPF_CORE_READ(m, mode);
		p->len1 = uring_name(p->p1, BPF_CORE_READ(m, filename));
		return 1;
	}
	}
	return 0;
}

/* uring_copy copies n bytes of a kept path into data at off. */
static __always_inline __u32 uring_copy(struct scratch *s, __u32 off, const char *src, __u16 n)
{
	__u32 len = bounded(n, USTR_MAX);
	if (!len || bpf_probe_read_kernel(&s->b[OFF(off)], len & (2 * USTR_MAX - 1), src))
		return 0;
	return len;
}

/* uring_paths writes p's paths, each followed by the base a relative one
 * is resolved against. */
static __always_inline __u32 uring_paths(struct task_struct *t, struct scratch *s, struct ev_uring *e,
					 struct uring_pend *p, __u8 *flags)
{
	__u32 off = uring_copy(s, 0, p->p1, p->len1);
	e->path_len = off;
	if (p->dfd != NO_BASE && (off == 0 || s->b[OFF(0)] != '/'))
		e->base_len = uring_base(t, p->dfd, s, off, flags);
	off += e->base_len;
	if (p->len2) {
		__u32 at = off;
		e->path2_len = uring_copy(s, off, p->p2, p->len2);
		off += e->path2_len;
		if (p->dfd2 != NO_BASE && (e->path2_len == 0 || s->b[OFF(at)] != '/'))
			e->base2_len = uring_base(t, p->dfd2, s, off, flags);
		off += e->base2_len;
	}
	return off;
}

/* uring_object writes f's walked path at off and, after it, its identity
 * (struct uring_ident), setting URF_OBJECT. */
static __always_inline __u32 uring_object(struct scratch *s, struct ev_uring *e, struct file *f, __u32 off)
{
	struct dentry *d = BPF_CORE_READ(f, f_path.dentry);
	struct vfsmount *vm = BPF_CORE_READ(f, f_path.mnt);
	struct inode *ino = BPF_CORE_READ(f, f_inode);
	__u8 wf = 0;
	__u32 n = walk_from(d, vm, s, off, &wf);
	e->obj_len = n;
	if (wf & EVF_TRUNC_PATH)
		e->uflags |= URF_TRUNC_OBJ;
	struct uring_ident *id = (void *)&s->b[OFF(off + n)];
	id->ino = BPF_CORE_READ(ino, i_ino);
	id->dev = BPF_CORE_READ(ino, i_sb, s_dev);
	id->nlink = BPF_CORE_READ(ino, i_nlink);
	id->imode = BPF_CORE_READ(ino, i_mode);
	id->_pad0 = 0;
	id->_pad1 = 0;
	e->uflags |= URF_OBJECT;
	return n + sizeof(*id);
}

/* uring_peer writes the peer of socket file f at off: from the socket,
 * or (a Unix socket, or one not connected yet) the sockaddr at the user
 * pointer ua the request carries, when it carries one. */
static __always_inline __u32 uring_peer(struct scratch *s, struct ev_uring *e, struct file *f, __u64 ua,
					__u32 alen, __u32 off)
{
	umode_t mode = BPF_CORE_READ(f, f_inode, i_mode);
	if ((mode & S_IFMT) != S_IFSOCK)
		return 0;
	struct socket *sock = BPF_CORE_READ(f, private_data);
	struct sock *sk = BPF_CORE_READ(sock, sk);
	if (!sk)
		return 0;
	struct sock_view v = {};
	read_sock_view(sk, &v);
	e->proto = v.proto;
	__u32 n = view_addr(sk, &v, s, off);
	bool none = n == 2 || !v.dport;
	if (none && ua) {
		__u32 m = bounded(alen, SOCKADDR_MAX);
		if (m && !bpf_probe_read_user(&s->b[OFF(off)], m & 0x7F, (void *)ua))
			return m;
	}
	return n;
}

/* uring_begin starts a record in the scratch buffer. */
static __always_inline struct ev_uring *uring_begin(struct scratch *s, struct task_struct *t, struct proc_info *pi,
						    __u8 op, __u8 twin, __s64 res, __u8 uflags)
{
	struct ev_uring *e = (void *)s->b;
	uring_header(&e->h, t, pi->image_ns);
	e->result = res;
	e->flags = 0;
	e->mode = 0;
	e->op = op;
	e->twin = twin;
	e->uflags = uflags;
	e->proto = 0;
	e->fd = -1;
	e->path_len = e->base_len = e->path2_len = e->base2_len = 0;
	e->obj_len = e->addr_len = 0;
	e->_pad0 = 0;
	e->file_key = 0;
	return e;
}

/* uring_report_paths sends a path operation: its paths from p and, for
 * an open that returned an fd, the file the kernel opened. */
static __always_inline void uring_report_paths(struct scratch *s, struct task_struct *t, struct proc_info *pi,
					       struct io_kiocb *req, struct uring_pend *p, __s64 res, __u8 uflags)
{
	struct ev_uring *e = uring_begin(s, t, pi, p->op, p->twin, res, uflags);
	__u8 wf = 0;
	e->flags = p->flags;
	e->mode = p->mode;
	__u32 off = uring_paths(t, s, e, p, &wf);
	if (wf & (EVF_TRUNC_PATH | EVF_TRUNC_USTR))
		e->uflags |= URF_TRUNC_PATH;
	if (p->twin == EV_OPEN && res >= 0 && !(uflags & URF_NORESULT)) {
		struct file *f = p->fixed ? uring_fixed_file(req, p->slot, res) : uring_fd_file(t, res);
		if (f)
			off += uring_object(s, e, f, off);
	}
	submit_scratch(s, off);
}

/* uring_moves_bytes reports whether op's result is a byte count: reads,
 * writes, sends, receives, splice and tee (not an fd, not a status). */
static __always_inline bool uring_moves_bytes(__u8 op)
{
	switch (op) {
	case 1: case 2: case 4: case 5: /* READV WRITEV READ_FIXED WRITE_FIXED */
	case 9: case 10: /* SENDMSG RECVMSG */
	case 22: case 23: case 26: case 27: /* READ WRITE SEND RECV */
	case 30: case 33: /* SPLICE TEE */
	case 47: case 48: case 49: case 58: /* SEND_ZC SENDMSG_ZC READ_MULTISHOT RECV_ZC */
	case 60: case 61: /* READV_FIXED WRITEV_FIXED */
		return true;
	}
	return false;
}

/* uring_once reports whether this is the first operation op of the
 * process on inode (number ino), counting it (and the bytes it moved) either way;
 * user space drains the counts when the process exits. */
static __always_inline bool uring_once(__u32 tgid, __u8 op, struct inode *inode, __u64 ino, __s32 res)
{
	struct uring_key k = {.pid = tgid, .op = op, .inode = (__u64)inode, .ino = ino};
	__u64 now = bpf_ktime_get_boot_ns();
	if (!uring_moves_bytes(op))
		res = 0;
	struct uring_val *v = bpf_map_lookup_elem(&uring_seen, &k);
	if (v) {
		__sync_fetch_and_add(&v->ops, 1);
		if (res > 0)
			__sync_fetch_and_add(&v->bytes, res);
		v->last_ns = now;
		return false;
	}
	struct uring_val z = {.ops = 1, .bytes = res > 0 ? res : 0, .last_ns = now};
	bpf_map_update_elem(&uring_seen, &k, &z, BPF_NOEXIST);
	return true;
}

/* uring_req is what the programs read of a request. */
struct uring_req {
	struct file *file;
	struct inode *inode; /* file's */
	__u64 ino;
	struct io_uring_task *tctx;
	__u64 flags;
	__s32 fd;
	__u8 op;
};

/* uring_read_req reads req's fields with one probe read where the
 * kernel keeps them in SPAN bytes (as file_links does): this runs for
 * every completion of every ring on the machine. */
static __always_inline void uring_read_req(struct scratch *s, struct io_kiocb *req, struct uring_req *q)
{
	__u64 of = bpf_core_field_offset(struct io_kiocb, file);
	__u64 oo = bpf_core_field_offset(struct io_kiocb, opcode);
	__u64 ol = bpf_core_field_offset(struct io_kiocb, flags);
	__u64 od = bpf_core_field_offset(struct io_kiocb, cqe.fd);
	__u64 ot = URING_TASK ? bpf_core_field_offset(struct io_kiocb, tctx) : 0;
	if (IN_SPAN(0, of, 8) && IN_SPAN(0, oo, 1) && IN_SPAN(0, ol, 8) && IN_SPAN(0, od, 4) && IN_SPAN(0, ot, 8) &&
	    !((of | ol | ot) & 7) && !(od & 3)) {
		if (bpf_probe_read_kernel(s->span, SPAN, req))
			__builtin_memset(s->span, 0, SPAN);
		q->file = SPAN_AT(s, of, struct file *);
		q->op = SPAN_AT(s, oo, __u8);
		q->flags = SPAN_AT(s, ol, __u64);
		q->fd = SPAN_AT(s, od, __s32);
		q->tctx = URING_TASK ? SPAN_AT(s, ot, struct io_uring_task *) : 0;
		return;
	}
	q->file = BPF_CORE_READ(req, file);
	q->op = BPF_CORE_READ(req, opcode);
	q->flags = BPF_CORE_READ(req, flags);
	q->fd = BPF_CORE_READ(req, cqe.fd);
	q->tctx = URING_TASK ? BPF_CORE_READ(req, tctx) : 0;
}

/* bpf_rdonly_cast (polygraph.bpf.c, 6.2+) types the completion's request,
 * which the tracepoint passes as void *; where it is missing the programs
 * take the probe reads instead. */

/* uring_traced reports whether tgid is in the traced tree (a second
 * lookup for a traced process, whose completion costs more anyway). */
static __always_inline bool uring_traced(__u32 tgid)
{
	return bpf_map_lookup_elem(&tracked, &tgid) != 0;
}

/* uring_is_path reports whether op's command carries path names. */
static __always_inline bool uring_is_path(__u8 op)
{
	__u8 twin = uring_twin(op);
	return twin && twin != EV_CONNECT && twin != EV_ACCEPT;
}

SEC("tp_btf/io_uring_create")
int BPF_PROG(uring_create, int fd, void *ring, __u32 sq_entries, __u32 cq_entries, __u32 flags)
{
	struct proc_info *pi = current_proc();
	if (!pi)
		return 0;
	struct scratch *s = get_scratch();
	if (!s)
		return 0;
	struct ev_uring *e = uring_begin(s, (void *)bpf_get_current_task(), pi, IOP_SETUP, 0, fd, 0);
	e->flags = flags;
	e->mode = sq_entries;
	submit_sec(s, 0);
	return 0;
}

static __always_inline __u32 pi_tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

/* uring_is_send reports whether op sends a message that may name its
 * destination (sendto-style SEND, SENDMSG's msg_name). */
static __always_inline bool uring_is_send(__u8 op)
{
	return op == 9 || op == 26 || op == 47 || op == 48; /* SENDMSG SEND SEND_ZC SENDMSG_ZC */
}

/* uring_send_dest reports the destination a send request names, once
 * per process, operation and destination. Prep copied it into the
 * request's async msghdr (kmsg->addr, msg_name pointing at it), so it is
 * the kernel's copy, read at submission: by completion the msghdr may
 * be recycled. A request naming none sends to the socket's peer, which
 * its completion reports. */
static __always_inline void uring_send_dest(struct scratch *s, struct task_struct *t, struct proc_info *pi,
					    struct io_kiocb *req, struct uring_req *q)
{
	struct io_async_msghdr *km = BPF_CORE_READ(req, async_data);
	if (!km)
		return;
	void *name = BPF_CORE_READ(km, msg.msg_name);
	int nlen = BPF_CORE_READ(km, msg.msg_namelen);
	if (!name || nlen < 2)
		return;
	__u64 sa[4] = {}; /* family, port, address: a sockaddr_in6 is 28 bytes */
	if (bpf_probe_read_kernel(&sa, sizeof(sa), name))
		return;
	__u16 family = sa[0] & 0xFFFF;
	if (family != AF_INET && family != AF_INET6)
		return; /* a Unix datagram's name is a path: its connect-less peer is rare */
	/* only the bytes that name the destination: the storage past the
	 * name may hold a recycled request's */
	if (family == AF_INET) {
		sa[1] = sa[2] = sa[3] = 0;
	} else {
		sa[0] &= 0xFFFFFFFF; /* not the flow label */
		sa[3] &= 0xFFFFFFFF;
	}
	/* the key's "file" is the destination: a hash of it, with ino 0 */
	__u64 h = (sa[0] ^ (sa[1] * 0x9E3779B97F4A7C15ULL) ^ (sa[2] * 0xC2B2AE3D27D4EB4FULL) ^ (sa[3] << 1)) | 1;
	if (!uring_once(pi_tgid(), q->op, (void *)h, 0, 0))
		return;
	struct ev_uring *e = uring_begin(s, t, pi, q->op, 0, 0, URF_NORESULT);
	e->fd = q->fd;
	e->file_key = h;
	__u32 n = family == AF_INET ? 16 : 28;
	__builtin_memcpy(&s->b[OFF(0)], sa, 32);
	e->addr_len = n;
	submit_scratch(s, n);
}

/* uring_submit keeps the paths of a path operation for its completion.
 * An operation that will post no completion when it succeeds
 * (IOSQE_CQE_SKIP_SUCCESS), or that finds the map full, is reported now,
 * without its result. */
SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(uring_submit, struct io_kiocb *req)
{
	if (!bpf_core_type_exists(struct io_open))
		return 0; /* before 6.0 the tracepoint's argument was not the request */
	/* The request is typed here: its opcode is a load, and most
	 * operations are the completion's to report, so this is all an
	 * ordinary request costs. Without req->tctx (before 6.13)
	 * uring_complete cannot tell who completed: then everything is
	 * reported here, without results. */
	struct uring_req q = {.op = req->opcode};
	if (bpf_core_field_size(req->flags) == sizeof(q.flags))
		q.flags = req->flags;
	else
		q.flags = BPF_CORE_READ(req, flags); /* a u32 before 6.10 */
	bool skip = (q.flags & REQ_F_CQE_SKIP) || !URING_TASK;
	bool send = uring_is_send(q.op);
	if (!skip && !send && !uring_is_path(q.op))
		return 0;
	struct proc_info *pi = current_proc();
	if (!pi)
		return 0;
	struct scratch *s = get_scratch();
	if (!s)
		return 0;
	q.fd = req->cqe.fd;
	struct task_struct *t = (void *)bpf_get_current_task();
	if (send)
		uring_send_dest(s, t, pi, req, &q);
	if (!skip && !uring_is_path(q.op))
		return 0;
	struct uring_pend *p = (void *)&s->b[PEND_OFF];
	if (!uring_prep(req, q.op, p)) {
		__u8 twin = uring_twin(q.op);
		struct file *f = twin || (q.flags & REQ_F_FIXED_FILE) ? 0 : uring_fd_file(t, q.fd);
		struct inode *inode = f ? BPF_CORE_READ(f, f_inode) : 0;
		if (!twin && !uring_once(bpf_get_current_pid_tgid() >> 32, q.op, inode, inode ? BPF_CORE_READ(inode, i_ino) : 0, 0))
			return 0;
		struct ev_uring *e = uring_begin(s, t, pi, q.op, twin, 0, URF_NORESULT);
		e->fd = q.fd;
		e->file_key = (__u64)inode;
		__u32 off = 0;
		if (f) {
			off = uring_object(s, e, f, 0);
			e->addr_len = uring_peer(s, e, f, 0, 0, off);
			off += e->addr_len;
		}
		submit_scratch(s, off);
		return 0;
	}
	__u64 key = (__u64)req;
	if (!skip && !bpf_map_update_elem(&uring_pend, &key, p, BPF_ANY))
		return 0;
	uring_report_paths(s, t, pi, req, p, 0, URF_NORESULT);
	return 0;
}

/* uring_untraced drops what a path operation kept, when its process
 * left the tree (exited) before the operation completed. */
static __always_inline int uring_untraced(struct io_kiocb *req, __u8 op)
{
	if (op == IOP_RENAMEAT || op == IOP_UNLINKAT)
		paths_changed(); /* a rename or rmdir anywhere makes cached walks stale (objcache.h) */
	if (uring_is_path(op)) {
		__u64 key = (__u64)req;
		bpf_map_delete_elem(&uring_pend, &key);
	}
	return 0;
}

/* uring_whose_slow fills q and returns the request's task where
 * bpf_rdonly_cast is missing: one probe read of the request, and one for
 * each pointer on the way to the task and the file's inode. */
static __always_inline struct task_struct *uring_whose_slow(struct scratch *s, struct io_kiocb *req, struct uring_req *q)
{
	uring_read_req(s, req, q);
	struct io_uring_task *tctx = q->tctx; /* locals: CO-RE would relocate q's fields */
	struct task_struct *t = BPF_CORE_READ(tctx, task);
	struct file *f = q->file;
	struct inode *in = f ? BPF_CORE_READ(f, f_inode) : 0;
	q->inode = in;
	q->ino = in ? BPF_CORE_READ(in, i_ino) : 0;
	return t ? t : (void *)bpf_get_current_task();
}

/* uring_file_part writes the file f an operation was on (its walked
 * path and identity) and, for a socket, its peer: the one a connect or
 * SENDMSG names (user memory, still mapped: the completion runs in the
 * submitter's task or an io-wq worker sharing its mm) where the socket
 * has none. It returns the bytes written. */
static __always_inline __u32 uring_file_part(struct scratch *s, struct ev_uring *e, struct io_kiocb *req,
					     struct file *f, __u8 op, __u8 twin)
{
	__u64 ua = 0;
	__u32 alen = 0, off = 0;
	if (op == IOP_CONNECT) {
		struct io_connect *c = (void *)req;
		ua = (__u64)BPF_CORE_READ(c, addr);
		alen = BPF_CORE_READ(c, addr_len);
	} else if (op == IOP_SENDMSG) {
		struct io_sr_msg *m = (void *)req;
		__u64 hdr[2] = {}; /* user_msghdr: msg_name, msg_namelen */
		bpf_probe_read_user(&hdr, sizeof(hdr), BPF_CORE_READ(m, umsg));
		ua = hdr[0];
		alen = (__u32)hdr[1];
	}
	if (twin != EV_CONNECT && twin != EV_ACCEPT)
		off = uring_object(s, e, f, 0);
	e->addr_len = uring_peer(s, e, f, ua, alen, off);
	return off + e->addr_len;
}

/* uring_complete reports an operation with its result. It runs for
 * every completion on the machine: for a process outside the tree it
 * costs three loads (bpf_rdonly_cast types the request) and a lookup. */
SEC("tp_btf/io_uring_complete")
int BPF_PROG(uring_complete, void *ring, void *rq, struct io_uring_cqe *cqe)
{
	struct io_kiocb *req = rq;
	if (!req || !URING_TASK)
		return 0; /* an auxiliary completion (a message, a notification) */
	struct uring_req q;
	struct task_struct *t;
	struct scratch *s;
	__u32 tgid;
	if (&bpf_rdonly_cast) {
		struct io_kiocb *r = bpf_rdonly_cast(rq, bpf_core_type_id_kernel(struct io_kiocb));
		t = r->tctx->task;
		tgid = t ? t->tgid : 0;
		if (!tgid || !uring_traced(tgid))
			return uring_untraced(req, r->opcode);
		if (!(s = get_scratch()))
			return 0;
		q.op = r->opcode;
		q.file = r->file;
		q.fd = r->cqe.fd;
		struct inode *in = q.file ? q.file->f_inode : 0;
		q.inode = in;
		q.ino = in ? in->i_ino : 0;
	} else {
		if (!(s = get_scratch()))
			return 0;
		t = uring_whose_slow(s, req, &q);
		tgid = BPF_CORE_READ(t, tgid);
	}
	struct proc_info *pi = bpf_map_lookup_elem(&tracked, &tgid);
	if (!pi)
		return uring_untraced(req, q.op);
	__s32 res = cqe->res;
	__u8 op = q.op, twin = uring_twin(op);
	if (op == IOP_RENAMEAT || op == IOP_UNLINKAT)
		paths_changed();
	if (uring_is_path(op)) {
		__u64 key = (__u64)req;
		struct uring_pend *p = bpf_map_lookup_elem(&uring_pend, &key);
		if (p) {
			uring_report_paths(s, t, pi, req, p, res, 0);
			bpf_map_delete_elem(&uring_pend, &key);
			return 0;
		}
	}
	struct file *f = q.file;
	struct inode *inode = 0;
	if (twin == EV_ACCEPT) {
		f = res >= 0 ? uring_fd_file(t, res) : 0;
	} else if (!twin) {
		inode = q.inode;
		if (!uring_once(tgid, op, inode, q.ino, res))
			return 0;
	} else if (twin == EV_OPEN) {
		/* a path operation without its paths (it failed before its
		 * submission, or was submitted before tracing began) is still
		 * reported, as its twin without a path */
		__u32 slot = BPF_CORE_READ((struct io_open *)req, file_slot);
		f = res < 0 ? 0 : slot ? uring_fixed_file(req, slot, res) : uring_fd_file(t, res);
	} else if (twin != EV_CONNECT) {
		f = 0;
	}
	struct ev_uring *e = uring_begin(s, t, pi, op, twin, res, 0);
	e->fd = q.fd;
	e->file_key = (__u64)inode;
	submit_scratch(s, f ? uring_file_part(s, e, req, f, op, twin) : 0);
	return 0;
}

#endif
