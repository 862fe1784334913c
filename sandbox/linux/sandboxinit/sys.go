package sandboxinit

import (
	"syscall"
	"unsafe"
)

// This file holds the few system calls the syscall package has no wrapper
// for. The sandbox side uses the standard library alone, so that Go
// initialises it before the many packages the host side links in: a
// sandbox's init then starts milliseconds sooner.

func prctl(option int, arg2 uintptr) error {
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, uintptr(option), arg2, 0, 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// capHeader and capData mirror the kernel's cap_user_header_t and
// cap_user_data_t; version 3 takes two data elements (64 capabilities).
type capHeader struct {
	version uint32
	pid     int32
}

type capData struct {
	effective, permitted, inheritable uint32
}

const linuxCapabilityVersion3 = 0x20080522

// clearInheritableCaps empties the calling thread's inheritable set.
func clearInheritableCaps() error {
	hdr := capHeader{version: linuxCapabilityVersion3}
	var data [2]capData
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return errno
	}
	data[0].inheritable, data[1].inheritable = 0, 0
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return errno
	}
	return nil
}

// ifreqFlags mirrors struct ifreq with the ifr_flags member.
type ifreqFlags struct {
	name  [syscall.IFNAMSIZ]byte
	flags uint16
	_     [22]byte
}

// setInterfaceFlags sets the flags of network interface name.
func setInterfaceFlags(fd int, name string, flags uint16) error {
	var ifr ifreqFlags
	copy(ifr.name[:], name)
	ifr.flags = flags
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return errno
	}
	return nil
}

// rlimitNPROC is RLIMIT_NPROC, which the syscall package does not name:
// 6 on every architecture the sandbox is built for (amd64, arm64).
const rlimitNPROC = 6

// Inode flags (linux/fs.h): FS_IOC_GETFLAGS and FS_IOC_SETFLAGS are
// _IOR/_IOW('f', 1/2, long) on 64-bit machines; the kernel moves an int.
const (
	fsIOCGetFlags = 0x80086601
	fsIOCSetFlags = 0x40086602
	fsImmutableFL = 0x00000010
)

// SetImmutable sets the immutable flag of the file fd is open on: no one,
// root included, may then write, truncate, chmod, chown, rename, link or
// remove it, nor, for a directory, add or remove an entry, until a holder
// of CAP_LINUX_IMMUTABLE clears the flag.
func SetImmutable(fd uintptr) error {
	var flags int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, fsIOCGetFlags, uintptr(unsafe.Pointer(&flags))); errno != 0 {
		return errno
	}
	flags |= fsImmutableFL
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, fsIOCSetFlags, uintptr(unsafe.Pointer(&flags))); errno != 0 {
		return errno
	}
	return nil
}
