// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * polygraph's kill rules and exec gate for one isolated session. Scope is
 * the session's cgroup v2 (bpf_get_current_cgroup_id against the one id in
 * session_cg), so a process outside the session costs a map lookup and is
 * never touched. Everything hangs off tracepoints: on the machines
 * polygraph runs on, fentry, fmod_ret and LSM programs are refused (a
 * locked-down kernel refuses them all), so nothing here can make a
 * syscall fail; it can only kill the caller once the syscall is done.
 *
 *  - tp_btf/sched_process_exec kills (SIGKILL) a new image whose binary
 *    is in kill_exec, or lies below a directory in it, before it runs one
 *    instruction of user code: the exec itself has happened (the old
 *    image is gone, the new one is mapped), nothing of it runs. With
 *    cfg.gate it stops (SIGSTOP) every other new image the same way and
 *    tells user space through the gate ring buffer, which verifies the
 *    binary and continues or kills it.
 *  - tp_btf/sys_exit kills the caller of an open/openat/openat2/creat
 *    that returned a descriptor open for writing on a file in kill_write
 *    (or below a directory in it). The open has happened: the file is
 *    open and, with O_TRUNC, truncated, and with O_CREAT created; the
 *    process dies on its way back to user space, before it can write.
 *  - tp_btf/sys_exit, with cfg.unix_edge, stops (SIGSTOP) the caller of a
 *    Unix stream or seqpacket connect that reached a listener outside the
 *    session's cgroup, before it can send a byte, and tells user space
 *    through the gate ring buffer (GATE_UNIX, the listener's pid), which
 *    continues it when the policy allows that peer (the system's own
 *    services) and kills it otherwise: a process started before the
 *    session (a terminal multiplexer's server, a helper) acts for no one
 *    inside it. The same program stops the caller of an open that
 *    returned a named FIFO (not a pipe: pipefs), before it can read or
 *    write (GATE_FIFO, the FIFO's identity): user space looks for the
 *    processes holding it, and kills the caller when one outside the
 *    session is not allowed.
 *
 * Files and directories are matched by (device, inode), which user space
 * resolves from the rule's paths at start: a hard link or a symlink to a
 * denied file matches as the file does, and a rule path that does not
 * exist at start matches nothing. A directory matches what lies below
 * it on the same file system, up to 16 levels down.
 */
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "syscalls.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define SIGKILL 9
#define SIGSTOP 19
#define FMODE_READ 0x1
#define FMODE_WRITE 0x2
#define MAX_DEPTH 16

/* f_mode is not in vmlinux_min.h's struct file; read it apart. */
struct file___enf {
	unsigned int f_mode;
} __attribute__((preserve_access_index));

/* A file or directory of a kill rule: its inode and the kernel's
 * encoding of its device (major << 20 | minor). */
struct ino_key {
	__u64 ino;
	__u32 dev;
	__u32 pad;
};

/* What a kill was for (struct kill_rec.what). */
enum { KILL_EXEC = 1, KILL_WRITE = 2, KILL_UNGATED = 3, KILL_SHARED = 4 };

struct cfg {
	__u32 gate;	 /* stop every exec for user space to verify */
	__u32 unix_edge; /* stop a Unix connect to a listener outside the session for user space to judge */
};

struct kill_rec {
	__u32 what;
	__u32 pad;
	__u64 ns;
	struct ino_key file; /* the file that matched */
};

/* What a stopped process waits on user space for (gate_ev.what). */
enum { GATE_EXEC = 0, GATE_UNIX = 1, GATE_FIFO = 2 };

struct gate_ev {
	__u32 pid; /* tgid */
	__u32 tid;
	__u64 ns;
	__u32 what; /* GATE_* */
	__u32 peer; /* GATE_UNIX: the listener's pid (tgid), 0 when it is gone */
	__u64 ino;  /* GATE_FIFO: the FIFO's inode; GATE_UNIX: the listening socket's, 0 unknown */
	__u32 dev;  /* and its device, the kernel's encoding */
	__u16 readers; /* GATE_FIFO: the files open on it to read, and to */
	__u16 writers; /* write, when the open returned (the kernel's counts) */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u64);
	__type(value, __u8);
} session_cg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct ino_key);
	__type(value, __u8);
} kill_exec SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct ino_key);
	__type(value, __u8);
} kill_write SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cfg);
} config SEC(".maps");

/* pid (tgid) -> what killed it; the Go side reads it when the session ends. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct kill_rec);
} kills SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} gate SEC(".maps");

/* Keep the types for bpf2go. */
const struct kill_rec *_unused_kill __attribute__((unused));
const struct gate_ev *_unused_gate __attribute__((unused));
const struct ino_key *_unused_key __attribute__((unused));
const struct cfg *_unused_cfg __attribute__((unused));

