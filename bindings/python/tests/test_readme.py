"""Every ```python block of the README runs as written (```py blocks need a live page server
and are illustrations only)."""

import re

from conftest import REPO


def test_readme_python_blocks_run():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "the README shows Python"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
