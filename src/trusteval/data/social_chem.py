"""SOCIAL-CHEM-101 (Forbes et al., EMNLP 2020): social norms as TrustGPT's prompts.

The norm put in every TrustGPT template is the `action` column; its class (good / bad / okay) comes from the
free-text `rot-judgment`, mapped by the phrase lists below (SPEC.md, our choice: the paper's list is lost).
Without a `rot-judgment` column (the offline 500-row subset) the class is the sign of `action-moral-judgment`
(negative bad, zero okay, positive good), and the dataset's notes say so.

One Prompt per distinct action (its text is the action; `category` and `attributes["judgment"]` hold the
class). Rows are left out only for a reason that is counted and reported: an empty action, a judgment text
no phrase matches, an empty moral judgment, or an action already kept (the first row's class wins).

Spec options: `source` = auto (full TSV when present, else the subset) | full | subset; `path` = a TSV in the
SOCIAL-CHEM-101 schema; `sha256` (+ `url`) = the expected checksum of the official zip, needed to download it,
because no checksum is pinned in this release (see docs/trustgpt.md).
"""

from __future__ import annotations

import re
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field

from trusteval.data import LoadedDataset
from trusteval.data.files import read_records, require_columns
from trusteval.data.sources import DataContext, download_verified, mirror_file, sha256_file
from trusteval.errors import DataError, UsageError
from trusteval.options import PluginOptions, read_spec_options
from trusteval.records import Prompt
from trusteval.specs import Spec
from trusteval.util.atomic import write_atomic

NAME = "social-chem-101"
FOLDER = "social_chem_101"
FULL_TSV = "social-chem-101.v1.0.tsv"
SUBSET_TSV = "social-chem-101.subset.tsv"
OFFICIAL_ZIP_URL = "https://storage.googleapis.com/ai2-mosaic-public/projects/social-chemistry/data/social-chem-101.zip"


class Options(PluginOptions):
    source: Literal["auto", "full", "subset"] = Field(
        "auto", description="full: the v1.0 TSV (mirror, cache or download); subset: the pinned subset; auto: either"
    )
    path: str | None = Field(None, description="read this TSV instead")
    sha256: str | None = Field(None, description="the expected SHA-256 of the downloaded zip")
    url: str | None = Field(None, description="where to download the full zip from (default: the official URL)")


CLASSES = ("good", "bad", "okay")

# SPEC.md, TrustGPT data: matched after lowercasing, folding the curly apostrophe and stripping trailing
# punctuation, against the whole text or its leading phrase (the longest phrase wins).
JUDGMENT_PHRASES: dict[str, tuple[str, ...]] = {
    "good": (
        "it's good", "it's nice", "it's kind", "it's great", "it's right", "it's admirable", "it's polite",
        "it's helpful", "it's important", "it's responsible", "you should",
    ),
    "bad": (
        "it's wrong", "it's bad", "it's rude", "it's not okay", "it's not ok", "it's mean", "it's unacceptable",
        "it's hurtful", "it's inappropriate", "you shouldn't", "you should not",
    ),
    "okay": (
        "it's okay", "it's ok", "it's fine", "it's normal", "it's expected", "it's understandable",
        "it's acceptable", "it's reasonable", "it's allowed",
    ),
}  # fmt: skip
PHRASE_CLASS = {phrase: cls for cls, phrases in JUDGMENT_PHRASES.items() for phrase in phrases}
# Longest phrase first: regex alternation takes the first alternative that matches, so the longest one wins.
# A phrase must end the text or be followed by something other than a letter, digit or apostrophe.
_PHRASE = re.compile(
    "(" + "|".join(re.escape(p) for p in sorted(PHRASE_CLASS, key=len, reverse=True)) + r")(?![^\W_]|')"
)
_TRAILING_PUNCTUATION = ".,;:!?\"')]… \t"


def normalize_judgment(text: str) -> str:
    """Lowercase, fold curly apostrophes to ', trim spaces and trailing punctuation."""
    folded = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    return folded.strip().rstrip(_TRAILING_PUNCTUATION).strip()


@lru_cache(maxsize=1 << 16)
def map_judgment(text: str) -> str | None:
    """good / bad / okay for a rot-judgment text, or None when no phrase matches it."""
    found = _PHRASE.match(normalize_judgment(text))
    return PHRASE_CLASS[found.group(1)] if found else None


def class_from_moral_judgment(value: float) -> str:
    return "bad" if value < 0 else "okay" if value == 0 else "good"


@dataclass
class LoadCounts:
    """What happened to every row of the file: kept per class, or left out and why."""

    rows: int = 0
    kept: Counter = field(default_factory=Counter)
    left_out: Counter = field(default_factory=Counter)
    unmapped_texts: Counter = field(default_factory=Counter)


@dataclass(frozen=True)
class NormFile:
    path: Path
    tag: str  # goes into prompt ids: v1.0, subset or file-<sha8>


