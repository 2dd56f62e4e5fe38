// Growing a regression set from the run page: the item detail's "add to dataset" box posts
// POST /api/runs/RUN/items/N/dataset with the CSRF token of GET /api/csrf (docs/datasets.md); a production
// trace's page posts its "Add to dataset" form to POST /api/traces/TRACE/dataset (docs/monitors.md).
// Every value is inserted as text, never as HTML.
(function () {
  "use strict";
  var block = document.getElementById("cobalt-data");
  var detail = document.getElementById("detail");
  var form = document.getElementById("trace-dataset-form");
  if (!block || !(detail || form)) return;
  var data = JSON.parse(block.textContent);
  if ((data.page !== "run" && data.page !== "trace") || !data.api) return;  // a report file cannot write
  var token = null;

  function el() { return window.cobaltEl.apply(null, arguments); }
  function csrf() {
    if (token) return Promise.resolve(token);
    return fetch("/api/csrf", {headers: {"Accept": "application/json"}}).then(function (r) { return r.json(); })
      .then(function (t) { token = t.token; return token; });
  }
  function remembered(key) { try { return window.localStorage.getItem(key) || ""; } catch (e) { return ""; } }
  function remember(key, value) { try { window.localStorage.setItem(key, value); } catch (e) { /* private mode */ } }

  function add(index, name, status) {
    status.textContent = "adding…";
    remember("cobalt.dataset", name);
    return csrf().then(function (t) {
      return fetch(data.api + "/items/" + index + "/dataset", {method: "POST", headers: {
        "Content-Type": "application/json", "X-CSRF-Token": t, "Accept": "application/json"},
        body: JSON.stringify({dataset: name, who: remembered("cobalt.labeller")})});
    }).then(function (r) {
      return r.json().then(function (body) { if (!r.ok) throw new Error(body.error || "HTTP " + r.status); return body; });
    }).then(function (body) {
      status.textContent = body.created ? "added: " + body.version.dataset + "@" + body.version.version
        : "already in " + body.version.dataset + "@" + body.version.version;
    }).catch(function (err) { status.textContent = "not added: " + (err.message || err); });
  }

  function post(url, body) {
    return csrf().then(function (t) {
      return fetch(url, {method: "POST", headers: {
        "Content-Type": "application/json", "X-CSRF-Token": t, "Accept": "application/json"}, body: JSON.stringify(body)});
    }).then(function (r) {
      return r.json().then(function (answer) { if (!r.ok) throw new Error(answer.error || "HTTP " + r.status); return answer; },
        function () { throw new Error("HTTP " + r.status); });
    });
  }

  if (data.page === "trace") {
    var status = form.querySelector(".dataset-status");
    form.elements.dataset.value = remembered("cobalt.dataset");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var name = form.elements.dataset.value.trim();
      if (!name) { form.elements.dataset.focus(); return; }
      remember("cobalt.dataset", name);
      status.textContent = "adding…";
      post(data.api, {dataset: name, expected: form.elements.expected.value, who: remembered("cobalt.labeller")})
        .then(function (body) {
          status.textContent = (body.added ? "added " + body.item + " to " : body.item + " is already in ") + body.where;
        }).catch(function (err) { status.textContent = "not added: " + (err.message || err); });
    });
    return;
  }

  detail.addEventListener("cobalt:detail", function (event) {
    var index = event.detail.index;
    var old = detail.querySelector(".dataset-add");
    if (old) old.remove();
    var name = el("input", {type: "text", class: "dataset-name", placeholder: "dataset name", "aria-label": "dataset name"});
    name.value = remembered("cobalt.dataset");
    var status = el("span", {class: "dataset-status", role: "status"});
    var button = el("button", {type: "button", class: "dataset-button", onclick: function () {
      if (name.value.trim()) add(index, name.value.trim(), status); else name.focus();
    }}, "add to dataset");
    name.addEventListener("keydown", function (e) { if (e.key === "Enter") { e.preventDefault(); button.click(); } });
    detail.append(el("section", {class: "dataset-add card", "data-index": index},
      el("h3", {}, "Add this item to a dataset"), el("p", {}, name, " ", button, " ", status)));
  });
})();
