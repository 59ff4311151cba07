/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The kernel keyring: keyctl(2), add_key(2) and request_key(2), reported
 * at sys_exit like the other calls (included by polygraph.bpf.c, after
 * its helpers). A key's payload lives in no file, so a read of one is a
 * secret read the file hooks never see. The records carry which key
 * (serial), what was done to it and the type and description the call
 * named or the kernel described; never the payload.
 */
#ifndef __POLYGRAPH_KEYRING_H
#define __POLYGRAPH_KEYRING_H

/* The keyctl commands reported (include/uapi/linux/keyctl.h); the others
 * (permissions, timeouts, instantiation, the pkey operations) are not. */
#define KEYCTL_JOIN_SESSION_KEYRING 1
#define KEYCTL_UPDATE 2
#define KEYCTL_DESCRIBE 6
#define KEYCTL_LINK 8
#define KEYCTL_SEARCH 10
#define KEYCTL_READ 11
#define KEYCTL_GET_PERSISTENT 22
#define KEYCTL_MOVE 30

/* key_seen_key names one keyring operation of one process image on one
 * key with one outcome (failed, done without the payload, the payload
 * handed over). */
struct key_seen_key {
	__u64 image_ns;
	__u32 tgid;
	__u32 op;
	__s32 serial;
	__u32 outcome;
};

/* key_seen keeps the operations already sent to the security ring: the
 * first of each goes there, its repeats to events with the ordinary
 * records (a loop of reads of one key cannot fill sec_events and push
 * the execs out; what it hides in a storm is a repeat). LRU: a flood of
 * distinct keys evicts the oldest, whose next use counts as a first. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct key_seen_key);
	__type(value, __u8);
} key_seen SEC(".maps");

/* key_str copies the NUL-terminated user string at u into the record at
 * off (at most KEYSTR_MAX bytes), returning its length with the NUL. */
static __always_inline __u32 key_str(struct scratch *s, __u32 off, __u64 u)
{
	if (!u)
		return 0;
	long n = bpf_probe_read_user_str(&s->b[OFF(off)], KEYSTR_MAX, (const void *)u);
	return n > 0 ? n : 0;
}

/* keyctl_op fills v (an op of kind EV_KEY: flags the operation, dfd the
 * key's serial, dfd2 the keyring, mode the payload bytes handed over, p1
 * and p2 the user addresses of the type and description) for a keyctl
 * call with arguments a1..a4 that returned ret. It returns false for a
 * command not reported. */
static __always_inline bool keyctl_op(struct op *v, __u32 cmd, __u64 a1, __u64 a2, __u64 a3, __u64 a4, long ret)
{
	*v = (struct op){.kind = EV_KEY, .flags = cmd};
	switch (cmd) {
	case KEYCTL_READ:
		/* a1 the key, a2 the buffer, a3 its size: a NULL buffer or a
		 * zero size asks the length only */
		v->dfd = a1;
		if (a2 && a3 && ret > 0)
			v->mode = (__u64)ret < a3 ? ret : a3;
		return true;
	case KEYCTL_DESCRIBE:
		/* the kernel copies "type;uid;gid;perm;description" only when
		 * all of it fits */
		v->dfd = a1;
		if (ret > 0 && a3 >= (__u64)ret)
			v->p2 = a2;
		return true;
	case KEYCTL_SEARCH:
		/* a1 the keyring, a2 the type, a3 the description, a4 where to
		 * link what it found; it returns the key's serial */
		v->dfd = ret > 0 ? ret : 0;
		v->dfd2 = a1;
		v->p1 = a2;
		v->p2 = a3;
		return true;
	case KEYCTL_LINK:
	case KEYCTL_UPDATE:
		v->dfd = a1;
		v->dfd2 = cmd == KEYCTL_LINK ? a2 : 0;
		return true;
	case KEYCTL_MOVE:
		v->dfd = a1;
		v->dfd2 = a3;
		return true;
	case KEYCTL_JOIN_SESSION_KEYRING:
		/* a1 the keyring's name (NULL: a new anonymous one) */
		v->dfd = ret > 0 ? ret : 0;
		v->p2 = a1;
		return true;
	case KEYCTL_GET_PERSISTENT:
		v->dfd = ret > 0 ? ret : 0;
		v->dfd2 = a2;
		return true;
	}
	return false;
}

/* report_key sends an EV_KEY (v as keyctl_op or the add_key and
 * request_key cases fill it): to the security ring the first time this
 * image does this to this key with this outcome, else with the ordinary
 * records. */
static __always_inline int report_key(struct proc_info *pi, struct op v, long ret)
{
	struct scratch *s = get_scratch();
	if (!s)
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	_Static_assert(sizeof(struct ev_key) <= DATA_OFF, "ev_key overlaps data");
	struct ev_key *e = (void *)s->b;
	fill_header(&e->h, t, EV_KEY, bpf_ktime_get_boot_ns(), pi->image_ns);
	e->result = ret;
	e->op = v.flags;
	e->serial = v.dfd;
	e->ring = v.dfd2;
	e->bytes = v.mode;
	e->_pad0 = 0;
	__u32 n = key_str(s, 0, v.p1);
	e->type_len = n;
	__u32 m = key_str(s, n, v.p2);
	e->desc_len = m;
	struct key_seen_key k = {.image_ns = pi->image_ns, .tgid = t->tgid, .op = v.flags, .serial = v.dfd,
				 .outcome = ret < 0 ? 0 : v.mode ? 2 : 1};
	__u8 one = 1;
	bool first = !bpf_map_update_elem(&key_seen, &k, &one, BPF_NOEXIST);
	submit_to(s, n + m, first);
	return 0;
}

#endif /* __POLYGRAPH_KEYRING_H */
