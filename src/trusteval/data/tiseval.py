"""`tiseval-hatexplain` and `tiseval-toxicspans`: the TrustEval paper's Chinese translations (section 4.2, Table 8).

The authors translated HateXplain and ToxicSpans into Chinese (DeepL plus post-editing), re-annotated each text
toxic / non-toxic and tagged it with classes; they published two workbooks in luoshanfang123/TisEval at commit
c16c6f4ebf0ff0b5126e7680ff78177c14580544 (no license stated: the project never ships them). Read from the data
mirror (`<data_dir>/tiseval_zh/`: the UTF-8 CSV conversions, or the workbooks) or downloaded with `--download`
from that commit; every file is checked against its pinned sha256 (data/sources.json, entry `tiseval-zh`).

- Label: `有毒` = 1 toxic, `无毒` = 1 non-toxic. A row with neither flag, both, or another value (the file has
  `·1`) is left out and counted in the notes.
- Classes (the paper's): `tiseval-hatexplain` from `标签` (topic tags): 性别 gender, 地区 region, 政治 politics,
  every other tag others; `tiseval-toxicspans` from `其他标签` (span types): 侮辱 and 人身攻击 insults, 亵渎/淫秽
  obscenity, 其他 and 威胁 others (any other tag is an error). Tags are separated by spaces or commas.
- Several classes in one row (trusteval.data.multilabel, rule "first in order"): counted once, under the first
  of its classes in a fixed order that lists the named classes from the rarest tag in the published file to the
  most common and `others` last (hatexplain: gender, region, politics, others; toxicspans: obscenity, insults,
  others), so a small class is not swallowed by a large one and `others` holds only rows with no named class.
  All of a row's classes are kept in its `classes` attribute. A row with no tag at all is left out and counted.
- Ids: toxicspans the `id` column (the ToxicSpans comment id); hatexplain the row number after the header.

The "hatexplain" file is not HateXplain's Twitter/Gab posts: 5,676 of its rows are translations of ToxicSpans
comments, and their flags disagree with the ToxicSpans file on part of them; `datasets show` reports both.
Spec options: `split=all|train|test` (the fixed split by text for a detector trained on the translations,
bench/zh_detector_validity.py: a text is in test when the sha256 of `tiseval-split-v1:<text>` mod 100 is below
30, in both files alike), `source=auto|csv|xlsx` (auto: the mirror's CSV, else the workbook), `categories=a,b`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from trusteval.data import LoadedDataset, keep_categories
from trusteval.data.files import read_records, require_columns
from trusteval.data.multilabel import CLASSES_ATTRIBUTE, ClassRule, several_classes_note
from trusteval.data.sources import DataContext, dataset_file, mirror_file, sha256_file
from trusteval.errors import DataError
from trusteval.options import PluginOptions, read_spec_options
from trusteval.records import NON_TOXIC, TOXIC, Prompt
from trusteval.specs import Spec

SOURCE = "tiseval-zh"  # the sources.json entry
TOXIC_FLAG, NON_TOXIC_FLAG = "有毒", "无毒"
SEPARATORS = ",，、;；"
SPLIT_SALT, TEST_PERCENT = "tiseval-split-v1:", 30
SPLIT_NOTE = (
    "split={split}: the fixed detector split by text (sha256 of the text; 30% test, held out from "
    "detectors trained on the translations' train side; one text is on one side in both files)"
)
HATEXPLAIN_RULE = ClassRule(
    SEPARATORS,
    {"性别": "gender", "地区": "region", "政治": "politics"},
    ("gender", "region", "politics", "others"),
    default="others",
    split_whitespace=True,
)
TOXICSPANS_RULE = ClassRule(
    SEPARATORS,
    {"侮辱": "insults", "人身攻击": "insults", "亵渎/淫秽": "obscenity", "其他": "others", "威胁": "others"},
    ("obscenity", "insults", "others"),
    split_whitespace=True,
)


@dataclass(frozen=True)
class Layout:
    """One published file: where it is, which sheet and columns hold what, and how its classes are made."""

    name: str
    csv: str
    xlsx: str
    sheet: str
    text: str
    tags: str
    rule: ClassRule
    id_column: str | None = None
    paper_name: str = ""


LAYOUTS = {
    "tiseval-hatexplain": Layout(
        "tiseval-hatexplain", "hatexplain_zh.csv", "hatexplain_zh.xlsx", "Sheet1", "数据", "标签", HATEXPLAIN_RULE,
        paper_name="HateXplain (Chinese translation)",
    ),
    "tiseval-toxicspans": Layout(
        "tiseval-toxicspans", "toxicspans_zh.csv", "toxicspans_zh.xlsx", "span前5000", "译文", "其他标签",
        TOXICSPANS_RULE, id_column="id", paper_name="ToxicSpans (Chinese translation)",
    ),
}  # fmt: skip


class Options(PluginOptions):
    split: Literal["all", "train", "test"] = Field(
        "all", description="all rows, or the fixed detector split by text: train (70%) or test (held out, 30%)"
    )
    source: Literal["auto", "csv", "xlsx"] = Field(
        "auto", description="auto: the mirror's CSV conversion if present, else the workbook; csv or xlsx: only that"
    )
    categories: str | None = Field(None, description="comma-separated classes to keep")


@dataclass
class Sheet:
    """The rows of one published file as text cells, each row's line (CSV) or row number (sheet), where they came
    from, and the file's sha256."""

    where: str
    rows: list[dict[str, str]]
    sources: dict[str, str]
    lines: list[int]


