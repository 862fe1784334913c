"""An analysis with a chart, against the real server and its scripted model."""

from __future__ import annotations

import pytest

import crucible

pytestmark = pytest.mark.server

QUESTION = ("Plot y against x and sum y. [[code]]import matplotlib.pyplot as plt\n"
            "plt.plot(df['x'], df['y'])\nplt.title('y by x')\nplt.show()\nprint(df['y'].sum())\ndf"
            "[[/code]] [[answer]]The sum of y is 6.[[/answer]]")


def test_analysis_with_chart(client: crucible.Client, tmp_path) -> None:
    p = tmp_path / "points.csv"
    p.write_text("x,y\n1,2\n2,4\n3,0\n")
    with client.analyze([str(p)]) as a:
        assert a.datasets == ["points.csv"]
        assert "points" in a.profile_text
        ans = a.ask(QUESTION)
        assert ans.status == "answered", ans
        assert ans.text == "The sum of y is 6."
        assert "plt.plot" in ans.code and ans.output.startswith("6")
        assert len(ans.tables) == 1
        t = ans.tables[0]
        assert t.columns[-2:] == ["x", "y"]
        assert [r[-2:] for r in t.rows] == [[1, 2], [2, 4], [3, 0]]
        assert [{k: v for k, v in r.items() if k in ("x", "y")} for r in t.records()][1] == {"x": 2, "y": 4}
        assert len(ans.charts) == 1 and ans.charts[0].title == "y by x"
        png = ans.charts[0].read()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) == ans.charts[0].size
        assert ans.run is not None and ans.run.steps
        # The question's events, streamed.
        kinds = [e.kind for e in a.ask_stream("Again. [[code]]print(df['x'].max())[[/code]] [[answer]]3[[/answer]]")]
        assert kinds[0] == "agent_run" and "code" in kinds and "answer" in kinds and kinds[-1] == "result"
        assert a.question(2).text == "3"


def test_analysis_from_bytes(client: crucible.Client) -> None:
    with client.analyze({"t.csv": b"k,v\na,1\nb,2\n"}) as a:
        assert a.datasets == ["t.csv"]
        aid = a.id
    with pytest.raises(crucible.APIError) as ei:
        client.get_analysis(aid)
    assert ei.value.status in (404, 410)


def test_analysis_question_approved(client: crucible.Client) -> None:
    with client.analyze({"v.csv": "v\n5\n7\n"}) as a:
        q = a.start("Mean of v? [[code]]print(df['v'].mean())[[/code]] [[answer]]6.0[[/answer]]", approve=True)
        approved = []
        for ev in q.events():
            if isinstance(ev, crucible.ApprovalRequested):
                assert ev.code == "print(df['v'].mean())"
                approved.append(q.approve(ev.id))
        assert len(approved) == 1 and approved[0].approved
        ans = q.answer()
        assert ans.n == 1 and ans.text == "6.0" and ans.output == "6.0\n" and ans.run and ans.run.status == "answered"
        assert q.get().status == "answered"
