/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Channels that cross the tree's edge without a connect(2) to name the
 * other side:
 *  - FIFOs: map fifo_ends keeps, per FIFO, the last opener of each side.
 *    Every successful open of a FIFO on the machine notes itself there
 *    and looks up the other side, so whichever of the two opens returns
 *    second (a blocking open returns only once the other side opens, so
 *    both return at about the same time) sends EV_PEER, for the tree's
 *    opener, naming the outside process: after the tree's own open
 *    record, or from the outside open. Untracked opens of anything else
 *    pay one look at the file's type.
 *  - reads of another process's memory or registers (ptrace PEEK*,
 *    GET*REGS*, process_vm_readv, /proc/PID/mem opened for reading):
 *    EV_MEMREAD with the target, first per caller, target and request;
 *    the register and user-area writes (POKEUSER, SET*REGS*) are injects
 *    like POKETEXT.
 *  - Unix datagrams sent to a path (an unconnected AF_UNIX SOCK_DGRAM
 *    socket): EV_SEND naming the path, first per process and path.
 *
 * Included from polygraph.bpf.c after the socket and call helpers, before
 * the syscall dispatch.
 */
#ifndef __POLYGRAPH_EDGE_H
#define __POLYGRAPH_EDGE_H

#define O_ACCMODE 3
#define PTRACE_PEEKTEXT 1
#define PTRACE_PEEKDATA 2
#define PTRACE_PEEKUSR 3
#define PTRACE_POKEUSR 6
#define PTRACE_GETREGS 12
#define PTRACE_SETREGS 13
#define PTRACE_GETFPREGS 14
#define PTRACE_SETFPREGS 15
#define PTRACE_GETREGSET 0x4204
#define PTRACE_SETREGSET 0x4205

/* ---- FIFOs ---- */

/* fifo_end is the last opener of one side of a FIFO. */
struct fifo_end {
	__u32 tgid;
	__u32 tid;
	__u32 ppid;
	__u32 counter;  /* the pipe's r_counter (reader) or w_counter (writer) after the open */
	__u32 fd;       /* the fd it got */
	__u32 _pad0;
	__u64 file;     /* the struct file * it got */
	__u64 pipe;     /* the struct pipe_inode_info * it opened */
	__u64 ts;       /* when (boot ns) */
	__u64 image_ns; /* in the tree: the image its events carry; 0 outside */
	char comm[16];
};

/* fifo_ends holds both sides of one FIFO: end[0] the reader, end[1] the
 * writer (an O_RDWR open is both). */
struct fifo_ends {
	struct fifo_end end[2];
	__u64 seq; /* bumped atomically by each note, as a barrier */
};

/* fifo_ends is keyed by the FIFO's identity. FIFOs are few: a full map
 * forgets the least recently opened. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct file_id);
	__type(value, struct fifo_ends);
} fifo_ends SEC(".maps");

/* fifo_pair names one pairing of a FIFO's ends: when the reader's and
 * the writer's open were noted. */
struct fifo_pair {
	struct file_id f;
	__u64 rts;
	__u64 wts;
};

/* fifo_pairs keeps the pairings already reported: when both opens see
 * each other, the first to insert reports, the other stays quiet. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct fifo_pair);
	__type(value, __u8);
} fifo_pairs SEC(".maps");

/* FIFO_RECENT_NS: an end opened this recently is the partner of an open
 * returning now even if it was closed since (a writer that wrote and
 * closed before the blocked reader's open returned). */
#define FIFO_RECENT_NS (200 * 1000 * 1000ULL)

static __always_inline void fifo_set(struct fifo_end *o, struct task_struct *t, __u32 counter, struct file *f, long fd,
				     struct pipe_inode_info *p, __u64 now, __u64 image_ns)
{
	o->tid = t->pid;
	o->ppid = t->real_parent->tgid;
	o->counter = counter;
	o->fd = fd;
	o->_pad0 = 0;
	o->file = (__u64)f;
	o->pipe = (__u64)p;
	o->ts = now;
	o->image_ns = image_ns;
	__u64 *c = (__u64 *)o->comm;
	const __u64 *tc = (const __u64 *)t->comm;
	c[0] = tc[0];
	c[1] = tc[1];
	o->tgid = t->tgid;
}

