/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Repeated read-only opens, counted instead of recorded.
 *
 * A process that opens the same file again and again (git status, grep -r,
 * a compiler's include files, a test runner's fixtures) made most of the
 * records an open costs: the user's path copied, the header, the object,
 * the ring's reserve and commit, and the reader's decoding and storing.
 * Here the first two read-only opens of a file by a process image are
 * recorded in full (the first noted in reopen_seen, the second with
 * EVF_COUNTED on it); the image's later opens of the same file (same
 * identity, same kind of open) add one to the count in map reopen and are
 * not recorded. Only a file opened again gets an entry user space drains. User space drains an image's counts when
 * its exec or exit record arrives, and at the end, into one open event per
 * file carrying the count and the time of the last one
 * (internal/sensor/reopen_linux.go): a session still says which files
 * each process read, how many times, when first and when last.
 *
 * What is never counted, and always recorded:
 *  - an open for writing, creating or truncating, an open of anything but
 *    a regular file or a directory, anything on /proc, a file handed over
 *    (pidfd_getfd, SCM_RIGHTS) or opened by handle;
 *  - a guarded file (sec_files: its first open goes to the security ring,
 *    open_object), which never gets an entry;
 *  - the opens of a process image that connected a socket (PI_NET): an
 *    agent's own process talks to its model, and its reads are matched to
 *    its in-process tool calls by time (internal/correlate);
 *  - a followed, adopted or outside process's (edge.h, watch.h);
 *  - an open after the file changed: its change time (ctime, which every
 *    write, truncation, chmod and link change sets) differs from the one
 *    the last recorded open saw, or any process of the tree opened a
 *    regular file for writing since (reopen_gen: a change within the
 *    clock's tick, which ctime may not show, is still seen when the tree
 *    made it). That open is recorded in full, and counting resumes.
 *
 * The map is a plain hash, never LRU: an entry is removed by user space
 * alone, after it read the count, so no count is lost to eviction. When it
 * is full, opens are recorded as before.
 */
#ifndef __POLYGRAPH_REOPEN_H
#define __POLYGRAPH_REOPEN_H

#define REOPEN_MAX 32768
#define O_PATH 010000000
#define O_TMPFILE_ 020000000 /* __O_TMPFILE */
#define REOPEN_ACC_PATH 1

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, REOPEN_MAX);
	__type(key, struct sec_open_key);
	__type(value, struct reopen_val);
} reopen SEC(".maps");

/* reopen_seen holds the first opens (struct sec_open_key), so that the
 * second makes the entry in reopen: an entry is drained by user space
 * with a system call, and most files a process opens it opens once. An
 * LRU map: a first open forgotten makes a later open a first again,
 * recorded in full; no count lives here. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, 1U << 1); /* BPF_F_NO_COMMON_LRU: an LRU list per CPU */
	__type(key, struct sec_open_key);
	__type(value, __u8);
} reopen_seen SEC(".maps");

/* reopen_gen counts the tree's opens of regular files for writing. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} reopen_gen SEC(".maps");

static __always_inline __u64 *reopen_wgen(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&reopen_gen, &k);
}

/* reopen_written notes that the tree opened a regular file for writing. */
static __always_inline void reopen_written(void)
{
	__u64 *g = reopen_wgen();
	if (g)
		__sync_fetch_and_add(g, 1);
}

/* inode_ctime is ino's change time (seconds << 30 | nanoseconds), 0
 * where the kernel keeps it in no way known here. */
static __always_inline __u64 inode_ctime(struct inode *ino)
{
	if (bpf_core_field_exists(ino->i_ctime_sec)) {
		if (HAVE_TYPED) {
			struct inode *ti = TYPED(inode, ino);
			return (__u64)ti->i_ctime_sec << 30 | ti->i_ctime_nsec;
		}
		return (__u64)BPF_CORE_READ(ino, i_ctime_sec) << 30 | BPF_CORE_READ(ino, i_ctime_nsec);
	}
	struct inode___v66 *i66 = (void *)ino;
	if (bpf_core_field_exists(i66->__i_ctime))
		return (__u64)BPF_CORE_READ(i66, __i_ctime.tv_sec) << 30 | BPF_CORE_READ(i66, __i_ctime.tv_nsec);
	struct inode___v5 *i5 = (void *)ino;
	if (bpf_core_field_exists(i5->i_ctime))
		return (__u64)BPF_CORE_READ(i5, i_ctime.tv_sec) << 30 | BPF_CORE_READ(i5, i_ctime.tv_nsec);
	return 0;
}

/* reopen_counts reports whether a process with flags pi_flags could have
 * an open with the flags the call passed counted. */
