// cobalt's labelling: a person's label per evaluator on an item's detail, by mouse or keyboard.
// The only write the pages make: POST /api/runs/RUN/items/N/label with the CSRF token of GET /api/csrf.
// Every value is inserted as text, never as HTML.
(function () {
  "use strict";
  var block = document.getElementById("cobalt-data");
  var bar = document.getElementById("labelling");
  if (!block || !bar) return;
  var data = JSON.parse(block.textContent);
  if (data.page !== "run" || !data.api) return;  // a report file cannot write

  // One meaning per key on every scale: a key is its value's digit (1 the top, pass; 0 the bottom, fail),
  // 0.25, 0.5 and 0.75 their first decimal; -3..3 takes `-` before a digit for a negative value.
  var OPTIONS = {
    "pass/fail": [{value: 0, text: "fail", key: "0"}, {value: 1, text: "pass", key: "1"}],
    "0..1": [[0, "0"], [0.25, "2"], [0.5, "5"], [0.75, "7"], [1, "1"]].map(function (o) { return {value: o[0], text: String(o[0]), key: o[1]}; }),
    "-3..3": [-3, -2, -1, 0, 1, 2, 3].map(function (v) {
      return {value: v, text: (v > 0 ? "+" : "") + v, key: v < 0 ? "-" + (-v) : String(v)};
    })
  };
  var state = {scales: {}, labels: {}, target: 50, active: null, order: [], index: null, minus: false, token: null,
               queue: false, hash: null, open: {}};
  var select = document.getElementById("label-evaluator");
  var progress = document.getElementById("label-progress");

  // pages.js's element builder (it loads after this file: asked at call time, by then it is there)
  function el() { return window.cobaltEl.apply(null, arguments); }
  function getJSON(url) {
    return fetch(url, {headers: {"Accept": "application/json"}}).then(function (r) {
      return r.json().then(function (body) { if (!r.ok) throw new Error(body.error || "HTTP " + r.status); return body; });
    });
  }
  function token() {
    if (state.token) return Promise.resolve(state.token);
    return getJSON("/api/csrf").then(function (t) { state.token = t.token; return t.token; });
  }
  function shown(scale, value) {
    if (value === null || value === undefined) return "not labelled";
    if (scale === "pass/fail") return value >= 1 ? "pass" : "fail";
    if (scale === "-3..3") return (value > 0 ? "+" : "") + value;
    return String(value);
  }
  function labelOf(index, name) { return (state.labels[String(index)] || {})[name] || null; }

  // The order is kept from when labelling started (or the evaluator changed): a label just set moves its
  // item to the end of the server's queue, and `n` must still walk on from where the person is.
  function loadQueue(reorder) {
    if (!state.active) return Promise.resolve();
    return getJSON(data.api + "/queue?" + new URLSearchParams({evaluator: state.active})).then(function (q) {
      if (reorder || !state.order.length) state.order = q.order;
      progress.textContent = q.progress + " labelled for " + state.active + " (scale " + q.scale + ")";
    }).catch(function (err) { progress.textContent = String(err.message || err); });
  }
  function start() {  // the first item of the queue: unlabelled first, spread across the score range
    state.queue = true;  // from now on n and b walk the queue (else they are the pages' next and previous item)
    loadQueue(true).then(function () { if (state.order.length) go(state.order[0]); });
  }
  function go(index) { location.hash = "#item=" + index; }
  function step(by) {
    if (state.index === null) { start(); return; }
    var at = state.order.indexOf(state.index);
    var next = state.order[at + by];
    if (next !== undefined) go(next);
    else if (by > 0) start();  // past the end: the queue again, unlabelled items first
  }

  // Who labels: asked once, kept in this browser; empty leaves it to the server (COBALT_USER, [user] name,
  // git's user.email, the account).
  function labeller() {
    var who = null;
    try { who = window.localStorage.getItem("cobalt.labeller"); } catch (e) { return ""; }
    if (who === null) {
      who = (window.prompt("Your name, kept with each label you set (leave empty for this machine's user):") || "").trim();
      try { window.localStorage.setItem("cobalt.labeller", who); } catch (e) { /* private mode: ask again */ }
    }
    return who;
  }

  function save(index, name, value, note) {
    var box = document.querySelector('.label-widget[data-evaluator="' + CSS.escape(name) + '"] .label-status');
    if (box) box.textContent = "saving…";
    var who = labeller();
    return token().then(function (t) {
      return fetch(data.api + "/items/" + index + "/label", {method: "POST", headers: {"Content-Type": "application/json",
        "X-CSRF-Token": t, "Accept": "application/json"},
        body: JSON.stringify({evaluator: name, value: value, note: note, who: who})});
    }).then(function (r) {
      return r.json().then(function (body) { if (!r.ok) throw new Error(body.error || "HTTP " + r.status); return body; });
    }).then(function (body) {
      var labels = state.labels[String(index)] = state.labels[String(index)] || {};
      if (body.label) labels[name] = body.label; else delete labels[name];
      state.open[name] = false;
      if (state.index === index) draw(); else mark();
      loadQueue();
    }).catch(function (err) { if (box) box.textContent = "not saved: " + (err.message || err); });
  }

  function widget(name) {
    var scale = state.scales[name];
    var current = labelOf(state.index, name);
    var note = el("textarea", {class: "label-note", rows: 2, placeholder: "note: why this label (Enter saves)"});
    note.value = current ? current.note : "";
    note.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        var now = labelOf(state.index, name);
        if (now) save(state.index, name, now.value, note.value);
        note.blur();
      } else if (event.key === "Escape") note.blur();
    });
    var buttons = OPTIONS[scale].map(function (o) {
      var on = current && current.value === o.value;
      return el("button", {type: "button", class: "label-option" + (on ? " chosen" : ""), "aria-pressed": on ? "true" : "false",
        "data-value": o.value, title: "key " + o.key,
        onclick: function () { state.active = name; select.value = name; save(state.index, name, o.value, note.value); }},
        o.text, el("kbd", {}, o.key));
    });
    var status = current ? "labelled " + shown(scale, current.value) + (current.who ? " by " + current.who : "") +
      " · " + String(current.set_at).slice(0, 16).replace("T", " ") : "not labelled";
    // The store keeps the output a label was set on: another answer (a re-run, a failed call) is not what it judged.
    var stale = current && current.output_hash && state.hash !== null && current.output_hash !== state.hash;
    var earlier = stale ? el("span", {class: "label-stale warning", title: "set on run " + current.run_id + ", whose answer differs from this one"},
      "set on an earlier answer" + (current.run_id && current.run_id !== data.run_id ? " (run " + current.run_id + ")" : "")) : null;
    var keys = OPTIONS[scale].map(function (o) { return o.key + " " + o.text; }).join(" · ");
    if (current && !state.open[name]) {  // set: one line, its value, who, when, and a way to change it
      return el("div", {class: "label-widget set" + (name === state.active ? " active" : ""), "data-evaluator": name, "data-scale": scale,
        "data-value": current.value},
        el("p", {class: "label-line"}, el("b", {}, name), " ", el("span", {class: "label-status"}, status), " ",
          current.note ? el("span", {class: "label-note-text muted", title: "the note"}, current.note) : null, " ", earlier, " ",
          el("button", {type: "button", class: "label-change", title: "keys: " + keys,
            onclick: function () { state.open[name] = true; state.active = name; select.value = name; draw(); }}, "change"),
          el("button", {type: "button", class: "label-clear", onclick: function () { save(state.index, name, null, ""); }}, "clear")));
    }
    return el("div", {class: "label-widget" + (name === state.active ? " active" : ""), "data-evaluator": name, "data-scale": scale,
      "data-value": current ? current.value : null},
      el("h4", {}, "Your label · " + name + " ", el("span", {class: "muted"}, "(" + scale + "; keys " + keys + ")")),
      el.apply(null, ["div", {class: "label-options"}].concat(buttons)),
      note,
      el("p", {class: "label-status muted"}, status, earlier ? " " : null, earlier,
        current ? el("button", {type: "button", class: "label-clear", onclick: function () { save(state.index, name, null, ""); }}, "clear") : null));
  }
  // The item table marks the items labelled for the active evaluator (its rows are redrawn on every page,
  // sort and search, so they are marked again whenever they change).
  function mark() {
    document.querySelectorAll("#item-table tr.item-row").forEach(function (row) {
      var old = row.querySelector(".label-mark");
      if (old) old.remove();
      var label = labelOf(row.getAttribute("data-index"), state.active);
      if (label && row.getAttribute("data-run-index") === "0") {
        row.cells[0].append(el("span", {class: "label-mark", title: "labelled " + shown(state.scales[state.active],
          label.value) + " for " + state.active}, "✓"));
      }
    });
  }
  function draw() {
    mark();
    var panel = document.getElementById("detail");
    var old = panel.querySelector(".labels-panel");
    var names = Object.keys(state.scales);
    if (!names.length || state.index === null) return;
    var box = el.apply(null, ["section", {class: "labels-panel", "data-index": state.index}].concat(names.map(widget)));
    var slot = panel.querySelector(".label-slot");  // pages.js leaves it after the output the label judges
    if (old) old.replaceWith(box); else if (slot) slot.append(box); else panel.querySelector(".detail-head").after(box);
  }

  function labelKeys(names) {
    var rows = names.map(function (name) {
      return [OPTIONS[state.scales[name]].map(function (o) { return o.key; }).join(" "), name + " (" + state.scales[name] + "): " +
        OPTIONS[state.scales[name]].map(function (o) { return o.key + " " + o.text; }).join(", ")];
    });
    return rows.concat([["-", "before a digit: a negative value (-3..3)"], ["e", "the next evaluator"], ["/", "write a note (Enter saves it)"],
      ["x", "clear the label"], ["q", "label the queue: unlabelled items first"], ["n / b", "while labelling the queue: its next, its previous item"]]);
  }
  function digit(scale, key) {
    if (!/^[0-9]$/.test(key)) return null;
    var n = Number(key);
    if (scale !== "-3..3") {
      var option = OPTIONS[scale].filter(function (o) { return o.key === key; })[0];
      return option ? option.value : null;
    }
    if (n > 3) return null;
    var value = state.minus ? -n : n;
    state.minus = false;
    return value;
  }
  // In the capture phase, before the pages' own shortcuts (n: next page, /: search, x): while an item is
  // open for labelling its keys are the labelling's, and the pages never see them.
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) return;
    var open = state.index !== null && !document.getElementById("detail").hidden;
    var scale = state.scales[state.active];
    if (event.key === "q") { start(); event.preventDefault(); event.stopImmediatePropagation(); return; }
    if (!open || !scale) return;
    var note = function () {
      var w = document.querySelector('.label-widget[data-evaluator="' + CSS.escape(state.active) + '"] .label-note');
      return w ? w.value : "";
    };
    if (event.key === "n" && state.queue) step(1);
    else if (event.key === "b" && state.queue) step(-1);
    else if (event.key === "n" || event.key === "b") return;  // not labelling the queue: the pages' next item
    else if (event.key === "e") {
      var names = Object.keys(state.scales);
      state.active = names[(names.indexOf(state.active) + 1) % names.length];
      select.value = state.active;
      state.minus = false;
      draw();
      loadQueue(true);
    } else if (event.key === "/") {
      var w = document.querySelector('.label-widget[data-evaluator="' + CSS.escape(state.active) + '"] .label-note');
      if (w) w.focus();
    } else if (event.key === "x") save(state.index, state.active, null, "");
    else if (event.key === "-" && scale === "-3..3") state.minus = true;
    else {
      var value = digit(scale, event.key);
      if (value === null) return;
      save(state.index, state.active, value, note());
    }
    event.preventDefault();
    event.stopImmediatePropagation();
  }, true);
  var table = document.getElementById("items");
  if (table) new MutationObserver(function (changes) {
    if (changes.some(function (c) { return c.target.tagName === "TBODY"; })) mark();
  }).observe(table, {childList: true, subtree: true});
  document.getElementById("detail").addEventListener("cobalt:detail", function (event) {
    state.index = event.detail.index;
    var first = event.detail.repeats[0];
    state.hash = first && first.output_hash !== undefined ? first.output_hash : null;
    state.open = {};
    state.minus = false;
    draw();
  });
  select.addEventListener("change", function () { state.active = select.value; draw(); loadQueue(true); });
  document.getElementById("label-start").addEventListener("click", start);

  getJSON(data.api + "/labels").then(function (found) {
    state.labels = found.labels;
    state.target = found.target;
    data.evaluators.forEach(function (name) { if (found.scales[name]) state.scales[name] = found.scales[name]; });
    var names = Object.keys(state.scales);
    if (!names.length) return;
    names.forEach(function (name) { select.append(el("option", {value: name}, name + " (" + state.scales[name] + ")")); });
    state.active = names[0];
    window.cobaltLabelKeys = labelKeys(names);  // pages.js lists them on `?`
    bar.hidden = false;
    draw();
    loadQueue();
  }).catch(function (err) { progress.textContent = String(err.message || err); bar.hidden = false; });
})();
