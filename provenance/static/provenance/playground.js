// The playground's chat page: send a message, read the reply as server-sent events over a
// POST (fetch + a stream reader: EventSource cannot POST), show the evidence meter as the
// reply grows, stop on demand, and offer a retry when the generator fails. No inline code:
// the page works under a strict Content-Security-Policy.
(function () {
  "use strict";

  var form, messages, sendBtn, stopBtn, statusBox, failure, failureText, retryBtn;
  var controller = null;

  // The page's words in its language (data-l-* on the chat form); English as a fallback.
  function L(key, fallback) {
    var value = form && form.dataset["l" + key];
    return value || fallback;
  }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text) node.textContent = text;
    return node;
  }

  function csrf() {
    var input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function setBusy(busy) {
    sendBtn.disabled = busy;
    stopBtn.hidden = !busy;
  }

  function showFailure(text) {
    failureText.textContent = text;
    failure.hidden = false;
  }

  function addUserMessage(text) {
    var box = el("div", "msg user done");
    box.appendChild(el("div", "body", text));
    messages.appendChild(box);
  }

  // A reply bubble with its meter: a number and a bar that fills as evidence grows.
  function addReply() {
    var box = el("div", "msg assistant streaming");
    var meta = el("div", "meta", L("StreamingMeta", "streaming…"));
    var meter = el("div", "meter");
    var label = el("span", "meter-label", "log10 p = 0.0");
    var bar = el("span", "meter-bar");
    var fill = el("span", "meter-fill");
    bar.appendChild(fill);
    meter.appendChild(label);
    meter.appendChild(bar);
    var body = el("div", "body");
    box.appendChild(meta);
    box.appendChild(meter);
    box.appendChild(body);
    messages.appendChild(box);
    return { box: box, meta: meta, meter: meter, label: label, fill: fill, body: body };
  }

  function updateMeter(reply, ev) {
    if (typeof ev.log10_p !== "number") return;
    reply.label.textContent = "anytime log10 p = " + ev.log10_p.toFixed(1) + " " +
      L("Scored", "(%(scored)s of %(total)s tokens scored)")
        .replace("%(scored)s", ev.num_scored).replace("%(total)s", ev.num_tokens);
    reply.meter.dataset.log10p = String(ev.log10_p);
    reply.meter.classList.toggle("significant", !!ev.watermarked);
    // Full bar at log10 p = -10: far beyond any threshold in use.
    reply.fill.style.width = Math.min(100, Math.max(0, -ev.log10_p * 10)) + "%";
  }

  function addActions(reply, ev) {
    var actions = el("div", "reply-actions");
    var check = el("form", "inline");
    check.method = "post";
    check.action = ev.check_url;
    var token = el("input");
    token.type = "hidden";
    token.name = "csrfmiddlewaretoken";
    token.value = csrf();
    var button = el("button", "check-reply", L("CheckReply", "Check this reply"));
    button.type = "submit";
    check.appendChild(token);
    check.appendChild(button);
    var edit = el("a", "edit-reply", L("Edit", "Edit and check"));
    edit.href = ev.edit_url;
    actions.appendChild(check);
    actions.appendChild(edit);
    reply.box.appendChild(actions);
  }

  function handle(reply, ev) {
    if (ev.type === "start") {
      reply.box.dataset.id = ev.message;
    } else if (ev.type === "token") {
      reply.body.textContent += ev.text;
      updateMeter(reply, ev);
    } else if (ev.type === "done") {
      reply.box.classList.remove("streaming");
      reply.box.classList.add("done");
      reply.meta.textContent =
        (ev.watermarked ? L("Watermarked", "watermarked") : L("NotWatermarked", "not watermarked")) +
        (ev.model ? " · " + ev.model : "") + " · " + (ev.finish_reason || L("Done", "done"));
      if (ev.tokenizer_mismatch) {
        reply.box.appendChild(el("p", "error",
          L("Mismatch", "The generator's tokenizer is not this key's: the meter and checks cannot be trusted.")));
      }
      if (ev.check_url) addActions(reply, ev);
      statusBox.textContent = L("Complete", "Reply complete.");
    } else if (ev.type === "error") {
      reply.box.classList.remove("streaming");
      reply.box.classList.add("failed");
      reply.meta.textContent = L("Failed", "failed");
      showFailure(ev.error);
      statusBox.textContent = "";
    }
  }

  // Split the byte stream into SSE events ("data: {json}\n\n").
  function readEvents(response, onEvent) {
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    function pump() {
      return reader.read().then(function (part) {
        if (part.done) return;
        buffer += decoder.decode(part.value, { stream: true });
        var cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          var block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          block.split("\n").forEach(function (line) {
            if (line.indexOf("data: ") === 0) onEvent(JSON.parse(line.slice(6)));
          });
        }
        return pump();
      });
    }
    return pump();
  }

  function send(retry) {
    var data = new FormData(form);
    var text = retry ? "" : String(data.get("content") || "").trim();
    if (!retry && !text) return;
    if (retry) data.set("content", "");
    failure.hidden = true;
    if (text) addUserMessage(text);
    var reply = addReply();
    statusBox.textContent = L("Waiting", "Waiting for the generator…");
    controller = new AbortController();
    setBusy(true);
    fetch(form.action, {
      method: "POST",
      body: data,
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrf(), Accept: "text/event-stream" },
      signal: controller.signal
    }).then(function (response) {
      var type = response.headers.get("Content-Type") || "";
      if (!response.ok || type.indexOf("text/event-stream") !== 0) {
        return response.json().catch(function () { return {}; }).then(function (body) {
          handle(reply, { type: "error", error: body.error || L("RequestFailed", "request failed (HTTP %(status)s)").replace("%(status)s", response.status) });
        });
      }
      if (text) form.querySelector("#id_content").value = "";
      statusBox.textContent = L("Streaming", "Streaming…");
      return readEvents(response, function (ev) { handle(reply, ev); });
    }).catch(function (err) {
      if (err && err.name === "AbortError") {
        reply.box.classList.remove("streaming");
        reply.box.classList.add("stopped");
        reply.meta.textContent = L("StoppedMeta", "stopped (the partial reply is kept)");
        statusBox.textContent = L("Stopped", "Stopped.");
      } else {
        handle(reply, { type: "error", error: L("Lost", "the connection to the server was lost") });
      }
    }).then(function () {
      controller = null;
      setBusy(false);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    form = document.getElementById("chat-form");
    if (!form) return;
    messages = document.getElementById("messages");
    sendBtn = document.getElementById("send");
    stopBtn = document.getElementById("stop");
    statusBox = document.getElementById("status");
    failure = document.getElementById("failure");
    failureText = document.getElementById("failure-text");
    retryBtn = document.getElementById("retry");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      if (!controller) send(false);
    });
    stopBtn.addEventListener("click", function () {
      if (controller) controller.abort();
    });
    retryBtn.addEventListener("click", function () {
      if (!controller) send(true);
    });
  });
})();
