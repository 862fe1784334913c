"""A stand-in for IPython.display, for code written for Jupyter (python_ipython.py).

Only when the real IPython cannot be imported: the kernel's finder
(python_notebook_boot.py's NbIPythonFinder) is the last one consulted,
and its loader (python_notebook.py's NbIPythonLoader) runs this text
(IPY_SOURCE, packed) as the module IPython.core.display on the first
import of IPython, IPython.display or IPython.core.display;
IPython.display holds the same names. The loader gives it, before it
runs: _show, the kernel's display (python_notebook_boot.py's display), and
_clear, which forgets the cell's displays so far (nb_clear_output).

Each object has the _repr_*_ methods the kernel's display reads
(nb_rich): HTML shows as HTML, Markdown as Markdown, an Image as a PNG
(or, in a stateless run, a PNG or JPEG file), SVG and JSON as such;
Latex and Javascript as their text. An object's text form is its source
text (an Image's, a short description), which is what a stateless run
prints: a program's reader learns more from it than from IPython's
"<IPython.core.display.HTML object>".

It runs with the user's code, in the kernel's process: a convenience,
never a security boundary. It reads only the files the program names,
with the program's own rights, and fetches no URL (the sandbox has no
network).
"""

__all__ = [
    "display", "clear_output", "update_display", "get_ipython", "DisplayHandle", "DisplayObject",
    "TextDisplayObject", "HTML", "Markdown", "Latex", "SVG", "JSON", "Javascript", "Pretty", "Image",
    "display_html", "display_markdown", "display_latex", "display_svg", "display_json",
    "display_javascript", "display_pretty", "display_png", "display_jpeg",
]


def display(*objs, include=None, exclude=None, metadata=None, transient=None, display_id=None,
            raw=False, clear=False, **kwargs):
    """Show each object as a notebook does (the kernel's display). With
    raw, each object is a MIME bundle ({mime: data}); with clear, the
    cell's displays so far are forgotten first; with display_id, a
    DisplayHandle is returned (its update shows the object again: a
    display is not replaced in place). include, exclude, metadata and
    transient are accepted and ignored."""
    if clear:
        _clear()
    if raw:
        objs = [_Bundle(obj) if isinstance(obj, dict) else obj for obj in objs]
    _show(*objs)
    if display_id is not None:
        return DisplayHandle(None if display_id is True else display_id)
    return None


def update_display(obj, *, display_id=None, **kwargs):
    """Show obj again (a display is not replaced in place)."""
    _show(obj)


def clear_output(wait=False):
    """Forget the displays the running cell has shown so far (IPython's
    clears the cell's output area; the output already printed stays).
    wait is accepted: the next display comes after the clearing anyway."""
    _clear()


def get_ipython():
    """None, as IPython's own answers outside an IPython shell: this is no
    IPython shell, and libraries ask this to decide whether they run in
    one (matplotlib's pyplot, tqdm, pandas)."""
    return None


class DisplayHandle:
    """What display(obj, display_id=...) returns."""

    def __init__(self, display_id=None):
        self.display_id = display_id

    def display(self, obj, **kwargs):
        _show(obj)

    def update(self, obj, **kwargs):
        _show(obj)

    def __repr__(self):
        return "<DisplayHandle display_id=%s>" % self.display_id


class _Bundle:
    """A raw MIME bundle given to display(..., raw=True)."""

    def __init__(self, bundle):
        self.bundle = bundle

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.bundle

    def __repr__(self):
        text = self.bundle.get("text/plain")
        return text if isinstance(text, str) else repr(self.bundle)


def _is_url(text):
    return isinstance(text, str) and text.startswith(("http://", "https://"))


def _is_file(text):
    """Whether text names a file (IPython's DisplayObject reads one when it is given as data)."""
    if not isinstance(text, str) or "\n" in text or "\0" in text or len(text) > 4096:
        return False
    import os.path
    try:
        return os.path.isfile(text)
    except (OSError, ValueError):
        return False


class DisplayObject:
    """An object shown by its data, given as data, read from filename, or
    (for an Image only) shown from url."""

    _read_flags = "r"

    def __init__(self, data=None, url=None, filename=None, metadata=None):
        if data is not None and filename is None and url is None and hasattr(data, "__fspath__"):
            data, filename = None, data
        elif filename is None and url is None and _is_url(data):
            data, url = None, data
        elif filename is None and url is None and _is_file(data):
            data, filename = None, data
        self.data, self.url, self.filename, self.metadata = data, url, filename, metadata
        self.reload()
        self._check_data()

    def reload(self):
        """Read the data from filename, when one was given."""
        if self.filename is not None:
            with open(self.filename, self._read_flags) as f:
                self.data = f.read()
        elif self.url is not None:
            raise ValueError("%s(url=%r): the sandbox has no network, so a URL cannot be fetched; "
                             "give the data or a filename" % (type(self).__name__, self.url))

    def _check_data(self):
        pass


class TextDisplayObject(DisplayObject):
    """A display whose data is text; its text form is that text."""

    def _check_data(self):
        if isinstance(self.data, (bytes, bytearray)):
            self.data = bytes(self.data).decode("utf-8", "replace")
        if self.data is not None and not isinstance(self.data, str):
            raise TypeError("%s expects text as data, got %s" % (type(self).__name__, type(self.data).__name__))

    def __repr__(self):
        return self.data or ""


class HTML(TextDisplayObject):
    """HTML, shown as HTML."""

    def _repr_html_(self):
        return self.data

    def __html__(self):
        return self.data


