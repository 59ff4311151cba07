/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Watch mode (polygraph watch, internal/watch): system-wide, the sensor
 * reports every exec, so user space can recognise an agent when it starts
 * and track its tree, and every open of a watched file (an agent's
 * credential or config store, by device and inode) by a process outside
 * any traced tree. Off (watch_mode 0, set at load) the verifier drops all
 * of it: recording a tree costs nothing more.
 *
 * Included once from polygraph.bpf.c, after the helpers it uses.
 */
#ifndef __POLYGRAPH_WATCH_H
#define __POLYGRAPH_WATCH_H

/* EVF_OUTSIDE marks a record of a process outside every traced tree (an
 * exec or a watched open in watch mode); user space forgets its decoder
 * state at once. */
#define EVF_OUTSIDE (1 << 7)

/* PI_OUTSIDE marks the stack proc_info of an untracked process (watch_open). */
#define PI_OUTSIDE (1 << 2)

/* watch_mode is set at load by `polygraph watch`. */
const volatile __u32 watch_mode = 0;

/* watch_key names one watched file or directory: dev in the kernel's
 * encoding (major << 20 | minor), as ev_path carries it. */
struct watch_key {
	__u64 ino;
	__u32 dev;
	__u32 _pad;
};
_Static_assert(sizeof(struct watch_key) == sizeof(struct file_id), "watched is looked up with a struct file_id");

/* watched holds the agents' config and credential files and directories,
 * and the directories holding them; user space fills it at start. Its
 * value says which (WATCH_*): an open is looked up by its file's parent
 * first, so an open in a directory holding nothing watched (nearly every
 * open of the host) costs one lookup; a file directly inside a watched
 * directory matches through its parent. */
#define WATCH_SELF 1  /* the file or directory itself is watched */
#define WATCH_DIR 2   /* a watched directory: a file directly in it matches */
#define WATCH_CHILD 4 /* a directory holding a watched file or directory */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct watch_key);
	__type(value, __u32);
} watched SEC(".maps");

/* watch_exec_all says whether exec may report an untracked process
 * (watch_candidate decides which). */
static __always_inline bool watch_exec_all(void)
{
	return watch_mode != 0;
}

/* ---- agent recognition at exec ----
 *
 * User space knows an agent by its exec (agent.Executable: a profile's
 * program name as the image's name, or an install-path fragment in the
 * image's path or in an absolute argv[1]). Sending every exec of the host
 * to it for that cost each one a full record (two path walks, argv and
 * environment: ~5 µs) and ~35 µs of user space. watch_candidate is the
 * kernel's cheap superset of that test: an exec it passes is reported
 * and judged in user space as before; one it fails cannot be an agent's.
 * watch_filter is off where user space could not express
 * a profile this way: then every exec is reported, as before. */
#define WATCH_NAME_LEN 32
#define WATCH_FRAGS 8
#define WATCH_FRAG_LEN 64
#define WATCH_DEPTH 16
#define WATCH_ARG_MAX 256

/* watch_names holds the names that make an exec a candidate, NUL-padded
 * and cut at WATCH_NAME_LEN - 1 bytes: the profiles' program names (the
 * image's own name) and, of each install-path fragment, its last whole
 * component (a directory the image lies under: a path holding the
 * fragment has it). User space fills it at start. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__uint(key_size, WATCH_NAME_LEN);
	__uint(value_size, 1);
} watch_names SEC(".maps");

/* watch_frags are the install-path fragments, NUL-terminated, matched in
 * an absolute argv[1] as agent.Executable matches them; watch_nfrags says
 * how many. watch_filter turns the test on. All set at load. */
const volatile char watch_frags[WATCH_FRAGS][WATCH_FRAG_LEN] = {};
const volatile __u32 watch_nfrags = 0;
const volatile __u32 watch_filter = 0;

/* watch_cands holds the processes (by tgid) whose exec was reported
 * untracked: a child's exec is reported too, so the children an agent
 * forks before user space has tracked it are brought in at their exec,
 * as when every exec was reported. User space removes a process that is
 * no agent's; the LRU forgets the rest. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} watch_cands SEC(".maps");

/* bpf_strstr (6.17+) finds s2 in s1, both kernel memory. */
extern int bpf_strstr(const char *s1__ign, const char *s2__ign) __ksym __weak;

/* cand_step looks one dentry of the image's path up in watch_names (w.flags
 * set on a hit or an unreadable name), walking to the parent and across
 * mounts as walk_step does. */
static long cand_step(__u64 i, void *ctx)
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
			return 1;
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
	__u64 *k = (__u64 *)&s->b[DATA_OFF];
	k[0] = 0, k[1] = 0, k[2] = 0, k[3] = 0;
	if (bpf_probe_read_kernel_str(k, WATCH_NAME_LEN, name) <= 0 || bpf_map_lookup_elem(&watch_names, k)) {
		w->flags = 1;
		return 1;
	}
	if (d == parent)
		return 1;
	w->d = (__u64)parent;
	return 0;
}

/* watch_candidate reports whether the untracked exec of bprm by p may be
 * an agent's (and then notes p in watch_cands): its parent's exec was
 * reported, a name on its image's path is in watch_names, or its argv[1]
 * is absolute and holds an install fragment. */
