"""The notebook habits' part the kernel always has (python_notebook_boot.py).

Compiling the notebook habits (python_notebook.py, NB_SOURCE here) costs
a kernel's start milliseconds that a stateless run rarely needs, and a
cold run pays every millisecond of its kernel's start: the kernel has
only this loader, the display builtin that loads them on first call, and
the savefig hook, which must be in place before the program imports
matplotlib. A session kernel, and a warm interpreter (one that preloads:
a zygote's forks share what it compiled), load them at their start; only
a kernel started for one cold run waits for a first use.
"""


def nb_load():
    """Compile and run python_notebook.py in the kernel's globals, once.
    Its frames are the kernel's file's, left out of the user's tracebacks
    (describe)."""
    if "nb_display" not in globals():
        exec(compile(NB_SOURCE, KERNEL_FILE, "exec"), globals())


def display(*objs):
    """Show each object as a notebook does (python_notebook.py's nb_display)."""
    nb_load()
    return nb_display(*objs)


def nb_run_ended():
    """At a stateless run's end: the figures it left open, as files
    (python_notebook.py's nb_save_open_figures); nothing to do, nor to
    load, unless the program left a figure open."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None and plt.get_fignums():
        nb_load()
        nb_save_open_figures()


def nb_install():
    """Make display a builtin (every kernel mode), have matplotlib's
    savefig mark what it saved (NbSavefigHook), and offer the IPython
    stand-in (NbIPythonFinder), last: after every finder of the image."""
    builtins.display = display
    sys.meta_path.append(NbIPythonFinder())
    module = sys.modules.get("matplotlib.figure")
    if module is not None:
        nb_patch_savefig(module)
    else:
        sys.meta_path.insert(0, NbSavefigHook())


def nb_patch_savefig(module):
    """Make Figure.savefig into the working directory leave the figure not
    stale, as a draw does (its own restoring of the figure's colours after
    the draw marks it stale, unchanged as it is): a figure saved there, and
    unchanged since, comes back as the file it was saved to and is not
    returned again as an open figure (nb_open_figures). A figure saved
    anywhere else (/tmp/chart.png, a buffer) stays open and comes back, as
    Jupyter's inline backend shows every open figure: the file itself never
    would."""
    figure = getattr(module, "Figure", None)
    orig = getattr(figure, "savefig", None)
    if orig is None or getattr(orig, "__crucible__", False):
        return

    def savefig(self, *args, **kwargs):
        result = orig(self, *args, **kwargs)
        target = args[0] if args else kwargs.get("fname")
        # pyplot.savefig draws the figure again after this (draw_idle),
        # which clears stale whatever the target: where it went is kept.
        self.nb_saved_in_work = nb_in_work_dir(target)
        if self.nb_saved_in_work:
            self.stale = False
        return result
    for name in ("__doc__", "__name__", "__qualname__", "__module__"):
        setattr(savefig, name, getattr(orig, name, None))
    savefig.__wrapped__, savefig.__crucible__ = orig, True
    figure.savefig = savefig


def nb_in_work_dir(target):
    """Whether target, savefig's file name, names a file in the working
    directory (a path; a buffer or file object is not one)."""
    try:
        path = os.fspath(target)
    except TypeError:
        return False
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    real = os.path.realpath(path)
    return real.startswith("/work/")


class NbSavefigHook:
    """A meta-path finder that waits for matplotlib.figure to be imported,
    lets the finders after it find the module, patches it once it is
    loaded (nb_patch_savefig), then leaves sys.meta_path. It answers no
    other import (one comparison of the name per import)."""

    def find_spec(self, name, path=None, target=None):
        if name != "matplotlib.figure":
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, hook = spec.loader, self

        class Loader:
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                if hook in sys.meta_path:
                    sys.meta_path.remove(hook)
                try:
                    nb_patch_savefig(module)
                except Exception:
                    pass

            def __getattr__(self, attr):  # get_source, is_package...
                return getattr(loader, attr)
        spec.loader = Loader()
        return spec



# The modules of the IPython stand-in, each with whether it is a package.
NB_IPYTHON = {"IPython": True, "IPython.core": True, "IPython.display": False, "IPython.core.display": False}


class NbIPythonFinder:
    """The last meta-path finder: it finds the IPython stand-in's modules
    (NB_IPYTHON; python_notebook.py's NbIPythonLoader loads them) when no
    finder before it did, that is when the real IPython is not installed.
    Until then it costs a lookup for an import that failed anyway."""

    def find_spec(self, name, path=None, target=None):
        if name not in NB_IPYTHON:
            return None
        nb_load()
        return nb_ipython_spec(name, NB_IPYTHON[name])
