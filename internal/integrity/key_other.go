//go:build !linux

package integrity

import "io/fs"

// keyOf has no inode to key on here, so nothing is cached: every lookup
// hashes. Recording only runs on Linux; this keeps analysis building.
func keyOf(fs.FileInfo) (fileKey, bool) { return fileKey{}, false }

// ownerUID is unknown off Linux.
func ownerUID(fs.FileInfo) (uint32, bool) { return 0, false }