static __always_inline bool watch_candidate(struct scratch *s, struct task_struct *p, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;
	__u8 one = 1;
	if (!watch_filter)
		return true;
	__u32 ptgid = p->real_parent->tgid;
	if (bpf_map_lookup_elem(&watch_cands, &ptgid))
		goto yes;
	struct file *f = bprm->file;
	struct walk_state *w = &s->w;
	struct vfsmount *vm = BPF_CORE_READ(f, f_path.mnt);
	w->d = (__u64)BPF_CORE_READ(f, f_path.dentry);
	w->vm = (__u64)vm;
	w->root = (__u64)BPF_CORE_READ(vm, mnt_root);
	w->flags = 0;
	struct scratch *ctx = s;
	bpf_loop(WATCH_DEPTH, cand_step, &ctx, 0);
	if (w->flags)
		goto yes;
	/* argv[1]: found past argv[0]'s NUL */
	unsigned long as = p->mm->arg_start;
	unsigned long ae = p->mm->arg_end;
	char *a = (char *)&s->b[DATA_OFF + 64];
	long n0 = bpf_probe_read_user_str(a, WATCH_ARG_MAX, (void *)as);
	if (n0 <= 0 || as + n0 >= ae)
		return false; /* no argv[1] */
	if (n0 >= WATCH_ARG_MAX)
		goto yes; /* argv[0] longer than read: argv[1] not found */
	long n1 = bpf_probe_read_user_str(a, WATCH_ARG_MAX, (void *)(as + n0));
	if (n1 <= 1 || a[0] != '/')
		return false;
	if (n1 >= WATCH_ARG_MAX || &bpf_strstr == 0)
		goto yes; /* cut, or no way to look in it here */
	for (int i = 0; i < WATCH_FRAGS; i++) {
		if (i >= watch_nfrags)
			break;
		if (bpf_strstr(a, (const char *)watch_frags[i]) >= 0)
			goto yes;
	}
	return false;
yes:
	bpf_map_update_elem(&watch_cands, &tgid, &one, BPF_ANY);
	return true;
}

static __always_inline int report_path(struct proc_info *pi, struct op v, long ret);
static __always_inline void send_exec(struct scratch *s, struct task_struct *p, struct file *f, const char *fname,
				      __u64 ts, __u64 image_ns, __u8 flags);

/* watch_hit reports whether the file fd refers to, or its directory, is
 * watched: one hash lookup (its directory's) unless that directory holds
 * or is a watched entry. */
static __always_inline bool watch_hit(struct task_struct *t, long fd)
{
	struct file *f = fd_file(t, fd);
	if (!f)
		return false;
	struct file_id k = {};
	__u64 ino;
	if (HAVE_TYPED) { /* loads, not probe-read calls */
		struct file *tf = TYPED(file, f);
		struct inode *in = tf->f_inode;
		ino = in->i_ino;
		k.dev = in->i_sb->s_dev;
		k.ino = TYPED(dentry, tf->f_path.dentry)->d_parent->d_inode->i_ino;
	} else {
		ino = BPF_CORE_READ(f, f_inode, i_ino);
		k.dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
		k.ino = BPF_CORE_READ(f, f_path.dentry, d_parent, d_inode, i_ino);
	}
	__u32 *v = bpf_map_lookup_elem(&watched, &k);
	if (!v)
		return false;
	if (k.ino == ino) /* a mount's root is its own parent: v is the file's own */
		return *v & WATCH_SELF;
	if (*v & WATCH_DIR)
		return true;
	if (!(*v & WATCH_CHILD))
		return false;
	k.ino = ino;
	__u32 *self = bpf_map_lookup_elem(&watched, &k);
	return self && (*self & WATCH_SELF);
}

/* watch_open reports, in watch mode, an untracked process's successful
 * open of a watched file as an ordinary open record flagged EVF_OUTSIDE.
 * Its image is named by the process's start time (it has no traced exec). */
static __always_inline int watch_open(long id, struct pt_regs *regs, long ret)
{
	if (!watch_mode || ret < 0)
		return 0;
	__u64 p1, fl, mode;
	__s32 dfd = AT_FDCWD;
	switch (id) {
	case NR_openat:
		dfd = SYSARG0(regs), p1 = SYSARG1(regs), fl = USER_FLAGS(SYSARG2(regs)), mode = SYSARG3(regs);
		break;
	case NR_open:
		p1 = SYSARG0(regs), fl = USER_FLAGS(SYSARG1(regs)), mode = SYSARG2(regs);
		break;
	case NR_openat2: {
		__u64 how[2] = {};
		bpf_probe_read_user(&how, sizeof(how), (void *)SYSARG2(regs));
		dfd = SYSARG0(regs), p1 = SYSARG1(regs), fl = USER_FLAGS(how[0]), mode = how[1];
		break;
	}
	default:
		return 0;
	}
	struct task_struct *t = bpf_get_current_task_btf();
	if (!watch_hit(t, ret))
		return 0;
	struct proc_info pi = {.image_ns = t->group_leader->start_boottime, .flags = PI_OUTSIDE};
	/* The image that opened, as an exec record (its exec was likely not
	 * reported: watch_candidate), so the finding names the reader by
	 * what it runs: dated at the process's start, which names the image
	 * as the open does. User space takes it once per image. */
	struct scratch *s = get_scratch();
	if (s && watch_filter) {
		struct file *exe = t->mm->exe_file;
		if (exe)
			send_exec(s, t, exe, 0, pi.image_ns, pi.image_ns, EVF_OUTSIDE);
	}
	struct op v = {.kind = EV_OPEN, .dfd = dfd, .dfd2 = NO_BASE, .flags = fl, .mode = mode, .p1 = p1};
	return report_path(&pi, v, ret);
}

#endif /* __POLYGRAPH_WATCH_H */
