/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The object-path cache: an open of a file whose path the sensor walked a
 * moment ago sends the walk's id instead of walking again.
 *
 * Walking an opened file's path from its dentry is most of what an open
 * costs the sensor (~0.55 us of ~1.2 us for the object, bpf_stats-style
 * timing on 6.18, file storm), and a coding agent opens the same files
 * over and over. The path of a file object is a function of kernel
 * objects alone: its dentry, the names and parents of the dentries above
 * it, and the mount it was opened through and the mounts above that. So
 * the cache is keyed by (dentry, mount) pointers, never by the string the
 * process passed, and an entry is used only while
 *  - the dentry still has the same inode, number, name and parent (same
 *    inode pointer and number, same superblock, same d_name hash and
 *    length, same d_parent: a dentry and an inode freed and handed out
 *    again at the same addresses, for another file or another name of
 *    the same one, miss);
 *  - no rename, no directory removal and no mount change happened
 *    anywhere on the machine since the walk (path_gen counts them: every
 *    rename(2) family call and io_uring RENAMEAT that succeeds, by any
 *    process, rmdir and unlinkat(AT_REMOVEDIR) and io_uring UNLINKAT, and
 *    mount, umount2, move_mount and pivot_root; a rename of a directory
 *    above the file, or one removed and its dentry reused for another
 *    under the same name elsewhere, is what would make a cached path
 *    stale);
 *  - it is younger than OBJ_TTL_NS, which bounds what a path change the
 *    syscalls do not show (a rename on an NFS server seen by this
 *    client's revalidation, a sysfs rename) can leave stale.
 * A sensitive file (sec_files) is never cached: its record goes to the
 * security ring with its whole walk every time, so a rename racing an
 * open (the rename's count is taken at its sys_exit, microseconds after
 * the kernel moved the dentry) can misname at most an ordinary file for
 * that window. The identity (dev, ino, nlink, mode) is read fresh on
 * every open; only the walk and the sensitivity test are saved.
 *
 * The record of a walk that filled an entry carries the entry's id
 * (ev_path.obj_id) with its path; a hit carries the id and no path.
 * The entry is made only after that record was committed to the ring, so
 * the reader, which reads the ring in order, always has the path before
 * the first record that names it by id.
 */
#ifndef __POLYGRAPH_OBJCACHE_H
#define __POLYGRAPH_OBJCACHE_H

#define OBJ_TTL_NS 1000000000ULL

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__uint(map_flags, 1U << 1); /* BPF_F_NO_COMMON_LRU: an LRU list per CPU */
	__type(key, struct obj_key);
	__type(value, struct obj_val);
} obj_cache SEC(".maps");

/* obj_state: gen counts path changes. */
struct obj_state {
	__u64 gen;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct obj_state);
} path_gen SEC(".maps");

static __always_inline struct obj_state *obj_state(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&path_gen, &k);
}

/* paths_changed is called where a path of some file may have changed:
 * every cached walk is stale from now on. */
static __always_inline void paths_changed(void)
{
	struct obj_state *st = obj_state();
	if (st)
		__sync_fetch_and_add(&st->gen, 1);
}

/* changes_paths reports whether syscall id, having succeeded, may have
 * changed the path of files other than the ones it names. */
static __always_inline bool changes_paths(long id)
{
	switch (id) {
	case NR_rename: case NR_renameat: case NR_renameat2: case NR_rmdir:
	case NR_mount: case NR_umount2: case NR_move_mount: case NR_pivot_root:
		return true;
	}
	return false;
}

/* obj_cached looks the file (d, vm, with inode ino on superblock sb) up.
 * On a hit it fills e's dev and id and returns true. Otherwise it readies
 * s->ov for obj_remember, with the path generation read now, before the
 * walk, so that a rename during the walk makes the entry stale. */
static __always_inline bool obj_cached(struct scratch *s, struct ev_path *e, struct dentry *d, struct vfsmount *vm,
				       struct inode *ino, struct super_block *sb)
{
	s->obj_pend = 0;
	struct obj_state *st = obj_state();
	if (!st)
		return false;
	__u64 gen = st->gen;
	__u64 parent, name;
	if (HAVE_TYPED) {
		struct dentry *td = TYPED(dentry, d);
		parent = (__u64)td->d_parent;
		name = td->d_name.hash_len;
	} else {
		parent = (__u64)BPF_CORE_READ(d, d_parent);
		name = BPF_CORE_READ(d, d_name.hash_len);
	}
	s->ok.dentry = (__u64)d;
	s->ok.mnt = (__u64)vm;
	struct obj_val *v = bpf_map_lookup_elem(&obj_cache, &s->ok);
	if (v && v->inode == (__u64)ino && v->sb == (__u64)sb && v->ino_nr == e->ino && v->parent == parent &&
	    v->name_hash == name && v->gen == gen && e->h.ts - v->ts < OBJ_TTL_NS) {
		e->dev = v->dev;
		e->obj_id = v->id;
		return true;
	}
	s->ov.inode = (__u64)ino;
	s->ov.sb = (__u64)sb;
	s->ov.ino_nr = e->ino;
	s->ov.parent = parent;
	s->ov.name_hash = name;
	s->ov.gen = gen;
	s->ov.ts = e->h.ts;
	return false;
}

/* obj_offer makes the walk just done (not of a sensitive file, not cut
 * short) an entry to be: it takes an id and puts it on the record. An id
 * is the CPU's own count of offers (24 bits) and the CPU (8 bits): no
 * shared counter, and a CPU cannot make 2^24 walks within OBJ_TTL_NS, so
 * an id is not reused while an entry holding it lives. CPUs from 256 up
 * walk every time. */
static __always_inline void obj_offer(struct scratch *s, struct ev_path *e)
{
	__u32 cpu = bpf_get_smp_processor_id();
	if (cpu >= 256)
		return;
	__u32 seq = (__u32)(++s->objseq) & 0xFFFFFF;
	if (!seq)
		seq = (__u32)(++s->objseq) & 0xFFFFFF;
	__u32 id = seq << 8 | cpu;
	s->ov.dev = e->dev;
	s->ov.id = id;
	e->obj_id = id;
	s->obj_pend = 1;
}

/* obj_remember enters the offered walk, once its record is in the ring. */
static __always_inline void obj_remember(struct scratch *s)
{
	if (s->obj_pend)
		bpf_map_update_elem(&obj_cache, &s->ok, &s->ov, BPF_ANY);
	s->obj_pend = 0;
}

#endif