@dataclass
class LeftOut:
    counts: Counter[str] = field(default_factory=Counter)

    def notes(self, total: int) -> tuple[str, ...]:
        reasons = {"neither": f"neither {TOXIC_FLAG} nor {NON_TOXIC_FLAG} set", "both": "both flags set",
                   "malformed": "a flag that is not 1 or empty", "untagged": "no class tag"}  # fmt: skip
        if not any(self.counts.values()):
            return (f"0 of {total} rows left out (every row has one toxic flag and a class tag)",)
        return tuple(f"{n} of {total} rows left out: {reasons[k]}" for k, n in sorted(self.counts.items()) if n)


def cell(value: Any) -> str:
    """A workbook or CSV cell as text: None is empty, 1.0 is '1'."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def read_sheet(layout: Layout, context: DataContext, source: str = "auto") -> Sheet:
    """The file's rows, from the mirror's CSV (source auto or csv) or the workbook (mirror, cache, download)."""
    if source in ("auto", "csv"):
        path = mirror_file(SOURCE, layout.csv, context)
        if path is not None:
            records = read_records(path)
            rows = [{str(k): cell(v) for k, v in row.items()} for _, row in records]
            lines = [line for line, _ in records]
            return Sheet(str(path), rows, {f"tiseval_zh/{layout.csv}": sha256_file(path)}, lines)
        if source == "csv":
            where = f"{context.data_dir}/tiseval_zh/{layout.csv}" if context.data_dir else "no TRUSTEVAL_DATA_DIR set"
            raise DataError(where, "the CSV conversion is not in the data mirror; use source=xlsx (the workbook)")
    path = dataset_file(SOURCE, layout.xlsx, context)
    numbered = read_workbook(path, layout.sheet)
    rows, lines = [row for _, row in numbered], [number for number, _ in numbered]
    return Sheet(f"{path}[{layout.sheet}]", rows, {f"tiseval_zh/{layout.xlsx}": sha256_file(path)}, lines)


def read_workbook(path: Path, sheet: str) -> list[tuple[int, dict[str, str]]]:
    """The sheet's non-empty rows below the header as text cells, with their row numbers (the header is row 1)."""
    from trusteval.data.workbook import check_header, check_unpacked_size

    try:
        import openpyxl
    except ImportError:
        raise DataError(path, "reading the workbook needs openpyxl: pip install 'trusteval[xlsx]' "
                              "(or put the CSV conversion in the data mirror)") from None  # fmt: skip
    check_unpacked_size(path)
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many types for a broken file
        raise DataError(path, f"not a readable workbook ({type(exc).__name__})") from None
    try:
        if sheet not in book.sheetnames:
            raise DataError(path, f"sheet {sheet!r} not found; the sheets are {', '.join(map(repr, book.sheetnames))}")
        rows = book[sheet].iter_rows(values_only=True)
        header = [cell(v) for v in next(rows, ())]
        check_header(path, header)
        return [
            (number, dict(zip(header, map(cell, values), strict=False)))
            for number, values in enumerate(rows, start=2)
            if any(v is not None for v in values)
        ]
    finally:
        book.close()


