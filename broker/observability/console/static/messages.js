"use strict";
// The message browser: one partition from an offset, a time or the end. The server says how
// each key, value and header value is best shown (message_browser.py): JSON pretty-printed,
// text, or bytes as hex; all of it is written as text.
(function () {
  const twinlog = window.twinlog;

  function field(td, shown) {
    if (shown.kind === "null") {
      td.textContent = "null";
      td.className = "null";
      return;
    }
    const pre = document.createElement("pre");
    pre.textContent = shown.text + (shown.cut ? "\n… (" + shown.size + " bytes in all)" : "");
    pre.className = shown.kind;
    if (shown.kind === "binary") pre.title = "binary, " + shown.size + " bytes; base64: " + shown.base64;
    td.replaceChildren(pre);
    td.dataset.kind = shown.kind;
  }

  function headers(td, hs) {
    for (const h of hs) {
      const line = document.createElement("div");
      line.className = "header";
      line.textContent = h.name + ": " + (h.value.kind === "null" ? "null" : h.value.text);
      td.append(line);
    }
  }

  function position() {
    const from = document.getElementById("msg-from").value;
    const text = document.getElementById("msg-position").value.trim();
    if (from === "timestamp") {
      const ms = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
      if (Number.isNaN(ms)) throw new Error("give a time such as 2026-12-06T12:00:00Z, or milliseconds");
      return String(ms);
    }
    return from === "offset" ? text || "0" : "0";
  }

  let readsAsked = 0;  // the answer to an earlier click is dropped once a later one was made

  async function read() {
    const asked = ++readsAsked;
    twinlog.say("msg-status", "reading…");
    try {
      const query = new URLSearchParams({topic: document.getElementById("msg-topic").value,
        partition: document.getElementById("msg-partition").value, from: document.getElementById("msg-from").value,
        position: position(), limit: document.getElementById("msg-limit").value});
      const answer = await twinlog.getJson("/api/messages?" + query);
      if (asked !== readsAsked) return;
      const fresh = document.createElement("tbody");
      for (const r of answer.records) {
        const tr = fresh.insertRow();
        twinlog.cell(tr, r.partition, "num");
        twinlog.cell(tr, r.offset, "num");
        if (r.error) {
          twinlog.cell(tr, r.error, "error").colSpan = 4;
          continue;
        }
        twinlog.cell(tr, new Date(r.timestamp).toISOString() + (r.timestamp_type === "LogAppendTime" ? " (append)" : ""));
        field(tr.insertCell(), r.key);
        field(tr.insertCell(), r.value);
        headers(tr.insertCell(), r.headers);
      }
      document.querySelector("#message-list tbody").replaceWith(fresh);
      twinlog.say("msg-status", answer.records.length + " record(s) of " + answer.topic + "-" + answer.partition +
        " (" + answer.layout + ") from offset " + answer.start_offset + "; log start " + answer.log_start_offset +
        ", high watermark " + answer.high_watermark);
    } catch (err) {
      if (asked === readsAsked) twinlog.say("msg-status", err.message, true);
    }
  }

  document.getElementById("msg-form").addEventListener("submit", (event) => {
    event.preventDefault();
    read();
  });
})();
