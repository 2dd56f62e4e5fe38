// The run-group page: "only items where the variants differ" hides the items every variant answered alike.
(function () {
  "use strict";
  var box = document.getElementById("only-differs");
  var list = document.getElementById("side-by-side");
  if (!box || !list) { return; }
  box.addEventListener("change", function () {
    list.classList.toggle("only-differs", box.checked);
  });
})();
