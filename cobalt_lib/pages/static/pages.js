// cobalt's pages: the item table, the item detail, the compare list and live counts.
// Every piece of run data is inserted as text (textContent / append of strings), never as HTML.
(function () {
  "use strict";
  var block = document.getElementById("cobalt-data");
  if (!block) return;  // a page without data (trends, errors) needs no script
  var data = JSON.parse(block.textContent);
  var PER_PAGE = data.per_page || 50;

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === null || value === undefined || value === false) return;
      if (key === "class") node.className = value;
      else if (key.slice(0, 2) === "on") node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    });
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      node.append(typeof child === "object" ? child : String(child));
    }
    return node;
  }
  function text(value) {
    if (value === null || value === undefined) return "";
    return typeof value === "string" ? value : JSON.stringify(value, null, 1);
  }
  function short(value, limit) {
    var t = text(value).replace(/\s+/g, " ");
    return t.length > limit ? t.slice(0, limit - 1) + "…" : t;
  }
  function fmt(score) { return score === null || score === undefined ? "–" : Number(score).toFixed(3); }
  function ms(v) { return v === null || v === undefined ? "–" : v > 0 && v < 0.01 ? "<0.01 ms" : v >= 1000 ? (v / 1000).toFixed(2) + " s" : v.toFixed(v >= 10 ? 0 : 2) + " ms"; }
  function lowerBetter(name) { return /^(latency|cost|tokens)|(Duration|Latency)$/.test(name); }
  function scoreClass(ev, name) {
    if (!ev || ev.status !== "ok") return "error";
    if (ev.passed === true) return "pass";
    if (ev.passed === false) return "fail";
    var mark = (data.pass_marks || {})[name];
    if (typeof mark !== "number" || ev.score === null) return "plain";
    return (lowerBetter(name) ? ev.score <= mark : ev.score >= mark) ? "pass" : "fail";
  }
  function getJSON(url) {
    return fetch(url, {headers: {"Accept": "application/json"}}).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status + " from " + url);
      return r.json();
    });
  }
  function pager(state, total, onMove) {
    var first = total ? state.offset + 1 : 0, last = Math.min(state.offset + PER_PAGE, total);
    return el("span", {class: "pager"},
      el("button", {type: "button", class: "prev", disabled: state.offset <= 0,
        onclick: function () { onMove(Math.max(0, state.offset - PER_PAGE)); }}, "← previous"),
      el("span", {class: "count"}, first + "–" + last + " of " + total.toLocaleString("en")),
      el("button", {type: "button", class: "next", disabled: last >= total,
        onclick: function () { onMove(state.offset + PER_PAGE); }}, "next →"));
  }

  // ---- the run page: item table and item detail -------------------------------------------
  function isFailure(item) {
    return item.status !== "ok" || Object.keys(item.evaluations).some(function (k) {
      var ev = item.evaluations[k]; return ev.status !== "ok" || ev.passed === false;
    });
  }
  function isEvalError(item) {
    return Object.keys(item.evaluations).some(function (k) { return item.evaluations[k].status !== "ok"; });
  }
  function sortKey(item, sort) {
    if (sort === "status") return item.status;
    if (sort === "latency") return item.latency_ms;
    if (sort === "tokens") return item.tokens;
    if (sort === "cost") return item.cost_usd;
    if (sort.indexOf("score:") === 0) { var ev = item.evaluations[sort.slice(6)]; return ev ? ev.score : null; }
    return null;
  }
  function localPage(items, q) {  // the report file: the same filters as the server's, over the embedded items
    var needle = q.q.trim().toLowerCase();
    var chosen = items.filter(function (item) {
      if (q.only === "failures" && !isFailure(item)) return false;
      if (q.only === "eval-errors" && !isEvalError(item)) return false;
      if (!needle) return true;
      var reasons = Object.keys(item.evaluations).map(function (k) {
        var ev = item.evaluations[k]; return (ev.reason || "") + " " + (ev.error || "");
      });
      return [text(item.input), text(item.output), item.error || "", reasons.join(" ")].join(" ").toLowerCase().indexOf(needle) >= 0;
    });
    if (q.sort !== "index") {
      chosen = chosen.slice().sort(function (a, b) {
        var x = sortKey(a, q.sort), y = sortKey(b, q.sort);
        if (x === y || (x == null && y == null)) return a.index - b.index || a.run_index - b.run_index;
        if (x == null) return 1;
        if (y == null) return -1;
        return (x < y ? -1 : 1) * (q.desc ? -1 : 1);
      });
    } else if (q.desc) chosen = chosen.slice().reverse();
    return Promise.resolve({total: chosen.length, items: chosen.slice(q.offset, q.offset + PER_PAGE)});
  }

  function ItemTable(root) {
    var q = {offset: 0, sort: "index", desc: false, q: "", only: ""};
    var timer = null;
    var body = el("tbody");
    var footer = el("div", {class: "table-footer"});
    var search = el("input", {type: "search", placeholder: "Search input, output, errors, reasons", id: "item-search",
      oninput: function () { clearTimeout(timer); timer = setTimeout(function () { q.q = search.value; q.offset = 0; load(); }, 250); }});
    var only = el("select", {id: "item-filter", onchange: function () { q.only = only.value; q.offset = 0; load(); }},
      el("option", {value: ""}, "all items"), el("option", {value: "failures"}, "failures only"),
      el("option", {value: "eval-errors"}, "eval-errors only"));
    function header(label, sort) {
      if (!sort) return el("th", {}, label);
      var arrow = q.sort === sort ? (q.desc ? " ▼" : " ▲") : "";
      return el("th", {class: "sortable", "data-sort": sort, onclick: function () {
        q.desc = q.sort === sort ? !q.desc : sort !== "index" && sort !== "status" && sort.indexOf("score:") !== 0 ? true : false;
        q.sort = sort; q.offset = 0; load();
      }}, label + arrow);
    }
    var head = el("thead");
    function drawHead() {
      var cells = [header("#", "index"), header("Input"), header("Output"), header("Expected")];
      data.evaluators.forEach(function (n) { cells.push(header(n, "score:" + n)); });
      cells.push(header("Status", "status"), header("Latency", "latency"), header("Tokens", "tokens"));
      head.replaceChildren(el.apply(null, ["tr", {}].concat(cells)));
    }
    function row(item) {
      var cells = [el("td", {class: "num"}, label(item), item.flaky ? el("span", {class: "badge flaky", title: "passed in some repeats, not all"}, item.flaky) : null),
        el("td", {class: "text"}, short(item.input, 140)),
        el("td", {class: "text"}, item.status === "ok" ? short((window.cobaltConversation && window.cobaltConversation.summary(item)) || item.output, 180) : el("span", {class: "fail"}, short(item.error, 180))),
        el("td", {class: "text"}, short(item.expected, 100))];
      data.evaluators.forEach(function (n) {
        var ev = item.evaluations[n];
        cells.push(el("td", {class: "score " + scoreClass(ev, n), title: ev ? (ev.reason || ev.error || "") : ""},
          ev ? (ev.status === "ok" ? fmt(ev.score) : "eval-error") : "–"));
      });
      cells.push(el("td", {}, el("span", {class: "badge " + item.status}, item.status)), el("td", {class: "num"}, ms(item.latency_ms)),
        el("td", {class: "num"}, item.tokens == null ? "–" : item.tokens));
      return el.apply(null, ["tr", {class: "item-row", "data-index": item.index, "data-run-index": item.run_index,
        onclick: function () { openDetail(item.index, item.run_index); }}].concat(cells));
    }
    function load() {
      drawHead();
      var source = data.api
        ? getJSON(data.api + "/items?" + new URLSearchParams({offset: q.offset, limit: PER_PAGE, sort: q.sort,
            desc: q.desc ? "1" : "", q: q.q, only: q.only}))
        : localPage(data.items, q);
      return source.then(function (page) {
        body.replaceChildren.apply(body, page.items.map(row));
        if (!page.items.length) body.append(el("tr", {}, el("td", {colspan: 7 + data.evaluators.length, class: "empty"}, "No item matches.")));
        footer.replaceChildren(pager(q, page.total, function (offset) { q.offset = offset; load(); }));
      }).catch(function (err) { footer.replaceChildren(el("p", {class: "error-message"}, String(err))); });
    }
    root.replaceChildren(el("div", {class: "controls"}, search, only), el("table", {class: "items-table", id: "item-table"}, head, body), footer);
    this.load = load;
    this.ready = load();  // the first page drawn: an item link opens its detail after it (never above a table still loading)
  }

  // An item's repeat is `3:1` (index:run_index, as `cobalt show RUN 3:1`) in a run with repeats, else `3`.
  function label(item) { return item.label || String(item.index); }
  function flakyText(repeats) {
    var passed = repeats.filter(function (r) { return !isFailure(r); }).length;
    return passed > 0 && passed < repeats.length ? passed + " of " + repeats.length + " passed" : null;
  }
  function evaluationBlock(name, ev) {
    var parts = [el("h4", {}, name, " ", el("span", {class: "score " + scoreClass(ev, name)}, ev.status === "ok" ? fmt(ev.score) : "eval-error"),
      ev.passed === null || ev.passed === undefined ? null : el("span", {class: "muted"}, ev.passed ? " passed" : " below its pass mark"))];
    if (ev.reason) parts.push(el("p", {class: "reason"}, ev.reason));
    if (ev.error) parts.push(el("p", {class: "fail"}, ev.error));
    var facts = [ev.judge_model ? "judge " + ev.judge_model : null, ev.cached ? "cached" : null, ev.raw_score != null && ev.raw_score !== ev.score ? "raw score " + ev.raw_score : null,
      ev.latency_ms != null ? ms(ev.latency_ms) : null, ev.cost_usd != null ? "$" + ev.cost_usd.toFixed(5) : null].filter(Boolean);
    if (facts.length) parts.push(el("p", {class: "muted"}, facts.join(" · ")));
    if (ev.raw_response) parts.push(el("details", {}, el("summary", {}, "raw judge answer"), el("pre", {}, ev.raw_response)));
    return el.apply(null, ["div", {class: "evaluation", "data-evaluator": name}].concat(parts));
  }
  function repeatColumn(item) {
    var col = el("div", {class: "repeat", "data-run-index": item.run_index},
      el("h3", {}, "#" + label(item), " ", el("span", {class: "badge " + item.status}, item.status)),
      el("p", {class: "muted"}, "latency " + ms(item.latency_ms) + " · tokens " + (item.tokens == null ? "–" : item.tokens) +
        " · cost " + (item.cost_usd == null ? "–" : "$" + item.cost_usd.toFixed(5))));
    if (item.error) col.append(el("h4", {}, "Error"), el("pre", {class: "fail error"}, item.error));
    if (item.traceback) col.append(el("details", {open: true}, el("summary", {}, "Traceback"), el("pre", {class: "traceback"}, item.traceback)));
    col.append(el("h4", {}, "Input"), el("pre", {class: "input"}, text(item.input)),
      el("h4", {}, "Output"), (window.cobaltConversation && window.cobaltConversation.transcript(item)) || el("pre", {class: "output"}, text(item.output)));
    if (item.expected !== null && item.expected !== undefined) col.append(el("h4", {}, "Expected output"), el("pre", {class: "expected"}, text(item.expected)));
    col.append(el("h4", {}, "Evaluations"));
    Object.keys(item.evaluations).forEach(function (n) { col.append(evaluationBlock(n, item.evaluations[n])); });
    if (item.trace && item.trace.length && window.cobaltTrace) col.append(window.cobaltTrace(item.trace));  // trace.js
    if (Object.keys(item.metadata || {}).length) col.append(el("h4", {}, "Metadata"), el("pre", {class: "metadata"}, text(item.metadata)));
    return col;
  }
  function showDetail(index, repeats) {
    var panel = document.getElementById("detail");
    var close = el("button", {type: "button", class: "close", onclick: function () {
      panel.hidden = true; history.replaceState(null, "", location.pathname + location.search);
    }}, "close ✕");
    var flaky = flakyText(repeats);
    var head = el("div", {class: "detail-head"}, el("h2", {}, "Item #" + index,
      flaky ? el("span", {class: "badge flaky", title: "passed in some repeats, not all"}, "flaky: " + flaky) : null), close);
    if (!repeats.length) { panel.replaceChildren(head, el("p", {}, "This run has no item " + index + ".")); }
    else panel.replaceChildren(head, el.apply(null, ["div", {class: "repeats n" + Math.min(repeats.length, 4)}].concat(repeats.map(repeatColumn))));
    panel.hidden = false;
    panel.scrollIntoView({block: "start"});
    panel.dispatchEvent(new CustomEvent("cobalt:detail", {detail: {index: index, repeats: repeats}}));  // labels.js
  }
  function openDetail(index) {
    history.replaceState(null, "", "#item=" + index);
    var source = data.api ? getJSON(data.api + "/items/" + index)
      : Promise.resolve(data.items.filter(function (i) { return i.index === index; }));
    source.then(function (repeats) { showDetail(index, repeats); });
  }

  function live(table) {
    var seen = data.counts;  // what the page was drawn with
    setInterval(function () {
      getJSON(data.api + "/live").then(function (now) {
        document.querySelectorAll("[data-live]").forEach(function (node) {
          var value = now[node.getAttribute("data-live")];
          if (value !== undefined) node.textContent = value;
        });
        if (now.status !== "running") { location.reload(); return; }
        var key = now.done + "/" + now.scored;
        if (key !== seen) table.load();
        seen = key;
      }).catch(function () {});
    }, 2000);
  }

  // ---- the compare page --------------------------------------------------------------------
  function diffPre(segments, cls) {
    return el.apply(null, ["pre", {class: "output " + cls}].concat(segments.map(function (s) {
      return s[0] === "same" ? s[1] : el(s[0] === "del" ? "del" : "ins", {}, s[1]);
    })));
  }
  function compareRow(r) {
    var change = r.change < 0 ? "regressed" : r.change > 0 ? "improved" : "unchanged";
    var outputs = el("div", {class: "side-by-side"}, el("div", {}, el("h4", {}, "A: " + data.run_a), diffPre(r.diff_a, "a")),
      el("div", {}, el("h4", {}, "B: " + data.run_b), diffPre(r.diff_b, "b")));
    var scores = el("table", {class: "pair-scores"}, el("thead", {}, el("tr", {}, el("th", {}, "Evaluator"), el("th", {}, "A"), el("th", {}, "B"),
      el("th", {}, "B − A"), el("th", {}, "A's reason"), el("th", {}, "B's reason"))));
    r.evaluators.forEach(function (e) {
      scores.append(el("tr", {class: e.gain < 0 ? "regressed" : e.gain > 0 ? "improved" : ""}, el("td", {}, e.name), el("td", {}, fmt(e.a)), el("td", {}, fmt(e.b)),
        el("td", {}, e.delta === null ? "–" : (e.delta >= 0 ? "+" : "") + e.delta.toFixed(3)),
        el("td", {class: "reason"}, e.reason_a || ""), el("td", {class: "reason"}, e.reason_b || "")));
    });
    return el("article", {class: "pair " + change, "data-index": r.index, "data-change": r.change},
      el("h3", {}, "Item #" + r.index + (r.index_a !== r.index ? " (#" + r.index_a + " in A)" : "") + " ", el("span", {class: "badge " + change}, change +
        (r.change ? " " + (r.change > 0 ? "+" : "") + r.change.toFixed(3) : "")),
        r.status_a !== r.status_b ? el("span", {class: "fail"}, " agent call " + r.status_a + " → " + r.status_b) : null,
        r.output_changed ? el("span", {class: "muted"}, " · output changed") : null,
        r.diverged ? el("span", {class: "badge diverged", "data-turn": r.diverged}, "diverged at turn " + r.diverged) : null,
        r.flaky_a ? el("span", {class: "badge flaky"}, "A flaky: " + r.flaky_a) : null,
        r.flaky_b ? el("span", {class: "badge flaky"}, "B flaky: " + r.flaky_b) : null),
      el("p", {class: "input"}, el("b", {}, "Input: "), short(r.input, 300)),
      scores,
      r.changed || r.output_changed ? outputs : el("details", {}, el("summary", {}, "outputs (the same in both runs)"), outputs));
  }
  function CompareList(root) {
    var q = {offset: 0, changed: false};
    var list = el("div", {class: "pairs"});
    var footer = el("div", {class: "table-footer"});
    var changed = el("input", {type: "checkbox", id: "changed-only", onchange: function () { q.changed = changed.checked; q.offset = 0; load(); }});
    function load() {
      var source = data.api
        ? getJSON(data.api + "&" + new URLSearchParams({offset: q.offset, limit: PER_PAGE, changed: q.changed ? "1" : ""}))
        : Promise.resolve((function () {
            var rows = q.changed ? data.rows.filter(function (r) { return r.changed; }) : data.rows;
            return {total: rows.length, rows: rows.slice(q.offset, q.offset + PER_PAGE)};
          })());
      return source.then(function (page) {
        list.replaceChildren.apply(list, page.rows.map(compareRow));
        if (!page.rows.length) list.append(el("p", {class: "empty"}, "No paired item" + (q.changed ? " changed." : ".")));
        footer.replaceChildren(pager(q, page.total, function (offset) { q.offset = offset; load(); }));
      }).catch(function (err) { footer.replaceChildren(el("p", {class: "error-message"}, String(err))); });
    }
    root.replaceChildren(el("div", {class: "controls"}, el("label", {}, changed, " changed only")), list, footer);
    load();
  }

  // ---- the runs list -----------------------------------------------------------------------
  function RunPicker() {
    var form = document.getElementById("pick");
    if (!form) return;
    var button = document.getElementById("compare-picked");
    form.addEventListener("change", function () {
      button.disabled = form.querySelectorAll("input[name=run]:checked").length !== 2;
    });
  }

  if (data.page === "run") {
    var table = new ItemTable(document.getElementById("items"));
    var fromHash = function () {
      var wanted = /^#item=(\d+)/.exec(location.hash);
      if (wanted) table.ready.then(function () { openDetail(Number(wanted[1])); });
    };
    window.addEventListener("hashchange", fromHash);
    fromHash();
    if (data.live && data.api) live(table);
  } else if (data.page === "compare") {
    CompareList(document.getElementById("compare-items"));
  } else if (data.page === "runs") {
    RunPicker();
    if (data.refresh) setTimeout(function () { location.reload(); }, 5000);
  }
})();
