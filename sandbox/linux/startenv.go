package linux

import "strings"

// A warm interpreter has started, and imported its preload, before its
// request is known: the request's environment is added to os.environ when
// it is taken (kernel/python_kernel.py), which every later getenv, and
// every process the program starts, sees. What was read from the
// environment before then cannot change: the interpreter's own start-up
// variables (the module path, hash seed, encodings, warnings, ...), the
// dynamic loader's, the C library's locale and time zone, and what the
// preloaded libraries read as they are imported (numpy's BLAS threads,
// matplotlib's backend and configuration directory). A request that sets
// any of them is not served warm. PYTHONUNBUFFERED is the exception: the
// kernel rebuilds the standard streams for it when it is taken.

// startupVarPrefixes and startupVars name the variables read before a warm
// interpreter is taken.
var (
	startupVarPrefixes = []string{
		"PYTHON", "LD_", "LC_", "MALLOC_", "OMP_", "OPENBLAS_", "MKL_", "BLIS_", "GOTO", "NUMEXPR_",
		"VECLIB_", "NPY_", "NUMPY_", "MPL", "PANDAS_", "XDG_",
	}
	startupVars = map[string]bool{"LANG": true, "LANGUAGE": true, "TZ": true, "HOME": true, "GLIBC_TUNABLES": true, "TMPDIR": true}
)

// startupEnv reports whether env sets a variable that a warm interpreter
// has read already (see above).
func startupEnv(env map[string]string) bool {
	for k := range env {
		if k == "PYTHONUNBUFFERED" {
			continue
		}
		if startupVars[k] {
			return true
		}
		for _, p := range startupVarPrefixes {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
	}
	return false
}
