// nicflow web console: polls the JSON API and renders with DOM calls only
// (textContent, never innerHTML): nothing from a query can become markup.
"use strict";
(function () {
  const csrf = document.querySelector('meta[name="nicflow-csrf"]').content;
  const canRun = document.body.dataset.canRun === "true";
  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("data-")) e.dataset[k.slice(5).replace(/-(.)/g, (_, c) => c.toUpperCase())] = v;
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.append(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return e;
  }

  async function api(path, body) {
    const opts = { credentials: "same-origin", headers: {} };
    if (body !== undefined) {
      opts.method = "POST";
      opts.headers["Content-Type"] = "application/json";
      opts.headers["X-CSRF-Token"] = csrf;
      opts.body = JSON.stringify(body);
    }
    const resp = await fetch(path, opts);
    let data = null;
    try { data = await resp.json(); } catch (e) { data = null; }
    if (resp.status === 401) { window.location.assign("/login"); throw new Error("log in first"); }
    if (!resp.ok) throw new Error((data && data.error) || ("HTTP " + resp.status));
    return data;
  }

  // ------------------------------------------------------------ formatting
  function fmtBytes(n) {
    if (!n || n <= 0) return "—";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0, v = n;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (i === 0 ? String(v) : v.toFixed(1)) + " " + units[i];
  }
  function fmtBits(n) {
    if (!n || n <= 0) return "—";
    if (n >= 1e9) return (n / 1e9) + " Gbit/s";
    if (n >= 1e6) return (n / 1e6) + " Mbit/s";
    return n + " bit/s";
  }
  function fmtMs(ms) { return ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(1) + " s"; }
  function short(s) { const a = Array.from(s || ""); return a.length > 160 ? a.slice(0, 160).join("") + "…" : s; }

  // ------------------------------------------------------------ members
  function renderMembers(list) {
    const rows = (list || []).map((m) => {
      let load = m.running + " running";
      if (m.used_cores) load += ", " + m.used_cores + " cores used";
      if (m.used_memory) load += ", " + fmtBytes(m.used_memory) + " used";
      if (m.leaving) load += ", leaving";
      return el("tr", { "data-id": m.id },
        el("td", { text: m.id }), el("td", { text: m.role }), el("td", { text: m.addr }),
        el("td", { class: "num", text: String(m.cores) }), el("td", { class: "num", text: fmtBytes(m.memory) }),
        el("td", { class: "num", text: fmtBits(m.nic_bandwidth) }), el("td", { text: load }));
    });
    $("members-body").replaceChildren(...rows);
  }

  // ------------------------------------------------------------ queries
  function stageCell(stages) {
    return el("td", {}, ...(stages || []).map((s) =>
      el("div", { class: "stage" },
        el("progress", { max: Math.max(s.tasks, 1), value: s.done }),
        (s.name || "stage " + s.stage) + ": " + s.done + "/" + s.tasks + " tasks, " + s.rows + " rows" +
        (s.bytes_out ? ", " + fmtBytes(s.bytes_out) + " out" : ""))));
  }
  function queryRow(q) {
    const actions = el("td", {});
    if (q.has_plan) actions.append(el("button", { type: "button", class: "plan-btn", "data-id": q.id, text: "Plan" }));
    if (q.cancelable && canRun) actions.append(el("button", { type: "button", class: "cancel-btn", "data-id": q.id, text: "Cancel" }));
    return el("tr", { "data-id": q.id, class: "state-" + q.state },
      el("td", { text: q.id }),
      el("td", {}, q.state, q.error ? el("div", { class: "error", text: q.error }) : null),
      el("td", { text: q.source + (q.user ? " (" + q.user + ")" : "") }),
      el("td", {}, el("code", { title: q.sql, text: short(q.sql) })),
      el("td", { class: "num", text: fmtMs(q.elapsed_ms) }),
      el("td", { class: "num", text: String(q.rows) }),
      el("td", { class: "num", text: fmtBytes(q.bytes_shuffled) }),
      stageCell(q.stages), actions);
  }
  function renderQueries(d) {
    $("running-body").replaceChildren(...d.running.map(queryRow));
    $("recent-body").replaceChildren(...d.recent.map(queryRow));
  }
  document.addEventListener("click", (ev) => {
    const b = ev.target.closest("button");
    if (!b) return;
    if (b.classList.contains("plan-btn")) showPlan(b.dataset.id);
    if (b.classList.contains("cancel-btn")) api("/api/queries/" + encodeURIComponent(b.dataset.id) + "/cancel", {}).catch(() => {});
  });

  async function pollQueries() {
    try { renderQueries(await api("/api/queries")); } catch (e) { /* the next poll retries */ }
  }
  async function pollMembers() {
    try { renderMembers((await api("/api/members")).members); } catch (e) { /* the next poll retries */ }
  }

  // ------------------------------------------------------------ plan tree
  let planID = null, planTimer = null;
  const collapsed = new Set();
  function figure(f) {
    const cls = f.startsWith("actual") ? "badge actual" : f.startsWith("time") ? "badge time" : "badge";
    return el("span", { class: cls, text: f });
  }
  function planNode(n, path) {
    const label = [el("span", { class: "op-text", text: n.text }), ...(n.figures || []).map(figure)];
    if (n.kind === "note") return el("div", { class: "note leaf" }, ...label);
    if (!n.children || n.children.length === 0) return el("div", { class: "leaf " + n.kind }, ...label);
    const d = el("details", { class: n.kind, "data-path": path, open: !collapsed.has(path) },
      el("summary", {}, ...label),
      ...n.children.map((c, i) => planNode(c, path + "/" + i)));
    d.addEventListener("toggle", () => { if (d.open) collapsed.delete(path); else collapsed.add(path); });
    return d;
  }
  async function showPlan(id) {
    if (planID !== id) collapsed.clear();
    planID = id;
    clearTimeout(planTimer);
    $("plan").hidden = false;
    $("plan-id").textContent = id;
    try {
      const p = await api("/api/queries/" + encodeURIComponent(id) + "/plan");
      if (planID !== id) return;
      $("plan-tree").replaceChildren(...p.tree.map((n, i) => planNode(n, String(i))));
      $("plan-live").hidden = !p.live;
      if (p.live) planTimer = setTimeout(() => showPlan(id), 1000);
    } catch (e) {
      $("plan-tree").replaceChildren(el("p", { class: "error", text: e.message }));
    }
  }
  $("plan-close").addEventListener("click", () => { planID = null; clearTimeout(planTimer); $("plan").hidden = true; });
  $("plan-expand").addEventListener("click", () => { collapsed.clear(); document.querySelectorAll("#plan-tree details").forEach((d) => { d.open = true; }); });
  $("plan-collapse").addEventListener("click", () => { document.querySelectorAll("#plan-tree details").forEach((d) => { d.open = false; }); });

  // ------------------------------------------------------------ SQL box
  let runID = null;
  function resultTable(res) {
    if (res.status && (!res.columns || res.columns.length === 0)) return el("p", { class: "status", text: res.status });
    const head = el("tr", {}, ...(res.columns || []).map((c, i) => el("th", { title: res.types[i], text: c })));
    const body = (res.rows || []).map((r) => el("tr", {}, ...r.map((v) =>
      v === null ? el("td", { class: "null", text: "NULL" }) : el("td", { text: v }))));
    const note = res.total_rows + (res.total_rows === 1 ? " row" : " rows") + (res.truncated ? " (first " + res.rows.length + " shown)" : "");
    return el("div", {}, el("p", { id: "result-count", class: "note", text: note }),
      el("table", { id: "result-table" }, el("thead", {}, head), el("tbody", {}, ...body)));
  }
  function renderRun(r) {
    const q = r.query;
    let text = r.state + " · " + fmtMs(r.elapsed_ms);
    if (q) text += " · query " + q.id + " · " + q.rows + " rows";
    $("run-status").textContent = text;
    $("run-progress").replaceChildren(q ? el("table", {}, el("tbody", {}, el("tr", {}, stageCell(q.stages)))) : "");
    if (r.state === "running") return;
    if (r.error) $("result").replaceChildren(el("pre", { class: "error", id: "run-error", text: r.error }));
    else if (r.result) $("result").replaceChildren(resultTable(r.result));
    if (r.has_plan && r.queries.length > 0) showPlan(r.queries[r.queries.length - 1]);
  }
  async function pollRun(id) {
    if (runID !== id) return;
    try {
      const r = await api("/api/runs/" + encodeURIComponent(id));
      renderRun(r);
      if (r.state === "running") { setTimeout(() => pollRun(id), 250); return; }
    } catch (e) {
      $("run-status").textContent = e.message;
    }
    runID = null;
    $("run").disabled = false;
    $("explain").disabled = false;
    $("cancel").disabled = true;
    pollQueries();
  }
  async function start(sql) {
    $("result").replaceChildren();
    $("run-progress").replaceChildren();
    $("run-status").textContent = "starting…";
    $("run").disabled = true;
    $("explain").disabled = true;
    try {
      const r = await api("/api/run", { sql: sql });
      runID = r.id;
      $("cancel").disabled = false;
      pollRun(r.id);
    } catch (e) {
      $("run-status").textContent = "";
      $("result").replaceChildren(el("pre", { class: "error", id: "run-error", text: e.message }));
      $("run").disabled = false;
      $("explain").disabled = false;
    }
  }
  if (canRun) {
    $("sql-form").addEventListener("submit", (ev) => { ev.preventDefault(); start($("sql-text").value); });
    $("explain").addEventListener("click", () => {
      const sql = $("sql-text").value.trim().replace(/;\s*$/, "");
      start(/^explain\b/i.test(sql) ? sql : "EXPLAIN ANALYZE " + sql);
    });
    $("cancel").addEventListener("click", () => { if (runID) api("/api/runs/" + encodeURIComponent(runID) + "/cancel", {}).catch(() => {}); });
    $("sql-text").addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); $("sql-form").requestSubmit(); }
    });
  }

  pollQueries();
  setInterval(pollQueries, 1000);
  setInterval(pollMembers, 5000);
})();