/* fifo_holds reports whether o's process still holds the file it opened
 * at the fd it got. */
static __always_inline bool fifo_holds(struct fifo_end *o)
{
	if (!bpf_task_from_pid || !bpf_task_release)
		return false;
	struct task_struct *p = bpf_task_from_pid(o->tgid);
	if (!p)
		return false;
	bool held = (__u64)fd_file(p, o->fd) == o->file;
	bpf_task_release(p);
	return held;
}

/* fifo_other returns o when it is another process's open of the same
 * pipe (the pipe is freed when both ends close: a later one at the same
 * address starts its counters again) that is still the last of its side
 * (the side's counter has not moved since) and is still open or recent. */
static __always_inline struct fifo_end *fifo_other(struct fifo_end *o, __u32 counter, __u32 self,
						   struct pipe_inode_info *p, __u64 now)
{
	if (!o->tgid || o->tgid == self || o->counter != counter || o->pipe != (__u64)p)
		return 0;
	if (now - o->ts > FIFO_RECENT_NS && !fifo_holds(o))
		return 0;
	return o;
}

/* fifo_note records the current task as the last opener of its side of
 * the FIFO k (file f at fd, opened with access mode acc) and returns the
 * other side's last opener, or 0 (also when the other open has reported
 * the pairing already); *side is that opener's access mode (O_RDONLY for
 * the reader's end). The note is written before the other side is read,
 * with an atomic add between (a full barrier on x86; on arm64 the JIT's
 * atomics order less): of two opens returning together, at least the
 * second sees the first. */
static __always_inline struct fifo_end *fifo_note(struct file_id *k, struct file *f, long fd, __u64 image_ns,
						  __u32 *side)
{
	/* The end the kernel opened (f_mode), not the flags the process
	 * passed: an O_PATH open of a FIFO opens no end and notes nothing. */
	int acc = file_acc(f);
	if (acc < 0)
		return 0;
	struct fifo_ends *v = bpf_map_lookup_elem(&fifo_ends, k);
	if (!v) {
		struct fifo_ends z = {};
		bpf_map_update_elem(&fifo_ends, k, &z, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&fifo_ends, k);
		if (!v)
			return 0;
	}
	struct pipe_inode_info *p = BPF_CORE_READ(f, private_data);
	struct task_struct *t = bpf_get_current_task_btf();
	__u64 now = bpf_ktime_get_boot_ns();
	struct fifo_pair pair = {.f = *k, .rts = now, .wts = now};
	if (acc != 1)
		fifo_set(&v->end[0], t, BPF_CORE_READ(p, r_counter), f, fd, p, now, image_ns);
	if (acc != 0)
		fifo_set(&v->end[1], t, BPF_CORE_READ(p, w_counter), f, fd, p, now, image_ns);
	__sync_fetch_and_add(&v->seq, 1);
	__u32 rc = BPF_CORE_READ(p, r_counter);
	__u32 wc = BPF_CORE_READ(p, w_counter);
	__u32 self = t->tgid;
	struct fifo_end *o = 0;
	*side = 0;
	if (acc != 0)
		o = fifo_other(&v->end[0], rc, self, p, now);
	if (o) {
		pair.rts = o->ts;
	} else if (acc != 1) {
		o = fifo_other(&v->end[1], wc, self, p, now);
		pair.wts = o ? o->ts : 0;
		*side = 1;
	}
	if (!o || !o->image_ns == !image_ns)
		return o; /* none, or both on the same side of the edge: nothing is reported */
	__u8 one = 1;
	if (bpf_map_update_elem(&fifo_pairs, &pair, &one, BPF_NOEXIST))
		return 0; /* the other open reported this pairing */
	return o;
}

/* fifo_ident reads FIFO f's identity and mode. */
static __always_inline void fifo_ident(struct file *f, struct file_id *k, __u16 *imode)
{
	struct inode *ino = BPF_CORE_READ(f, f_inode);
	k->dev = BPF_CORE_READ(ino, i_sb, s_dev);
	k->ino = BPF_CORE_READ(ino, i_ino);
	*imode = BPF_CORE_READ(ino, i_mode);
}

/* report_peer sends EV_PEER for FIFO f (k, imode): h is the tree's
 * opener's header, already filled in the scratch buffer s; peer the
 * outside process (tgid), exe its executable, flags its open flags. */