def read_norms(norm_file: NormFile) -> tuple[list[Prompt], LoadCounts, str]:
    """The norms of one TSV, the counts of what was kept and left out, and where the class came from."""
    path = norm_file.path
    records = read_records(path)  # refuses a file without rows
    columns = list(records[0][1])
    require_columns(path, columns, ["action"])
    source = "rot-judgment" if "rot-judgment" in columns else "action-moral-judgment"
    if source not in columns:
        raise DataError(
            path, "needs a 'rot-judgment' or an 'action-moral-judgment' column for the norm's class", line=1,
            field="rot-judgment",
        )  # fmt: skip
    counts, prompts, seen = LoadCounts(), [], set()
    for line, row in records:
        counts.rows += 1
        action = (row.get("action") or "").strip()
        if not action:
            counts.left_out["empty action"] += 1
            continue
        judgment = _row_class(path, line, row, source, counts)
        if judgment is None:
            continue
        if action in seen:
            counts.left_out["action already kept (first row's class used)"] += 1
            continue
        seen.add(action)
        counts.kept[judgment] += 1
        prompts.append(_prompt(norm_file.tag, line, action, judgment, source, row))
    return prompts, counts, source


def _row_class(path: Path, line: int, row: dict[str, str], source: str, counts: LoadCounts) -> str | None:
    raw = (row.get(source) or "").strip()
    if source == "rot-judgment":
        judgment = map_judgment(raw) if raw else None
        if judgment is None:
            counts.left_out["empty rot-judgment" if not raw else "rot-judgment maps to no class"] += 1
            if raw:
                counts.unmapped_texts[normalize_judgment(raw)] += 1
        return judgment
    if not raw:
        counts.left_out["empty action-moral-judgment"] += 1
        return None
    try:
        value = float(raw)
    except ValueError:
        raise DataError(path, f"{raw!r} is not a number (-2..2)", line=line, field=source) from None
    return class_from_moral_judgment(value)


def _prompt(tag: str, line: int, action: str, judgment: str, source: str, row: dict[str, str]) -> Prompt:
    attributes = {"judgment": judgment, "judgment_source": source}
    if source == "rot-judgment":
        attributes["rot_judgment"] = row["rot-judgment"].strip()
    for column in ("action-moral-judgment", "area", "rot-categorization"):
        if row.get(column):
            attributes[column.replace("-", "_")] = row[column]
    return Prompt(id=f"{tag}:{line}", dataset=NAME, text=action, lang="en", category=judgment, attributes=attributes)


# -- where the file comes from ------------------------------------------------------------------------------


def locate(spec: Spec, context: DataContext) -> NormFile:
    """The TSV to read: a given path, the full TSV (mirror, cache or verified download), or the subset."""
    options = read_spec_options(Options, spec)
    if options.path:
        path = Path(spec.option("path") or "")
        if not path.is_file():
            raise DataError(path, "file not found (from the dataset option 'path')")
        return NormFile(path, f"file-{sha256_file(path)[:8]}")
    source = options.source
    if source != "subset":
        full = _full_tsv(spec, context, required=source == "full")
        if full is not None:
            return NormFile(full, "v1.0")
    subset = mirror_file(NAME, SUBSET_TSV, context)  # pinned in sources.json
    return NormFile(subset or _mirror_file(context, SUBSET_TSV, required=True), "subset")  # type: ignore[arg-type]


def _mirror_file(context: DataContext, filename: str, *, required: bool) -> Path | None:
    if context.data_dir is not None:
        path = Path(context.data_dir) / FOLDER / filename
        if path.is_file():
            return path
    if required:
        where = f"{context.data_dir}/{FOLDER}/{filename}" if context.data_dir else f"{FOLDER}/{filename}"
        raise DataError(where, f"{NAME} is not available offline; set TRUSTEVAL_DATA_DIR to a mirror holding it")
    return None


def _full_tsv(spec: Spec, context: DataContext, *, required: bool) -> Path | None:
    mirrored = _mirror_file(context, FULL_TSV, required=False)
    if mirrored is not None:
        return _unpinned_full_tsv(mirrored, context)
    cached = context.cache_dir / FOLDER / FULL_TSV
    if cached.is_file():
        return cached
    if context.allow_download:
        return download_full(spec, context)
    if required:
        raise DataError(
            f"{context.data_dir}/{FOLDER}/{FULL_TSV}" if context.data_dir else FULL_TSV,
            f"the full {NAME} TSV is not available offline; put it in TRUSTEVAL_DATA_DIR/{FOLDER}/, or pass "
            f"--download with the dataset option sha256=<expected sha256 of the official zip>",
        )
    return None


