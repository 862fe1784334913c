package image

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// digestProgressEvery is how many entries treeDigest hashes between two
// calls of its progress function.
const digestProgressEvery = 1000

// treeSum is the result of treeDigest.
type treeSum struct {
	digest string
	bytes  int64
	files  int
}

// treeDigest hashes a directory tree: every entry's path, type, mode and
// owner, and a regular file's content or a link's target, in lexical
// order. Two trees with the same digest hold the same files. It calls
// progress with the count of entries hashed every digestProgressEvery
// entries.
func treeDigest(root string, progress func(files int)) (treeSum, error) {
	h := sha256.New()
	var sum treeSum
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		uid, gid := fileOwner(info)
		fmt.Fprintf(h, "%s\x00%v\x00%d\x00%d\x00", rel, info.Mode(), uid, gid)
		sum.files++
		if sum.files%digestProgressEvery == 0 {
			progress(sum.files)
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s\x00", target)
		case info.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			fh := sha256.New()
			n, err := io.Copy(fh, f)
			f.Close()
			if err != nil {
				return err
			}
			sum.bytes += n
			fmt.Fprintf(h, "%x\x00", fh.Sum(nil))
		}
		return nil
	})
	if err != nil {
		return treeSum{}, err
	}
	sum.digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return sum, nil
}
