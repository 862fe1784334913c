package docker

// nativeArch is the seccomp architecture of the programs the sandbox runs.
const nativeArch = "SCMP_ARCH_AARCH64"
