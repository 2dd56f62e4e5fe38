// cobalt's pages: the item table, the item detail, the compare list, live counts, the keyboard, the theme.
// Every piece of run data is inserted as text (textContent / append of strings), never as HTML.
(function () {
  "use strict";

  // ---- Numbers: the pages' copy of cobalt_lib/_numbers.py (same rules, same text) ----------
  var UNKNOWN = "\u2013";
  function special(v) {
    if (v === null || v === undefined) return UNKNOWN;
    if (typeof v !== "number") v = Number(v);
    if (isNaN(v)) return "NaN";
    if (!isFinite(v)) return v > 0 ? "\u221e" : "-\u221e";
    return null;
  }
  function plain(v, decimals, commas) {
    var t = Math.abs(v).toFixed(decimals);
    if (commas !== false) {
      var parts = t.split(".");
      parts[0] = parts[0].replace(/\B(?=(\d{3})+(?!\d))/g, ",");
      t = parts.join(".");
    }
    return (v < 0 && /[1-9]/.test(t) ? "-" : "") + t;
  }
  function trim(t) { return t.indexOf(".") >= 0 ? t.replace(/0+$/, "").replace(/\.$/, "") : t; }
  function decimalsFor(size) { return Math.max(0, 2 - Math.floor(Math.log10(size))); }
  function signed(t, sign) { return sign && t.charAt(0) !== "-" ? "+" + t : t; }
  var Numbers = {
    score: function (v) { return special(v) || plain(Number(v), 3); },
    delta: function (v) { return special(v) || signed(plain(Number(v), 3), true); },
    pct: function (v) {
      var s = special(v); if (s) return s;
      var p = Number(v) * 100;
      if (p !== 0 && Math.abs(p) < 0.05) return (p < 0 ? "-" : "") + "<0.1%";
      return trim(plain(p, 1)) + "%";
    },
    ms: function (v, sign) {
      var s = special(v); if (s) return s;
      var size = Math.abs(v), t;
      if (size >= 3600000) { var h = Math.floor(Math.round(size / 1000) / 3600); t = h.toLocaleString("en") + "h " + String(Math.floor(Math.round(size / 1000) % 3600 / 60)).padStart(2, "0") + "m"; }
      else if (size >= 59995) { var secs = Math.round(size / 1000); t = Math.floor(secs / 60) + "m " + String(secs % 60).padStart(2, "0") + "s"; }
      else if (size >= 999.5) t = trim(plain(size / 1000, 2)) + "s";
      else if (size >= 10 || size === 0) t = plain(size, 0) + "ms";
      else t = trim(plain(size, decimalsFor(size))) + "ms";
      return (v < 0 && t !== "0ms" ? "-" : sign ? "+" : "") + t;
    },
    usd: function (v, sign) {
      var s = special(v); if (s) return s;
      var size = Math.abs(v), t;
      if (size === 0) t = "$0";
      else if (size >= 1) t = "$" + plain(size, 2);
      else if (size >= 0.01) t = "$" + plain(size, 4);
      else t = "$" + plain(size, decimalsFor(size), false);
      return (v < 0 && t !== "$0" ? "-" : sign ? "+" : "") + t;
    },
    int: function (v) { return special(v) || Math.round(v).toLocaleString("en"); }
  };
  window.cobaltNumbers = Numbers;  // the browser tests hold it to the Python module's table
  // ---- end of Numbers

  // ---- the theme: the system's preference, or the reader's choice kept in this browser --------
  var THEMES = ["auto", "light", "dark"];
  function storedTheme() { try { return localStorage.getItem("cobalt-theme") || "auto"; } catch (e) { return "auto"; } }
  function applyTheme(theme) {
    if (theme === "auto") document.documentElement.removeAttribute("data-theme");
    else document.documentElement.setAttribute("data-theme", theme);
    var button = document.getElementById("theme-toggle");
    if (button) { button.textContent = "theme: " + theme; button.setAttribute("aria-label", "colour theme: " + theme + " (click to change)"); }
  }
  function cycleTheme() {
    var next = THEMES[(THEMES.indexOf(storedTheme()) + 1) % THEMES.length];
    try { localStorage.setItem("cobalt-theme", next); } catch (e) { /* a file:// report may not store */ }
    applyTheme(next);
  }
  applyTheme(storedTheme());
  var toggle = document.getElementById("theme-toggle");
  if (toggle) { toggle.hidden = false; toggle.addEventListener("click", cycleTheme); }

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
  window.cobaltEl = el;  // labels.js builds its widgets with it

  // ---- the keyboard: shortcuts listed on `?` ---------------------------------------------------
  var shortcuts = [["?", "show or hide these shortcuts"], ["t", "change the colour theme"]];
  var handlers = {};
  function shortcut(keys, what, fn) {
    shortcuts.push([keys.join(" / "), what]);
    keys.forEach(function (k) { handlers[k] = fn; });
  }
  function typing(target) {
    var tag = (target && target.tagName) || "";
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }
  var help = null;
  function keyRows(list) {
    return list.map(function (s) { return el("tr", {}, el("th", {}, el("kbd", {}, s[0])), el("td", {}, s[1])); });
  }
  function toggleHelp() {
    if (help && !help.hidden) { help.hidden = true; return; }
    // drawn each time: the labelling keys (labels.js's `window.cobaltLabelKeys`) come once its scales are known
    var labelling = window.cobaltLabelKeys || [];
    var fresh = el("section", {class: "shortcuts", id: "shortcuts", role: "dialog", "aria-label": "keyboard shortcuts", tabindex: "-1"},
      el("h2", {}, "Keyboard shortcuts"), el.apply(null, ["table", {}].concat(keyRows(shortcuts))),
      labelling.length ? el("h3", {}, "Labelling an open item") : null,
      labelling.length ? el.apply(null, ["table", {class: "label-keys"}].concat(keyRows(labelling))) : null,
      el("p", {class: "muted"}, "Tab reaches every control; sortable column headers are buttons. Escape closes this."));
    if (help) help.replaceWith(fresh); else document.body.append(fresh);
    help = fresh;
    help.hidden = false;
    help.focus();
  }
  var escapes = [];  // what Escape closes, innermost first
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape") {
      if (help && !help.hidden) { help.hidden = true; event.preventDefault(); return; }
      if (typing(event.target)) { event.target.blur(); return; }
      for (var i = 0; i < escapes.length; i++) if (escapes[i]()) { event.preventDefault(); return; }
      return;
    }
    if (typing(event.target)) return;
    if (event.key === "?") { toggleHelp(); event.preventDefault(); return; }
    if (event.key === "t") { cycleTheme(); return; }
    var fn = handlers[event.key];
    if (fn && fn(event) !== false) event.preventDefault();
  });
  // A list whose rows j/k (or the arrows) move through and Enter opens.
  function rowKeys(rowsOf, open, noun) {
    var last = null;  // the row last focused (its data-index): where j/k go on from when the focus is elsewhere
    document.addEventListener("focusin", function (event) {
      if (rowsOf().indexOf(event.target) >= 0) last = event.target.getAttribute("data-index");
    });
    function move(step) {
      var rows = rowsOf();
      if (!rows.length) return;
      var at = rows.indexOf(document.activeElement);
      if (at < 0 && last !== null) {
        at = rows.findIndex(function (r) { return r.getAttribute("data-index") === last; });
        if (at >= 0) { rows[Math.min(rows.length - 1, Math.max(0, at + step))].focus(); return; }
      }
      var next = at < 0 ? (step > 0 ? 0 : rows.length - 1) : Math.min(rows.length - 1, Math.max(0, at + step));
      rows[next].focus();
    }
    function onRow() { return rowsOf().indexOf(document.activeElement) >= 0; }
    // j/k anywhere; the arrows only from a row (elsewhere they scroll the page as usual)
    shortcut(["j", "ArrowDown"], "next " + noun, function (event) { if (event.key === "j" || onRow()) move(1); else return false; });
    shortcut(["k", "ArrowUp"], "previous " + noun, function (event) { if (event.key === "k" || onRow()) move(-1); else return false; });
    document.addEventListener("keydown", function (event) {
      if (event.key !== "Enter" || typing(event.target)) return;
      if (rowsOf().indexOf(event.target) >= 0) { open(event.target); event.preventDefault(); }
    });
  }

  // Tables as cards on a phone: each cell says which column it is (the server's tables carry no labels).
  function labelCards(root) { root.querySelectorAll("table.cards").forEach(function (table) {
    var heads = Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) { return th.textContent.trim(); });
    table.querySelectorAll("tbody tr").forEach(function (tr) {
      Array.prototype.forEach.call(tr.children, function (td, i) { if (!td.hasAttribute("data-label") && heads[i]) td.setAttribute("data-label", heads[i]); });
    });
  }); }
  labelCards(document);

  var block = document.getElementById("cobalt-data");
  if (!block) {  // trends and error pages: links and forms only
    rowKeys(function () { return Array.prototype.slice.call(document.querySelectorAll(".chart")); },
      function (chart) { var a = chart.querySelector("a.point"); if (a) a.focus(); }, "chart");
    return;
  }
  var data = JSON.parse(block.textContent);
  var PER_PAGE = data.per_page || 50;

  function text(value) {
    if (value === null || value === undefined) return "";
    return typeof value === "string" ? value : JSON.stringify(value, null, 1);
  }
  function values(value) {  // the words of a value, without its field names (search matches what items say)
    if (value === null || value === undefined) return "";
    if (typeof value !== "object") return String(value);
    return Object.keys(value).map(function (k) { return values(value[k]); }).join(" ");
  }
  function short(value, limit) {
    var t = text(value).replace(/\s+/g, " ");
    return t.length > limit ? t.slice(0, limit - 1) + "…" : t;
  }
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
  function pager(offset, total, onMove, perPage) {
    var per = perPage || PER_PAGE;
    var first = total ? offset + 1 : 0, last = Math.min(offset + per, total);
    return el("span", {class: "pager"},
      el("button", {type: "button", class: "prev", disabled: offset <= 0, "aria-label": "previous page",
        onclick: function () { onMove(Math.max(0, offset - per)); }}, "← previous"),
      el("span", {class: "count"}, Numbers.int(first) + "–" + Numbers.int(last) + " of " + Numbers.int(total)),
      el("button", {type: "button", class: "next", disabled: last >= total, "aria-label": "next page",
        onclick: function () { onMove(offset + per); }}, "next →"));
  }

  // ---- the address: sort, filter, search, page and the open item, so Back and links keep them --
  function readState(defaults) {
    var params = new URLSearchParams(location.search), state = {};
    Object.keys(defaults).forEach(function (key) {
      var raw = params.get(key), d = defaults[key];
      state[key] = raw === null ? d : typeof d === "number" ? (parseInt(raw, 10) || 0) : typeof d === "boolean" ? raw === "1" : raw;
    });
    var item = /^#item=(\d+)/.exec(location.hash);
    state.item = item ? Number(item[1]) : null;
    return state;
  }
  function writeState(state, defaults, replace) {
    var params = new URLSearchParams(location.search);
    Object.keys(defaults).forEach(function (key) {
      var v = state[key];
      if (v === defaults[key] || v === "" || v === null) params.delete(key);
      else params.set(key, typeof v === "boolean" ? (v ? "1" : "0") : String(v));
    });
    var query = params.toString();
    var url = location.pathname + (query ? "?" + query : "") + (state.item !== null && state.item !== undefined ? "#item=" + state.item : "");
    if (url === location.pathname + location.search + location.hash) return;
    if (replace) history.replaceState(null, "", url); else history.pushState(null, "", url);
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
      return [values(item.input), values(item.output), item.error || "", reasons.join(" ")].join(" ").toLowerCase().indexOf(needle) >= 0;
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

  var TABLE_DEFAULTS = {sort: "index", desc: false, q: "", only: "", offset: 0};
  function ItemTable(root, onState) {
    var q = readState(TABLE_DEFAULTS);
    var timer = null, typingBurst = false;
    var body = el("tbody");
    var footer = el("div", {class: "table-footer"});
    // What was typed but not yet searched (the 250 ms pause): applied at once when the box is left or
    // another control changes, else the table's next draw would put the older search back in the box.
    function searchNow() {
      if (timer === null) return;
      clearTimeout(timer); timer = null;
      change({q: search.value, offset: 0}, typingBurst); typingBurst = true;
    }
    var search = el("input", {type: "search", placeholder: "Search input, output, errors, reasons  ( / )", id: "item-search",
      "aria-label": "search the items", value: q.q,
      oninput: function () {
        clearTimeout(timer);
        timer = setTimeout(searchNow, 250);
      },
      onblur: function () { searchNow(); typingBurst = false; }});
    search.addEventListener("keydown", function (event) {
      if (event.key === "Enter") { clearTimeout(timer); timer = null; change({q: search.value, offset: 0}, typingBurst); typingBurst = true; }
    });
    var only = el("select", {id: "item-filter", "aria-label": "which items", onchange: function () { change({only: only.value, offset: 0}); }},
      el("option", {value: ""}, "all items"), el("option", {value: "failures"}, "failures only"),
      el("option", {value: "eval-errors"}, "eval-errors only"));
    only.value = q.only;
    function sortBy(sort) {
      var desc = q.sort === sort ? !q.desc : sort !== "index" && sort !== "status" && sort.indexOf("score:") !== 0;
      change({sort: sort, desc: desc, offset: 0});
      var again = root.querySelector("th[data-sort='" + CSS.escape(sort) + "'] button");
      if (again) again.focus();
    }
    function header(label, sort, cls) {
      if (!sort) return el("th", {scope: "col", class: cls});
      var state = q.sort === sort ? (q.desc ? "descending" : "ascending") : "none";
      var arrow = state === "descending" ? " ▼" : state === "ascending" ? " ▲" : "";
      return el("th", {class: "sortable " + (cls || ""), scope: "col", "data-sort": sort, "aria-sort": state},
        el("button", {type: "button", class: "sort", title: "sort by " + label, onclick: function () { sortBy(sort); }}, label + arrow));
    }
    var head = el("thead");
    function plainHeader(label, cls) { var th = header(label, null, cls); th.append(label); return th; }
    function drawHead() {
      var cells = [header("#", "index"), plainHeader("Input"), plainHeader("Output"), plainHeader("Expected")];
      data.evaluators.forEach(function (n) { cells.push(header(n, "score:" + n, "score-col")); });
      cells.push(header("Status", "status"), header("Latency", "latency"), header("Tokens", "tokens"));
      head.replaceChildren(el.apply(null, ["tr", {}].concat(cells)));
    }
    function row(item) {
      var cells = [el("td", {class: "num", "data-label": "#"}, label(item), item.flaky ? el("span", {class: "badge flaky", title: "passed in some repeats, not all"}, item.flaky) : null),
        el("td", {class: "text", "data-label": "Input"}, short(conversationSummary(item) || item.input, 140)),
        el("td", {class: "text", "data-label": "Output"}, item.status === "ok" ? short((window.cobaltConversation && window.cobaltConversation.summary(item)) || item.output, 180) : el("span", {class: "fail"}, short(item.error, 180))),
        el("td", {class: "text", "data-label": "Expected"}, short(item.expected, 100))];
      data.evaluators.forEach(function (n) {
        var ev = item.evaluations[n];
        cells.push(el("td", {class: "score " + scoreClass(ev, n), "data-label": n, title: ev ? (ev.reason || ev.error || "") : ""},
          ev ? (ev.status === "ok" ? Numbers.score(ev.score) : "eval-error") : UNKNOWN));
      });
      cells.push(el("td", {"data-label": "Status"}, el("span", {class: "badge " + item.status}, item.status)),
        el("td", {class: "num", "data-label": "Latency"}, Numbers.ms(item.latency_ms)),
        el("td", {class: "num", "data-label": "Tokens"}, Numbers.int(item.tokens)));
      return el.apply(null, ["tr", {class: "item-row", tabindex: "0", "data-index": item.index, "data-run-index": item.run_index,
        "aria-label": "item " + label(item) + " (Enter opens it)",
        onclick: function () { onState({item: item.index}); }}].concat(cells));
    }
    var drawn = null;
    function load() {
      drawHead();
      var key = JSON.stringify([q.sort, q.desc, q.q, q.only, q.offset]);
      if (drawn && drawn.key === key) return drawn.promise;
      var source = data.api
        ? getJSON(data.api + "/items?" + new URLSearchParams({offset: q.offset, limit: PER_PAGE, sort: q.sort,
            desc: q.desc ? "1" : "", q: q.q, only: q.only}))
        : localPage(data.items, q);
      var mine = {key: key};
      var promise = source.then(function (page) {
        if (drawn !== mine) return;  // a later change asked for another page: an older answer must not paint over it
        body.replaceChildren.apply(body, page.items.map(row));
        if (!page.items.length) body.append(el("tr", {}, el("td", {colspan: 7 + data.evaluators.length, class: "empty"}, "No item matches.")));
        footer.replaceChildren(pager(q.offset, page.total, function (offset) { change({offset: offset}); }));
      }).catch(function (err) { footer.replaceChildren(el("p", {class: "error-message"}, String(err))); });
      mine.promise = promise;
      drawn = mine;
      return promise;
    }
    function change(changes, replace) {
      if (timer !== null && !("q" in changes)) searchNow();
      Object.keys(changes).forEach(function (k) { q[k] = changes[k]; });
      onState(changes, replace);
    }
    // What the address says now (after Back, or a change): the controls and the table follow it.
    this.follow = function (state, fromAddress) {
      Object.keys(TABLE_DEFAULTS).forEach(function (k) { q[k] = state[k]; });
      // the address changed under the page (Back, a link): the box says what the table shows; while
      // typing, the box is ahead of the table and keeps what was typed
      if (fromAddress || document.activeElement !== search) { clearTimeout(timer); timer = null; search.value = q.q; typingBurst = false; }
      only.value = q.only;
      return load();
    };
    this.state = function () { return q; };
    this.reload = function () { drawn = null; return load(); };
    this.rows = function () { return Array.prototype.slice.call(body.querySelectorAll("tr.item-row")); };
    this.focusSearch = function () { search.focus(); search.select(); };
    this.page = function (step) {
      var next = q.offset + step * PER_PAGE;
      var total = Number((footer.querySelector(".count") || {textContent: "0"}).textContent.split(" of ")[1].replace(/,/g, ""));
      if (next >= 0 && next < total) change({offset: next});
    };
    this.toggleFailures = function () { change({only: q.only === "failures" ? "" : "failures", offset: 0}); };
    root.replaceChildren(el("div", {class: "controls"}, search, only, el("span", {class: "hint"}, "Press ? for keyboard shortcuts")),
      el("div", {class: "table-scroll"}, el("table", {class: "items-table cards", id: "item-table"}, head, body)), footer);
    this.ready = load();  // the first page drawn: an item link opens its detail after it (never above a table still loading)
  }

  // A conversation item's input in the table: its scripted user turns, or the simulated user's goal.
  function conversationSummary(item) {
    var c = (item.item || {}).conversation;
    if (!c || typeof c !== "object") return null;
    if (Array.isArray(c.turns)) return c.turns.map(function (t) { return t && typeof t === "object" ? t.content : t; }).join(" · ");
    return "simulated user: " + (c.goal || "");
  }
  // An item's repeat is `3:1` (index:run_index, as `cobalt show RUN 3:1`) in a run with repeats, else `3`.
  function label(item) { return item.label || String(item.index); }
  function flakyText(repeats) {
    var passed = repeats.filter(function (r) { return !isFailure(r); }).length;
    return passed > 0 && passed < repeats.length ? passed + " of " + repeats.length + " passed" : null;
  }
  function isTraceback(textValue) { return /^Traceback \(most recent call last\)/.test(textValue || ""); }
  function evaluationBlock(name, ev) {
    var parts = [el("h4", {}, name, " ", el("span", {class: "score " + scoreClass(ev, name)}, ev.status === "ok" ? Numbers.score(ev.score) : "eval-error"),
      ev.passed === null || ev.passed === undefined ? null : el("span", {class: "muted"}, ev.passed ? " passed" : " below its pass mark"))];
    if (ev.reason) parts.push(el("p", {class: "reason"}, ev.reason));
    if (ev.error) parts.push(el("p", {class: "fail"}, ev.error));
    var facts = [ev.judge_model ? "judge " + ev.judge_model : null, ev.cached ? "cached" : null, ev.raw_score != null && ev.raw_score !== ev.score ? "raw score " + ev.raw_score : null,
      ev.latency_ms != null ? Numbers.ms(ev.latency_ms) : null, ev.cost_usd != null ? Numbers.usd(ev.cost_usd) : null].filter(Boolean);
    if (facts.length) parts.push(el("p", {class: "muted"}, facts.join(" · ")));
    if (ev.raw_response) {
      // A function evaluator that raised keeps its traceback here: it is not a judge's answer.
      var kind = isTraceback(ev.raw_response) ? "traceback" : ev.judge_model ? "raw judge answer" : "raw value";
      parts.push(el("details", {class: kind === "traceback" ? "evaluator-traceback" : "raw-answer", open: kind === "traceback"},
        el("summary", {}, kind === "traceback" ? name + ": traceback" : kind), el("pre", {class: kind === "traceback" ? "traceback" : "raw"}, ev.raw_response)));
    }
    return el.apply(null, ["div", {class: "evaluation", "data-evaluator": name}].concat(parts));
  }
  var ITEM_FIELDS = [["input", "Input"], ["expected_output", "Expected output"], ["context", "Context"], ["metadata", "Metadata"]];
  // A conversation item's input: the user's scripted turns as messages, or the simulated user's brief.
  function conversationInput(conversation) {
    if (Array.isArray(conversation.turns)) {
      return el.apply(null, ["div", {class: "transcript scripted-input"}].concat(conversation.turns.map(function (t, i) {
        var said = t && typeof t === "object" ? t.content : t;
        var expected = t && typeof t === "object" && t.expected_output !== undefined ? t.expected_output : null;
        return el("div", {class: "turn", "data-turn": i + 1}, el("div", {class: "turn-head"}, el("strong", {}, "turn " + (i + 1))),
          el("div", {class: "message user"}, el("span", {class: "role"}, "user"), el("div", {class: "content"}, text(said))),
          expected === null ? null : el("p", {class: "muted expected"}, "expected: " + text(expected)));
      })));
    }
    var list = el("dl", {class: "item-other simulated-input"});
    [["goal", "goal"], ["persona", "persona"], ["opening", "opening"], ["max_turns", "at most"]].forEach(function (f) {
      var v = conversation[f[0]];
      if (v !== undefined && v !== null) list.append(el("dt", {}, f[1]), el("dd", {}, f[0] === "max_turns" ? v + " turns" : text(v)));
    });
    return list;
  }
  function itemFields(item) {
    var own = item.item || {};
    var section = el("section", {class: "item-fields"});
    var conversation = own.conversation && typeof own.conversation === "object" && !Array.isArray(own.conversation) ? own.conversation : null;
    if (conversation) section.append(el("h4", {}, "Conversation (the user's side)"), conversationInput(conversation));
    ITEM_FIELDS.forEach(function (f) {
      if (conversation && f[0] === "input" && own.input === undefined) return;  // the conversation is its input
      var value = f[0] === "input" ? (own.input !== undefined ? own.input : item.input) : f[0] === "expected_output" ? (own.expected_output !== undefined ? own.expected_output : item.expected) : own[f[0]];
      if (value === null || value === undefined || (typeof value === "object" && !Object.keys(value).length)) return;
      section.append(el("h4", {}, f[1]), el("pre", {class: f[0] === "input" ? "input" : f[0] === "expected_output" ? "expected" : "item-" + f[0]}, text(value)));
    });
    var rest = Object.keys(own).filter(function (k) { return ["input", "expected_output", "context", "metadata", conversation ? "conversation" : ""].indexOf(k) < 0; });
    if (rest.length) {
      var list = el("dl", {class: "item-other"});
      rest.forEach(function (k) { list.append(el("dt", {}, k), el("dd", {}, short(own[k], 400))); });
      section.append(el("h4", {}, "Other fields"), list);
    }
    return section;
  }
  function repeatColumn(item) {
    var col = el("div", {class: "repeat", "data-run-index": item.run_index},
      el("h3", {}, "#" + label(item), " ", el("span", {class: "badge " + item.status}, item.status)),
      el("p", {class: "muted"}, "latency " + Numbers.ms(item.latency_ms) + " · tokens " + Numbers.int(item.tokens) +
        " · cost " + Numbers.usd(item.cost_usd)));
    // What was made first (the output, or the failed call's error), then the person's label of it, then what it
    // was asked and expected, then the evaluators' verdicts in the experiment's order.
    if (item.error) col.append(el("h4", {}, "Error"), el("pre", {class: "fail error"}, item.error));
    if (item.traceback) col.append(el("details", {open: true}, el("summary", {}, "Agent traceback"), el("pre", {class: "traceback"}, item.traceback)));
    if (item.status === "ok" || item.output !== null) {
      col.append(el("h4", {}, "Output"), (window.cobaltConversation && window.cobaltConversation.transcript(item)) || el("pre", {class: "output"}, text(item.output)));
    }
    if (item.run_index === 0 || item.run_index === undefined) col.append(el("div", {class: "label-slot"}));  // labels.js
    col.append(itemFields(item));
    col.append(el("h4", {}, "Evaluations"));
    var declared = (data.evaluators || []).filter(function (n) { return n in item.evaluations; });
    declared.concat(Object.keys(item.evaluations).filter(function (n) { return declared.indexOf(n) < 0; }))
      .forEach(function (n) { col.append(evaluationBlock(n, item.evaluations[n])); });
    if (item.trace && item.trace.length && window.cobaltTrace) col.append(window.cobaltTrace(item.trace));  // trace.js
    if (Object.keys(item.metadata || {}).length) col.append(el("h4", {}, "Reported by the agent"), el("pre", {class: "metadata"}, text(item.metadata)));
    return col;
  }
  function showDetail(index, repeats, onClose) {
    var panel = document.getElementById("detail");
    var close = el("button", {type: "button", class: "close", "aria-label": "close the item (Escape)", onclick: onClose}, "close ✕");
    var flaky = flakyText(repeats);
    var head = el("div", {class: "detail-head"}, el("h2", {tabindex: "-1"}, "Item #" + index,
      flaky ? el("span", {class: "badge flaky", title: "passed in some repeats, not all"}, "flaky: " + flaky) : null), close);
    if (!repeats.length) { panel.replaceChildren(head, el("p", {}, "This run has no item " + index + ".")); }
    else panel.replaceChildren(head, el.apply(null, ["div", {class: "repeats n" + Math.min(repeats.length, 4)}].concat(repeats.map(repeatColumn))));
    panel.hidden = false;
    panel.scrollIntoView({block: "start"});
    panel.querySelector("h2").focus({preventScroll: true});
    panel.dispatchEvent(new CustomEvent("cobalt:detail", {detail: {index: index, repeats: repeats}}));  // labels.js
  }

  function RunPage() {
    var table;
    var shown = null;  // the item whose detail is open
    function apply(state, fromAddress) {
      table.follow(state, fromAddress).then(function () {
        if (state.item === shown) return;
        var panel = document.getElementById("detail");
        if (state.item === null) {
          panel.hidden = true;
          var back = document.querySelector("#item-table tr.item-row[data-index='" + shown + "']");
          shown = null;
          if (back) back.focus();
          return;
        }
        var index = state.item;
        shown = index;
        var source = data.api ? getJSON(data.api + "/items/" + index)
          : Promise.resolve(data.items.filter(function (i) { return i.index === index; }));
        source.then(function (repeats) { if (shown === index) showDetail(index, repeats, function () { onState({item: null}); }); });
      });
    }
    function onState(changes, replace) {
      var state = readState(TABLE_DEFAULTS);
      Object.keys(TABLE_DEFAULTS).forEach(function (k) { state[k] = table.state()[k]; });
      Object.keys(changes).forEach(function (k) { state[k] = changes[k]; });
      writeState(state, TABLE_DEFAULTS, replace);
      apply(state);
    }
    table = new ItemTable(document.getElementById("items"), onState);
    window.addEventListener("popstate", function () { apply(readState(TABLE_DEFAULTS), true); });
    window.addEventListener("hashchange", function () { apply(readState(TABLE_DEFAULTS), true); });
    apply(readState(TABLE_DEFAULTS), true);
    rowKeys(table.rows, function (tr) { onState({item: Number(tr.getAttribute("data-index"))}); }, "item");
    shortcut(["/"], "search the items", function () { table.focusSearch(); });
    shortcut(["f"], "failures only, or all items again", function () { table.toggleFailures(); });
    // In an open item: the next or previous row of the table (its row takes the focus, so Escape lands there).
    function sibling(step) {
      var rows = table.rows();
      var at = rows.findIndex(function (r) { return Number(r.getAttribute("data-index")) === shown; });
      if (at < 0) return;
      var next = rows[at];  // a run with repeats has a row per repeat: the next row of another item
      while (next && Number(next.getAttribute("data-index")) === shown) { at += step; next = rows[at]; }
      if (!next) return;
      next.focus({preventScroll: true});
      onState({item: Number(next.getAttribute("data-index"))});
    }
    shortcut(["n", "]"], "next page; in an open item, the next item", function () { if (shown !== null) sibling(1); else table.page(1); });
    shortcut(["p", "["], "previous page; in an open item, the previous item", function () { if (shown !== null) sibling(-1); else table.page(-1); });
    shortcut(["Escape"], "close the item, leave the search", function () {});
    escapes.push(function () { if (shown === null) return false; onState({item: null}); return true; });
    return table;
  }

  function live(table) {
    var seen = data.counts;  // what the page was drawn with
    setInterval(function () {
      getJSON(data.api + "/live").then(function (now) {
        document.querySelectorAll("[data-live]").forEach(function (node) {
          var value = now[node.getAttribute("data-live")];
          if (value !== undefined) node.textContent = typeof value === "number" ? Numbers.int(value) : value;
        });
        if (now.status !== "running") { location.reload(); return; }
        var key = now.done + "/" + now.scored;
        if (key !== seen) table.reload();
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
    var scores = el("table", {class: "pair-scores cards"}, el("thead", {}, el("tr", {}, el("th", {}, "Evaluator"), el("th", {}, "A"), el("th", {}, "B"),
      el("th", {}, "B − A"), el("th", {}, "A's reason"), el("th", {}, "B's reason"))));
    r.evaluators.forEach(function (e) {
      scores.append(el("tr", {class: e.gain < 0 ? "regressed" : e.gain > 0 ? "improved" : ""}, el("td", {"data-label": "Evaluator"}, e.name),
        el("td", {"data-label": "A"}, Numbers.score(e.a)), el("td", {"data-label": "B"}, Numbers.score(e.b)),
        el("td", {"data-label": "B − A"}, Numbers.delta(e.delta)),
        el("td", {class: "reason", "data-label": "A's reason"}, e.reason_a || ""), el("td", {class: "reason", "data-label": "B's reason"}, e.reason_b || "")));
    });
    return el("article", {class: "pair " + change, tabindex: "0", "data-index": r.index, "data-change": r.change},
      el("h3", {}, "Item #" + r.index + (r.index_a !== r.index ? " (#" + r.index_a + " in A)" : "") + " ", el("span", {class: "badge " + change}, change +
        (r.change ? " " + Numbers.delta(r.change) : "")),
        r.status_a !== r.status_b ? el("span", {class: "fail"}, " agent call " + r.status_a + " → " + r.status_b) : null,
        r.output_changed ? el("span", {class: "muted"}, " · output changed") : null,
        r.diverged ? el("span", {class: "badge diverged", "data-turn": r.diverged}, "diverged at turn " + r.diverged) : null,
        r.flaky_a ? el("span", {class: "badge flaky"}, "A flaky: " + r.flaky_a) : null,
        r.flaky_b ? el("span", {class: "badge flaky"}, "B flaky: " + r.flaky_b) : null),
      el("p", {class: "input"}, el("b", {}, "Input: "), short(r.input, 300)),
      scores,
      r.changed || r.output_changed ? outputs : el("details", {}, el("summary", {}, "outputs (the same in both runs)"), outputs));
  }
  var COMPARE_DEFAULTS = {all: false, offset: 0, unpaired: 0};
  function CompareList(root, unpairedRoot) {
    var q = readState(COMPARE_DEFAULTS);
    var list = el("div", {class: "pairs"});
    var footer = el("div", {class: "table-footer"});
    var note = el("span", {class: "muted", id: "unchanged-note"});
    var changed = el("input", {type: "checkbox", id: "changed-only", checked: !q.all,
      onchange: function () { move({all: !changed.checked, offset: 0}); }});
    var unpairedBody = el("tbody"), unpairedFooter = el("div", {class: "table-footer"});
    function rows(page) {
      if (data.api) return getJSON(data.api + "&" + new URLSearchParams({offset: page.offset, limit: PER_PAGE, changed: page.changed ? "1" : ""}));
      var chosen = page.changed ? data.rows.filter(function (r) { return r.changed; }) : data.rows;
      return Promise.resolve({total: chosen.length, unchanged: data.rows.length - data.rows.filter(function (r) { return r.changed; }).length,
        rows: chosen.slice(page.offset, page.offset + PER_PAGE)});
    }
    function unpaired(offset) {
      if (data.api) return getJSON(data.api + "&" + new URLSearchParams({offset: offset, limit: PER_PAGE, list: "unpaired"}));
      return Promise.resolve({total: data.unpaired.length, rows: data.unpaired.slice(offset, offset + PER_PAGE)});
    }
    var summarized = false;
    // The statistics come after the first rows (the paired bootstrap takes the longest): the server's own
    // rendered, escaped markup (run data in it is text), put in its place once.
    function summary() {
      var box = document.getElementById("compare-summary");
      if (summarized || !box || !data.summary) return;
      summarized = true;
      fetch(data.summary, {headers: {"Accept": "text/html"}}).then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status + " from " + data.summary);
        return r.text();
      }).then(function (html) {
        var parsed = new DOMParser().parseFromString(html, "text/html");  // inert: nothing in it runs
        labelCards(parsed.body);
        box.replaceChildren.apply(box, Array.prototype.slice.call(parsed.body.childNodes));
      }).catch(function (err) { box.replaceChildren(el("p", {class: "error-message"}, String(err))); });
    }
    function load() {
      changed.checked = !q.all;
      rows({offset: q.offset, changed: !q.all}).then(function (page) {
        var count = document.getElementById("changed-count");
        if (count && page.changed !== undefined) count.textContent = "(" + Numbers.int(page.changed) + " of " +
          Numbers.int(page.changed + page.unchanged) + " changed; regressions first)";
        var section = document.getElementById("unpaired-section");
        if (section && page.unpaired_total) {
          section.hidden = false;
          document.getElementById("unpaired-count").textContent = "(" + Numbers.int(page.unpaired_total) + ")";
        }
        summary();
        list.replaceChildren.apply(list, page.rows.map(compareRow));
        if (!page.rows.length) list.append(el("p", {class: "empty"}, "No paired item" + (!q.all ? " changed." : ".")));
        note.textContent = page.unchanged ? "(" + Numbers.int(page.unchanged) + " unchanged " + (q.all ? "shown" : "hidden") + ")" : "";
        footer.replaceChildren(pager(q.offset, page.total, function (offset) { move({offset: offset}); }));
      }).catch(function (err) { footer.replaceChildren(el("p", {class: "error-message"}, String(err))); });
      if (unpairedRoot) {
        unpaired(q.unpaired).then(function (page) {
          unpairedBody.replaceChildren.apply(unpairedBody, page.rows.map(function (u) {
            return el("tr", {}, el("td", {"data-label": "Item"}, "#" + u.index), el("td", {"data-label": "Identity"}, u.item_id), el("td", {"data-label": "Why"}, u.reason));
          }));
          unpairedFooter.replaceChildren(pager(q.unpaired, page.total, function (offset) { move({unpaired: offset}); }));
        });
      }
    }
    function move(changes) {
      Object.keys(changes).forEach(function (k) { q[k] = changes[k]; });
      q.item = null;
      writeState(q, COMPARE_DEFAULTS);
      load();
    }
    window.addEventListener("popstate", function () { q = readState(COMPARE_DEFAULTS); load(); });
    root.replaceChildren(el("div", {class: "controls"}, el("label", {}, changed, " changed items only"), note), list, footer);
    if (unpairedRoot) unpairedRoot.replaceChildren(el("table", {class: "unpaired cards", id: "unpaired"},
      el("thead", {}, el("tr", {}, el("th", {}, "Item"), el("th", {}, "Identity"), el("th", {}, "Why"))), unpairedBody), unpairedFooter);
    load();
    rowKeys(function () { return Array.prototype.slice.call(list.querySelectorAll(".pair")); },
      function (pair) { var d = pair.querySelector("details"); if (d) d.open = !d.open; }, "item");
    shortcut(["c"], "changed items only, or every item", function () { move({all: !q.all, offset: 0}); });
    shortcut(["n", "]"], "next page", function () { var b = footer.querySelector(".next"); if (b && !b.disabled) b.click(); });
    shortcut(["p", "["], "previous page", function () { var b = footer.querySelector(".prev"); if (b && !b.disabled) b.click(); });
  }

  // ---- the runs list -----------------------------------------------------------------------
  function RunPicker() {
    var form = document.getElementById("pick");
    if (!form) return;
    var button = document.getElementById("compare-picked");
    function update() { button.disabled = form.querySelectorAll("input[name=run]:checked").length !== 2; }
    form.addEventListener("change", update);
    function rowsOf() { return Array.prototype.slice.call(document.querySelectorAll("#runs tbody tr")); }
    rowsOf().forEach(function (tr) { tr.setAttribute("tabindex", "0"); });
    rowKeys(rowsOf, function (tr) { var a = tr.querySelector("a.run-link"); if (a) a.click(); }, "run");
    shortcut(["x"], "pick the run (two picked: compare them)", function () {
      var tr = document.activeElement, box = tr && tr.querySelector && tr.querySelector("input[name=run]");
      if (box) { box.checked = !box.checked; update(); }
    });
  }

  if (data.page === "run") {
    var table = RunPage();
    if (data.live && data.api) live(table);
  } else if (data.page === "compare") {
    CompareList(document.getElementById("compare-items"), document.getElementById("unpaired-list"));
  } else if (data.page === "trace") {  // a production trace's page: its span tree as an item's detail draws it
    var spans = document.getElementById("trace-spans");
    if (spans && data.spans && data.spans.length && window.cobaltTrace) spans.append(window.cobaltTrace(data.spans));
  } else if (data.page === "runs") {
    RunPicker();
    if (data.refresh) setTimeout(function () { location.reload(); }, 5000);
  }
})();
