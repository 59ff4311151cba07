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

/* watched holds the agents' config and credential files and directories;
 * user space fills it at start. A file directly inside a watched
 * directory matches through its parent. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct watch_key);
	__type(value, __u32);
} watched SEC(".maps");

/* watch_exec_all says whether exec reports an untracked process. */
static __always_inline bool watch_exec_all(void)
{
	return watch_mode != 0;
}

static __always_inline int report_path(struct proc_info *pi, struct op v, long ret);

/* watch_hit reports whether the file fd refers to, or its directory, is
 * watched: two hash lookups, all an untracked process's open costs. */
static __always_inline bool watch_hit(struct task_struct *t, long fd)
{
	struct file *f = fd_file(t, fd);
	if (!f)
		return false;
	if (HAVE_TYPED) { /* loads, not nine probe-read calls */
		struct file *tf = TYPED(file, f);
		struct inode *in = tf->f_inode;
		return in_or_under(&watched, in->i_ino, in->i_sb->s_dev, tf->f_path.dentry);
	}
	return in_or_under(&watched, BPF_CORE_READ(f, f_inode, i_ino), BPF_CORE_READ(f, f_inode, i_sb, s_dev),
			   BPF_CORE_READ(f, f_path.dentry));
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
	struct op v = {.kind = EV_OPEN, .dfd = dfd, .dfd2 = NO_BASE, .flags = fl, .mode = mode, .p1 = p1};
	return report_path(&pi, v, ret);
}

#endif /* __POLYGRAPH_WATCH_H */
