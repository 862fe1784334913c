package swe

// packOpenFlags are none on Windows, which has neither O_NOFOLLOW nor
// FIFOs: the walk has already left links out (by Lstat), and packFile
// packs only what it opened as a regular file.
const packOpenFlags = 0