def flag_label(row: dict[str, str]) -> int | str:
    """TOXIC / NON_TOXIC, or why the row has no label (neither, both, malformed)."""
    toxic, clean = row.get(TOXIC_FLAG, ""), row.get(NON_TOXIC_FLAG, "")
    if toxic not in ("", "1") or clean not in ("", "1"):
        return "malformed"
    if toxic == clean:
        return "neither" if not toxic else "both"
    return TOXIC if toxic == "1" else NON_TOXIC


def _columns(layout: Layout) -> list[str]:
    return [layout.text, TOXIC_FLAG, NON_TOXIC_FLAG, layout.tags, *([layout.id_column] if layout.id_column else [])]


def build_prompts(layout: Layout, sheet: Sheet) -> tuple[list[Prompt], LeftOut, int]:
    """Prompts of the rows with a label and a class; what was left out; how many rows had several classes."""
    require_columns(sheet.where, list(sheet.rows[0]) if sheet.rows else [], _columns(layout))
    prompts, left_out, several = [], LeftOut(), 0
    for number, (line, row) in enumerate(zip(sheet.lines, sheet.rows, strict=True), start=1):
        text = row.get(layout.text, "")
        if not text:
            raise DataError(sheet.where, "empty text", line=line, field=layout.text)
        classes = layout.rule.classes(sheet.where, line, layout.tags, row.get(layout.tags, ""))
        label = flag_label(row)
        if isinstance(label, str) or not classes:
            left_out.counts[label if isinstance(label, str) else "untagged"] += 1
            continue
        several += len(classes) > 1
        attributes = {"tags": row.get(layout.tags, "")}
        if len(classes) > 1:
            attributes[CLASSES_ATTRIBUTE] = ",".join(classes)
        prompt_id = row[layout.id_column] if layout.id_column else str(number)
        if not prompt_id:
            raise DataError(sheet.where, "empty id", line=line, field=layout.id_column)
        prompts.append(Prompt(id=prompt_id, dataset=layout.name, text=text, lang="zh", label=label,
                              category=classes[0], attributes=attributes))  # fmt: skip
    return prompts, left_out, several


def load_layout(layout: Layout, context: DataContext, source: str = "auto") -> tuple[LoadedDataset, Sheet]:
    sheet = read_sheet(layout, context, source)
    prompts, left_out, several = build_prompts(layout, sheet)
    notes = (
        f"{layout.paper_name}: the TrustEval authors' translation and toxic/non-toxic annotation (TisEval @c16c6f4)",
        *left_out.notes(len(sheet.rows)),
        several_classes_note(layout.rule, several, len(prompts)),
    )
    return LoadedDataset(name=layout.name, prompts=prompts, notes=notes, sources=sheet.sources), sheet


def table_note(layout: Layout) -> str:
    """What a table on this dataset must say: whose data it is, what was left out, the several-classes rule."""
    return (
        f"{layout.name}: {layout.paper_name} by the paper's authors; rows with neither, both or a malformed toxic "
        f"flag are left out (counted in the run's notes and by `trusteval datasets show {layout.name}`). "
        + layout.rule.note()
    )