static __always_inline void report_peer(struct scratch *s, struct file *f, struct file_id *k, __u16 imode, __u32 peer,
					struct file *exe, __u32 flags)
{
	struct ev_peer *e = (void *)s->b;
	e->ino = k->ino;
	e->dev = k->dev;
	e->peer_pid = peer;
	e->flags = flags;
	e->imode = imode;
	e->_pad0 = 0;
	e->_pad1 = 0;
	__u8 wf = 0;
	__u32 n = walk_path(__builtin_preserve_access_index(&f->f_path), s, 0, &wf);
	e->path_len = n;
	__u32 x = 0;
	if (exe)
		x = walk_path(__builtin_preserve_access_index(&exe->f_path), s, n, &wf);
	e->exe_len = x;
	e->h.flags = wf & EVF_TRUNC_PATH;
	submit_sec(s, n + x);
}

/* task_exe returns the executable file of process pid, or 0. The file is
 * not held: a probe read of it after the process exits reads what the
 * memory holds then, at worst a wrong or empty path. */
static __always_inline struct file *task_exe(__u32 pid)
{
	if (!bpf_task_from_pid || !bpf_task_release)
		return 0;
	struct task_struct *p = bpf_task_from_pid(pid);
	if (!p)
		return 0;
	struct file *exe = BPF_CORE_READ(p, mm, exe_file);
	bpf_task_release(p);
	return exe;
}

/* fifo_tracked notes the tree's open of the FIFO at fd; when the other
 * end's last opener is outside the tree, it reports it (EV_PEER). */
static __always_inline void fifo_tracked(struct proc_info *pi, struct task_struct *t, long fd)
{
	struct file *f = fd_file(t, fd);
	if (!f)
		return;
	struct file_id k = {};
	__u16 imode;
	fifo_ident(f, &k, &imode);
	__u32 side;
	struct fifo_end *o = fifo_note(&k, f, fd, pi->image_ns, &side);
	if (!o || o->image_ns)
		return; /* none, or one in the tree */
	__u32 peer = o->tgid;
	struct scratch *s = get_scratch();
	if (!s)
		return;
	fill_header(&((struct ev_peer *)s->b)->h, t, EV_PEER, bpf_ktime_get_boot_ns(), pi->image_ns);
	report_peer(s, f, &k, imode, peer, task_exe(peer), side);
	/* the outside end acts for the tree from now (follow.h): only the
	 * tree's own processes make it followed */
	if (pi->flags & PI_FOLLOWED)
		return;
	struct proc_info *ppi = bpf_map_lookup_elem(&tracked, &peer);
	if (ppi) {
		follow_renew(ppi); /* followed already */
		return;
	}
	if (!bpf_task_from_pid || !bpf_task_release)
		return;
	struct task_struct *p = bpf_task_from_pid(peer);
	if (!p)
		return;
	follow(p, t->tgid, pi->image_ns, CALL_FOLLOW_FIFO, 0);
	bpf_task_release(p);
}

/* tree_open_mark notes the file at fd, which the tree's process just
 * opened, when it is a regular file the kernel opened for writing (its
 * f_mode: the flags asked for may say more than was granted). */
static __always_inline void tree_open_mark(struct task_struct *t, long fd)
{
	/* the file first: most opens read, and need no look-up */
	struct file *f = fd_file(t, fd);
	if (!f || file_acc(f) == O_RDONLY)
		return;
	__u32 tgid = t->tgid;
	struct proc_info *pi = bpf_map_lookup_elem(&tracked, &tgid);
	if (!pi)
		return;
	struct inode *ino = BPF_CORE_READ(f, f_inode);
	if ((BPF_CORE_READ(ino, i_mode) & S_IFMT) != S_IFREG)
		return;
	struct file_id k = {.ino = BPF_CORE_READ(ino, i_ino), .dev = BPF_CORE_READ(ino, i_sb, s_dev)};
	tree_mark(&k, BPF_CORE_READ(ino, i_generation), t->tgid, pi->image_ns);
}

/* fifo_outside notes an open of FIFO f (at fd) by a process outside the
 * tree, or followed (which counts as outside here: the tree's end is still
 * the tree's); if the other end's last opener is in the tree, it reports
 * the pairing for it (EV_PEER) and the opener is followed (or followed for
 * longer). */
