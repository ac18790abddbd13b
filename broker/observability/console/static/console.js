"use strict";
// The console's shell: the login, the tabs, and the overview (partitions, groups, key lookup).
// Every value from the broker is user data (topic names, group ids, keys, values): it is
// written with textContent only, never innerHTML. messages.js and admin.js add the other views
// through window.twinlog.
const REFRESH_MS = 5000;
const twinlog = window.twinlog = {views: {}, partitions: []};

twinlog.cell = function (row, value, className) {
  const td = row.insertCell();
  td.textContent = value === null || value === undefined ? "–" : String(value);
  if (className) td.className = className;
  return td;
};

twinlog.fill = function (tableId, rows, columns) {
  const body = document.querySelector("#" + tableId + " tbody");
  const fresh = document.createElement("tbody");
  for (const r of rows) {
    const tr = fresh.insertRow();
    tr.dataset.key = columns.slice(0, 3).map(([name]) => r[name]).join("/");
    for (const [name, numeric, show] of columns) twinlog.cell(tr, show ? show(r[name]) : r[name], numeric ? "num" : "");
  }
  body.replaceWith(fresh);
  return fresh;
};

twinlog.request = async function (url, options) {
  const reply = await fetch(url, Object.assign({cache: "no-store", credentials: "same-origin"}, options || {}));
  if (reply.status === 401 && !url.startsWith("/api/login")) showLogin();
  const type = reply.headers.get("Content-Type") || "";
  const body = type.startsWith("application/json") ? await reply.json() : await reply.text();
  if (!reply.ok) throw new Error(body.error || reply.statusText);
  return body;
};

twinlog.getJson = (url) => twinlog.request(url);

twinlog.postJson = (url, body) => twinlog.request(url, {method: "POST", body: JSON.stringify(body),
  headers: {"Content-Type": "application/json", "X-Twinlog-Console": "1"}});

twinlog.say = function (id, text, failed) {
  const status = document.getElementById(id);
  status.className = failed ? "error" : "status";
  status.textContent = text;
};

twinlog.topics = () => [...new Set(twinlog.partitions.map((p) => p.topic))];

function showLogin() {
  document.getElementById("login").hidden = false;
  document.getElementById("tabs").hidden = true;
  for (const view of document.querySelectorAll(".view")) view.hidden = true;
}

function show(view) {
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== view;
  for (const button of document.querySelectorAll("#tabs button")) {
    button.className = button.dataset.view === view ? "active" : "";
  }
  if (twinlog.views[view]) twinlog.views[view]();
}

const list = (ids) => ids.join(", ");

async function refresh() {
  if (!document.getElementById("login").hidden) return;
  try {
    const [partitions, groups] = await Promise.all([twinlog.getJson("/api/partitions"), twinlog.getJson("/api/groups")]);
    twinlog.partitions = partitions;
    const shown = document.getElementById("show-internal").checked ? partitions
      : partitions.filter((p) => !p.topic.startsWith("__"));
    twinlog.fill("partitions", shown, [["topic"], ["partition", true], ["layout"], ["moving_to", false, (m) => m || ""],
      ["log_end_offset", true], ["high_watermark", true], ["log_start_offset", true], ["size_bytes", true],
      ["leader", true], ["replicas", false, list], ["isr", false, list]]);
    twinlog.fill("groups", groups, [["group"], ["topic"], ["partition", true], ["committed", true], ["lag", true]]);
    const select = document.getElementById("lookup-topic");
    const chosen = select.value || new URLSearchParams(location.search).get("topic");
    const commitlog = [...new Set(partitions.filter((p) => p.layout === "commitlog").map((p) => p.topic))];
    select.replaceChildren(...commitlog.map((t) => new Option(t, t, false, t === chosen)));
    for (const choice of document.querySelectorAll(".topic-choice")) {
      const kept = choice.value;
      choice.replaceChildren(...twinlog.topics().map((t) => new Option(t, t, false, t === kept)));
    }
    twinlog.say("status", shown.length + " of " + partitions.length + " partitions shown, " + groups.length +
      " committed offsets; updated " + new Date().toLocaleTimeString());
  } catch (err) {
    twinlog.say("status", "could not read the broker: " + err.message, true);
  }
}

async function lookup(topic, key) {
  twinlog.say("lookup-status", "looking up…");
  try {
    const answer = await twinlog.getJson("/api/lookup?" + new URLSearchParams({topic, key}));
    twinlog.fill("lookup", answer.records, [["partition", true], ["offset", true],
      ["timestamp", false, (ms) => new Date(ms).toISOString()], ["value"],
      ["headers", false, (hs) => hs.map(([k, v]) => k + "=" + v).join(", ")]]);
    twinlog.say("lookup-status", answer.records.length + " record(s) with key " + JSON.stringify(key) + " in " +
      topic + (answer.truncated ? " (the first ones only)" : ""));
  } catch (err) {
    twinlog.fill("lookup", [], []);
    twinlog.say("lookup-status", err.message, true);
  }
}

async function start() {
  const session = await twinlog.getJson("/api/session").catch((err) => {
    twinlog.say("status", "could not read the broker: " + err.message, true);
    return null;
  });
  if (session === null) return;
  if (session.login_required && !session.user) {
    showLogin();
    twinlog.say("status", "log in to see the broker");
    return;
  }
  document.getElementById("login").hidden = true;
  document.getElementById("tabs").hidden = false;
  document.getElementById("whoami").textContent = session.user ? "logged in as " + session.user : "";
  document.getElementById("logout").hidden = !session.user;
  const asked = new URLSearchParams(location.search);
  await refresh();
  show(asked.get("view") || "overview");
  if (asked.has("topic") && asked.has("key")) {
    document.getElementById("lookup-key").value = asked.get("key");
    lookup(asked.get("topic"), asked.get("key"));
  }
}

document.getElementById("login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  try {
    await twinlog.postJson("/api/login", {user: document.getElementById("login-user").value,
      password: document.getElementById("login-password").value});
    document.getElementById("login-password").value = "";
    twinlog.say("login-status", "");
    await start();
  } catch (err) {
    twinlog.say("login-status", err.message, true);
  }
});
document.getElementById("logout").addEventListener("click", async () => {
  await twinlog.postJson("/api/logout", {});
  location.reload();
});
for (const button of document.querySelectorAll("#tabs button")) {
  button.addEventListener("click", () => show(button.dataset.view));
}
document.getElementById("show-internal").addEventListener("change", refresh);
document.getElementById("lookup-form").addEventListener("submit", (event) => {
  event.preventDefault();
  lookup(document.getElementById("lookup-topic").value, document.getElementById("lookup-key").value);
});
twinlog.views.overview = refresh;
start();
setInterval(refresh, REFRESH_MS);
