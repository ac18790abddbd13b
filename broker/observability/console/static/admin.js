"use strict";
// The charts (SVG drawn by the server), topic configs (shown and changed through the broker's
// own DescribeConfigs and IncrementalAlterConfigs), the brokers and the ACLs.
(function () {
  const twinlog = window.twinlog;

  async function chart(url, holderId) {
    const text = await twinlog.request(url);
    // parsed as SVG, not HTML: no script in it runs (and the CSP allows none inline)
    const svg = new DOMParser().parseFromString(text, "image/svg+xml").documentElement;
    document.getElementById(holderId).replaceChildren(document.importNode(svg, true));
  }

  async function charts() {
    try {
      await Promise.all([chart("/api/charts/throughput.svg", "throughput-holder"), chart("/api/charts/lag.svg", "lag-holder")]);
    } catch (err) {
      twinlog.say("status", "charts: " + err.message, true);
    }
  }

  let configsAsked = 0;  // an answer for a topic chosen before the last one is dropped

  async function configs() {
    const topic = document.getElementById("cfg-topic").value;
    if (!topic) return;
    const asked = ++configsAsked;
    try {
      const answer = await twinlog.getJson("/api/configs?" + new URLSearchParams({topic}));
      if (asked !== configsAsked) return;
      const fresh = document.createElement("tbody");
      for (const c of answer.configs) {
        const tr = fresh.insertRow();
        twinlog.cell(tr, c.name).title = c.doc || "";
        const input = document.createElement("input");
        input.value = c.value === null ? "" : c.value;
        input.dataset.name = c.name;
        input.dataset.original = input.value;
        input.dataset.source = c.source;
        input.disabled = c.read_only;
        input.size = 30;
        input.addEventListener("input", () => { input.className = input.value !== input.dataset.original ? "changed" : ""; });
        tr.insertCell().append(input);
        twinlog.cell(tr, c.source);
      }
      document.querySelector("#configs tbody").replaceWith(fresh);
      twinlog.say("cfg-status", answer.configs.length + " configs of " + topic);
    } catch (err) {
      if (asked === configsAsked) twinlog.say("cfg-status", err.message, true);
    }
  }

  async function save() {
    const topic = document.getElementById("cfg-topic").value;
    // an emptied topic override goes back to the broker's value (DELETE); others are SET
    const changes = [...document.querySelectorAll("#configs input.changed")].map((input) =>
      input.value === "" && input.dataset.source === "DYNAMIC_TOPIC_CONFIG"
        ? {name: input.dataset.name, op: "delete", value: null}
        : {name: input.dataset.name, op: "set", value: input.value});
    if (!changes.length) {
      twinlog.say("cfg-status", "nothing changed");
      return;
    }
    try {
      await twinlog.postJson("/api/configs?" + new URLSearchParams({topic}), {changes});
      await configs();
      twinlog.say("cfg-status", "saved " + changes.map((c) => c.name).join(", ") + " of " + topic);
    } catch (err) {
      twinlog.say("cfg-status", err.message, true);
    }
  }

  async function brokers() {
    try {
      const answer = await twinlog.getJson("/api/brokers");
      const fresh = document.createElement("tbody");
      for (const b of answer.brokers) {
        const tr = fresh.insertRow();
        tr.dataset.key = String(b.node_id);
        twinlog.cell(tr, b.node_id, "num");
        twinlog.cell(tr, b.host + ":" + b.port);
        twinlog.cell(tr, [b.node_id === answer.controller_id ? "controller" : "",
          b.node_id === answer.this_broker ? "this broker" : ""].filter(Boolean).join(", "));
        twinlog.cell(tr, b.replicas, "num");
        twinlog.cell(tr, b.leaders, "num");
        twinlog.cell(tr, b.partitions.map((p) => p.topic + "-" + p.partition + (p.leader ? "*" : "")).join(" ") +
          (b.truncated ? " …" : ""));
      }
      document.querySelector("#broker-list tbody").replaceWith(fresh);
      twinlog.say("brokers-status", answer.brokers.length + " broker(s)");
    } catch (err) {
      twinlog.say("brokers-status", err.message, true);
    }
  }

  async function acls() {
    try {
      const answer = await twinlog.getJson("/api/acls");
      twinlog.fill("acl-list", answer.acls, [["resource_type"], ["resource_name"], ["pattern_type"], ["principal"],
        ["host"], ["operation"], ["permission"]]);
      twinlog.say("acls-status", answer.authorizer ? answer.total + " binding(s)" + (answer.truncated ? ", the first shown" : "")
        : "no authorizer is configured on the broker (--authorizer): every request is allowed");
    } catch (err) {
      twinlog.say("acls-status", err.message, true);
    }
  }

  document.getElementById("cfg-form").addEventListener("submit", (event) => {
    event.preventDefault();
    save();
  });
  document.getElementById("cfg-topic").addEventListener("change", configs);
  Object.assign(twinlog.views, {charts, topics: configs, brokers, acls});
})();
