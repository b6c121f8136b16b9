// The audit page's live progress: progressive enhancement only. Without this file the page
// refreshes itself while the audit runs (<noscript><meta refresh>).
(function () {
  "use strict";

  // Poll the audit's progress (a small JSON in the page's language) and update the bar and
  // its words in place; reload once the audit is done (to show its results and chart) or
  // failed (its uploaded files were refused: the page lists why).
  function pollAudit() {
    var box = document.getElementById("audit-progress");
    if (!box || !box.dataset.poll) return;
    var bar = document.getElementById("audit-progress-bar");
    var failures = 0;
    var show = function (body) {
      bar.max = body.total;
      bar.value = body.finished;
      bar.textContent = body.text.finished + " / " + body.text.total;
      var fields = box.querySelectorAll("[data-field]");
      for (var i = 0; i < fields.length; i++) {
        var name = fields[i].getAttribute("data-field");
        if (name in body.text) fields[i].textContent = body.text[name];
      }
      box.setAttribute("data-status", body.status);
    };
    var tick = function () {
      fetch(box.dataset.poll, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (body) {
          if (!body) throw new Error("no progress");
          failures = 0;
          show(body);
          if (body.status === "done" || body.status === "failed") window.location.reload();
          else setTimeout(tick, 500);
        })
        .catch(function () {
          // The server is unreachable for now: after a few tries, fall back to reloading.
          failures += 1;
          if (failures > 5) window.location.reload();
          else setTimeout(tick, 2000);
        });
    };
    setTimeout(tick, 300);
  }

  document.addEventListener("DOMContentLoaded", pollAudit);
})();
