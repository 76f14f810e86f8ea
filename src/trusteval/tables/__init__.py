"""Tables as records: the Table dataclass and the builders that lay computed metrics out as Tables.

Pure data, below benchmarks (which return their results as Tables); rendering them to the console, Markdown,
CSV and LaTeX is report/tables.py's job.
"""
