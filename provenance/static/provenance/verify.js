// /verify/: fetch a proof-of-work challenge, solve it (ALTCHA v1: the number n with
// SHA-256(salt + n) = challenge), post the text with the solution, show the answer.
"use strict";

(function () {
  const form = document.getElementById("verify-form");
  if (!form) return;
  const status = document.getElementById("verify-status");
  const answer = document.getElementById("verify-answer");
  const peers = document.getElementById("verify-peers");
  const words = form.dataset;

  async function sha256hex(text) {
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  async function solve(challenge) {
    for (let n = 0; n <= challenge.maxNumber; n++) {
      if ((await sha256hex(challenge.salt + n)) === challenge.challenge) {
        const payload = {
          algorithm: challenge.algorithm,
          challenge: challenge.challenge,
          number: n,
          salt: challenge.salt,
          signature: challenge.signature,
        };
        return btoa(JSON.stringify(payload));
      }
    }
    throw new Error("no solution");
  }

  function show(body) {
    document.getElementById("verify-verdict").textContent = words[body.verdict] || body.verdict;
    document.getElementById("verify-model").textContent = body.model || "-";
    document.getElementById("verify-strength").textContent = strength(body.strength);
    document.getElementById("verify-tokens").textContent = String(body.tokens_scored);
    document.getElementById("verify-receipt").value = body.receipt;
    answer.hidden = false;
    if (body.peers) showPeers(body.peers, body.combined);
  }

  function strength(value) {
    return value === null || value === undefined ? "-" : "p < 10^" + (value + 1);
  }

  function cell(row, text) {
    const td = document.createElement("td");
    td.textContent = text;
    row.appendChild(td);
  }

  // One line per peer organization (its own answer; "unreachable", "receipt invalid", ...
  // when there is none), then the combined claim across every organization asked.
  function showPeers(lines, combined) {
    const body = document.getElementById("verify-peer-lines");
    body.replaceChildren();
    for (const line of lines) {
      const row = document.createElement("tr");
      cell(row, line.organization);
      const answered = line.status === "answered";
      cell(row, answered ? words[line.verdict] || line.verdict : words[line.status] || line.status);
      cell(row, answered && line.model ? line.model : "-");
      cell(row, answered ? strength(line.strength) : "-");
      body.appendChild(row);
    }
    document.getElementById("verify-combined-m").textContent = String(combined.organizations);
    const claims = combined.supported.map(
      (c) => c.organization + " (" + c.model + ", " + strength(c.strength) + ")",
    );
    let claim = words[combined.verdict] || combined.verdict;
    if (claims.length) claim += ": " + claims.join("; ");
    else if (combined.verdict !== "not_watermarked") claim += " (" + words.combined_none + ")";
    document.getElementById("verify-combined").textContent = claim;
    peers.hidden = false;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = document.getElementById("verify-submit");
    button.disabled = true;
    answer.hidden = true;
    if (peers) peers.hidden = true;
    try {
      status.textContent = words.solving;
      const got = await fetch(words.challenge, { headers: { Accept: "application/json" } });
      const pow = await solve(await got.json());
      status.textContent = words.checking;
      const text = document.getElementById("id_text").value;
      const response = await fetch(words.endpoint, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Provenance-PoW": pow },
        body: JSON.stringify({ text: text }),
      });
      const body = await response.json();
      if (!response.ok) throw new Error(body.detail || String(response.status));
      status.textContent = "";
      show(body);
    } catch (error) {
      status.textContent = words.failed + " " + error.message;
    } finally {
      button.disabled = false;
    }
  });
})();