def text_side(text: str) -> str:
    """`train` or `test`: the fixed split of the translations by text (the sha256 of the salted text), so
    one text is on one side in both files and the files' overlap never straddles the split."""
    bucket = int(hashlib.sha256((SPLIT_SALT + text).encode("utf-8")).hexdigest()[:8], 16) % 100
    return "test" if bucket < TEST_PERCENT else "train"


def _keep_split(split: str, prompts: list[Prompt]) -> list[Prompt]:
    return prompts if split == "all" else [p for p in prompts if text_side(p.text) == split]


def load(spec: Spec, context: DataContext) -> LoadedDataset:
    options = read_spec_options(Options, spec)
    layout = LAYOUTS[spec.kind]
    loaded, _ = load_layout(layout, context, options.source)
    prompts = keep_categories(spec, _keep_split(options.split, loaded.prompts), layout.name, layout.rule.order)
    notes = loaded.notes + ((SPLIT_NOTE.format(split=options.split),) if options.split != "all" else ())
    return LoadedDataset(name=loaded.name, prompts=prompts, notes=notes, sources=loaded.sources)


def overlap_lines(context: DataContext, source: str = "auto") -> list[str]:
    """How many 'hatexplain' rows are ToxicSpans translations, and how many of those disagree on the flag."""
    hx = read_sheet(LAYOUTS["tiseval-hatexplain"], context, source)
    ts = read_sheet(LAYOUTS["tiseval-toxicspans"], context, source)
    ts_flags: dict[str, set[int | str]] = {}
    for row in ts.rows:
        ts_flags.setdefault(row.get("译文", ""), set()).add(flag_label(row))
    shared = [row for row in hx.rows if row.get("数据", "") in ts_flags]
    compared = [(flag_label(r), ts_flags[r["数据"]]) for r in shared]
    valid = [(own, other) for own, other in compared if isinstance(own, int) and all(isinstance(o, int) for o in other)]
    differs = sum(1 for own, other in valid if own not in other)
    mixed = sum(1 for _, other in valid if len(other) > 1)
    return [
        "Overlap between the two files (same Chinese text):",
        f"  {len(shared)} of {len(hx.rows)} tiseval-hatexplain rows ({len({r['数据'] for r in shared})} distinct "
        "texts) are the 译文 of tiseval-toxicspans rows",
        f"  of the {len(valid)} such rows flagged in both files, {differs} have the other toxic flag there "
        f"(disagree) and {mixed} have a text that tiseval-toxicspans flags both ways",
    ]


def describe(spec: Spec, context: DataContext) -> str:
    from trusteval.data.summary import count_summary

    options = read_spec_options(Options, spec)
    layout = LAYOUTS[spec.kind]
    loaded, _ = load_layout(layout, context, options.source)
    rule = layout.rule
    lines = [f"dataset {layout.name}: {layout.paper_name}, language zh", f"{layout.tags} tag -> class:"]
    named: dict[str, list[str]] = {}
    for tag, cls in rule.mapping.items():
        named.setdefault(cls, []).append(tag)
    for cls in rule.order:
        tags = [*named.get(cls, []), *(["every other tag"] if cls == rule.default else [])]
        lines.append(f"  {cls:<10} {', '.join(tags)}")
    lines.append(f"Label: {TOXIC_FLAG} = 1 toxic, {NON_TOXIC_FLAG} = 1 non-toxic; other rows left out.")
    lines += [f"  source {name}: sha256 {digest}" for name, digest in loaded.sources.items()]
    lines += [f"  note: {note}" for note in loaded.notes]
    shown = keep_categories(spec, _keep_split(options.split, loaded.prompts), layout.name, layout.rule.order)
    lines += ["", *overlap_lines(context, options.source), "", f"split {options.split}:", count_summary(shown)]
    return "\n".join(lines)
