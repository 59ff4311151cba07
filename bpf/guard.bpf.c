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

/* The leading fields of include/uapi/linux/bpf.h's __sk_buff. */
struct __sk_buff {
	__u32 len;
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

/*
 * Allowed host names, keyed by the FNV-1a hash of the lowercased name in
 * DNS wire format (length-prefixed labels, without the final zero), with
 * the ports each allows (ports[0] == 0: any port; else up to four, the
 * rest zero).
 */
struct name_val {
	__u16 ports[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct name_val);
} names SEC(".maps");

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

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL
#define MAX_NAME 255
#define MAX_ANSWERS 16
#define MAX_LABELS 8

/* dns_source checks that skb is UDP from port 53 of an allowed resolver
 * and returns the DNS message's offset, or 0. */
static __always_inline __u32 dns_source(struct __sk_buff *skb)
{
	struct allow_key src = {};
	__u8 vb, proto;
	__u32 off;
	if (bpf_skb_load_bytes(skb, 0, &vb, 1))
		return 0;
	if (vb >> 4 == 4) {
		off = (vb & 0xf) * 4;
		if (bpf_skb_load_bytes(skb, 9, &proto, 1) || bpf_skb_load_bytes(skb, 12, &src.addr[12], 4))
			return 0;
		src.addr[10] = 0xff;
		src.addr[11] = 0xff;
	} else if (vb >> 4 == 6) {
		off = 40;
		if (bpf_skb_load_bytes(skb, 6, &proto, 1) || bpf_skb_load_bytes(skb, 8, src.addr, 16))
			return 0;
	} else {
		return 0;
	}
	__be16 sport;
	if (proto != 17 || bpf_skb_load_bytes(skb, off, &sport, 2) || bpf_ntohs(sport) != 53)
		return 0;
	src.port = 53;
	if (!bpf_map_lookup_elem(&allow, &src))
		return 0; /* not from a resolver the session trusts */
	return off + 8;
}

/* allow_answer adds one A or AAAA record's address with the name's ports. */
static __always_inline void allow_answer(struct allow_key *k, struct name_val *nv)
{
	for (int j = 0; j < 4; j++) {
		if (j > 0 && nv->ports[j] == 0)
			break;
		k->port = nv->ports[j];
		__u8 one = 1;
		bpf_map_update_elem(&allow, k, &one, BPF_ANY);
	}
}

/* The state the bpf_loop callbacks below share with guard_dns. bpf_loop
 * has the verifier check a callback once, not every iteration: walking
 * the name and the answers with unrolled loops cost ~90 ms of
 * verification per session. */
struct dns_walk {
	struct __sk_buff *skb;
	struct name_val *nv;
	__u64 hash;
	__u32 off;
	__u32 left; /* answers still to read */
	__u32 name_end; /* question name length including its zero, 0 until found */
	__u32 label_done;
};

/* hash_step folds one byte of the question name into the hash. */
static long hash_step(__u64 i, struct dns_walk *w)
{
	__u8 c;
	if (bpf_skb_load_bytes(w->skb, w->off + (__u32)i, &c, 1))
		return 1;
	if (c == 0) {
		w->name_end = (__u32)i + 1;
		return 1;
	}
	if (c >= 'A' && c <= 'Z')
		c += 'a' - 'A';
	w->hash = (w->hash ^ c) * FNV_PRIME;
	return 0;
}

/* skip_label steps over one label of an answer's owner name. */
static long skip_label(__u64 i, struct dns_walk *w)
{
	__u8 c;
	if (bpf_skb_load_bytes(w->skb, w->off, &c, 1)) {
		w->left = 0;
		return 1;
	}
	if ((c & 0xc0) == 0xc0) {
		w->off += 2;
		w->label_done = 1;
		return 1;
	}
	w->off += c + 1;
	if (c == 0) {
		w->label_done = 1;
		return 1;
	}
	return 0;
}

/* read_answer reads one resource record and allows an A or AAAA one. */
static long read_answer(__u64 i, struct dns_walk *w)
{
	if (w->left == 0)
		return 1;
	w->left--;
	w->label_done = 0;
	bpf_loop(MAX_LABELS, skip_label, w, 0);
	if (!w->label_done)
		return 1;
	__u8 rr[10]; /* type, class, ttl, rdlength */
	if (bpf_skb_load_bytes(w->skb, w->off, rr, 10))
		return 1;
	w->off += 10;
	__u16 type = (__u16)rr[0] << 8 | rr[1];
	__u16 rdlen = (__u16)rr[8] << 8 | rr[9];
	struct allow_key k = {};
	if (type == 1 && rdlen == 4) {
		if (bpf_skb_load_bytes(w->skb, w->off, &k.addr[12], 4))
			return 1;
		k.addr[10] = 0xff;
		k.addr[11] = 0xff;
		allow_answer(&k, w->nv);
	} else if (type == 28 && rdlen == 16) {
		if (bpf_skb_load_bytes(w->skb, w->off, k.addr, 16))
			return 1;
		allow_answer(&k, w->nv);
	}
	w->off += rdlen;
	return 0;
}

/*
 * guard_dns reads the DNS answers the tree receives from an allowed
 * resolver and, for a question naming an allowed host, adds the answer's
 * addresses to the allowlist before the tree can read the reply: the
 * connect that follows a lookup never races a userspace update.
 */
SEC("cgroup_skb/ingress")
int guard_dns(struct __sk_buff *skb)
{
	__u32 off = dns_source(skb);
	if (!off)
		return 1;
	__u8 hdr[12];
	if (bpf_skb_load_bytes(skb, off, hdr, 12))
		return 1;
	/* A response (QR), no error, exactly one question. */
	if (!(hdr[2] & 0x80) || (hdr[3] & 0xf) || hdr[4] || hdr[5] != 1)
		return 1;
	struct dns_walk w = {
		.skb = skb,
		.hash = FNV_OFFSET,
		.off = off + 12,
		.left = (__u32)hdr[6] << 8 | hdr[7],
	};
	bpf_loop(MAX_NAME, hash_step, &w, 0);
	if (!w.name_end)
		return 1;
	w.nv = bpf_map_lookup_elem(&names, &w.hash);
	if (!w.nv)
		return 1;
	w.off += w.name_end + 4; /* qtype, qclass */
	bpf_loop(MAX_ANSWERS, read_answer, &w, 0);
	return 1;
}
