"""Text that came from data, a model or a server: never trusted.

`redact` (secrets scrubbed from every message that leaves a backend or scorer), `answers` (answers, reasons and
score details made safe to store: valid Unicode, bounded length, no secret) and `safetext` (text made safe to
show on a terminal and in Markdown and LaTeX).
"""
