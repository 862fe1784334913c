package sandboxinit

// sysSeccomp is seccomp(2)'s number on x86-64.
const sysSeccomp = 317