static __always_inline void fifo_outside(struct task_struct *t, struct file *f, long fd)
{
	struct file_id k = {};
	__u16 mode;
	fifo_ident(f, &k, &mode);
	__u32 side;
	struct fifo_end *o = fifo_note(&k, f, fd, 0, &side);
	if (!o || !o->image_ns)
		return;
	__u32 tgid = t->tgid;
	struct proc_info *pi = bpf_map_lookup_elem(&tracked, &tgid);
	if (pi)
		follow_renew(pi);
	else
		follow(t, o->tgid, o->image_ns, CALL_FOLLOW_FIFO, 0);
	struct scratch *s = get_scratch();
	if (!s)
		return;
	struct ev_header *h = &((struct ev_peer *)s->b)->h;
	h->kind = EV_PEER;
	h->_pad0 = 0;
	h->pid = o->tgid;
	h->tid = o->tid;
	h->ppid = o->ppid;
	h->ts = bpf_ktime_get_boot_ns();
	h->image_ns = o->image_ns;
	__builtin_memcpy(h->comm, o->comm, 16);
	report_peer(s, f, &k, mode, t->tgid, BPF_CORE_READ(t, mm, exe_file), file_acc(f)); /* the outside end, as the kernel opened it */
}

/* edge_open handles a successful open at sys_exit: by a process of the
 * tree (flags its tracked entry's), a regular file it opened for writing
 * is noted (tree_open_mark); by a process outside the tree (flags
 * PI_OUTSIDE) or followed, it is nothing more than a look at the file's
 * type unless it is a FIFO or, once the tree wrote a file, a regular file
 * (plain loads where bpf_rdonly_cast exists, see fd_file). A regular file
 * the tree wrote makes an outside opener followed (follow.h), and edge_open
 * returns 1: the open is then reported as the tree's are. A FIFO's open is
 * noted, and if the other end's last opener is in the tree, reported for
 * it (EV_PEER) and the opener followed. A global function: the verifier
 * checks it once, apart from sys_exit. */
__noinline int edge_open(long id, long ret, __u32 flags)
{
	if (ret < 0 || (id != NR_openat && id != NR_open && id != NR_openat2 && id != NR_creat))
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	if (!(flags & (PI_OUTSIDE | PI_FOLLOWED))) {
		tree_open_mark(t, ret);
		return 0;
	}
	struct file *f = fd_file(t, ret);
	if (!f)
		return 0;
	__u16 mode = HAVE_TYPED ? TYPED(file, f)->f_inode->i_mode : BPF_CORE_READ(f, f_inode, i_mode);
	if ((mode & S_IFMT) == S_IFREG) {
		if (!(flags & PI_OUTSIDE) || !tree_has_files())
			return 0;
		struct inode *ino = BPF_CORE_READ(f, f_inode);
		__u64 i = BPF_CORE_READ(ino, i_ino);
		struct tree_file *w = tree_writer(BPF_CORE_READ(ino, i_sb, s_dev), i, BPF_CORE_READ(ino, i_generation));
		if (!w)
			return 0;
		return follow(t, w->tgid, w->image_ns, CALL_FOLLOW_FILE, i) != 0;
	}
	if ((mode & S_IFMT) == S_IFIFO)
		fifo_outside(t, f, ret);
	return 0;
}

/* ---- reads of another process's memory ---- */

/* call_key names one kind of call from one process image (its pid and
 * the time of its exec: a pid used again, or the same pid after an exec,
 * is another caller) at one target. */
struct call_key {
	__u64 image_ns;
	__u32 tgid;
	__u32 target;
	__u32 arg;
	__u8 kind;
	__u8 method;
	__u8 ok;
	__u8 _pad;
};

/* calls_seen keeps the calls already reported: a debugger or strace
 * peeks and reads registers at every stop, and one record per caller,
 * target and request (and outcome) says what the rest would. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct call_key);
	__type(value, __u8);
} calls_seen SEC(".maps");

/* report_call_once is report_call for the first such call only. */
static __always_inline int report_call_once(struct proc_info *pi, __u8 kind, __u8 method, __u32 target, __u32 arg,
					    long ret, bool adopt)
{
	struct call_key k = {.image_ns = pi->image_ns, .tgid = bpf_get_current_pid_tgid() >> 32, .target = target,
			     .arg = arg, .kind = kind, .method = method, .ok = ret >= 0};
	__u8 one = 1;
	if (bpf_map_update_elem(&calls_seen, &k, &one, BPF_NOEXIST))
		return 0; /* reported before */
	return report_call(pi, kind, method, target, arg, ret, adopt);
}

