"""Token counting for prompt budgets and manifests, right for English and Chinese.

An estimate, not a tokenizer: a CJK character is about one token, English about four characters per
token (the usual figure for BPE vocabularies on English prose).
"""

from __future__ import annotations

import math
import re

_CJK_RE = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")


def count_tokens(text: str) -> int:
    """An estimate of how many tokens `text` costs a language model."""
    cjk = len(_CJK_RE.findall(text))
    rest = len(text) - cjk
    return cjk + math.ceil(rest / 4)
