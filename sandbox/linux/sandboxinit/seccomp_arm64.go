package sandboxinit

// sysSeccomp is seccomp(2)'s number on arm64.
const sysSeccomp = 277
