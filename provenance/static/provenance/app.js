// Progressive enhancement only: every page works without this file.
(function () {
  "use strict";

  // While a check is scoring, poll its API and reload as soon as it finishes (faster
  // than the <meta refresh> fallback, which this cancels by reloading first).
  function pollCheck() {
    var box = document.getElementById("check-status");
    if (!box || !box.dataset.poll) return;
    var url = box.dataset.poll;
    var tick = function () {
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (body) {
          if (body && (body.status === "done" || body.status === "failed")) {
            window.location.reload();
          } else {
            setTimeout(tick, 250);
          }
        })
        .catch(function () { setTimeout(tick, 1000); });
    };
    setTimeout(tick, 150);
  }

  // Show the hovered or focused token's details in a line under the heatmap.
  function tokenInfo() {
    var map = document.getElementById("heatmap");
    var info = document.getElementById("token-info");
    if (!map || !info) return;
    var show = function (event) {
      var el = event.target;
      if (el && el.classList && el.classList.contains("tok")) info.textContent = el.title;
    };
    map.addEventListener("mouseover", show);
    map.addEventListener("focusin", show);
  }

  // "Print" buttons (hidden without this file: the browser's own print works anyway).
  function printButtons() {
    var buttons = document.querySelectorAll("[data-print]");
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].hidden = false;
      buttons[i].addEventListener("click", function () { window.print(); });
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    pollCheck();
    tokenInfo();
    printButtons();
  });
})();
