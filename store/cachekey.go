package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"sort"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// cacheKeyVersion starts every hashed key; it changes whenever the encoding
// below does, so that old entries can never match new requests.
const cacheKeyVersion = "crucible-cache-key-v2"

// CacheKey returns the hex SHA-256 that identifies what req would compute in
// its image, req.Image of digest imageDigest: two requests with the same
// key run the same program on the same input under the same limits. The
// image's name counts as well as its digest, since an image without one
// (the host's directories) is told from another only by its name.
//
// It hashes, in this order: a version tag, the language, the code, the files
// (sorted by name; each its name, content and executable bit), stdin, the
// image's name and digest, the limits with defaults filled in (so an explicit default
// equals an omitted one), the environment (sorted by name) and the network
// policy ("none", or the allowlist's JSON). Every variable-length field is preceded by
// its length and every list by its count, so no two different requests can
// produce the same byte stream by moving bytes from one field to the next.
func CacheKey(req sandbox.Request, imageDigest string) string {
	h := keyHasher{h: sha256.New()}
	h.str(cacheKeyVersion)
	h.str(string(req.Language))
	h.str(req.Code)

	files := make([]sandbox.File, len(req.Files))
	copy(files, req.Files)
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	h.count(len(files))
	for _, f := range files {
		h.str(f.Name)
		h.bytes(f.Content)
		h.flag(f.Executable)
	}

	h.bytes(req.Stdin)
	h.str(req.Image)
	h.str(imageDigest)
	// JSON covers every field of Limits, including ones added later.
	limits, _ := json.Marshal(req.Limits.WithDefaults()) // a struct of int64s always marshals
	h.bytes(limits)

	names := make([]string, 0, len(req.Env))
	for k := range req.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	h.count(len(names))
	for _, k := range names {
		h.str(k)
		h.str(req.Env[k])
	}

	network := sandbox.NetworkNone
	if !req.Network.IsZero() {
		b, _ := json.Marshal(req.Network) // strings and numbers: it cannot fail
		network = string(b)
	}
	h.str(network)
	return hex.EncodeToString(h.h.Sum(nil))
}

// keyHasher writes length-prefixed fields to a hash.
type keyHasher struct{ h hash.Hash }

func (k keyHasher) count(n int) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n))
	k.h.Write(b[:])
}

func (k keyHasher) bytes(b []byte) {
	k.count(len(b))
	k.h.Write(b)
}

func (k keyHasher) str(s string) { k.bytes([]byte(s)) }

func (k keyHasher) flag(v bool) {
	if v {
		k.h.Write([]byte{1})
	} else {
		k.h.Write([]byte{0})
	}
}
