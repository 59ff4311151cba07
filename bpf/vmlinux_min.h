/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The kernel types polygraph's programs read, declared with only the fields
 * they touch. preserve_access_index makes every field access a CO-RE
 * relocation, so libbpf/cilium-ebpf fix the offsets against the running
 * kernel's BTF at load time: the layout here never has to match any one
 * kernel, and the header is the same on every architecture. This replaces a
 * multi-megabyte generated vmlinux.h (see README, "BPF headers").
 */
#ifndef __POLYGRAPH_VMLINUX_MIN_H
#define __POLYGRAPH_VMLINUX_MIN_H

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u8 u8;
typedef __s16 s16;
typedef __u16 u16;
typedef __s32 s32;
typedef __u32 u32;
typedef __s64 s64;
typedef __u64 u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
typedef long long loff_t;
typedef unsigned short umode_t; /* as the kernel has it: typed loads must match its size */
typedef unsigned long size_t;
typedef int pid_t;
enum { false = 0, true = 1 };

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
	BPF_RB_NO_WAKEUP = 1,
	BPF_RB_FORCE_WAKEUP = 2,
};

enum {
	BPF_RB_AVAIL_DATA = 0,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

typedef struct { int counter; } atomic_t;
typedef struct { __u32 val; } kuid_t;

struct qstr {
	union {
		struct {
			u32 hash;
			u32 len;
		};
		u64 hash_len;
	};
	const unsigned char *name;
};

struct super_block {
	__u32 s_dev; /* dev_t, the kernel's encoding (major << 20 | minor) */
	unsigned long s_magic;
};

struct inode {
	umode_t i_mode;
	struct super_block *i_sb;
	unsigned long i_ino;
	/* in an anonymous union with __i_nlink; CO-RE finds it there */
	unsigned int i_nlink;
	void *i_private;
	u32 i_generation;
	/* the change time, 6.11 on (reopen.h; inode___v66 and inode___v5 before) */
	s64 i_ctime_sec;
	u32 i_ctime_nsec;
};

struct timespec64 {
	s64 tv_sec;
	long tv_nsec;
};

/* struct inode's change time as 6.6 to 6.10 and as kernels before 6.6 keep it */
struct inode___v66 {
	struct timespec64 __i_ctime;
};

struct inode___v5 {
	struct timespec64 i_ctime;
};

struct dentry {
	struct dentry *d_parent;
	struct qstr d_name;
	struct inode *d_inode;
};

struct vfsmount {
	struct dentry *mnt_root;
};

struct mount {
	struct mount *mnt_parent;
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
};

struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
};

struct file {
	struct path f_path;
	struct inode *f_inode;
	unsigned int f_mode; /* fmode_t */
	unsigned int f_flags;
	void *private_data;
};

/* Only for its first member, a struct file *: bpf_rdonly_cast types an
 * fd table slot as one (see fd_file in polygraph.bpf.c). */
struct kiocb {
	struct file *ki_filp;
};

/* A FIFO's open file holds its pipe in private_data: the counts of open
 * ends, and the counters each open of a side bumps. */
struct pipe_inode_info {
	unsigned int readers;
	unsigned int writers;
	unsigned int r_counter;
	unsigned int w_counter;
};

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
};

struct files_struct {
	atomic_t count; /* the tasks sharing the table: a process's threads, and any CLONE_FILES sibling */
	struct fdtable *fdt;
};

struct fs_struct {
	struct path root;
	struct path pwd;
};

struct in6_addr {
	union {
		__u8 u6_addr8[16];
		__be32 u6_addr32[4];
	} in6_u;
};

struct sock_common {
	union {
		struct {
			__be32 skc_daddr;
			__be32 skc_rcv_saddr;
		};
	};
	union {
		struct {
			__be16 skc_dport;
			__u16 skc_num;
		};
	};
	unsigned short skc_family;
	struct in6_addr skc_v6_daddr;
	struct { s64 counter; } skc_cookie; /* atomic64_t: 0 until a cookie was asked for */
};

struct hlist_node {
	struct hlist_node *next;
	struct hlist_node **pprev;
};

struct hlist_head {
	struct hlist_node *first;
};

struct upid {
	int nr;
};

struct pid {
	unsigned int level;         /* of the namespace it was made in: 0 is the initial one */
	struct hlist_head tasks[4]; /* by enum pid_type: PIDTYPE_PID first */
	struct upid numbers[1];     /* numbers[0]: the initial namespace's */
};

/* /proc's inode: the pid its files describe. */
struct proc_inode {
	struct pid *pid;
	struct inode vfs_inode;
};

struct sock {
	struct sock_common __sk_common;
	u16 sk_protocol;
	u16 sk_type;
	struct pid *sk_peer_pid;
	struct socket *sk_socket;
};

/* A Unix socket (its struct sock first): peer the other end (a stream
 * connect's: the embryo the listener will accept); listener, 6.10 on, an
 * embryo's listening socket. */
struct unix_sock {
	struct sock *peer;
	struct sock *listener;
};

/* A socket buffer: cb is the protocol's control block (for AF_UNIX,
 * struct unix_skb_parms, whose first member is the sender's struct pid *),
 * sk the socket that owns it (a Unix message's: the sender's). */
struct sk_buff {
	char cb[48];
	struct sock *sk;
};

struct socket {
	short type;
	struct file *file;
	struct sock *sk;
};

struct mm_struct {
	unsigned long arg_start;
	unsigned long arg_end;
	unsigned long env_start;
	unsigned long env_end;
	struct file *exe_file;
};

struct cred {
	kuid_t uid;
};

struct task_io_accounting {
	u64 rchar;
	u64 wchar;
};

struct sched_entity {
	u64 sum_exec_runtime;
};

struct signal_struct {
	struct pid *pids[4]; /* by enum pid_type: PIDTYPE_PGID is 2 */
	atomic_t live;
	unsigned int flags;
	int group_exit_code;
	unsigned long maxrss;
	unsigned long long sum_sched_runtime;
	struct task_io_accounting ioac;
};

/* A process's cgroup v2 (the default hierarchy's): its kernfs node's id
 * is the cgroup's id, bpf_get_current_cgroup_id's. */
struct kernfs_node {
	u64 id;
};

struct cgroup {
	struct kernfs_node *kn;
};

struct css_set {
	struct cgroup *dfl_cgrp;
};

struct task_struct {
	unsigned int flags;
	struct sched_entity se;
	struct mm_struct *mm;
	int exit_code;
	pid_t pid;
	pid_t tgid;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	u64 start_boottime;
	const struct cred *cred;
	char comm[16];
	struct fs_struct *fs;
	struct files_struct *files;
	struct signal_struct *signal;
	struct task_io_accounting ioac;
	struct hlist_node pid_links[4];
	struct pid *thread_pid;
	struct css_set *cgroups;
};

struct linux_binprm {
	struct file *file;
	const char *filename;
	const char *interp;
};

/* The registers a syscall's arguments arrive in (see syscalls.h). */
#if defined(__TARGET_ARCH_x86)
struct pt_regs {
	unsigned long r10;
	unsigned long r9;
	unsigned long r8;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
	unsigned long orig_ax;
};
#elif defined(__TARGET_ARCH_arm64)
struct pt_regs {
	__u64 regs[31];
	__u64 orig_x0;
	__s32 syscallno;
};
#endif

#pragma clang attribute pop

#endif
