//go:build unix

package image

import (
	"io/fs"
	"syscall"
)

// fileOwner returns the uid and gid that own the file of info.
func fileOwner(info fs.FileInfo) (uid, gid uint32) {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Uid, st.Gid
	}
	return 0, 0
}
