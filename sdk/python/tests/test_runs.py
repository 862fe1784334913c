"""Runs against the real server: result, error with hint, artifacts, charts,
metrics, records, listing, images."""

from __future__ import annotations

import uuid

import pytest

import crucible

pytestmark = pytest.mark.server


def test_run_result(client: crucible.Client) -> None:
    res = client.run("import sys\nprint(6 * 7)\nprint('warn', file=sys.stderr)\nsys.exit(3)")
    assert res.status == "error" and res.exit_code == 3
    assert res.stdout == "42\n" and res.stdout_bytes == b"42\n"
    assert res.stderr == "warn\n"
    assert res.id and res.language == "python" and res.image == "host"
    assert res.metrics.wall_ms > 0 and res.metrics.peak_memory_bytes > 0
    rec = client.get_run(res.id)
    assert rec.code.startswith("import sys") and rec.exit_code == 3 and rec.stdout == "42\n"


def test_run_error_hint(client: crucible.Client) -> None:
    res = client.run("import no_such_module_here")
    assert res.status == "error" and not res.ok
    assert res.error is not None and res.error.type == "ModuleNotFoundError"
    assert "no_such_module_here" in res.error.hint, res.error


def test_run_artifact_bytes(client: crucible.Client) -> None:
    blob = bytes(range(256)) * 4
    res = client.run("data = open('in.bin', 'rb').read()\nopen('out.bin', 'wb').write(data[::-1])\n"
                     "open('note.txt', 'w').write(input())",
                     files={"in.bin": blob}, stdin="hello\n")
    assert res.ok, res
    out = res.artifact("out.bin")
    assert out.size == len(blob) and out.read() == blob[::-1]
    assert res.artifact("note.txt").read() == b"hello"
    # The record lists artifacts without content: read() downloads them.
    rec = client.get_run(res.id)
    a = rec.artifact("out.bin")
    assert a._content is None
    assert a.read() == blob[::-1]


def test_run_chart_png(client: crucible.Client) -> None:
    res = client.run("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.savefig('chart.png')",
                     image="datascience", limits=crucible.Limits(wall_time_ms=30000, cpu_time_ms=30000))
    assert res.ok, res.stderr
    assert len(res.charts) == 1 and res.charts[0].startswith(b"\x89PNG\r\n\x1a\n")


def test_list_runs_and_images(client: crucible.Client) -> None:
    marker = uuid.uuid4().hex
    res = client.run(f"print('{marker}')")
    page = client.list_runs(limit=5)
    assert res.id in [r.id for r in page.runs]
    imgs = client.images()
    names = [i.name for i in imgs.images]
    assert "host" in names and "datascience" in names and imgs.default == "host"


def test_async_client(client: crucible.Client) -> None:
    import asyncio

    async def main() -> None:
        async with crucible.AsyncClient() as ac:
            res = await ac.run("print('async')")
            assert res.stdout == "async\n"
            chunks = [e async for e in ac.stream_run("print(1)\nprint(2)")]
            assert b"".join(e.data for e in chunks if isinstance(e, crucible.Output)) == b"1\n2\n"
            async with await ac.session() as s:
                await s.exec("y = 5")
                assert (await s.exec("y * 2")).value == "10"

    asyncio.run(main())
