// sleuth ui: the page's logic. Plain JS, no build step, nothing fetched but this server's /api/.
// Every value from the server is put on the page as text (textContent), never as HTML.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);

  // One colour per lane (the bars of "why it ranked"); lanes not listed are grey.
  const LANE_COLOURS = {
    bm25: "#1f6feb", index: "#e36209", vector: "#1a7f37", tfidf: "#8250df", exact: "#cf222e", graph: "#7d4e24",
    rm3: "#bf8700", feedback: "#bf8700",
  };
  const OTHER_LANE_COLOUR = "#6e7781";
  // The explain entry that is no lane's: the result was moved above a document it supersedes, its
  // score raised to that one's (the entry's contribution). Its row is labelled SUPERSEDES_LABEL.
  const SUPERSEDES_TRACE = "supersedes", SUPERSEDES_LABEL = "moved";
  const SEARCH_DEBOUNCE_MS = 200;
  const STATUS_POLL_MS = 2000;

  const state = {
    facets: null, last: null, offset: 0, controller: null, timer: null, lastFocusedDoc: null, pollTimer: null,
    matches: [], matchAt: -1, token: "",
  };

  function laneColour(lane) {
    return LANE_COLOURS[lane.split("#")[0]] || OTHER_LANE_COLOUR;
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    return node;
  }

  // The bearer token of a server that asks for one (sleuth serve --http: entered once; sleuth ui: from
  // the printed URL, taken out of the address bar at once), kept in this tab's sessionStorage and sent
  // as an Authorization header -- never in a cookie.
  const TOKEN_KEY = "sleuth.token";

  function storedToken() {
    try { return window.sessionStorage.getItem(TOKEN_KEY) || ""; } catch (err) { return ""; }
  }

  function storeToken(token) {
    try {
      if (token) window.sessionStorage.setItem(TOKEN_KEY, token); else window.sessionStorage.removeItem(TOKEN_KEY);
    } catch (err) { /* storage disabled: the token lives until the page is left */ }
    state.token = token;
    $("sign-out").hidden = !token;
  }

  // API paths are relative to the page ("api/search"), so the page works at / (sleuth ui) and at /ui/.
  async function getJSON(path, params, signal) {
    const url = new URL(path.replace(/^\/+/, ""), document.baseURI);
    for (const [key, value] of Object.entries(params || {})) {
      if (value !== "" && value !== null && value !== undefined) url.searchParams.append(key, value);
    }
    const headers = { accept: "application/json" };
    if (state.token) headers.authorization = `Bearer ${state.token}`;
    // No cookie is sent: both servers read the bearer header only.
    const response = await fetch(url, { signal, headers, credentials: "omit" });
    let body;
    try {
      body = await response.json();
    } catch (err) {
      throw new Error(`the server answered ${response.status} without JSON`);
    }
    if (!response.ok) {
      const error = new Error(body && body.error ? body.error : `the server answered ${response.status}`);
      error.status = response.status;
      if (response.status === 401) askForToken(error.message);
      throw error;
    }
    return body;
  }

  function askForToken(why) {
    storeToken("");
    $("token-why").textContent = why;
    for (const id of ["search-view", "doc-view", "index-view"]) $(id).hidden = true;
    $("token-view").hidden = false;
    $("token").value = "";
    $("token").focus();
  }

  // Text whose [start, end) spans (in code points, as the server counts) are marked.
  function highlighted(text, spans) {
    const points = Array.from(text);
    const frag = document.createDocumentFragment();
    let at = 0;
    const sorted = (spans || []).slice().sort((a, b) => a[0] - b[0]);
    for (const [start, end] of sorted) {
      if (start < at || end <= start) continue;
      if (start > at) frag.append(points.slice(at, start).join(""));
      frag.append(el("mark", { text: points.slice(start, end).join("") }));
      at = end;
    }
    if (at < points.length) frag.append(points.slice(at).join(""));
    return frag;
  }

  // ------------------------------------------------------------------ why it ranked

  const BAR_LABEL_W = 58, BAR_W = 200, ROW_H = 18, TEXT_W = 118;

  // How a document of the page is named: "#rank “title”", or its id when it is not on the page.
  function docRef(docId, scale) {
    const hit = (scale.hits || []).find((h) => h.doc_id === docId);
    return hit ? `#${hit.rank} “${hit.title || hit.path}”` : docId;
  }

  // What a "supersedes" entry says: which document the result was moved above.
  function movedNote(c, scale) {
    return `moved above ${docRef(c.moved_above, scale)}, which it supersedes: score raised by ${c.contribution.toFixed(3)}`
      + ` to that one's ${c.lane_score.toFixed(3)}`;
  }

  // An SVG of each lane's contribution (bar length against the largest of the page, from a zero
  // axis: a negative z-score contribution goes left) and its rank in that lane; a result moved above
  // a document it supersedes has a last row for it ("moved": the raise of its score).
  function laneChart(explain, scale) {
    // The lanes in one order on every result (the order they ran in), so charts compare at a glance.
    const order = scale.lanes || [];
    const at = (c) => { const i = order.indexOf(c.lane.split("#")[0]); return i < 0 ? order.length : i; };
    const rows = (explain || []).slice().sort((a, b) => at(a) - at(b) || a.lane.localeCompare(b.lane));
    const hasNegative = rows.some((c) => c.contribution < 0) || scale.negative;
    const zero = BAR_LABEL_W + (hasNegative ? BAR_W / 2 : 0);
    const span = hasNegative ? BAR_W / 2 : BAR_W;
    const width = BAR_LABEL_W + BAR_W + TEXT_W;
    const height = Math.max(rows.length, 1) * ROW_H + 4;
    const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", class: "lane-chart" });
    const summary = rows.map((c) => c.lane === SUPERSEDES_TRACE ? movedNote(c, scale)
      : `${c.lane}: rank ${c.rank}, weight ${c.weight}, contribution ${c.contribution.toFixed(3)}`
      + (c.repeats ? ` (not counted: it repeats ${c.repeats})` : "")).join("; ");
    const title = svg("title", {});
    title.textContent = rows.length ? `Why it ranked: ${summary}` : "No lane trace";
    chart.append(title);
    chart.setAttribute("aria-label", title.textContent);
    rows.forEach((c, i) => {
      const y = i * ROW_H + 2;
      const label = svg("text", { x: 0, y: y + 12 });
      const moved = c.lane === SUPERSEDES_TRACE;
      label.textContent = moved ? SUPERSEDES_LABEL : c.lane;
      const length = scale.max > 0 ? Math.max(1, (Math.abs(c.contribution) / scale.max) * span) : 1;
      const x = c.contribution >= 0 ? zero : zero - length;
      const bar = svg("rect", {
        x: x.toFixed(1), y: y + 2, width: length.toFixed(1), height: ROW_H - 6, fill: laneColour(c.lane),
        "data-lane": c.lane, "data-rank": c.rank, "data-contribution": c.contribution, class: "lane-bar",
      });
      const note = svg("text", { x: BAR_LABEL_W + BAR_W + 6, y: y + 12 });
      const above = moved ? (scale.hits || []).find((h) => h.doc_id === c.moved_above) : null;
      note.textContent = `${moved ? (above ? `above #${above.rank}` : "up") : `#${c.rank}`} · `
        + `${c.contribution >= 0 ? "+" : ""}${c.contribution.toFixed(3)}`;
      chart.append(label, bar, note);
    });
    chart.append(svg("line", { x1: zero, x2: zero, y1: 0, y2: height, stroke: "#8c959f", "stroke-width": 1 }));
    return chart;
  }

  function chartScale(hits) {
    let max = 0, negative = false;
    for (const hit of hits) {
      for (const c of hit.explain || []) {
        max = Math.max(max, Math.abs(c.contribution));
        if (c.contribution < 0) negative = true;
      }
    }
    return { max, negative };
  }

  // ------------------------------------------------------------------ search

  function filterParams() {
    return {
      project: $("f-project").value, kind: $("f-kind").value.trim(), role: $("f-role").value,
      path: $("f-path").value.trim(), tag: $("f-tag").value.trim(), since: $("f-since").value.trim(),
      until: $("f-until").value.trim(),
    };
  }

  function docHash(hit) {
    const blocks = hit.block_ids.slice(0, 50).join(",");
    return `#/doc/${encodeURIComponent(hit.doc_id)}?block=${encodeURIComponent(blocks)}`;
  }

  // "root/" before the path when the hit's project has several roots (else the paths could look
  // alike); the memory folder records are written into does not count (facets.qualified).
  function rootLabel(hit) {
    const qualified = state.facets && state.facets.qualified ? state.facets.qualified : [];
    if (!qualified.includes(hit.project) || !hit.root) return "";
    const parts = hit.root.replace(/\/+$/, "").split("/");
    return `${parts[parts.length - 1]}/`;
  }

  function renderHit(hit, scale, position) {
    const link = el("a", { href: docHash(hit), tabindex: "-1", text: hit.title || hit.path || hit.doc_id });
    const meta = el("p", { class: "meta" },
      `${hit.project}${hit.path ? " · " : ""}`, hit.path ? el("span", { class: "path", text: rootLabel(hit) + hit.path }) : null,
      ` · ${hit.kind}`, hit.role && hit.role !== "other" ? ` · ${hit.role}` : "",
      hit.location && hit.location.label ? " · " : "",
      hit.location && hit.location.label ? el("span", { class: "loc", text: hit.location.label }) : null,
      hit.semantic_only ? el("span", { class: "badge", text: "meaning match" }) : null,
      hit.superseded_by && hit.superseded_by.length ? el("span", { class: "badge", text: "superseded" }) : null);
    const passages = el("div", { class: "passages" });
    for (const p of hit.passages || []) {
      passages.append(el("blockquote", { class: "passage" },
        p.location ? el("span", { class: "ploc", text: p.location }) : null, highlighted(p.text, p.highlights)));
    }
    const moves = (hit.explain || []).filter((c) => c.lane === SUPERSEDES_TRACE);
    const why = el("figure", { class: "why" }, el("h4", { text: `Why it ranked · score ${hit.score.toFixed(3)}` }),
      laneChart(hit.explain, scale),
      ...moves.map((c) => el("p", { class: "moved", text: movedNote(c, scale).replace(/^m/, "M") })),
      el("figcaption", { text: "Bar: the lane's share of the score · #: its rank in that lane" }));
    const item = el("li", {
      class: "hit", tabindex: "0", "data-doc": hit.doc_id, "data-rank": hit.rank, "data-position": position,
      "aria-label": `${hit.rank}. ${hit.title}`,
    }, el("h3", {}, link), meta, passages, why);
    item.addEventListener("keydown", (event) => onHitKey(event, item, hit));
    item.addEventListener("click", (event) => {
      if (event.target.closest("a")) return;  // the link navigates itself
      openHit(item, hit);
    });
    link.addEventListener("click", () => { state.lastFocusedDoc = hit.doc_id; });
    return item;
  }

  function openHit(item, hit) {
    state.lastFocusedDoc = hit.doc_id;
    window.location.hash = docHash(hit);
  }

  function hits() {
    return Array.from($("results").querySelectorAll(".hit"));
  }

  function onHitKey(event, item, hit) {
    const all = hits();
    const at = all.indexOf(item);
    if (event.key === "ArrowDown" || event.key === "j") {
      event.preventDefault();
      if (at + 1 < all.length) all[at + 1].focus();
    } else if (event.key === "ArrowUp" || event.key === "k") {
      event.preventDefault();
      if (at > 0) all[at - 1].focus(); else $("q").focus();
    } else if (event.key === "Home") {
      event.preventDefault(); all[0].focus();
    } else if (event.key === "End") {
      event.preventDefault(); all[all.length - 1].focus();
    } else if (event.key === "Enter") {
      event.preventDefault(); openHit(item, hit);
    } else if (event.key === "Escape") {
      event.preventDefault(); $("q").focus();
    }
  }

  function setStatus(text, isError) {
    const node = $("search-status");
    node.textContent = text;
    node.classList.toggle("error", Boolean(isError));
  }

  function renderResults(body) {
    const list = $("results");
    list.replaceChildren();
    state.last = body;
    const scale = { ...chartScale(body.hits), lanes: body.lanes || [], hits: body.hits };
    body.hits.forEach((hit, i) => list.append(renderHit(hit, scale, i)));
    const notes = [];
    if (body.ignored_filters && body.ignored_filters.length) {
      notes.push(`not applied yet: ${body.ignored_filters.join(", ")}`);
    }
    for (const [lane, why] of Object.entries(body.unavailable_lanes || {})) notes.push(`lane ${lane} unavailable: ${why}`);
    // The engine's notice already holds word_notice, first of its notes (Pipeline._notice): the
    // status line showed it twice. word_notice is added only if the notice does not hold it.
    if (body.notice) notes.push(body.notice);
    if (body.word_notice && !(body.notice || "").split("; ").includes(body.word_notice)) notes.push(body.word_notice);
    const count = body.hits.length;
    const head = body.query.trim()
      ? `${count} result${count === 1 ? "" : "s"} for “${body.query}”${body.took_ms ? ` in ${body.took_ms.toFixed(0)} ms` : ""}`
      : "Type to search.";
    setStatus([head, ...notes].join(" — "), false);
    const offsetOn = state.facets && state.facets.filters && state.facets.filters.offset;
    $("pager").hidden = !offsetOn || (!state.offset && count < Number(body.limit || 10));
    $("prev-page").disabled = state.offset === 0;
  }

  function writeHash(query, filters) {
    const params = new URLSearchParams();
    if (query) params.set("q", query);
    for (const [key, value] of Object.entries(filters)) if (value) params.set(key, value);
    const hash = `#/search${params.toString() ? "?" + params.toString() : ""}`;
    if (window.location.hash !== hash) history.replaceState(null, "", hash);
  }

  async function runSearch() {
    clearTimeout(state.timer);
    if (state.controller) state.controller.abort();
    const controller = new AbortController();
    state.controller = controller;
    const query = $("q").value;
    const filters = filterParams();
    writeHash(query, filters);
    if (!query.trim()) {
      $("results").replaceChildren();
      setStatus("Type to search.", false);
      return;
    }
    setStatus("Searching…", false);
    try {
      const body = await getJSON("/api/search", { q: query, limit: 10, offset: state.offset || "", ...filters },
        controller.signal);
      if (controller !== state.controller) return;
      body.limit = 10;
      renderResults(body);
    } catch (err) {
      if (err.name === "AbortError") return;
      $("results").replaceChildren();
      setStatus(err.message, true);
    }
  }

  function searchSoon() {
    clearTimeout(state.timer);
    state.offset = 0;
    state.timer = setTimeout(runSearch, SEARCH_DEBOUNCE_MS);
  }

  // ------------------------------------------------------------------ document view

  async function showDocument(docId, marked) {
    const body = $("doc-body");
    body.replaceChildren();
    $("doc-title").textContent = "Loading…";
    $("doc-meta").textContent = "";
    let doc;
    try {
      doc = await getJSON("/api/document", { id: docId, block: marked.join(",") });
    } catch (err) {
      $("doc-title").textContent = "Document not shown";
      $("doc-meta").textContent = err.message;
      $("doc-title").focus();
      return;
    }
    $("doc-title").textContent = doc.title || doc.path;
    $("doc-meta").textContent = [doc.project, doc.path, doc.kind, doc.pages ? `${doc.pages} pages` : "",
      `indexed from the file of ${doc.mtime}`, doc.truncated ? `first ${doc.text.length} of ${doc.chars} characters shown` : ""]
      .filter(Boolean).join(" · ");
    const text = Array.from(doc.text);
    let at = 0;
    state.matches = [];
    for (const b of doc.blocks) {
      if (b.start > at) body.append(el("pre", { class: "seg gap", text: text.slice(at, b.start).join("") }));
      const start = Math.max(b.start, at);
      const section = el("section", { class: `seg block${b.matched ? " matched" : ""}`, "data-block": b.block_id,
        tabindex: b.matched ? "-1" : null, "aria-label": b.matched ? `Matched block ${b.location}` : null },
      el("span", { class: "bloc", text: (b.matched ? "matched · " : "") + (b.location || "") }),
      text.slice(start, b.end).join(""));
      if (b.matched) state.matches.push(section);
      body.append(section);
      at = Math.max(at, b.end);
    }
    if (at < text.length) body.append(el("pre", { class: "seg gap", text: text.slice(at).join("") }));
    $("doc-matches").textContent = `${state.matches.length} matched block${state.matches.length === 1 ? "" : "s"}`;
    state.matchAt = -1;
    if (state.matches.length) gotoMatch(1); else $("doc-title").focus();
  }

  function gotoMatch(step) {
    if (!state.matches.length) return;
    state.matchAt = (state.matchAt + step + state.matches.length) % state.matches.length;
    const node = state.matches[state.matchAt];
    node.scrollIntoView({ block: "center" });
    node.focus({ preventScroll: true });
  }

  // ------------------------------------------------------------------ index view

  function count(label, value, id) {
    return el("div", { id }, el("dt", { text: label }), el("dd", { text: String(value) }));
  }

  async function showIndex(withFiles) {
    let s;
    try {
      s = await getJSON("/api/status", withFiles ? { files: "1" } : {});
    } catch (err) {
      $("index-activity").textContent = err.message;
      return;
    }
    $("index-dir").textContent = s.index_dir ? `Index folder ${s.index_dir} · generation ${s.generation}` : "";
    const e = s.embedding;
    const embedded = e.blocks ? `${e.blocks_with_vectors} of ${e.blocks}` : "";
    const counts = [count("Documents", s.documents, "count-documents"), count("Blocks", s.blocks, "count-blocks"),
      count("Skipped files", s.skipped, "count-skipped")];
    if (s.stale !== null) counts.push(count("Stale files", s.stale.length, "count-stale"));
    if (embedded) counts.push(count("Blocks embedded", embedded, "count-embedded"));
    $("index-counts").replaceChildren(...counts);
    const activity = [];
    if (s.writer) activity.push(el("p", { id: "writer", text: `Indexing now: ${s.writer}` }));
    if (e.blocks) {
      activity.push(el("p", {}, el("label", { for: "embed-progress", text: "Embedding " }),
        el("progress", { id: "embed-progress", max: e.blocks, value: e.blocks_with_vectors }),
        ` ${embedded} blocks have vectors${e.model ? ` (${e.model})` : ""}`));
    } else if (!e.available && e.reason) {
      activity.push(el("p", { text: `Vector lane: ${e.reason}` }));
    }
    if (s.postings_behind) activity.push(el("p", { text: `Postings behind: ${s.postings_behind}` }));
    if (s.read_only) activity.push(el("p", { text: `Read-only: ${s.read_only}` }));
    $("index-activity").replaceChildren(...activity);
    $("coverage").tBodies[0].replaceChildren(...s.coverage.map((c) => el("tr", {},
      el("td", { text: c.project }), el("td", { text: c.root || "(records)" }), el("td", { text: String(c.indexed) }),
      el("td", { text: String(c.skipped) }), el("td", { text: String(c.failed) }),
      el("td", { text: c.last_indexed || "never" }))));
    $("skipped-reasons").tBodies[0].replaceChildren(...(s.skipped_by_reason.length ? s.skipped_by_reason.map((r) =>
      el("tr", {}, el("td", { text: r.reason + (r.state === "failed" ? " (failed)" : "") }),
        el("td", { text: String(r.files) }))) : [el("tr", {}, el("td", { colspan: 2, text: "No file was skipped." }))]));
    if (s.stale === null) {
      $("stale-summary").textContent = "Checking the files…";
    } else {
      $("stale-summary").textContent = s.stale.length
        ? `${s.stale.length} file${s.stale.length === 1 ? " has" : "s have"} changed since indexed: run sleuth index again.`
        : "Every indexed file is as it was indexed.";
      $("stale-files").replaceChildren(...s.stale.slice(0, 200).map((f) => el("li", { text: `${f.project}: ${f.path}` })));
    }
    $("problems").replaceChildren(...(s.problems.length ? s.problems.slice(0, 200).map((p) =>
      el("li", { text: `${p.path}: ${p.problem}` })) : [el("li", { text: "None." })]));
    clearTimeout(state.pollTimer);
    const embedding = e.blocks && e.blocks_with_vectors < e.blocks && e.available !== false;
    if ((s.writer || embedding) && currentView() === "index") {
      state.pollTimer = setTimeout(() => showIndex(false), STATUS_POLL_MS);
    }
    if (!withFiles && s.stale === null && currentView() === "index") showIndex(true);
  }

  // ------------------------------------------------------------------ views and keys

  function currentView() {
    const hash = window.location.hash || "#/search";
    if (hash.startsWith("#/doc/")) return "doc";
    if (hash.startsWith("#/index")) return "index";
    return "search";
  }

  function route() {
    if (!$("token-view").hidden) return;  // waiting for a token
    const view = currentView();
    $("search-view").hidden = view !== "search";
    $("doc-view").hidden = view !== "doc";
    $("index-view").hidden = view !== "index";
    $("nav-search").removeAttribute("aria-current");
    $("nav-index").removeAttribute("aria-current");
    $(view === "index" ? "nav-index" : "nav-search").setAttribute("aria-current", "page");
    if (view === "doc") {
      const rest = window.location.hash.slice("#/doc/".length);
      const [idPart, query] = rest.split("?");
      const marked = new URLSearchParams(query || "").get("block");
      showDocument(decodeURIComponent(idPart), marked ? marked.split(",") : []);
    } else if (view === "index") {
      $("index-title").focus();
      showIndex(false);
    } else {
      clearTimeout(state.pollTimer);
      const params = new URLSearchParams((window.location.hash.split("?")[1]) || "");
      if (params.has("q") && params.get("q") !== $("q").value) {
        $("q").value = params.get("q");
        for (const [key, id] of [["project", "f-project"], ["kind", "f-kind"], ["role", "f-role"], ["path", "f-path"],
          ["tag", "f-tag"], ["since", "f-since"], ["until", "f-until"]]) {
          if (params.has(key)) $(id).value = params.get(key);
        }
        runSearch();
      }
      const back = state.lastFocusedDoc && hits().find((h) => h.dataset.doc === state.lastFocusedDoc);
      if (back) back.focus(); else if (document.activeElement === document.body) $("q").focus();
    }
  }

  function backToResults() {
    window.location.hash = "#/search" + (state.last ? `?${new URLSearchParams({ q: state.last.query }).toString()}` : "");
  }

  async function loadFacets() {
    try {
      state.facets = await getJSON("/api/facets");
    } catch (err) {
      setStatus(err.message, true);
      return false;
    }
    const project = $("f-project");
    project.replaceChildren(el("option", { value: "", text: "All projects" }));
    $("kind-list").replaceChildren();
    $("f-role").replaceChildren(el("option", { value: "", text: "Any role" }));
    for (const p of state.facets.projects) project.append(el("option", { value: p, text: p }));
    for (const k of state.facets.kinds) $("kind-list").append(el("option", { value: k }));
    for (const r of state.facets.roles) $("f-role").append(el("option", { value: r, text: r }));
    $("q").maxLength = state.facets.query_max_chars;
    return true;
  }

  async function start() {
    const loaded = await loadFacets();
    if (loaded || $("token-view").hidden) {  // not waiting for a token (another failure is shown as it is)
      $("token-view").hidden = true;
      document.documentElement.dataset.ready = "1";
      route();
    }
  }

  function wire() {
    $("search-form").addEventListener("submit", (event) => {
      event.preventDefault();
      state.offset = 0;
      runSearch();
    });
    $("q").addEventListener("input", searchSoon);
    $("q").addEventListener("keydown", (event) => {
      if (event.key === "ArrowDown") {
        const first = hits()[0];
        if (first) { event.preventDefault(); first.focus(); }
      }
    });
    for (const id of ["f-project", "f-role", "f-since", "f-until"]) $(id).addEventListener("change", searchSoon);
    for (const id of ["f-kind", "f-path", "f-tag"]) $(id).addEventListener("input", searchSoon);
    $("prev-page").addEventListener("click", () => { state.offset = Math.max(0, state.offset - 10); runSearch(); });
    $("next-page").addEventListener("click", () => { state.offset += 10; runSearch(); });
    $("doc-back").addEventListener("click", backToResults);
    $("doc-prev-match").addEventListener("click", () => gotoMatch(-1));
    $("doc-next-match").addEventListener("click", () => gotoMatch(1));
    document.addEventListener("keydown", (event) => {
      const typing = event.target.matches && event.target.matches("input, select, textarea");
      if (event.key === "/" && !typing) {
        event.preventDefault();
        if (currentView() !== "search") window.location.hash = "#/search";
        $("q").focus();
        $("q").select();
      } else if (event.key === "Escape" && currentView() === "doc") {
        event.preventDefault();
        backToResults();
      } else if (currentView() === "doc" && !typing && (event.key === "n" || event.key === "p")) {
        gotoMatch(event.key === "n" ? 1 : -1);
      }
    });
    window.addEventListener("hashchange", route);
    $("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const token = $("token").value.trim();
      if (!token) return;
      storeToken(token);
      $("token").value = "";
      $("token-why").textContent = "Checking the token…";
      start();
    });
    $("sign-out").addEventListener("click", () => {
      askForToken("The token was forgotten; enter one to go on.");
      document.documentElement.dataset.ready = "";
    });
  }

  // What webmcp.js uses: the same API and the same rendering of a location.
  window.sleuthPage = { getJSON };

  // `sleuth ui` prints the page's URL with its token (?token=...): kept in this tab's sessionStorage
  // (per origin: never sent to another port, as a cookie would be) and taken out of the address bar.
  function tokenFromAddress() {
    const url = new URL(window.location.href);
    const given = url.searchParams.get("token");
    if (given === null) return "";
    url.searchParams.delete("token");
    window.history.replaceState(window.history.state, "", url.pathname + url.search + url.hash);
    return given;
  }

  wire();
  storeToken(tokenFromAddress() || storedToken());
  start();
})();
