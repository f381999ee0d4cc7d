"""The benign-line memory (scan._BENIGN) must never hide a keyword (issue 14 item 6).

A line class is keyed blind to digits, blanks, '#' and non-ASCII, and a class whose
first line held no keyword is skipped in every later text of the process. A later
line of the same class can hold a keyword the first lacked when the keyword itself
has a character the key drops ("out of memory", "omp: error #", "exit code 137") or
when the first line had such a character inside the keyword ("kil led"). Each case
below classifies the look-alike first and the real error second, in one process.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from gcm_checks.classify import scan
from classify_cases import cls  # noqa: E402 - tests/classify_cases.py


@pytest.fixture(autouse=True)
def cold_caches() -> Iterator[None]:
    # Each case starts with an empty memory, so the look-alike is what fills it.
    scan._BENIGN.clear()
    scan._KEYWORD_CLASSES.clear()
    yield
    scan._BENIGN.clear()
    scan._KEYWORD_CLASSES.clear()


BAR = "Epoch 1:  45%|████▌     | 450/1000\n"  # tqdm: makes the text non-ASCII (scan's slow path)

CASES = [
    # (look-alike that holds no keyword, real error of the same line class, category, rule)
    ("spacing", "CUDA outof mem ory. Tried to allocate 20.00 MiB\n", "CUDA out of memory. Tried to allocate 20.00 MiB\n", "gpu_oom", "cuda.oom"),
    ("spacing, non-ASCII text", BAR + "CUDA outof mem ory. Tried to allocate 20.00 MiB\n",
     BAR + "CUDA out of memory. Tried to allocate 20.00 MiB\n", "gpu_oom", "cuda.oom"),
    # Intel OpenMP loaded twice; the look-alike's '#' sits inside "error", so it holds no keyword.
    ("hash", "OMP: Err#or 15: Initializing libiomp5.dylib, but found libomp.dylib already initialized.\n",
     "OMP: Error #15: Initializing libiomp5.dylib, but found libomp.dylib already initialized.\n",
     "import_env", "src.toolchain"),
    ("hash, non-ASCII text", BAR + "OMP: Err#or 15: Initializing libiomp5.dylib, but found libomp.dylib already initialized.\n",
     BAR + "OMP: Error #15: Initializing libiomp5.dylib, but found libomp.dylib already initialized.\n",
     "import_env", "src.toolchain"),
    ("digits and blank", "Worker exit with statuscode 137\n", "Worker exit with status code 137\n", "host_oom", None),
    ("digits and blank, non-ASCII text", BAR + "Worker exit with statuscode 137\n",
     BAR + "Worker exit with status code 137\n", "host_oom", None),
]


@pytest.mark.parametrize("name,lookalike,real,category,rule", CASES, ids=[c[0] for c in CASES])
def test_a_benign_look_alike_does_not_hide_the_real_error(
        name: str, lookalike: str, real: str, category: str, rule: str) -> None:
    cold = cls(real)
    scan._BENIGN.clear()
    scan._KEYWORD_CLASSES.clear()
    first = cls(lookalike)
    assert first.category == "unknown", first  # the look-alike really is benign
    assert scan._compact(lookalike)[2][-2] in scan._BENIGN  # and its class is now remembered
    warm = cls(real)
    assert (warm.category, warm.rule) == (cold.category, cold.rule)
    assert warm.category == category and (rule is None or warm.rule == rule)


def test_zh_cn_killed_alone_on_its_line_is_found_after_look_alikes() -> None:
    # bash in zh_CN prints "已杀死" alone on its line (shell.job_killed wants it so). Its
    # key keeps the whole line: with its non-ASCII bytes dropped it would key like a blank
    # line, which is benign in nearly every text.
    for lookalike in ("\n\n", "已完成\n", " 已杀死 x\n", "已杀死 1\n", "step 1\n已杀 死\n"):
        cls("loss 2.0\n" + lookalike)
    assert cls("loss 2.0\n已杀死\n").category == "host_oom"


def test_a_deletion_inside_a_keyword_does_not_hide_it() -> None:
    # "Killed" has no character the key drops, but a look-alike with a blank inside the
    # word keys like it; the class must not be remembered as holding no keyword.
    cold = cls("./run.sh: line 28:  4242 Killed                  python train.py\n")
    scan._BENIGN.clear()
    scan._KEYWORD_CLASSES.clear()
    assert cls("./run.sh: line 28:  4242 Kil led                  python train.py\n").category == "unknown"
    warm = cls("./run.sh: line 28:  4242 Killed                  python train.py\n")
    assert (warm.category, warm.rule) == (cold.category, cold.rule) == ("host_oom", "shell.sigkill")
