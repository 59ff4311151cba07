/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Followed processes: a process outside the tree that the tree reached
 * and that may act for it. It is put in map tracked with PI_FOLLOWED, so
 * its opens, execs, forks, connects and sends are recorded like the
 * tree's, under a new image whose parent is the image of the tree's
 * process that reached it (EV_FOLLOW says which): what it does is the
 * asking call's. It stays followed FOLLOW_NS after the tree last reached
 * it, or until it exits; the children it forks meanwhile are followed
 * with it, until the same time. The tree reaches a process by:
 *  - a message on a Unix socket (stream, datagram, seqpacket) that the
 *    outside process receives: tp_btf/consume_skb, when the receiver
 *    frees the message the tree's process sent (UNIXCB(skb).pid is the
 *    sender), before its recv returns (edge.h);
 *  - the other end of a FIFO the tree's process opened (edge.h, with the
 *    pairing EV_PEER reports);
 *  - a file the tree's process wrote (opened for writing, created or
 *    truncated: map tree_files), which the outside process opens or
 *    executes. A rename keeps the inode, so a file written under one name
 *    and renamed into place is still the tree's.
 * Only the tree's own processes reach: a followed process reaching a
 * further one does not make it followed (a chain of daemons stops at the
 * first).
 *
 * Included from polygraph.bpf.c after the tracked map and the record
 * helpers, before the process-tree programs.
 */
#ifndef __POLYGRAPH_FOLLOW_H
#define __POLYGRAPH_FOLLOW_H

/* FOLLOW_NS: how long a followed process stays traced after the tree last
 * reached it. */
#define FOLLOW_NS (10ULL * 1000 * 1000 * 1000)

/* follow_until is proc_info.until for a process reached at now: boot ns
 * >> 30 (units of about a second, which fit 32 bits). */
static __always_inline __u32 follow_until(__u64 now)
{
	return (now + FOLLOW_NS) >> 30;
}

/* follow_expired reports whether pi is a followed process's entry whose
 * time ran out. */
static __always_inline bool follow_expired(struct proc_info *pi)
{
	return (pi->flags & PI_FOLLOWED) && (bpf_ktime_get_boot_ns() >> 30) > pi->until;
}

/* tree_file is who in the tree last wrote a file: the value of map
 * tree_files. */
struct tree_file {
	__u32 tgid;
	__u32 gen; /* the inode's i_generation: an inode number used again for another file has another */
	__u64 image_ns;
};

/* tree_files holds the regular files the tree's processes opened for
 * writing (or created, or truncated), by identity: an outside process that
 * opens or executes one becomes followed. An LRU map: a tree that writes
 * more files than it holds forgets the least recently written (counted in
 * lost's LOST_TRACK slot only when an insert fails). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct file_id);
	__type(value, struct tree_file);
} tree_files SEC(".maps");

/* tree_wrote's one slot is set once the tree wrote a file: until then an
 * untracked open pays no lookup in tree_files. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tree_wrote SEC(".maps");

/* tree_has_files reports whether the tree wrote any file yet. */
static __always_inline bool tree_has_files(void)
{
	__u32 k = 0;
	__u32 *v = bpf_map_lookup_elem(&tree_wrote, &k);
	return v && *v;
}

/* tree_mark notes that the tree's process (pid, image) wrote file k. */
static __always_inline void tree_mark(struct file_id *k, __u32 gen, __u32 pid, __u64 image_ns)
{
	struct tree_file w = {.tgid = pid, .gen = gen, .image_ns = image_ns};
	if (bpf_map_update_elem(&tree_files, k, &w, BPF_ANY))
		count_lost(LOST_TRACK);
	__u32 z = 0;
	__u32 *v = bpf_map_lookup_elem(&tree_wrote, &z);
	if (v && !*v)
		*v = 1;
}

/* tree_writer returns who in the tree wrote the file with inode ino on
 * device dev, or 0. The inode number and generation must both match: a
 * file the tree wrote and removed leaves its number free for the next
 * file made on the device, anyone's. */
static __always_inline struct tree_file *tree_writer(__u32 dev, __u64 ino, __u32 gen)
{
	if (!tree_has_files())
		return 0;
	struct file_id k = {.ino = ino, .dev = dev};
	struct tree_file *w = bpf_map_lookup_elem(&tree_files, &k);
	return w && w->gen == gen ? w : 0;
}

/* tree_sock names the process of the tree that made or last sent on a Unix
 * socket: the value of map tree_socks. ino is the socket's inode number,
 * which tells the socket from a later one at the same address while it has
 * its file; sent_ns when the tree last sent on it (boot ns), which stands in
 * for the inode once the file is gone (a datagram outlives its sender's
 * socket file). */
struct tree_sock {
	__u64 ino;
	__u64 image_ns;
	__u64 sent_ns;
	__u64 cookie; /* the socket's cookie once the tree sent on it: never another socket's, file or not */
	__u32 tgid;
	__u32 _pad0;
};

/* SENT_RECENT_NS: a message whose socket lost its file counts as the
 * tree's when the tree sent on that socket this recently: a socket freed
 * and made again at the same address by another process, orphaned in its
 * turn, would have to do all that within it. */
#define SENT_RECENT_NS (1000 * 1000 * 1000ULL)