static __always_inline bool reopen_counts(__u32 pi_flags, __u32 flags)
{
	return !(pi_flags & (PI_NET | PI_FOLLOWED | PI_ADOPTED | PI_OUTSIDE)) && (flags & 3) == O_RDONLY &&
	       !(flags & (O_CREAT | O_TRUNC | O_TMPFILE_ | BY_HANDLE | FD_TAKEN | FD_RECEIVED));
}

/* reopen_open handles a successful open (fd, with the flags the call
 * passed) by a process whose entry in tracked has pi_flags and image_ns,
 * before anything of its record is built. It returns 1 when the open is a
 * repeat, now counted: nothing is to be recorded. Otherwise it returns 0,
 * and the scratch's rk has a tgid when the file may be counted from now
 * on (a regular file or a directory, not on /proc, opened before by the
 * image, no entry yet), with rk and rv readied for reopen_note. A global function: the verifier
 * checks it once, apart from sys_exit (inlined, its branches had
 * sys_exit's states grow by a third). */
__noinline int reopen_open(long fd, __u32 flags, __u32 pi_flags, __u64 image_ns)
{
	struct scratch *s = get_scratch();
	if (!s)
		return 0;
	s->rk.tgid = 0;
	if (!reopen_counts(pi_flags, flags))
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	struct file *f = fd_file(t, fd);
	if (!f)
		return 0;
	struct inode *ino = HAVE_TYPED ? TYPED(file, f)->f_inode : BPF_CORE_READ(f, f_inode);
	if (!ino)
		return 0;
	__u16 mode;
	__u64 nr;
	struct super_block *sb;
	if (HAVE_TYPED) {
		struct inode *ti = TYPED(inode, ino);
		mode = ti->i_mode;
		nr = ti->i_ino;
		sb = ti->i_sb;
	} else {
		mode = BPF_CORE_READ(ino, i_mode);
		nr = BPF_CORE_READ(ino, i_ino);
		sb = BPF_CORE_READ(ino, i_sb);
	}
	if ((mode & S_IFMT) != S_IFREG && (mode & S_IFMT) != S_IFDIR)
		return 0;
	if (on_procfs(sb))
		return 0;
	struct sec_open_key k = {
		.ino = nr,
		.image_ns = image_ns,
		.dev = HAVE_TYPED ? TYPED(super_block, sb)->s_dev : BPF_CORE_READ(sb, s_dev),
		.tgid = t->tgid,
		.acc = flags & O_PATH ? REOPEN_ACC_PATH : 0,
		._pad = 0,
	};
	__u64 ct = inode_ctime(ino);
	__u64 *g = reopen_wgen();
	__u64 wg = g ? *g : 0;
	struct reopen_val *v = bpf_map_lookup_elem(&reopen, &k);
	if (v) {
		if (v->ctime == ct && v->wgen == wg) {
			__sync_fetch_and_add(&v->count, 1);
			v->last_ns = bpf_ktime_get_boot_ns();
			return 1;
		}
		/* changed: this open is recorded, and counting goes on from it */
		v->ctime = ct;
		v->wgen = wg;
		return 0;
	}
	/* the first open is only noted; the second makes the entry */
	__u8 one = 1;
	if (!bpf_map_lookup_elem(&reopen_seen, &k)) {
		bpf_map_update_elem(&reopen_seen, &k, &one, BPF_ANY);
		return 0;
	}
	s->rk = k;
	s->rv.count = 0;
	s->rv.last_ns = 0;
	s->rv.ctime = ct;
	s->rv.wgen = wg;
	return 0;
}

/* reopen_mark is what an open's record says of counting, once the
 * open's file type (imode) and sensitivity (sec) are known: EVF_COUNTED
 * where reopen_open readied an entry for a file that is not guarded. An
 * open of a regular file for writing (oflags as the call passed them)
 * moves reopen_gen. A global function, as reopen_open. */
__noinline __u8 reopen_mark(__u16 imode, __u32 oflags, int sec)
{
	if ((imode & S_IFMT) == S_IFREG && ((oflags & 3) != O_RDONLY || (oflags & (O_TRUNC | O_CREAT))))
		reopen_written();
	struct scratch *s = get_scratch();
	if (!s || !s->rk.tgid || sec)
		return 0;
	return EVF_COUNTED;
}

/* reopen_note makes the entry reopen_open readied, once the open's record
 * (h_flags its header's flags: EVF_COUNTED says so) is in the ring. */
__noinline int reopen_note(__u8 h_flags)
{
	struct scratch *s = get_scratch();
	if (s && (h_flags & EVF_COUNTED) && s->rk.tgid)
		bpf_map_update_elem(&reopen, &s->rk, &s->rv, BPF_NOEXIST);
	return 0;
}

#endif