class Markdown(TextDisplayObject):
    """Markdown, shown as Markdown."""

    def _repr_markdown_(self):
        return self.data


class Latex(TextDisplayObject):
    """LaTeX, shown as its text."""

    def _repr_latex_(self):
        return self.data


class SVG(TextDisplayObject):
    """An SVG image, shown as SVG."""

    def _repr_svg_(self):
        return self.data


class Javascript(TextDisplayObject):
    """JavaScript, shown as its text: nothing runs it."""

    def __init__(self, data=None, url=None, filename=None, lib=None, css=None):
        super().__init__(data=data, url=url, filename=filename)

    def _repr_javascript_(self):
        return self.data


class Pretty(TextDisplayObject):
    """Text, shown as text."""

    def _repr_pretty_(self, pp, cycle):
        return pp.text(self.data)


class JSON(DisplayObject):
    """A JSON document (a dict or a list, or its text), shown as JSON."""

    def __init__(self, data=None, url=None, filename=None, expanded=False, metadata=None, root="root", **kwargs):
        self.expanded, self.root = expanded, root
        super().__init__(data=data, url=url, filename=filename, metadata=metadata)

    def _check_data(self):
        if isinstance(self.data, (bytes, bytearray)):
            self.data = bytes(self.data).decode("utf-8")
        if isinstance(self.data, str):
            import json
            self.data = json.loads(self.data)
        if not isinstance(self.data, (dict, list)):
            raise TypeError("JSON expects a dict or a list as data, got %s" % type(self.data).__name__)

    def _repr_json_(self):
        return self.data

    def __repr__(self):
        return repr(self.data)


_PNG, _JPEG = b"\x89PNG\r\n\x1a\n", b"\xff\xd8"
_FORMATS = {"png": "png", "jpg": "jpeg", "jpeg": "jpeg", "jpe": "jpeg"}


class Image(DisplayObject):
    """A PNG or JPEG image, from its bytes (data), a file (filename, or a
    path as data), or a URL (url, or a URL as data): an image from a URL
    is shown as HTML <img> (embed=True would need the network)."""

    _read_flags = "rb"

    def __init__(self, data=None, url=None, filename=None, format=None, embed=None, width=None, height=None,
                 retina=False, unconfined=False, metadata=None, alt=None):
        if isinstance(data, str) and filename is None and url is None:
            if _is_url(data) or data.startswith("data:"):
                data, url = None, data
            else:
                data, filename = None, data
        if embed is None:
            embed = url is None
        self.embed, self.width, self.height, self.alt = embed, width, height, alt
        self.retina, self.unconfined = retina, unconfined
        self.format = _FORMATS.get((format or "").lower(), format)
        if self.format is None:
            name = str(filename if filename is not None else url or "")
            ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
            self.format = _FORMATS.get(ext)
        if not embed:  # shown from its URL: nothing to read
            self.data, self.url, self.filename, self.metadata = None, url, filename, metadata
            return
        super().__init__(data=data, url=url, filename=filename, metadata=metadata)

    def _check_data(self):
        if isinstance(self.data, bytearray):
            self.data = bytes(self.data)
        if not isinstance(self.data, bytes):
            raise TypeError("Image expects bytes as data (or a filename), got %s" % type(self.data).__name__)
        if self.format is None:
            if self.data.startswith(_PNG):
                self.format = "png"
            elif self.data.startswith(_JPEG):
                self.format = "jpeg"
        if self.format not in ("png", "jpeg"):
            raise ValueError("Image can show PNG or JPEG images, not %r (format= or a file name's extension "
                             "says which; a PNG or JPEG's own bytes say it too)" % self.format)

    def _repr_png_(self):
        return self.data if self.embed and self.format == "png" else None

    def _repr_jpeg_(self):
        return self.data if self.embed and self.format == "jpeg" else None

    def _repr_html_(self):
        if self.embed:
            return None
        import html
        attrs = "".join(' %s="%s"' % (k, html.escape(str(v))) for k, v in
                        (("width", self.width), ("height", self.height), ("alt", self.alt)) if v is not None)
        return '<img src="%s"%s/>' % (html.escape(str(self.url)), attrs)

    def __repr__(self):
        if not self.embed:
            return "<IPython.core.display.Image object: %s>" % self.url
        return "<IPython.core.display.Image object: %s, %d bytes>" % (self.format, len(self.data))


def _display_as(cls, raw_kwargs=None):
    """display_html and its kind: display each object; with raw=True each
    is the data of a cls."""

    def show(*objs, raw=False, metadata=None):
        for obj in objs:
            _show(cls(data=obj, **(raw_kwargs or {})) if raw else obj)
    show.__name__ = show.__qualname__ = "display_" + (raw_kwargs or {}).get("format", cls.__name__.lower())
    show.__doc__ = "Show each object; with raw=True, each is the data of a %s." % cls.__name__
    return show


display_html = _display_as(HTML)
display_markdown = _display_as(Markdown)
display_latex = _display_as(Latex)
display_svg = _display_as(SVG)
display_json = _display_as(JSON)
display_javascript = _display_as(Javascript)
display_pretty = _display_as(Pretty)
display_png = _display_as(Image, {"format": "png"})
display_jpeg = _display_as(Image, {"format": "jpeg"})


def __getattr__(name):
    raise AttributeError("IPython.display has no attribute %r: IPython is not installed in this image, and "
                         "Crucible's stand-in for IPython.display has only %s" % (name, ", ".join(__all__)))