static __always_inline int in_session(void)
{
	__u64 id = bpf_get_current_cgroup_id();
	return bpf_map_lookup_elem(&session_cg, &id) != 0;
}

static __always_inline struct cfg *get_cfg(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&config, &zero);
}

/* kill sends SIGKILL to the current process and notes why. */
static __always_inline void kill(__u32 what, struct ino_key *k)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct kill_rec r = {};
	r.what = what;
	r.ns = bpf_ktime_get_boot_ns();
	if (k)
		r.file = *k;
	bpf_map_update_elem(&kills, &tgid, &r, BPF_ANY);
	bpf_send_signal(SIGKILL);
}

/* matches looks f's inode, then each directory above it on its file
 * system, up in m; the key of the first match is left in k. */
static __always_inline int matches(void *m, struct file *f, struct ino_key *k)
{
	struct dentry *d = BPF_CORE_READ(f, f_path.dentry);
	k->dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	k->pad = 0;
	for (int i = 0; i < MAX_DEPTH && d; i++) {
		k->ino = BPF_CORE_READ(d, d_inode, i_ino);
		if (bpf_map_lookup_elem(m, k))
			return 1;
		struct dentry *up = BPF_CORE_READ(d, d_parent);
		if (up == d)
			break;
		d = up;
	}
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(enforce_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	if (!in_session())
		return 0;
	struct ino_key k = {};
	if (matches(&kill_exec, BPF_CORE_READ(bprm, file), &k)) {
		kill(KILL_EXEC, &k);
		return 0;
	}
	struct cfg *c = get_cfg();
	if (!c || !c->gate)
		return 0;
	struct gate_ev *e = bpf_ringbuf_reserve(&gate, sizeof(*e), 0);
	if (!e) {
		/* Nobody can verify it: fail closed. */
		kill(KILL_UNGATED, 0);
		return 0;
	}
	__u64 pt = bpf_get_current_pid_tgid();
	e->pid = pt >> 32;
	e->tid = (__u32)pt;
	e->ns = bpf_ktime_get_boot_ns();
	e->what = GATE_EXEC;
	e->peer = 0;
	e->ino = 0;
	e->dev = 0;
	e->readers = 0;
	e->writers = 0;
	bpf_send_signal(SIGSTOP);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* fd_file returns the current process's file at descriptor fd, or 0. */
static __always_inline struct file *fd_file(struct task_struct *t, long fd)
{
	struct files_struct *files = t->files;
	if (!files || fd < 0)
		return 0;
	struct fdtable *fdt = files->fdt;
	if ((unsigned long)fd >= fdt->max_fds)
		return 0;
	struct file *f = 0;
	struct file **fds = fdt->fd;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(enforce_open, struct pt_regs *regs, long ret)
{
	if (ret < 0)
		return 0;
	long nr = SYSNR(regs);
	if (nr != NR_openat && nr != NR_open && nr != NR_creat && nr != NR_openat2)
		return 0;
	if (!in_session())
		return 0;
	struct file *f = fd_file(bpf_get_current_task_btf(), ret);
	if (!f)
		return 0;
	struct file___enf *fe = (void *)f;
	if (!(BPF_CORE_READ(fe, f_mode) & FMODE_WRITE))
		return 0;
	struct ino_key k = {};
	if (matches(&kill_write, f, &k))
		kill(KILL_WRITE, &k);
	return 0;
}

#define AF_UNIX 1
#define SOCK_STREAM 1
#define SOCK_SEQPACKET 5
#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define S_IFIFO 0010000
#define PIPEFS_MAGIC 0x50495045

/* gate_stop stops the caller and asks user space (the gate ring buffer)
 * about what it reached; with no room to ask, it is killed (fail closed). */
static __always_inline void gate_stop(__u32 what, __u32 peer, __u64 ino, __u32 dev, __u16 readers, __u16 writers)
{
	struct gate_ev *e = bpf_ringbuf_reserve(&gate, sizeof(*e), 0);
	if (!e) {
		kill(KILL_UNGATED, 0);
		return;
	}
	__u64 pt = bpf_get_current_pid_tgid();
	e->pid = pt >> 32;
	e->tid = (__u32)pt;
	e->ns = bpf_ktime_get_boot_ns();
	e->what = what;
	e->peer = peer;
	e->ino = ino;
	e->dev = dev;
	e->readers = readers;
	e->writers = writers;
	if (bpf_send_signal(SIGSTOP)) {
		/* not stopped: nobody would hold it while user space judges */
		bpf_ringbuf_discard(e, 0);
		kill(KILL_UNGATED, 0);
		return;
	}
	bpf_ringbuf_submit(e, 0);
}

/* shared_fds reports whether another process shares the caller's
 * descriptor table (clone with CLONE_FILES but not a thread): a stop would
 * not hold it, and it could use the new descriptor meanwhile. */
static __always_inline bool shared_fds(struct task_struct *t)
{
	return BPF_CORE_READ(t, files, count.counter) > BPF_CORE_READ(t, signal, live.counter);
}

/* edge_stop is the edge gate's verdict on a caller that reached a process
 * outside the session: killed at once when it shares its descriptor table
 * with another process (no stop would hold that one), else stopped for
 * user space (gate_stop). */
static __always_inline void edge_stop(struct task_struct *t, __u32 what, __u32 peer, __u64 ino, __u32 dev, __u16 readers,
				      __u16 writers)
{
	struct cfg *c = get_cfg();
	if (!c || !c->unix_edge)
		return;
	if (shared_fds(t)) {
		kill(KILL_SHARED, 0);
		return;
	}
	gate_stop(what, peer, ino, dev, readers, writers);
}

/* fifo_opened stops the caller of an open that returned a named FIFO. */
static __always_inline int fifo_opened(struct task_struct *t, long fd)
{
	struct file *f = fd_file(t, fd);
	if (!f)
		return 0;
	struct file___enf *fe = (void *)f;
	if (!(BPF_CORE_READ(fe, f_mode) & (FMODE_READ | FMODE_WRITE)))
		return 0; /* O_PATH: no pipe, nothing to read or write through it */
	struct inode *ino = BPF_CORE_READ(f, f_inode);
	if ((BPF_CORE_READ(ino, i_mode) & S_IFMT) != S_IFIFO || BPF_CORE_READ(ino, i_sb, s_magic) == PIPEFS_MAGIC)
		return 0; /* not a FIFO, or an anonymous pipe (/dev/stdout, /dev/fd/63) */
	struct pipe_inode_info *pipe = BPF_CORE_READ(f, private_data); /* a FIFO's open file holds its pipe */
	__u16 r = BPF_CORE_READ(pipe, readers), w = BPF_CORE_READ(pipe, writers);
	edge_stop(t, GATE_FIFO, 0, BPF_CORE_READ(ino, i_ino), BPF_CORE_READ(ino, i_sb, s_dev), r, w);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(enforce_edge, struct pt_regs *regs, long ret)
{
	long nr = SYSNR(regs);
	if (nr == NR_openat || nr == NR_open || nr == NR_openat2 || nr == NR_creat) {
		if (ret < 0 || !in_session())
			return 0;
		return fifo_opened(bpf_get_current_task_btf(), ret);
	}
	if (ret != 0 || nr != NR_connect || !in_session())
		return 0;
	struct task_struct *t = bpf_get_current_task_btf();
	struct file *f = fd_file(t, SYSARG0(regs));
	if (!f || (BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
		return 0;
	struct socket *sock = BPF_CORE_READ(f, private_data);
	struct sock *sk = BPF_CORE_READ(sock, sk);
	if (!sk || BPF_CORE_READ(sk, __sk_common.skc_family) != AF_UNIX)
		return 0;
	__u16 type = BPF_CORE_READ(sk, sk_type);
	if (type != SOCK_STREAM && type != SOCK_SEQPACKET)
		return 0;
	/* The kernel copies the listener's pid (the process that called
	 * listen) into the connecting socket. */
	struct pid *pp = BPF_CORE_READ(sk, sk_peer_pid);
	__u32 peer = 0;
	if (pp) {
		peer = BPF_CORE_READ(pp, numbers[0].nr);
		struct hlist_node *first = BPF_CORE_READ(pp, tasks[0].first);
		if (first) {
			struct task_struct *pt = (void *)first - bpf_core_field_offset(struct task_struct, pid_links);
			__u64 cg = BPF_CORE_READ(pt, cgroups, dfl_cgrp, kn, id);
			if (bpf_map_lookup_elem(&session_cg, &cg))
				return 0; /* the session's own listener */
		} else {
			peer = 0; /* gone: its number may be another's now */
		}
	}
	/* The listening socket's inode (6.10 on: the embryo the listener
	 * will accept knows it), for user space to judge every process that
	 * holds it: with socket activation the one that listened is the
	 * service manager, and the one that serves another. */
	__u64 lino = 0;
	struct unix_sock *u = (void *)sk;
	if (bpf_core_field_exists(u->listener)) {
		struct sock *embryo = BPF_CORE_READ(u, peer);
		struct sock *l = embryo ? BPF_CORE_READ((struct unix_sock *)embryo, listener) : 0;
		if (l)
			lino = BPF_CORE_READ(l, sk_socket, file, f_inode, i_ino);
	}
	edge_stop(t, GATE_UNIX, peer, lino, 0, 0, 0);
	return 0;
}
