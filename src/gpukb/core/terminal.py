"""Text from kb/ and rules/ (and from users) made safe to show in a terminal.

A GPU name holding `\\e]0;...\\a` would retitle the terminal, `\\r` overwrite a line, and a
bidirectional override reorder what is shown. The loader refuses such characters in YAML (E014);
the command line also strips them from everything it prints, whatever its origin.
"""

from __future__ import annotations

import re

# C0 and C1 control characters except tab and newline, and the bidirectional embeddings,
# overrides and isolates.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(text: object) -> str:
    """`text` without control characters."""
    return CONTROL.sub("", str(text))
