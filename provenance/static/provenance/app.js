// Progressive enhancement only: every page works without this file.
(function () {
  "use strict";

  // A check answered with its model-free verdict while the model reads it (reading
  // "pending"): wait on its API for the final answer (?wait= wakes when the reading is
  // stored), then swap in the page's new content, without a reload.
  function awaitReading(box) {
    var url = box.dataset.poll + "?wait=20";
    var tick = function () {
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (body) {
          if (body && body.reading !== "pending") {
            return fetch(window.location.href, { credentials: "same-origin" })
              .then(function (r) { return r.text(); })
              .then(function (html) {
                var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("main");
                var main = document.querySelector("main");
                if (!fresh || !main) { window.location.reload(); return; }
                main.innerHTML = fresh.innerHTML;
                heatmap();
                printButtons();
                pollCheck();
              });
          }
          setTimeout(tick, body ? 50 : 1000);
        })
        .catch(function () { setTimeout(tick, 1000); });
    };
    tick();
  }

  // While a check is scoring, poll its API and reload as soon as it finishes (faster
  // than the <meta refresh> fallback, which this cancels by reloading first).
  function pollCheck() {
    var box = document.getElementById("check-status");
    if (!box || !box.dataset.poll) return;
    if (box.dataset.status === "done" && box.dataset.reading === "pending") {
      awaitReading(box);
      return;
    }
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
  // with titles keeps a 190 kB text's page under 1 MB; spans are built only for the blocks
  // of BLOCK tokens near the screen, so a long text costs no more to open than a short one.
  var BLOCK = 1000;

  function decode(map) {
    var text = map.textContent;
    var nums = map.dataset.tokens.split(",");
    var n = Math.floor(nums.length / 3);
    var t = { text: text, n: n, width: +map.dataset.width || 0, bounds: [],
      starts: new Int32Array(n), ends: new Int32Array(n), scores: new Int32Array(n),
      shown: new Uint8Array(n) };
    var units = codeUnits(text);
    var cursor = 0, shown = 0;
    for (var i = 0; i < n; i++) {
      var start = cursor + +nums[3 * i];
      var end = start + +nums[3 * i + 1];
      cursor = end;
      t.starts[i] = units ? units[start] : start;
      t.ends[i] = units ? units[end] : end;
      t.scores[i] = +nums[3 * i + 2];
      if (i % BLOCK === 0) t.bounds.push(shown); // a block starts where the text shown so far ends
      if (t.starts[i] >= shown) { // overlapping (byte-fallback) pieces are shown once
        t.shown[i] = 1;
        shown = t.ends[i];
      }
    }
    t.bounds.push(text.length);
    t.spans = (map.dataset.spans || "").split(",").filter(Boolean).map(function (v) {
      return units ? units[+v] : +v;
    });
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

  // Inside a localized span (data-spans: character ranges, detector.localize)?
  function inSpan(t, i) {
    for (var k = 0; k + 1 < t.spans.length; k += 2) {
      if (t.spans[k] <= t.starts[i] && t.ends[i] <= t.spans[k + 1]) return true;
    }
    return false;
  }

  function bucket(score, edges) {
    var b = 0;
    for (var k = 0; k < edges.length; k++) if (score >= edges[k]) b++;
    return b;
  }

  // Replace a block's plain text by its token spans.
  function buildBlock(el, t, b, edges) {
    var text = t.text;
    var frag = document.createDocumentFragment();
    var cur = t.bounds[b];
    for (var i = b * BLOCK; i < Math.min(t.n, (b + 1) * BLOCK); i++) {
      if (!t.shown[i]) continue;
      var start = t.starts[i];
      if (start > cur) frag.appendChild(document.createTextNode(text.slice(cur, start)));
      var span = document.createElement("span");
      span.className = (t.scores[i] < 0 ? "tok skip" : "tok h" + bucket(t.scores[i], edges)) +
        (inSpan(t, i) ? " in-span" : "");
      span.setAttribute("data-i", i);
      span.tabIndex = 0;
      span.textContent = text.slice(start, t.ends[i]);
      frag.appendChild(span);
      cur = t.ends[i];
    }
    if (cur < t.bounds[b + 1]) frag.appendChild(document.createTextNode(text.slice(cur, t.bounds[b + 1])));
    el.textContent = "";
    el.appendChild(frag);
  }

  function buildHeatmap(map, t) {
    var edges = map.dataset.buckets.split(",").map(Number);
    var blocks = [];
    map.textContent = "";
    for (var b = 0; b + 1 < t.bounds.length; b++) {
      var el = document.createElement("span");
      el.className = "blk";
      el.setAttribute("data-b", b);
      el.textContent = t.text.slice(t.bounds[b], t.bounds[b + 1]);
      map.appendChild(el);
      blocks.push(el);
    }
    var ready = function () {
      map.setAttribute("data-ready", "1");
      if (window.performance && performance.mark) performance.mark("heatmap-ready");
    };
    if (!("IntersectionObserver" in window)) {
      blocks.forEach(function (el, k) { buildBlock(el, t, k, edges); });
      return ready();
    }
    var first = true;
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (!entry.isIntersecting) return;
        observer.unobserve(entry.target);
        buildBlock(entry.target, t, +entry.target.getAttribute("data-b"), edges);
      });
      if (first) { first = false; ready(); }
    }, { rootMargin: "1000px 0px" });
    blocks.forEach(function (el) { observer.observe(el); });
  }

  // What a token's hover shows: the token, its score (or why it was skipped), its context.
  // The words come from the page (data-l-*), in its language.
  function describe(t, i, words) {
    var piece = function (k) { return JSON.stringify(t.text.slice(t.starts[k], t.ends[k])); };
    var context = [];
    for (var k = Math.max(0, i - t.width); k < i; k++) context.push(piece(k));
    var what = t.scores[i] < 0 ? (words.lSkipped || "skipped: repeated context")
      : (words.lScore || "score") + " " + (t.scores[i] / 100).toFixed(2);
    return (words.lToken || "token") + " " + piece(i) + " · " + what + " · " +
      (words.lContext || "context") + " " + (context.join(" | ") || words.lStart || "(start of text)");
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
      if (!el.title) el.title = describe(t, +el.getAttribute("data-i"), map.dataset);
      if (info) info.textContent = el.title;
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
    heatmap();
    printButtons();
  });
})();
