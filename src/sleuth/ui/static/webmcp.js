// sleuth ui as a WebMCP site: where the browser offers WebMCP (document.modelContext, or the older
// navigator.modelContext), the page registers its search tool for in-browser agents.
//
// The tool follows seed 001's search_guides contract: the same input schema (query required, limit an
// integer 1..10 that defaults to 5), readOnlyHint, a limit clamped whatever the host passes (the schema
// does not replace the clamp), a query that is not a string searched as "", an answer of three lines
// per match after a count line, one sentence when the search fails, and one analytics event per call
// (webmcp_tool_call with tool_name and page_path on window.dataLayer) recorded before and outside the
// search's try, guarded so that it can never fail the search.
"use strict";

(function () {
  const TOOL_NAME = "search_index";
  const DEFAULT_LIMIT = 5;
  const MAX_LIMIT = 10;
  const FAILURE_TEXT = "The search could not be completed.";

  // Seed 001's clampGuideLimit: a number is used as a number, a non-empty string goes through Number,
  // anything not finite is the default, then floor, then [1, MAX_LIMIT].
  function clampLimit(limit) {
    const numeric = typeof limit === "number" ? limit
      : typeof limit === "string" && limit.trim() !== "" ? Number(limit) : Number.NaN;
    if (!Number.isFinite(numeric)) return DEFAULT_LIMIT;
    const whole = Math.floor(numeric);
    if (whole < 1) return 1;
    if (whole > MAX_LIMIT) return MAX_LIMIT;
    return whole;
  }

  // Seed 001's oneLineSummary: dashes made plain, whitespace (newlines too) collapsed.
  function oneLine(text) {
    return String(text || "").replace(/\u2014/g, " - ").replace(/\u2013/g, "-").replace(/\s+/g, " ").trim();
  }

  function documentUrl(hit) {
    return `${window.location.origin}${window.location.pathname}#/doc/${encodeURIComponent(hit.doc_id)}`;
  }

  // The answer text: "No documents matched "q"." or "N document(s) matched "q"." then, per match,
  // "n. title (project: path, location)", the URL of the document on this page, a one-line passage.
  function formatMatches(query, hits) {
    const shown = oneLine(query);
    if (hits.length === 0) return `No documents matched "${shown}".`;
    const lines = [`${hits.length} ${hits.length === 1 ? "document" : "documents"} matched "${shown}".`];
    hits.forEach((hit, i) => {
      const where = [hit.path ? `${hit.project}: ${hit.path}` : hit.project,
        hit.location && hit.location.label ? hit.location.label : ""].filter(Boolean).join(", ");
      lines.push(`${i + 1}. ${oneLine(hit.title) || hit.doc_id} (${where})`, documentUrl(hit),
        oneLine(hit.snippet) || oneLine(hit.title));
    });
    return lines.join("\n");
  }

  function textContent(text, isError) {
    const out = { content: [{ type: "text", text }] };
    if (isError) out.isError = true;
    return out;
  }

  // Seed 001's pushWebmcpToolCall: nothing when window or dataLayer is missing; never throws.
  function pushToolCall(toolName) {
    if (typeof window === "undefined" || !window.dataLayer) return;
    try {
      window.dataLayer.push({ event: "webmcp_tool_call", tool_name: toolName, page_path: window.location.pathname });
    } catch (err) {
      // an analytics failure never fails the search
    }
  }

  async function search(query, limit) {
    const page = window.sleuthPage;
    if (!page) throw new Error("page not loaded");
    const body = await page.getJSON("/api/search", { q: query, limit });
    return body.hits.slice(0, limit);
  }

  const searchIndexTool = {
    name: TOOL_NAME,
    title: "Search this index",
    description:
      "Search the documents of the sleuth index this page shows (titles, headings and text, by words and meaning). " +
      "Returns matching titles with project, path and location, the URL of each document on this page, and a " +
      "one-line passage. Does not change anything. The limit defaults to 5 and cannot exceed 10.",
    inputSchema: {
      type: "object",
      properties: {
        query: {
          type: "string",
          description: "Words to match against document titles, headings, and text.",
        },
        limit: {
          type: "integer",
          minimum: 1,
          maximum: 10,
          description: "Maximum matches to return. Defaults to 5 and cannot exceed 10.",
        },
      },
      required: ["query"],
    },
    annotations: { readOnlyHint: true },
    execute: async (input) => {
      pushToolCall(TOOL_NAME);
      try {
        const args = input && typeof input === "object" ? input : {};
        const query = typeof args.query === "string" ? args.query : "";
        const limit = clampLimit(args.limit);
        const hits = query.trim() ? await search(query, limit) : [];
        return textContent(formatMatches(query, hits));
      } catch (err) {
        return textContent(FAILURE_TEXT, true);
      }
    },
  };

  // For the page's tests and for agents that read the page: the tool and its helpers.
  window.sleuthWebMcp = { tool: searchIndexTool, clampLimit, formatMatches, pushToolCall, FAILURE_TEXT };

  function register() {
    const context = document.modelContext || navigator.modelContext;
    const root = document.documentElement;
    if (!context) {
      root.dataset.webmcp = "absent";
      return;
    }
    try {
      let done;
      if (typeof context.registerTool === "function") done = context.registerTool(searchIndexTool);
      else if (typeof context.provideContext === "function") done = context.provideContext({ tools: [searchIndexTool] });
      else {
        root.dataset.webmcp = "unsupported";
        return;
      }
      Promise.resolve(done).then(
        () => { root.dataset.webmcp = "registered"; },
        (err) => { root.dataset.webmcp = "refused"; console.warn("WebMCP registration refused:", err); });
    } catch (err) {
      root.dataset.webmcp = "refused";
      console.warn("WebMCP registration failed:", err);
    }
  }

  register();
})();
