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

  // The heatmap: the page carries the plain text (readable without this script) and, in
  // data-tokens, three numbers per token: the gap from the previous token's end, its length
  // (both in characters of the stored text) and its score in hundredths, -1 when skipped
  // (provenance/checks/heatmap.py). One compact string instead of 45k server-rendered spans
  // with titles keeps a 190 kB text's page under 1 MB.
  function decode(map) {
    var text = map.textContent;
    var nums = map.dataset.tokens.split(",");
    var n = Math.floor(nums.length / 3);
    var t = { text: text, n: n, width: +map.dataset.width || 0,
      starts: new Int32Array(n), ends: new Int32Array(n), scores: new Int32Array(n) };
    var units = codeUnits(text);
    var cursor = 0;
    for (var i = 0; i < n; i++) {
      var start = cursor + +nums[3 * i];
      var end = start + +nums[3 * i + 1];
      cursor = end;
      t.starts[i] = units ? units[start] : start;
      t.ends[i] = units ? units[end] : end;
      t.scores[i] = +nums[3 * i + 2];
    }
    return t;
  }

  // Offsets count code points (Python); a JS string counts UTF-16 units: map them when the
  // text holds characters outside the BMP (emoji), else use the offsets as they are.
  function codeUnits(text) {
    if (!/[\uD800-\uDFFF]/.test(text)) return null;
    var units = [];
    for (var u = 0; u < text.length; u++) {
      units.push(u);
      var c = text.charCodeAt(u);
      if (c >= 0xd800 && c <= 0xdbff && u + 1 < text.length) u++;
    }
    units.push(text.length);
    return units;
  }

  function bucket(score, edges) {
    var b = 0;
    for (var k = 0; k < edges.length; k++) if (score >= edges[k]) b++;
    return b;
  }

  function buildHeatmap(map, t) {
    var edges = map.dataset.buckets.split(",").map(Number);
    var text = t.text;
    var frag = document.createDocumentFragment();
    var shown = 0;
    for (var i = 0; i < t.n; i++) {
      var start = t.starts[i];
      if (start < shown) continue; // overlapping (byte-fallback) pieces: already shown
      if (start > shown) frag.appendChild(document.createTextNode(text.slice(shown, start)));
      var span = document.createElement("span");
      span.className = t.scores[i] < 0 ? "tok skip" : "tok h" + bucket(t.scores[i], edges);
      span.setAttribute("data-i", i);
      span.tabIndex = 0;
      span.textContent = text.slice(start, t.ends[i]);
      frag.appendChild(span);
      shown = t.ends[i];
    }
    if (shown < text.length) frag.appendChild(document.createTextNode(text.slice(shown)));
    map.textContent = "";
    map.appendChild(frag);
    map.setAttribute("data-ready", "1");
  }

  // What a token's hover shows: the token, its score (or why it was skipped), its context.
  function describe(t, i) {
    var piece = function (k) { return JSON.stringify(t.text.slice(t.starts[k], t.ends[k])); };
    var context = [];
    for (var k = Math.max(0, i - t.width); k < i; k++) context.push(piece(k));
    var what = t.scores[i] < 0 ? "skipped: repeated context"
      : "score " + (t.scores[i] / 100).toFixed(2);
    return "token " + piece(i) + " · " + what + " · context " +
      (context.join(" | ") || "(start of text)");
  }

  function heatmap() {
    var map = document.getElementById("heatmap");
    var info = document.getElementById("token-info");
    if (!map || !map.dataset.tokens) return;
    var t = decode(map);
    buildHeatmap(map, t);
    var show = function (event) {
      var el = event.target;
      if (!el || !el.classList || !el.classList.contains("tok")) return;
      if (!el.title) el.title = describe(t, +el.getAttribute("data-i"));
      if (info) info.textContent = el.title;
    };
    map.addEventListener("mouseover", show);
    map.addEventListener("focusin", show);
  }

  document.addEventListener("DOMContentLoaded", function () {
    pollCheck();
    heatmap();
  });
})();