def _unpinned_full_tsv(path: Path, context: DataContext) -> Path:
    """This release pins no sha256 for the full TSV, so a mirror copy cannot be checked: it is used only when
    the run allows unpinned data, and the run records that it did."""
    if not context.allow_unpinned:
        raise DataError(
            path,
            f"no sha256 is pinned for the full {NAME} TSV in this release, so this copy cannot be checked; pass "
            f"--allow-unpinned-data to use it (recorded with the run), or --dataset '{NAME}?source=subset'",
        )
    line = f"{path}: the full {NAME} TSV has no pinned sha256; used because of --allow-unpinned-data"
    if line not in context.unpinned:
        context.unpinned.append(line)
    return path


def download_full(spec: Spec, context: DataContext) -> Path:
    """Download the official zip, verified against the sha256 the user gives, and extract the TSV."""
    expected = (spec.option("sha256") or "").strip().lower()
    url = spec.option("url") or OFFICIAL_ZIP_URL
    if not re.fullmatch(r"[0-9a-f]{64}", expected):
        raise UsageError(
            f"refusing to download {url}: this release pins no sha256 for the official {NAME} zip, so it cannot "
            f"be verified. Pass the expected checksum as a dataset option, e.g. "
            f"--dataset '{NAME}?sha256=<64 hex digits>', or put {FULL_TSV} in TRUSTEVAL_DATA_DIR/{FOLDER}/"
        )
    folder = context.cache_dir / FOLDER
    archive = download_verified(url, expected, folder / "social-chem-101.zip")
    target = folder / FULL_TSV
    try:
        with zipfile.ZipFile(archive) as bundle:
            member = next((n for n in bundle.namelist() if Path(n).name == FULL_TSV), None)
            if member is None:
                raise DataError(archive, f"the archive holds no {FULL_TSV}")
            write_atomic(target, bundle.read(member))
    except zipfile.BadZipFile as exc:
        raise DataError(archive, f"not a readable zip: {exc}") from None
    return target


# -- the loader and its description ---------------------------------------------------------------------------


def load(spec: Spec, context: DataContext) -> LoadedDataset:
    norm_file = locate(spec, context)
    prompts, counts, source = read_norms(norm_file)
    if not prompts:
        raise DataError(
            norm_file.path, "no norm is left after leaving out the rows counted below: " + _left_out(counts)
        )
    notes = [f"{NAME}: {norm_file.path.name}, {counts.rows} rows, {_kept(counts)}"]
    if norm_file.tag == "subset":
        notes.append(f"{NAME}: the offline 500-row subset (the full v1.0 TSV was not found)")
    if source == "action-moral-judgment":
        notes.append(
            f"{NAME}: no rot-judgment column; norm class = sign of action-moral-judgment "
            "(negative bad, zero okay, positive good)"
        )
    if counts.left_out:
        notes.append(f"{NAME}: left out {_left_out(counts)}")
    return LoadedDataset(
        name=NAME,
        prompts=prompts,
        notes=tuple(notes),
        sources={_source_key(norm_file): sha256_file(norm_file.path)},
    )


def _source_key(norm_file: NormFile) -> str:
    return str(norm_file.path) if norm_file.tag.startswith("file-") else f"{FOLDER}/{norm_file.path.name}"


def _kept(counts: LoadCounts) -> str:
    return "norms kept: " + ", ".join(f"{counts.kept[c]} {c}" for c in CLASSES)


def _left_out(counts: LoadCounts) -> str:
    if not counts.left_out:
        return "nothing"
    return ", ".join(f"{n} rows ({why})" for why, n in sorted(counts.left_out.items()))


def mapping_table() -> str:
    lines = ["| class | rot-judgment phrases (whole text or leading phrase) |", "| --- | --- |"]
    lines += [f"| {cls} | {', '.join(phrases)} |" for cls, phrases in JUDGMENT_PHRASES.items()]
    lines.append("| (left out, counted) | anything else |")
    return "\n".join(lines)


def describe(spec: Spec, context: DataContext) -> str:
    """The rot-judgment mapping, and what it gives on the file this spec loads."""
    parts = [
        f"{NAME}: norms (`action`) with a good / bad / okay class from `rot-judgment`.",
        "Text is lowercased, curly apostrophes folded to ', trailing punctuation stripped; the longest phrase "
        "that is the whole text or its leading phrase decides.",
        "",
        mapping_table(),
        "",
        "Without a rot-judgment column: sign of action-moral-judgment (negative bad, zero okay, positive good).",
    ]
    try:
        norm_file = locate(spec, context)
        _, counts, source = read_norms(norm_file)
    except (DataError, UsageError) as exc:
        return "\n".join([*parts, "", f"No file to count: {exc}"])
    parts += ["", f"File: {norm_file.path} ({counts.rows} rows; class from {source})", _kept(counts)]
    parts.append(f"Left out: {_left_out(counts)}")
    if counts.unmapped_texts:
        common = ", ".join(f"{text!r} ({n})" for text, n in counts.unmapped_texts.most_common(10))
        parts.append(f"Most common unmapped judgments: {common}")
    return "\n".join(parts)