/* report_ptrace reports the ptrace requests that write into another
 * process (attach and seize, which let the caller write, and the pokes)
 * as injects, and those that read it as memreads. */
static __always_inline int report_ptrace(struct proc_info *pi, long req, __u32 pid, long ret)
{
	switch (req) {
	case PTRACE_ATTACH:
	case PTRACE_SEIZE:
	case PTRACE_POKETEXT:
	case PTRACE_POKEDATA:
		return report_call(pi, EV_INJECT, CALL_PTRACE, pid, req, ret, ret == 0);
	case PTRACE_POKEUSR:
	case PTRACE_SETREGS:
	case PTRACE_SETFPREGS:
	case PTRACE_SETREGSET:
		return report_call_once(pi, EV_INJECT, CALL_PTRACE, pid, req, ret, ret == 0);
	case PTRACE_PEEKTEXT:
	case PTRACE_PEEKDATA:
	case PTRACE_PEEKUSR:
	case PTRACE_GETREGS:
	case PTRACE_GETFPREGS:
	case PTRACE_GETREGSET:
		return report_call_once(pi, EV_MEMREAD, CALL_PTRACE, pid, req, ret, false);
	}
	return 0;
}

/* ---- Unix datagrams sent to a path ---- */

/* unix_dest is a process image's datagram destination (the image as in
 * call_key): map unix_sent's key. */
struct unix_dest {
	__u64 image_ns;
	__u32 pid;
	__u16 len;
	__u16 _pad;
	__u8 addr[SOCKADDR_MAX];
};

/* unix_sent keeps the destinations each process was reported sending to. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct unix_dest);
	__type(value, __u8);
} unix_sent SEC(".maps");

/* report_unix_send reports the first datagram a process image sent on an
 * unconnected Unix socket to each destination (the sockaddr_un at uaddr,
 * as the process passed it: SF_USER). The receiving socket is not on
 * record: the kernel finds it by the path inside the send and keeps no
 * reference to it on the sender's socket. */
static __always_inline void report_unix_send(struct proc_info *pi, struct sock_view *v, long fd, __u64 uaddr,
					     __u32 alen, long ret)
{
	if (ret < 0 || alen <= 2)
		return;
	struct scratch *s = get_scratch();
	if (!s)
		return;
	/* the key is built in the scratch's span area, beyond the record */
	struct unix_dest *k = (void *)s->span;
	_Static_assert(sizeof(struct unix_dest) <= sizeof(s->span), "unix_dest overflows span");
	__builtin_memset(k, 0, sizeof(*k));
	__u32 n = bounded(alen, SOCKADDR_MAX);
	if (bpf_probe_read_user(k->addr, n & 0x7F, (void *)uaddr))
		return;
	/* A path goes as far as its first NUL (the kernel reads no further):
	 * the bytes after it, and a longer length, name the same socket and
	 * must not make a new key each (a stream of sends, each with new
	 * trailing bytes, would fill the security ring). An abstract name
	 * (a NUL first) is all its bytes. The bytes past n are zero. */
	if (k->addr[2]) {
		/* A copy of the path (in the record's data area, which is
		 * written later), then back up to its NUL: a string copy, not a
		 * loop over the bytes, which would cost the verifier a second
		 * at every load. The kernel takes no address longer than a
		 * sockaddr_un (110 bytes, fewer than SOCKADDR_MAX), so a NUL is
		 * always within the copy. */
		__u8 *tmp = &s->b[OFF(0)];
		__builtin_memcpy(tmp, k->addr, SOCKADDR_MAX);
		__builtin_memset(&k->addr[2], 0, SOCKADDR_MAX - 2);
		long l = bpf_probe_read_kernel_str(&k->addr[2], SOCKADDR_MAX - 2, &tmp[2]);
		if (l > 0)
			n = 2 + l - 1;
	}
	k->image_ns = pi->image_ns;
	k->pid = bpf_get_current_pid_tgid() >> 32;
	k->len = n;
	__u8 one = 1;
	if (bpf_map_update_elem(&unix_sent, k, &one, BPF_NOEXIST))
		return; /* reported before */
	struct ev_sock *e = sock_event(s, pi, bpf_get_current_task_btf(), EV_SEND, ret, fd);
	e->sflags = SF_USER;
	e->proto = v->proto;
	e->sock_type = v->type;
	e->addr_len = n;
	__builtin_memcpy(&s->b[OFF(0)], k->addr, SOCKADDR_MAX);
	submit_sec(s, n);
}