/* tree_socks holds the Unix sockets the tree's processes made, by the
 * struct sock's address: a message's socket buffer is charged to its
 * sender's socket (skb->sk), and the kernel names the sender's process in
 * the message only when one side asked for credentials (SO_PASSCRED), so
 * this is how a receiver outside the tree knows the message is the tree's.
 * A socket the tree inherited or was passed is not here (its messages
 * count when they carry the sender's pid). An LRU map: a socket closed
 * long ago gives way. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct tree_sock);
} tree_socks SEC(".maps");

/* sock_ino returns the inode number of sk's socket file, or 0. */
static __always_inline __u64 sock_ino(struct sock *sk)
{
	struct socket *so = BPF_CORE_READ(sk, sk_socket);
	if (!so)
		return 0;
	return BPF_CORE_READ(so, file, f_inode, i_ino);
}

/* follow makes process t (outside the tree) followed, as reached by the
 * tree's process asker (its image asker_image) through method (CALL_FOLLOW_*,
 * with arg), and sends EV_FOLLOW. It returns t's new entry in tracked, or 0
 * (polygraph itself, a kernel thread, or one tracked already: a process
 * the tree reaches again while followed has its time renewed by the
 * caller, and keeps its image). */
static __always_inline struct proc_info *follow(struct task_struct *t, __u32 asker, __u64 asker_image, __u8 method,
						__u32 arg)
{
	__u32 tgid = t->tgid;
	if (tgid == sensor_pid || tgid == asker || !t->mm)
		return 0;
	__u64 now = bpf_ktime_get_boot_ns();
	struct proc_info ci = {.image_ns = now, .flags = PI_FOLLOWED, .until = follow_until(now)};
	if (bpf_map_update_elem(&tracked, &tgid, &ci, BPF_NOEXIST))
		return 0;
	struct ev_call *e = bpf_ringbuf_reserve(&sec_events, sizeof(*e), 0);
	if (e) {
		fill_header(&e->h, t, EV_FOLLOW, now, now);
		e->result = 0;
		e->target = asker;
		e->arg = arg;
		e->method = method;
		e->adopted = 0;
		e->ns_local = 0;
		e->_pad0 = 0;
		e->exe_len = 0;
		e->target_image_ns = asker_image;
		bpf_ringbuf_submit(e, wakeup_sec());
	} else {
		count_lost(LOST_SEC);
	}
	return bpf_map_lookup_elem(&tracked, &tgid);
}

/* tree_socket notes the Unix socket the tree's process made (the fd
 * socket(2) returned). */
static __always_inline void tree_socket(struct proc_info *pi, long fd)
{
	if (fd < 0 || (pi->flags & (PI_FOLLOWED | PI_OUTSIDE)))
		return;
	struct task_struct *t = bpf_get_current_task_btf();
	struct file *f = fd_file(t, fd);
	if (!f)
		return;
	struct socket *so = BPF_CORE_READ(f, private_data);
	struct sock *sk = BPF_CORE_READ(so, sk);
	if (!sk || BPF_CORE_READ(sk, __sk_common.skc_family) != AF_UNIX)
		return;
	__u64 k = (__u64)sk;
	struct tree_sock v = {.ino = BPF_CORE_READ(f, f_inode, i_ino), .image_ns = pi->image_ns, .tgid = t->tgid};
	bpf_map_update_elem(&tree_socks, &k, &v, BPF_ANY);
}

/* tree_sent notes that the tree's process (pi) sent on Unix socket sk
 * (sock_send_length, after the send): when, and, for a socket the tree did
 * not make (inherited, passed), that it is the tree's from now. */
static __always_inline void tree_sent(struct proc_info *pi, struct sock *sk)
{
	if (pi->flags & (PI_FOLLOWED | PI_OUTSIDE))
		return;
	__u64 k = (__u64)sk;
	__u64 now = bpf_ktime_get_boot_ns();
	__u64 ino = sock_ino(sk);
	struct tree_sock *ts = bpf_map_lookup_elem(&tree_socks, &k);
	if (ts && ts->ino == ino) {
		ts->sent_ns = now;
		if (!ts->cookie)
			ts->cookie = bpf_get_socket_cookie(sk);
		return;
	}
	struct tree_sock v = {.ino = ino, .image_ns = pi->image_ns, .sent_ns = now, .cookie = bpf_get_socket_cookie(sk),
			      .tgid = bpf_get_current_pid_tgid() >> 32};
	bpf_map_update_elem(&tree_socks, &k, &v, BPF_ANY);
}

/* follow_renew keeps a followed process followed for FOLLOW_NS more. */
static __always_inline void follow_renew(struct proc_info *pi)
{
	if (pi->flags & PI_FOLLOWED)
		pi->until = follow_until(bpf_ktime_get_boot_ns());
}

/* exec_follow follows the current process when the file it executes is
 * one the tree wrote (f, bprm->file: for a script, the interpreter, so a
 * script the tree wrote and an outside process runs directly is not seen
 * here; one run as an interpreter's argument is, at the interpreter's
 * open). */
static __always_inline struct proc_info *exec_follow(struct task_struct *t, struct file *f)
{
	if (!tree_has_files())
		return 0;
	struct inode *ino = BPF_CORE_READ(f, f_inode);
	__u64 i = BPF_CORE_READ(ino, i_ino);
	struct tree_file *w = tree_writer(BPF_CORE_READ(ino, i_sb, s_dev), i, BPF_CORE_READ(ino, i_generation));
	if (!w)
		return 0;
	return follow(t, w->tgid, w->image_ns, CALL_FOLLOW_EXEC, i);
}

#endif /* __POLYGRAPH_FOLLOW_H */
