"""The inline style and script of the HTML report (no external file, font or request of any kind).

The script renders the sample browser one page at a time from the JSON block, writing untrusted text only
through `textContent`; filters live in `location.hash` (#model=...&class=...&outcome=...&verdict=...&q=...&min=S
&view=side&page=N), so a filtered view is a link, and a headless browser can open one. `view=side` shows one row
per prompt and seed with every model's answer in its own column (a prompt is shown when one of its rows passes
the filters); `min=S` keeps rows whose score (the sort key: toxicity, refusal, 1 - avoidance) is at least S.
"""

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "Noto Sans CJK SC", "Noto Sans SC",
  "WenQuanYi Zen Hei", "Microsoft YaHei", "PingFang SC", sans-serif; margin: 0 auto; max-width: 1200px;
  padding: 0 16px 48px; color: #1d1d1f; }
h1 { font-size: 22px; margin: 20px 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin: 16px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 4px; font-variant-numeric: tabular-nums; }
table.result { display: block; max-width: 100%; overflow-x: auto; }
th, td { border: 1px solid #d8d8d8; padding: 3px 8px; vertical-align: top; }
th { background: #f3f3f5; text-align: left; } td.num { text-align: right; white-space: nowrap; }
td.bad { background: #fde2e1; } td.good { background: #dff3e4; }
td.hi::after { content: " \\25B2"; font-size: 10px; } td.lo::after { content: " \\25BC"; font-size: 10px; }
td.bad::after { color: #b3261e; } td.good::after { color: #1e7b34; }
td a { color: inherit; text-decoration: none; } td a:hover { text-decoration: underline; color: #0b57d0; }
#browser #side-table { table-layout: auto; } #side-table td.answer { min-width: 220px; }
#side-table tr > :nth-child(2), #side-table tr > :nth-child(3) { width: 1%; white-space: nowrap; }
.notes { color: #555; font-size: 12px; margin: 0 0 14px 0; padding-left: 18px; }
.facts td:first-child { color: #555; white-space: nowrap; } .facts td { border: none; padding: 1px 10px 1px 0; }
.counts span { display: inline-block; margin-right: 12px; padding: 1px 8px; border-radius: 9px; background: #eee; }
.counts span.bad { background: #fde2e1; }
figure { margin: 10px 0 18px; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 12px; }
#browser td.answer { font-size: 13px; } #browser td.answer b { display: block; font-weight: 600; }
#browser .controls { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 6px 0; }
#browser table { width: 100%; table-layout: fixed; } #browser td { white-space: pre-wrap; word-break: break-word; }
#browser col.c-model { width: 13%; } #browser col.c-seed { width: 5%; } #browser col.c-class { width: 8%; }
#browser col.c-outcome { width: 8%; } #browser col.c-scores { width: 12%; } #browser col.c-verdict { width: 12%; }
.muted { color: #777; font-size: 12px; }
"""

SCRIPT = """
(function () {
  "use strict";
  var RUN = 0, MODEL = 1, SEED = 2, CLS = 3, OUTCOME = 4, SEVERITY = 5, PROMPT = 6, RESPONSE = 7, SCORES = 8,
      VERDICT = 9, JUDGE = 10;
  var PAGE_SIZE = 50;
  var data = JSON.parse(document.getElementById("sample-data").textContent);
  var rows = data.rows, judges = data.judges;
  var body = document.getElementById("sample-rows");
  var info = document.getElementById("sample-info");
  var selects = { model: document.getElementById("f-model"), "class": document.getElementById("f-class"),
                  outcome: document.getElementById("f-outcome"), verdict: document.getElementById("f-verdict") };
  var columns = { model: MODEL, "class": CLS, outcome: OUTCOME, verdict: VERDICT };
  var search = document.getElementById("f-q");
  var minimum = document.getElementById("f-min"), view = document.getElementById("f-view");
  var rowTable = document.getElementById("row-table"), sideTable = document.getElementById("side-table");
  var sideHead = document.getElementById("side-head"), sideBody = document.getElementById("side-rows");
  var page = 0, shown = rows, matched = rows.length;
  var models = [], byPrompt = {};
  rows.forEach(function (r) {
    if (models.indexOf(r[MODEL]) < 0) { models.push(r[MODEL]); }
    var key = r[PROMPT] + "\\u0000" + r[SEED];
    (byPrompt[key] = byPrompt[key] || []).push(r);
  });

  function addOption(select, value) {
    var option = document.createElement("option");
    option.value = value; option.textContent = value; select.appendChild(option);
  }
  Object.keys(selects).forEach(function (key) {
    var seen = {};
    rows.forEach(function (r) { seen[r[columns[key]]] = true; });
    Object.keys(seen).sort().forEach(function (v) { addOption(selects[key], v); });
  });

  function readHash() {
    var params = new URLSearchParams(location.hash.slice(1));
    Object.keys(selects).forEach(function (key) {
      var value = params.get(key);
      if (value === null) { selects[key].value = ""; return; }
      var known = Array.prototype.some.call(selects[key].options, function (o) { return o.value === value; });
      if (!known) { addOption(selects[key], value); }
      selects[key].value = value;
    });
    search.value = params.get("q") || "";
    minimum.value = params.get("min") || "";
    view.value = params.get("view") === "side" ? "side" : "";
    page = Math.max(0, (parseInt(params.get("page") || "1", 10) || 1) - 1);
  }

  function writeHash() {
    var params = new URLSearchParams();
    Object.keys(selects).forEach(function (key) { if (selects[key].value) { params.set(key, selects[key].value); } });
    if (search.value) { params.set("q", search.value); }
    if (minimum.value) { params.set("min", minimum.value); }
    if (view.value) { params.set("view", view.value); }
    if (page > 0) { params.set("page", String(page + 1)); }
    history.replaceState(null, "", "#" + params.toString());
  }

  function filter() {
    var wanted = Object.keys(selects).filter(function (k) { return selects[k].value !== ""; });
    var needle = search.value.toLowerCase();
    var least = minimum.value === "" ? null : parseFloat(minimum.value);
    shown = rows.filter(function (r) {
      for (var i = 0; i < wanted.length; i++) {
        if (String(r[columns[wanted[i]]]) !== selects[wanted[i]].value) { return false; }
      }
      if (least !== null && !isNaN(least) && (r[SEVERITY] === null || r[SEVERITY] < least)) { return false; }
      return !needle || r[PROMPT].toLowerCase().indexOf(needle) >= 0 || r[RESPONSE].toLowerCase().indexOf(needle) >= 0;
    });
    matched = shown.length;
    if (view.value === "side") {
      var seen = {};
      shown = shown.filter(function (r) {
        var key = r[PROMPT] + "\\u0000" + r[SEED];
        if (seen[key]) { return false; }
        seen[key] = true; return true;
      });
    }
  }

  function answerCell(tr, found) {
    var td = document.createElement("td"); td.className = "answer";
    found.forEach(function (r) {
      var head = document.createElement("b");
      var verdict = r[VERDICT] !== "no judge" && r[VERDICT] !== r[OUTCOME] ? " \\u00b7 " + r[VERDICT] : "";
      head.textContent = r[OUTCOME] + verdict;
      td.appendChild(head);
      td.appendChild(document.createTextNode(r[RESPONSE] + "\\n" + Object.keys(r[SCORES]).map(function (k) {
        return k + ": " + r[SCORES][k]; }).join(", ") + "\\n"));
    });
    tr.appendChild(td);
  }

  function renderSide(start, end) {
    var head = document.createElement("tr");
    ["prompt", "seed", "class"].concat(models).forEach(function (name) {
      var th = document.createElement("th"); th.textContent = name; head.appendChild(th);
    });
    sideHead.replaceChildren(head);
    var fragment = document.createDocumentFragment();
    for (var i = start; i < end; i++) {
      var r = shown[i], tr = document.createElement("tr"), group = byPrompt[r[PROMPT] + "\\u0000" + r[SEED]];
      tr.className = "side";
      cell(tr, r[PROMPT]); cell(tr, String(r[SEED])); cell(tr, r[CLS]);
      models.forEach(function (m) { answerCell(tr, group.filter(function (g) { return g[MODEL] === m; })); });
      fragment.appendChild(tr);
    }
    sideBody.replaceChildren(fragment);
  }

  function cell(tr, text) {
    var td = document.createElement("td"); td.textContent = text; tr.appendChild(td);
  }

  function render() {
    var pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE));
    page = Math.min(page, pages - 1);
    var start = page * PAGE_SIZE, end = Math.min(shown.length, start + PAGE_SIZE);
    var side = view.value === "side";
    rowTable.hidden = side; sideTable.hidden = !side;
    if (side) { renderSide(start, end); body.replaceChildren(); } else { sideBody.replaceChildren(); }
    var fragment = document.createDocumentFragment();
    for (var i = start; i < end && !side; i++) {
      var r = shown[i], tr = document.createElement("tr");
      tr.className = "sample";
      cell(tr, r[MODEL] + (r[RUN] ? "\\n" + r[RUN] : "")); cell(tr, String(r[SEED])); cell(tr, r[CLS]);
      cell(tr, r[OUTCOME]); cell(tr, r[PROMPT]); cell(tr, r[RESPONSE]);
      cell(tr, Object.keys(r[SCORES]).map(function (k) { return k + ": " + r[SCORES][k]; }).join("\\n"));
      cell(tr, r[VERDICT] + (r[JUDGE] >= 0 ? "\\njudge: " + judges[r[JUDGE]] : ""));
      fragment.appendChild(tr);
    }
    if (!side) { body.replaceChildren(fragment); }
    var filtered = matched !== rows.length ? " (filtered from " + rows.length + ")" : "";
    if (side) { filtered = " (" + matched + " of " + rows.length + " rows)"; }
    info.textContent = shown.length ? (side ? "prompts " : "rows ") + (start + 1) + "\\u2013" + end + " of " +
      shown.length + filtered + ", page " + (page + 1) + " of " + pages : "no rows match (of " + rows.length + ")";
    document.body.setAttribute("data-shown", String(shown.length));
  }

  function update(resetPage) {
    if (resetPage) { page = 0; }
    filter(); render(); writeHash();
  }
  Object.keys(selects).forEach(function (k) { selects[k].addEventListener("change", function () { update(true); }); });
  search.addEventListener("input", function () { update(true); });
  minimum.addEventListener("input", function () { update(true); });
  view.addEventListener("change", function () { update(true); });
  document.getElementById("prev").addEventListener("click", function () {
    page = Math.max(0, page - 1); update(false);
  });
  document.getElementById("next").addEventListener("click", function () { page += 1; update(false); });
  window.addEventListener("hashchange", function () { readHash(); filter(); render(); });
  readHash(); filter(); render();
})();
"""
