// The kgmesh web console: asks POST /v1/ask and draws the reply. No dependencies;
// every text from the server goes into the page as text, never as markup.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  // Graphs larger than this are cut to their first edges (cited ones first).
  const MAX_GRAPH_NODES = 120;
  const ASK_TIMEOUT_MS = 180000;
  const HISTORY_KEY = "kgmesh.console.history";
  const HISTORY_MAX = 30;
  // Below this confidence an answer is more likely wrong than right: a warning on top.
  const LOW_CONFIDENCE = 0.5;
  // The API token lives in this tab's session storage only: gone when the tab closes.
  const TOKEN_KEY = "kgmesh.console.token";

  const settings = readSettings();
  const $ = (id) => document.getElementById(id);
  let current = null; // the reply on show
  let relationWords = {}; // relation name → its words, from /v1/schema
  let history = loadHistory();
  let asking = false;

  function readSettings() {
    try {
      const parsed = JSON.parse(document.getElementById("kgmesh-settings").textContent);
      return parsed && typeof parsed === "object" ? parsed : {};
    } catch (_) {
      return {};
    }
  }

  // el("li", {class: "x"}, "text", child, ...): an element with attributes and children.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function setAttrs(node, attrs) {
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
  }

  function append(node, children) {
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function ms(us) {
    const value = (us || 0) / 1000;
    return value >= 100 ? value.toFixed(0) : value.toFixed(1);
  }

  // ---- the API token ---------------------------------------------------------

  function readToken() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || "";
    } catch (_) {
      return "";
    }
  }

  function storeToken(token) {
    try {
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch (_) {
      // Storage off: the token lasts as long as the page.
    }
    currentToken = token;
    showTokenState();
  }

  let currentToken = readToken();

  function showTokenState() {
    $("token-state").textContent = currentToken ? "token set for this tab" : "no token";
  }

  // Headers of every API request: the token, when there is one, as a Bearer token.
  function apiHeaders(extra) {
    const headers = Object.assign({}, extra || {});
    if (currentToken) headers.Authorization = `Bearer ${currentToken}`;
    return headers;
  }

  // A token given in the address (`#token=…`) is taken into the tab and removed from
  // the address, so it is neither shown nor kept in the history.
  function takeTokenFromAddress() {
    const url = new URL(window.location.href);
    const fragment = new URLSearchParams(url.hash.replace(/^#/, ""));
    const token = fragment.get("token");
    if (!token) return;
    storeToken(token.trim());
    url.hash = "";
    window.history.replaceState(null, "", url.pathname + url.search);
  }

  // ---- asking --------------------------------------------------------------

  function readOptions() {
    const options = { evidence_edges: true };
    const rounds = parseInt($("opt-rounds").value, 10);
    const answers = parseInt($("opt-answers").value, 10);
    if (Number.isFinite(rounds)) options.max_rounds = rounds;
    if (Number.isFinite(answers)) options.max_answers = answers;
    if ($("opt-no-cache").checked) options.no_cache = true;
    return options;
  }

  async function ask(question) {
    if (asking) return;
    showError(null);
    asking = true;
    $("ask-button").disabled = true;
    $("ask-form").setAttribute("aria-busy", "true");
    setStatus("Asking…");
    const started = performance.now();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), ASK_TIMEOUT_MS);
    try {
      const response = await fetch("/v1/ask", {
        method: "POST",
        headers: apiHeaders({ "Content-Type": "application/json" }),
        body: JSON.stringify({ question, options: readOptions() }),
        signal: controller.signal,
      });
      const body = await readJson(response);
      if (!response.ok) {
        showError(describeError(response.status, body));
        setStatus("");
        return;
      }
      const seconds = ((performance.now() - started) / 1000).toFixed(2);
      setStatus(`Answered in ${seconds} s.`);
      remember(question, body);
      show(question, body);
      const url = new URL(window.location.href);
      url.searchParams.set("q", question);
      window.history.replaceState(null, "", url);
      loadAgents();
    } catch (error) {
      const why = error && error.name === "AbortError"
        ? `no answer within ${ASK_TIMEOUT_MS / 1000} s`
        : `the server could not be reached (${error && error.message ? error.message : error})`;
      showError(`The question was not answered: ${why}.`);
      setStatus("");
    } finally {
      clearTimeout(timer);
      asking = false;
      $("ask-button").disabled = false;
      $("ask-form").removeAttribute("aria-busy");
    }
  }

  async function readJson(response) {
    const text = await response.text();
    try {
      return JSON.parse(text);
    } catch (_) {
      return { error: { kind: "not_json", message: text.slice(0, 500) } };
    }
  }

  function describeError(status, body) {
    const error = body && body.error ? body.error : {};
    const message = error.message || "no reason given";
    if (status === 401) {
      return (currentToken
        ? "The server does not accept this API token (401): enter another one above"
        : "This server needs an API token (401): enter it above") + `. ${message}`;
    }
    if (status === 403) {
      return `The API token may not do this (403 ${error.kind || "forbidden"}): ${message}`;
    }
    const meaning = {
      400: "The question was refused",
      404: "Not found",
      413: "The request is too large",
      429: "The server is busy, or this token is over its limit",
      503: "The server cannot answer now",
      504: "A role did not answer in time",
    }[status] || "The server failed";
    return `${meaning} (${status}${error.kind ? " " + error.kind : ""}): ${message}`;
  }

  function setStatus(text) {
    $("status").textContent = text;
  }

  function showError(text) {
    const box = $("error");
    box.textContent = text || "";
    box.hidden = !text;
  }

  // ---- history -------------------------------------------------------------

  function loadHistory() {
    try {
      const stored = JSON.parse(sessionStorage.getItem(HISTORY_KEY) || "[]");
      return Array.isArray(stored) ? stored : [];
    } catch (_) {
      return [];
    }
  }

  function remember(question, reply) {
    history = history.filter((item) => item.question !== question);
    history.unshift({ question, reply, at: new Date().toISOString() });
    history = history.slice(0, HISTORY_MAX);
    try {
      sessionStorage.setItem(HISTORY_KEY, JSON.stringify(history));
    } catch (_) {
      // A full store keeps the history in this page only.
    }
    drawHistory();
  }

  function drawHistory() {
    const list = $("history");
    clear(list);
    if (history.length === 0) {
      list.append(el("li", { class: "muted" }, "No questions yet."));
      return;
    }
    for (const item of history) {
      const first = item.reply && item.reply.answers && item.reply.answers[0];
      list.append(el("li", {},
        el("button", {
          type: "button",
          class: "link",
          title: "Show this answer again",
          onclick: () => {
            $("question").value = item.question;
            showError(null);
            setStatus(`From the history (${new Date(item.at).toLocaleTimeString()}).`);
            show(item.question, item.reply);
          },
        }, item.question),
        el("span", { class: "muted" }, first ? ` → ${first.text}` : " → I don't know")));
    }
  }

  // ---- the reply -----------------------------------------------------------

  function show(question, reply) {
    current = { question, reply };
    $("result").hidden = false;
    drawAnswers(reply);
    drawGraph(reply);
    drawLife(reply);
    drawEvidence(reply);
  }

  function citedLines(reply) {
    const cited = new Set();
    for (const answer of reply.answers || []) {
      for (const index of answer.evidence || []) cited.add(index);
    }
    return cited;
  }

  function evidenceItem(reply, index) {
    const line = (reply.evidence || [])[index];
    if (!line) return el("li", { class: "muted" }, `line ${index + 1} is not in the reply`);
    // A document's passage ("Passage (FILE:OFFSET): TEXT") is shown as a quotation under
    // the file and byte offset it was read from, its line breaks kept.
    const cut = line.text.startsWith("Passage (") ? line.text.indexOf("): ") : -1;
    if (cut > 0) {
      return el("li", { value: index + 1, class: "passage" },
        el("span", { class: "source" }, line.source), " ",
        el("cite", { class: "passage-source", title: "file : byte offset" }, line.text.slice(9, cut)),
        el("blockquote", { class: "passage-text" }, line.text.slice(cut + 3)));
    }
    return el("li", { value: index + 1 },
      el("span", { class: "source" }, line.source), " ", line.text);
  }

  function drawAnswers(reply) {
    const list = $("answers");
    clear(list);
    const answers = reply.answers || [];
    $("no-answer").hidden = answers.length > 0;
    $("no-answer").textContent = "I don't know: nothing in the graph answers this question.";
    // The reply's confidence: the chance, estimated by a model calibrated on questions
    // of many graphs, that the answers are right (the per-answer score is only how the
    // retrievers' evidence supports each answer relative to the others).
    const confidence = $("confidence");
    const chance = typeof reply.confidence === "number" ? reply.confidence : null;
    confidence.hidden = chance === null || answers.length === 0;
    confidence.className = "confidence";
    if (chance !== null) {
      const shown = chance.toFixed(2);
      if (chance < LOW_CONFIDENCE) {
        confidence.classList.add("low");
        confidence.textContent = `Low confidence ${shown}: this answer is more likely wrong than right. Check the evidence below before using it.`;
      } else {
        confidence.textContent = `Confidence ${shown}: the estimated chance that this answer is right.`;
      }
      // The learned reader, ranking the same candidate paths, reaches other answers:
      // the confidence above already reads it; say why it is low.
      if (reply.readings_agree === false) {
        confidence.textContent += " A second reading of the question reaches other answers.";
      }
    }
    answers.forEach((answer, position) => {
      const lines = answer.evidence || [];
      const details = el("details", { open: position === 0 },
        el("summary", {},
          el("span", { class: "answer-text" }, answer.text),
          el("span", { class: "score", title: "support: how the evidence backs this answer against the others (not a probability)" }, Number(answer.score || 0).toFixed(2)),
          el("span", { class: "muted" }, ` ${lines.length} evidence line${lines.length === 1 ? "" : "s"}`)),
        el("ol", { class: "evidence cited" }, lines.map((index) => evidenceItem(reply, index))));
      list.append(el("li", { class: "answer" }, details));
    });
    $("explanation").textContent = reply.explanation || "";
  }

  function drawEvidence(reply) {
    const list = $("evidence");
    clear(list);
    const cited = citedLines(reply);
    (reply.evidence || []).forEach((line, index) => {
      const item = evidenceItem(reply, index);
      if (cited.has(index)) item.classList.add("cited");
      list.append(item);
    });
    const count = (reply.evidence || []).length;
    $("evidence-summary").textContent = `All ${count} evidence line${count === 1 ? "" : "s"} (${cited.size} cited)`;
  }

  function drawLife(reply) {
    const flags = $("flags");
    clear(flags);
    const cost = reply.cost || {};
    const timings = reply.timings || {};
    const flag = (text, kind) => flags.append(el("li", { class: kind || "" }, text));
    flag(`${reply.rounds} round${reply.rounds === 1 ? "" : "s"}`);
    flag(`${ms(timings.total_us)} ms`);
    flag(`${cost.llm_calls || 0} LLM calls, ${(cost.prompt_tokens || 0) + (cost.completion_tokens || 0)} tokens`);
    flag(`${cost.graph_rows || 0} graph rows, ${cost.bus_messages || 0} bus messages`);
    // What the plan cache did, as the server says it in words.
    if (reply.cache_use) {
      flag(reply.cache_use, reply.replay_cut ? "bad" : "good");
    } else if (reply.plan_replayed) {
      flag("plan cache: answered by replaying a past question's plan", "good");
    } else if (reply.cache_hit) {
      flag("plan cache: past questions offered as examples", "good");
    } else {
      flag("plan cache: no past question used");
    }
    if (reply.partial) flag("partial: a budget ran out or a required role failed", "bad");
    if (reply.low_confidence) flag("low confidence: no question word names the path answered from", "bad");
    for (const d of reply.degraded || []) {
      flag(`degraded: ${d.role} ${d.reason}${d.round ? ` (round ${d.round})` : ""}`, "bad");
    }
    if (reply.trace_id) {
      const item = el("li", {}, "trace ");
      if (settings.jaeger_ui_url) {
        const base = settings.jaeger_ui_url.replace(/\/+$/, "");
        item.append(el("a", { href: `${base}/trace/${reply.trace_id}`, target: "_blank", rel: "noopener noreferrer" }, reply.trace_id));
      } else {
        item.append(el("code", {}, reply.trace_id));
      }
      flags.append(item);
    }

    const body = $("calls").tBodies[0];
    clear(body);
    for (const call of reply.calls || []) {
      const c = call.cost;
      const tokens = c ? (c.prompt_tokens || 0) + (c.completion_tokens || 0) : "";
      body.append(el("tr", { class: call.outcome === "ok" ? "" : "bad" },
        el("td", {}, call.round),
        el("td", {}, call.role),
        el("td", {}, call.op),
        el("td", { class: "num" }, ms(call.elapsed_us)),
        el("td", { class: "num" }, c ? c.llm_calls : ""),
        el("td", { class: "num" }, tokens),
        el("td", {}, call.outcome)));
    }
    if ((reply.calls || []).length === 0) {
      body.append(el("tr", {}, el("td", { colspan: 7, class: "muted" }, "No role calls were recorded.")));
    }

    const notes = $("notes");
    clear(notes);
    for (const note of reply.notes || []) notes.append(el("li", {}, note));
  }

  // ---- the graph -----------------------------------------------------------

  function graphOf(reply, withUncited) {
    const cited = citedLines(reply);
    const nodes = new Map();
    const edges = new Map();
    const order = [];
    (reply.evidence || []).forEach((line, index) => {
      if (cited.has(index)) order.unshift(index); else if (withUncited) order.push(index);
    });
    let cut = false;
    for (const index of order) {
      const line = reply.evidence[index];
      for (const edge of line.edges || []) {
        const ends = [edge.head, edge.tail];
        const fresh = ends.filter((e) => !nodes.has(e.id)).length;
        if (nodes.size + fresh > MAX_GRAPH_NODES) {
          cut = true;
          continue;
        }
        for (const e of ends) if (!nodes.has(e.id)) nodes.set(e.id, { id: e.id, name: e.name });
        const key = `${edge.head.id}|${edge.relation}|${edge.tail.id}`;
        let known = edges.get(key);
        if (!known) {
          known = { head: edge.head.id, tail: edge.tail.id, relation: edge.relation, sources: new Set(), lines: [], cited: false };
          edges.set(key, known);
        }
        known.sources.add(line.source);
        known.lines.push(index + 1);
        known.cited = known.cited || cited.has(index);
      }
    }
    return { nodes: [...nodes.values()], edges: [...edges.values()], cut };
  }

  // A spring layout with a fixed start: the same reply is drawn the same way.
  function layout(nodes, edges, width, height) {
    const n = nodes.length;
    const index = new Map(nodes.map((node, i) => [node.id, i]));
    const x = new Float64Array(n);
    const y = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const angle = (2 * Math.PI * i) / Math.max(n, 1);
      x[i] = width / 2 + (width / 3) * Math.cos(angle);
      y[i] = height / 2 + (height / 3) * Math.sin(angle);
    }
    const k = Math.sqrt((width * height) / Math.max(n, 1)) * 0.75;
    const links = edges.map((e) => [index.get(e.head), index.get(e.tail)]);
    let temperature = width / 8;
    for (let step = 0; step < 300; step++) {
      const dx = new Float64Array(n);
      const dy = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          let ddx = x[i] - x[j];
          let ddy = y[i] - y[j];
          let d2 = ddx * ddx + ddy * ddy;
          if (d2 < 0.01) { ddx = 0.1 * (i - j); ddy = 0.1; d2 = ddx * ddx + ddy * ddy; }
          const force = (k * k) / d2;
          dx[i] += ddx * force; dy[i] += ddy * force;
          dx[j] -= ddx * force; dy[j] -= ddy * force;
        }
      }
      for (const [a, b] of links) {
        if (a === b) continue;
        const ddx = x[a] - x[b];
        const ddy = y[a] - y[b];
        const d = Math.sqrt(ddx * ddx + ddy * ddy) || 0.01;
        const force = d / k;
        dx[a] -= ddx * force; dy[a] -= ddy * force;
        dx[b] += ddx * force; dy[b] += ddy * force;
      }
      for (let i = 0; i < n; i++) {
        // A weak pull to the middle keeps separate pieces on the canvas.
        dx[i] += (width / 2 - x[i]) * 0.02;
        dy[i] += (height / 2 - y[i]) * 0.02;
        const d = Math.sqrt(dx[i] * dx[i] + dy[i] * dy[i]) || 1;
        const move = Math.min(d, temperature);
        x[i] += (dx[i] / d) * move;
        y[i] += (dy[i] / d) * move;
      }
      temperature = Math.max(temperature * 0.97, 0.5);
    }
    // Fit into the canvas with a margin for the names.
    const margin = 60;
    const minX = Math.min(...x), maxX = Math.max(...x), minY = Math.min(...y), maxY = Math.max(...y);
    const sx = (width - 2 * margin) / Math.max(maxX - minX, 1);
    const sy = (height - 2 * margin) / Math.max(maxY - minY, 1);
    // Each axis fills the canvas on its own: a wide canvas is used in full.
    const ox = (width - sx * (maxX - minX)) / 2;
    const oy = (height - sy * (maxY - minY)) / 2;
    return nodes.map((_, i) => [ox + (x[i] - minX) * sx, oy + (y[i] - minY) * sy]);
  }

  function drawGraph(reply) {
    const canvas = $("graph");
    clear(canvas);
    const withUncited = $("show-uncited").checked;
    const graph = graphOf(reply, withUncited);
    const note = $("graph-note");
    if (graph.nodes.length === 0) {
      canvas.setAttribute("viewBox", "0 0 800 60");
      canvas.append(svg("text", { x: 400, y: 35, "text-anchor": "middle", class: "empty" },
        withUncited ? "No evidence line names graph edges." : "No cited evidence names graph edges; show the uncited evidence to see what was retrieved."));
      // A query's rows of plain values (names, numbers) hold no edges to draw.
      const cited = citedLines(reply);
      const fromQuery = [...cited].some((index) => {
        const line = (reply.evidence || [])[index];
        return line && (line.edges || []).length === 0 && line.text.startsWith("Graph Query:");
      });
      note.textContent = fromQuery
        ? "The answers come from a query whose rows are values, not nodes and relationships: the query is in the evidence."
        : "";
      return;
    }
    // One user unit a pixel, so that names read the same on a phone and a desktop.
    const width = Math.max(300, Math.round(canvas.getBoundingClientRect().width) || 800);
    const height = Math.max(200, Math.min(720, 140 + graph.nodes.length * 28));
    canvas.setAttribute("viewBox", `0 0 ${width} ${height}`);
    const at = layout(graph.nodes, graph.edges, width, height);
    const position = new Map(graph.nodes.map((node, i) => [node.id, at[i]]));
    const topic = new Set((reply.topic_entities || []).map((e) => e.id));
    const answers = new Set((reply.answers || []).filter((a) => a.entity).map((a) => a.entity.id));

    canvas.append(svg("defs", {},
      svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 19, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow" }))));

    // Edges between the same two nodes fan out so that their labels do not overlap.
    const seen = new Map();
    const edgeLayer = svg("g", { class: "edges" });
    for (const edge of graph.edges) {
      const [x1, y1] = position.get(edge.head);
      const [x2, y2] = position.get(edge.tail);
      const pair = edge.head < edge.tail ? `${edge.head}|${edge.tail}` : `${edge.tail}|${edge.head}`;
      const nth = seen.get(pair) || 0;
      seen.set(pair, nth + 1);
      const sources = [...edge.sources].sort().join(", ");
      const title = `${edge.relation} — found by ${sources} — evidence line${edge.lines.length === 1 ? "" : "s"} ${edge.lines.join(", ")}`;
      edgeLayer.append(svg("g", {
        class: `edge ${edge.cited ? "cited" : "uncited"}`,
        "data-relation": edge.relation,
        "data-head": edge.head,
        "data-tail": edge.tail,
        "data-sources": sources,
      },
        svg("title", {}, title),
        svg("line", { x1, y1, x2, y2, "marker-end": "url(#arrow)" }),
        svg("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4 + nth * 13, "text-anchor": "middle", class: "edge-label" }, relationWords[edge.relation] || edge.relation)));
    }
    canvas.append(edgeLayer);

    const nodeLayer = svg("g", { class: "nodes" });
    for (const node of graph.nodes) {
      const [cx, cy] = position.get(node.id);
      const kind = topic.has(node.id) ? "topic" : answers.has(node.id) ? "answer" : "other";
      nodeLayer.append(svg("g", { class: `node ${kind}`, "data-id": node.id, "data-name": node.name },
        svg("title", {}, `${node.name} (node ${node.id})`),
        svg("circle", { cx, cy, r: kind === "other" ? 6 : 9 }),
        svg("text", { x: cx, y: cy + 22, "text-anchor": "middle" }, node.name)));
    }
    canvas.append(nodeLayer);
    const cited = graph.edges.filter((e) => e.cited).length;
    note.textContent = `${graph.nodes.length} nodes, ${graph.edges.length} edges (${cited} cited)` +
      (graph.cut ? `; cut to ${MAX_GRAPH_NODES} nodes` : "") + ". Hover an edge for the retrievers that found it.";
  }

  // ---- roles and schema ----------------------------------------------------

  async function loadAgents() {
    const body = $("agents").tBodies[0];
    const problem = $("agents-error");
    try {
      const response = await fetch("/v1/agents", { headers: apiHeaders() });
      const reply = await readJson(response);
      if (!response.ok) throw new Error(describeError(response.status, reply));
      clear(body);
      // The in-process bus counts no requests: the column shows only where some are.
      const counted = (reply.roles || []).some((role) => role.requests > 0 || role.errors > 0);
      $("agents").classList.toggle("uncounted", !counted);
      for (const role of reply.roles || []) {
        body.append(el("tr", { class: role.errors > 0 ? "warn" : "" },
          el("td", {}, role.role),
          el("td", {}, role.kind),
          el("td", { class: "num" }, role.replicas),
          el("td", { class: "num calls", title: `${role.requests} requests, ${role.errors} errors` },
            role.requests,
            role.errors > 0 ? el("span", { class: "failed" }, `${role.errors} failed`) : null)));
      }
      problem.hidden = true;
    } catch (error) {
      problem.textContent = `Roles unknown: ${error.message || error}`;
      problem.hidden = false;
    }
  }

  async function loadSchema() {
    const problem = $("schema-error");
    try {
      const response = await fetch("/v1/schema", { headers: apiHeaders() });
      const schema = await readJson(response);
      if (!response.ok) throw new Error(describeError(response.status, schema));
      $("schema-summary").textContent =
        `${schema.node_count} nodes, ${schema.edge_count} edges, ${(schema.relations || []).length} relations, ${(schema.labels || []).length} labels`;
      const relations = $("schema-relations");
      clear(relations);
      const sorted = [...(schema.relations || [])].sort((a, b) => b.count - a.count);
      relationWords = schema.relation_words || {};
      for (const relation of sorted) {
        const words = relationWords[relation.name];
        relations.append(el("li", {}, el("code", {}, relation.name),
          words && words !== relation.name ? ` (${words})` : "", ` ${relation.count}`));
      }
      // The example question is this graph's own: one of its relations, asked of an
      // entity that has it.
      if (schema.example_question) $("question").placeholder = `e.g. ${schema.example_question}`;
      const labels = $("schema-labels");
      clear(labels);
      for (const label of schema.labels || []) {
        labels.append(el("li", {}, el("code", {}, label.name), ` ${label.count}`));
      }
      if ((schema.labels || []).length === 0) labels.append(el("li", { class: "muted" }, "The graph has no labels."));
      problem.hidden = true;
    } catch (error) {
      problem.textContent = `Schema unknown: ${error.message || error}`;
      problem.hidden = false;
    }
  }

  // ---- start ---------------------------------------------------------------

  function start() {
    takeTokenFromAddress();
    showTokenState();
    $("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      storeToken($("token").value.trim());
      $("token").value = "";
      loadAgents();
      loadSchema();
    });
    $("token-forget").addEventListener("click", () => {
      storeToken("");
      $("token").value = "";
    });
    if (settings.graph) $("graph-name").textContent = `answering from ${settings.graph}`;
    if (settings.version) $("version").textContent = `v${settings.version}`;
    const question = $("question");
    if (settings.max_question_chars) question.maxLength = settings.max_question_chars;
    $("ask-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const text = question.value.trim();
      if (text) ask(text);
    });
    question.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        $("ask-form").requestSubmit();
      }
    });
    document.addEventListener("keydown", (event) => {
      const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
      if (event.key === "/" && !typing) {
        event.preventDefault();
        question.focus();
      }
    });
    $("show-uncited").addEventListener("change", () => {
      if (current) drawGraph(current.reply);
    });
    $("refresh-agents").addEventListener("click", loadAgents);
    drawHistory();
    loadAgents();
    loadSchema();
    // `?q=...` asks at once: a question can be shared as a link.
    const asked = new URL(window.location.href).searchParams.get("q");
    if (asked) {
      question.value = asked;
      ask(asked);
    } else {
      question.focus();
    }
  }

  start();
})();
