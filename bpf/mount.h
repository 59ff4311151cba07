/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Mounts: mount(2), umount2 and the new mount API (open_tree, move_mount,
 * fsopen, fsconfig, fsmount), each one EV_MOUNT record on the security
 * ring, with the paths and strings the call named. A mount can show a
 * credential store's files under another path (a bind keeps their
 * identity, an overlay gives them its own device), so what the tree
 * mounted, and from where, is what lets the rules see a later read there
 * as a read of the store. Mounts are rare: a session has a handful, and
 * none of an ordinary tool's.
 *
 * Included from polygraph.bpf.c before the syscall dispatch.
 */
#ifndef __POLYGRAPH_MOUNT_H
#define __POLYGRAPH_MOUNT_H

#define MOUNT_TYPE_MAX 64 /* bytes of a filesystem type or fsconfig key */

/* fsconfig's commands (include/uapi/linux/mount.h) */
#define FSCONFIG_SET_FLAG 0
#define FSCONFIG_SET_STRING 1
#define FSCONFIG_SET_BINARY 2
#define FSCONFIG_SET_PATH 3
#define FSCONFIG_SET_PATH_EMPTY 4
#define FSCONFIG_SET_FD 5

_Static_assert(sizeof(struct ev_mount) <= DATA_OFF, "ev_mount overlaps data");

/* mnt_op is one mount call as sys_exit reports it: p1 resolved against
 * dfd (NO_BASE: not at all) or, with cwd set, always with the cwd walked
 * beside it (the source and string values are resolved against it in
 * user space); p2 against dfd2 (with p2 0 and dfd2 a descriptor, the
 * descriptor's own path); type and data user strings. */
struct mnt_op {
	__u8 op;
	__u8 cwd;
	__u8 _pad[2];
	__s32 dfd;
	__s32 dfd2;
	__s32 fd;
	__u64 flags;
	__u64 p1;
	__u64 p2;
	__u64 type;
	__u64 data;
};

static __always_inline int report_mount(struct proc_info *pi, struct mnt_op *m, long ret)
{
	struct scratch *s = get_scratch();
	if (!s)
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	struct ev_mount *e = (void *)s->b;
	__u8 flags = 0;
	fill_header(&e->h, t, EV_MOUNT, bpf_ktime_get_boot_ns(), pi->image_ns);
	e->result = ret;
	e->flags = m->flags;
	e->fd = m->fd;
	e->op = m->op;
	e->_pad0 = 0;
	e->_pad1 = 0;
	/* path_and_base, but with cwd set the base is walked for an
	 * absolute path too: one copy of the walk for the verifier */
	__u32 n1 = read_ustr(s, 0, (const char *)m->p1, &flags);
	__u32 b1 = 0;
	if (m->cwd || (m->dfd != NO_BASE && (n1 == 0 || s->b[OFF(0)] != '/')))
		b1 = walk_base(t, m->cwd ? AT_FDCWD : m->dfd, s, n1, &flags);
	e->path_len = n1;
	e->base_len = b1;
	__u32 off = n1 + b1;
	e->path2_len = 0;
	e->base2_len = 0;
	if (m->p2 || m->dfd2 != NO_BASE)
		off += path_and_base(t, s, off, m->p2, m->dfd2, &e->path2_len, &e->base2_len, &flags);
	long n = 0;
	if (m->type)
		n = bpf_probe_read_user_str(&s->b[OFF(off)], MOUNT_TYPE_MAX, (const char *)m->type);
	e->type_len = n > 0 ? n : 0;
	off += e->type_len;
	e->data_len = m->data ? read_ustr(s, off, (const char *)m->data, &flags) : 0;
	off += e->data_len;
	e->h.flags = flags | (pi->flags & PI_OUTSIDE ? EVF_OUTSIDE : 0);
	submit_sec(s, off);
	return 0;
}

#endif /* __POLYGRAPH_MOUNT_H */