/* ---- messages on Unix sockets ---- */

/* handle_consume_skb follows the process outside the tree that receives
 * a message a process of the tree sent on a Unix socket (stream, datagram
 * or seqpacket; follow.h). A received Unix message is freed by its
 * receiver, in its recv, after the copy and before the call returns, so
 * the receiver is followed before it can act on what it read. The sender
 * is the message's socket buffer's owner (skb->sk), a socket the tree made
 * (map tree_socks), or the process the message names (UNIXCB(skb).pid,
 * set where either side asked for credentials, and for a stream's first
 * messages before the accept). Every other freed socket buffer on the
 * machine pays a look at its socket's family. A followed receiver that
 * the tree reaches again is followed for longer. */
#define PIDTYPE_TGID 1

SEC("tp_btf/consume_skb")
int BPF_PROG(handle_consume_skb, struct sk_buff *skb, void *location)
{
	struct sock *sk = skb->sk;
	if (!sk || BPF_CORE_READ(sk, __sk_common.skc_family) != AF_UNIX)
		return 0;
	__u32 sender = 0;
	__u64 image = 0;
	__u64 k = (__u64)sk;
	struct tree_sock *ts = bpf_map_lookup_elem(&tree_socks, &k);
	bool tree = false;
	if (ts && ts->cookie) {
		/* the socket the tree sent on, by its cookie (made at the send,
		 * tree_sent): a socket freed and made again at the same address
		 * by another process (the slab hands the last freed one out
		 * first) has none, or its own. A load: the helper refuses the
		 * RCU pointer skb->sk is here. */
		tree = ts->cookie == (__u64)sk->__sk_common.skc_cookie.counter;
	} else if (ts) {
		/* the same socket, or, once its file is gone (a message outlives
		 * its sender's socket file: the sender may be gone when it is
		 * read), one the tree sent on just now */
		__u64 ino = sock_ino(sk);
		tree = ts->ino == ino || (!ino && ts->sent_ns && bpf_ktime_get_boot_ns() - ts->sent_ns < SENT_RECENT_NS);
	}
	if (tree) {
		sender = ts->tgid;
		image = ts->image_ns;
	} else {
		struct pid *sp = 0;
		bpf_probe_read_kernel(&sp, sizeof(sp), &skb->cb);
		if (!sp)
			return 0;
		/* The message holds the sender's struct pid, not its number: once
		 * the sender is gone (no thread group on the pid any more) the
		 * number may be another process's (pid_max is 32768 on many
		 * hosts, and a busy one goes round it in a minute): a message whose
		 * sender is gone names nobody. */
		if (!BPF_CORE_READ(sp, tasks[PIDTYPE_TGID].first))
			return 0;
		sender = BPF_CORE_READ(sp, numbers[0].nr);
	}
	struct proc_info *spi = bpf_map_lookup_elem(&tracked, &sender);
	if (spi) {
		if (spi->flags & PI_FOLLOWED)
			return 0;
		if (!image)
			image = spi->image_ns;
	} else if (!image) {
		return 0; /* neither the socket nor the sender is the tree's */
	}
	struct task_struct *t = bpf_get_current_task_btf();
	__u32 tgid = t->tgid;
	if (tgid == sender)
		return 0;
	struct proc_info *pi = bpf_map_lookup_elem(&tracked, &tgid);
	if (pi) {
		follow_renew(pi);
		return 0;
	}
	follow(t, sender, image, CALL_FOLLOW_UNIX, BPF_CORE_READ(sk, sk_type));
	return 0;
}

#endif /* __POLYGRAPH_EDGE_H */
