// /verify/: fetch a proof-of-work challenge, solve it (ALTCHA v1: the number n with
// SHA-256(salt + n) = challenge), post the text with the solution, show the answer.
"use strict";

(function () {
  const form = document.getElementById("verify-form");
  if (!form) return;
  const status = document.getElementById("verify-status");
  const answer = document.getElementById("verify-answer");
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
    document.getElementById("verify-strength").textContent =
      body.strength === null ? "-" : "p < 10^" + (body.strength + 1);
    document.getElementById("verify-tokens").textContent = String(body.tokens_scored);
    document.getElementById("verify-receipt").value = body.receipt;
    answer.hidden = false;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = document.getElementById("verify-submit");
    button.disabled = true;
    answer.hidden = true;
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
