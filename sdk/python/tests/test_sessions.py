"""A session with files, against the real server."""

from __future__ import annotations

import pytest

import crucible

pytestmark = pytest.mark.server


def test_session_files_and_state(client: crucible.Client) -> None:
    with client.session(image="datascience") as s:
        s.files.write("data/nums.csv", "a,b\n1,2\n3,4\n")
        s.files.write("blob.bin", b"\x00\xff\x10")
        names = {f.name: f for f in s.files.list()}
        assert names["data"].dir and names["data/nums.csv"].size == 12 and names["blob.bin"].size == 3
        assert s.files.read("data/nums.csv") == b"a,b\n1,2\n3,4\n"
        assert s.files.read("blob.bin") == b"\x00\xff\x10"
        r = s.exec("import pandas as pd\ndf = pd.read_csv('data/nums.csv')\ntotal = int(df.values.sum())")
        assert r.ok, r.stderr
        r = s.exec("print(total)\ntotal * 2")
        assert r.stdout == "10\n" and r.value == "20"  # variables persist
        r = s.exec("open('out.txt', 'w').write(str(total))")
        assert s.files.read_text("out.txt") == "10"
        r = s.exec("1/0")
        assert r.status == "error" and r.error and r.error.type == "ZeroDivisionError"
        r = s.exec("import matplotlib.pyplot as plt\nplt.plot([1, 2], [2, 1])\nplt.show()")
        assert len(r.charts) == 1 and r.charts[0].startswith(b"\x89PNG")
        chunks = list(s.exec_stream("for i in range(3): print(i)"))
        assert b"".join(c.data for c in chunks if isinstance(c, crucible.Output)) == b"0\n1\n2\n"
        assert isinstance(chunks[-1], crucible.RunFinished)
        with pytest.raises(crucible.NotFoundError):
            s.files.read("missing.txt")
        sid = s.id
        assert sid in [x.id for x in client.list_sessions()]
    # Closed by the context manager.
    with pytest.raises(crucible.SessionClosedError) as ei:
        client.attach_session(sid).exec("print(1)")
    assert ei.value.status == 410 and ei.value.code == "session_closed"
    s.close()  # closing again is no error
