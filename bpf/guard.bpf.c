// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * polygraph's egress guard: cgroup sock_addr programs attached to one
 * session's cgroup. Every connect() and every unconnected UDP send made by
 * a socket created in the session's cgroup is checked against the allow
 * map; a destination not in it is refused (the syscall fails with EPERM)
 * and counted in the denied map, so the refusal is evidence too.
 *
 * The hooks sit in the socket layer (inet pre_connect, udp_sendmsg), not at
 * the syscall entry, so io_uring's connect and sendmsg go through them as
 * well. ICMP has no port to allow and an unconnected sendto() on a ping
 * socket meets no sendmsg hook, so the tree may not create ICMP or raw
 * IP sockets at all (sock_create). Self-contained on purpose: struct bpf_sock_addr is UAPI (its
 * layout is fixed and the verifier rewrites the accesses), so no CO-RE and
 * no shared header with the sensor's program.
 */
typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

enum {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_LRU_HASH = 9,
};

enum { BPF_ANY = 0, BPF_NOEXIST = 1 };

/* From include/uapi/linux/bpf.h: the fields sock_create reads. */
struct bpf_sock {
	__u32 bound_dev_if;
	__u32 family;
	__u32 type;
	__u32 protocol;
};

/* From include/uapi/linux/bpf.h. */
struct bpf_sock_addr {
	__u32 user_family;
	__u32 user_ip4;
	__u32 user_ip6[4];
	__u32 user_port;
	__u32 family;
	__u32 type;
	__u32 protocol;
	__u32 msg_src_ip4;
	__u32 msg_src_ip6[4];
	union {
		struct bpf_sock *sk;
		__u64 : 64;
	} __attribute__((aligned(8)));
};

/* Which hook refused: the Go side names them. */
enum {
	HOOK_CONNECT4 = 1,
	HOOK_CONNECT6 = 2,
	HOOK_SENDMSG4 = 3,
	HOOK_SENDMSG6 = 4,
	HOOK_SOCK_CREATE = 5,
};

enum {
	SOCK_RAW = 3,
	IPPROTO_ICMP = 1,
	IPPROTO_ICMPV6 = 58,
	AF_INET = 2,
	AF_INET6 = 10,
};

/*
 * An allowed destination. IPv4 addresses are stored IPv4-mapped
 * (::ffff:a.b.c.d) so one entry covers both an AF_INET connect and an
 * AF_INET6 connect to the mapped address. port is in host order; 0 means
 * any port on that address.
 */
struct allow_key {
	__u8 addr[16];
	__u16 port;
	__u16 pad;
};

struct deny_key {
	__u8 addr[16];
	__u16 port;
	__u8 hook;
	__u8 protocol;
};

struct deny_val {
	__u64 count;
	__u64 first_ns;
	__u32 pid; /* the first one refused */
	__u32 uid;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct allow_key);
	__type(value, __u8);
} allow SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct deny_key);
	__type(value, struct deny_val);
} denied SEC(".maps");

static __always_inline void count_denial(struct deny_key *dk)
{
	struct deny_val *v = bpf_map_lookup_elem(&denied, dk);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		return;
	}
	struct deny_val nv = {
		.count = 1,
		.first_ns = bpf_ktime_get_ns(),
		.pid = (__u32)(bpf_get_current_pid_tgid() >> 32),
		.uid = (__u32)bpf_get_current_uid_gid(),
	};
	bpf_map_update_elem(&denied, dk, &nv, BPF_NOEXIST);
}

static __always_inline int verdict(struct bpf_sock_addr *ctx, struct allow_key *k, __u8 hook)
{
	k->port = bpf_ntohs((__u16)ctx->user_port);
	k->pad = 0;
	if (bpf_map_lookup_elem(&allow, k))
		return 1;
	__u16 port = k->port;
	k->port = 0;
	if (bpf_map_lookup_elem(&allow, k))
		return 1;

	struct deny_key dk = {};
	__builtin_memcpy(dk.addr, k->addr, sizeof(dk.addr));
	dk.port = port;
	dk.hook = hook;
	dk.protocol = (__u8)ctx->protocol;
	count_denial(&dk);
	return 0;
}

static __always_inline int check4(struct bpf_sock_addr *ctx, __u8 hook)
{
	struct allow_key k = {};
	__u32 *w = (__u32 *)k.addr;
	w[2] = bpf_htonl(0x0000ffff);
	w[3] = ctx->user_ip4;
	return verdict(ctx, &k, hook);
}

static __always_inline int check6(struct bpf_sock_addr *ctx, __u8 hook)
{
	struct allow_key k = {};
	__u32 *w = (__u32 *)k.addr;
	w[0] = ctx->user_ip6[0];
	w[1] = ctx->user_ip6[1];
	w[2] = ctx->user_ip6[2];
	w[3] = ctx->user_ip6[3];
	return verdict(ctx, &k, hook);
}

SEC("cgroup/connect4")
int guard_connect4(struct bpf_sock_addr *ctx) { return check4(ctx, HOOK_CONNECT4); }

SEC("cgroup/connect6")
int guard_connect6(struct bpf_sock_addr *ctx) { return check6(ctx, HOOK_CONNECT6); }

SEC("cgroup/sendmsg4")
int guard_sendmsg4(struct bpf_sock_addr *ctx) { return check4(ctx, HOOK_SENDMSG4); }

SEC("cgroup/sendmsg6")
int guard_sendmsg6(struct bpf_sock_addr *ctx) { return check6(ctx, HOOK_SENDMSG6); }

SEC("cgroup/sock_create")
int guard_sock_create(struct bpf_sock *sk)
{
	if (sk->family != AF_INET && sk->family != AF_INET6)
		return 1;
	if (sk->type != SOCK_RAW && sk->protocol != IPPROTO_ICMP && sk->protocol != IPPROTO_ICMPV6)
		return 1;
	struct deny_key dk = {};
	dk.hook = HOOK_SOCK_CREATE;
	dk.protocol = (__u8)sk->protocol;
	count_denial(&dk);
	return 0;
}
