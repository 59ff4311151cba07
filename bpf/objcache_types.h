/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The object-path cache's key and value (objcache.h), which the per-CPU
 * scratch holds while an open is reported. */
#ifndef __POLYGRAPH_OBJCACHE_TYPES_H
#define __POLYGRAPH_OBJCACHE_TYPES_H

struct obj_key {
	__u64 dentry;
	__u64 mnt;
};

struct obj_val {
	__u64 inode;
	__u64 sb;
	__u64 ino_nr;    /* the inode's number */
	__u64 parent;    /* the dentry's parent */
	__u64 name_hash; /* the dentry's d_name.hash_len */
	__u64 gen; /* path_gen when the walk began */
	__u64 ts;  /* boot clock of the walk's record */
	__u32 dev;
	__u32 id;
};

#endif
