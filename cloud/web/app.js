// The meetmem meeting app: plain JavaScript over the same /v1 routes and bearer tokens as every client.
// No framework and no build step. Every piece of server text goes into the page as text (never as HTML).
"use strict";

(() => {
  const TOKEN_KEY = "meetmem.token";
  const $ = (id) => document.getElementById(id);
  const state = {
    token: sessionStorage.getItem(TOKEN_KEY),
    meetingId: null,
    segments: new Map(),      // segment_id -> segment
    supersededBy: new Map(),  // segment_id -> the correction's segment_id
    stream: null,             // AbortController of the live captions
    refreshTimer: null,
    audio: null,              // the meeting's audio: where it exists (spans) and the stretch loaded
    searchAll: null,          // null: unknown yet; true/false once probed
    loadToken: 0,
    speakerNames: new Map(),  // speaker label -> its name in the meeting's speaker map
    partials: new Map(),      // device_id -> its latest partial caption (live, never stored)
  };

  // -- small helpers ---------------------------------------------------------------------------------------
  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  // Replace a node's children; nulls are skipped and arrays flattened (replaceChildren would print them).
  function put(node, ...children) {
    node.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false)
      .map((c) => (c instanceof Node ? c : document.createTextNode(String(c)))));
  }

  function clock(seconds) {
    const total = Math.max(0, Math.floor(seconds || 0));
    const h = Math.floor(total / 3600), m = Math.floor((total % 3600) / 60), s = total % 60;
    const pad = (n) => String(n).padStart(2, "0");
    return h ? `${h}:${pad(m)}:${pad(s)}` : `${pad(m)}:${pad(s)}`;
  }

  function length(seconds) {
    const minutes = Math.round((seconds || 0) / 60);
    if (minutes < 1) return `${Math.round(seconds || 0)} s`;
    return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  }

  function day(iso) {
    if (!iso) return "";
    const date = new Date(iso);
    if (Number.isNaN(date.getTime())) return iso;
    return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
  }

  function flash(message) {
    const box = $("flash");
    box.textContent = message || "";
    box.hidden = !message;
  }

  // Text with every occurrence of the query's words wrapped in <mark>.
  function highlighted(text, query) {
    const words = (query || "").toLowerCase().split(/[^\p{L}\p{N}$.,:-]+/u)
      .map((w) => w.replace(/^[.,:-]+|[.,:-]+$/g, "")).filter((w) => w.length > 1 || /\p{N}/u.test(w));
    if (!words.length) return [text];
    const pattern = new RegExp(words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "giu");
    const out = [];
    let last = 0;
    for (const match of text.matchAll(pattern)) {
      if (match.index > last) out.push(text.slice(last, match.index));
      out.push(el("mark", {}, match[0]));
      last = match.index + match[0].length;
    }
    if (last < text.length) out.push(text.slice(last));
    return out;
  }

  // -- the API ---------------------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, detail) { super(detail); this.status = status; }
  }

  async function api(path, options = {}) {
    const headers = new Headers(options.headers || {});
    headers.set("Authorization", `Bearer ${state.token}`);
    let response;
    try {
      response = await fetch(path, { ...options, headers });
    } catch (err) {
      throw new ApiError(0, "the server cannot be reached; check that `meetmem serve` is running");
    }
    if (response.status === 401) {
      signOut("That token was not accepted (missing, unknown or revoked). Sign in again.");
      throw new ApiError(401, "signed out");
    }
    if (!response.ok) {
      let detail = `${response.status} ${response.statusText}`;
      try { detail = (await response.json()).detail || detail; } catch (_) { /* not JSON */ }
      throw new ApiError(response.status, detail);
    }
    return response;
  }

  const getJson = async (path, options) => (await api(path, options)).json();
  const meetingPath = (id, rest = "") => `/v1/meetings/${encodeURIComponent(id)}${rest}`;

  // -- sign in -----------------------------------------------------------------------------------------------
  function signOut(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    state.token = null;
    stopStream();
    if (state.audio) resetAudio();
    location.hash = "#/";
    show("signin-view");
    $("signin-error").textContent = message || "";
    $("signout").hidden = true;
    $("tenant").textContent = "";
  }

  // Check a token with the server before keeping it; the current sign-in stays as it is if it fails.
  // Returns null when signed in, else why not.
  async function signIn(token) {
    const candidate = token.trim();
    let response;
    try {
      response = await fetch("/v1/meetings", { headers: { Authorization: `Bearer ${candidate}` } });
    } catch (_) {
      return "the server cannot be reached; check that `meetmem serve` is running";
    }
    if (response.status === 401) return "That token was not accepted. Check it and try again.";
    if (!response.ok) {
      let detail = `${response.status} ${response.statusText}`;
      try { detail = (await response.json()).detail || detail; } catch (_) { /* not JSON */ }
      return detail;
    }
    state.token = candidate;
    sessionStorage.setItem(TOKEN_KEY, state.token);
    $("signin-error").textContent = "";
    $("token-input").value = "";
    return null;
  }

  // A token's last characters, enough to tell two apart without showing either.
  const tokenTail = (token) => `…${token.slice(-6)}`;

  // A link carrying a token other than this tab's: the user says which to use. Nothing is sent with the
  // link's token unless they choose it.
  function askSwitch(offered) {
    show("switch-view");
    $("switch-current").textContent = tokenTail(state.token);
    $("switch-offered").textContent = tokenTail(offered);
    $("switch-keep").focus();
    return new Promise((resolve) => {
      const choose = (use) => () => {
        $("switch-use").onclick = null;
        $("switch-keep").onclick = null;
        resolve(use);
      };
      $("switch-use").onclick = choose(true);
      $("switch-keep").onclick = choose(false);
    });
  }

  // `#token=...` (the link `meetmem demo --serve` prints): read once and removed from the address bar and
  // the history at once. With no sign-in it signs in; with another token signed in, it asks first.
  async function tokenFromLink(encoded) {
    history.replaceState(null, "", location.pathname + location.search + "#/");
    let offered;
    try {
      offered = decodeURIComponent(encoded).trim();
    } catch (_) {
      flash("The link's token is not readable (a broken %-escape); nothing changed.");
      return;
    }
    if (!offered || offered === state.token) return;
    if (state.token && !(await askSwitch(offered))) return;
    const problem = await signIn(offered);
    if (problem) {
      if (state.token) flash(`The link's token was not used: ${problem}`);
      else $("signin-error").textContent = problem;
    }
  }

  $("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const problem = await signIn($("token-input").value);
    $("signin-error").textContent = problem || "";
    if (!problem) route();
  });
  $("signout").addEventListener("click", () => signOut("Signed out."));

  // -- views -------------------------------------------------------------------------------------------------
  function show(id) {
    for (const view of ["signin-view", "switch-view", "list-view", "meeting-view"]) $(view).hidden = view !== id;
  }

  async function route() {
    const hash = location.hash || "#/";
    const tokenMatch = hash.match(/^#token=(.*)$/);
    if (tokenMatch) await tokenFromLink(tokenMatch[1]);
    if (!state.token) {
      stopStream();
      show("signin-view");
      $("token-input").focus();
      return;
    }
    $("signout").hidden = false;
    if (!tokenMatch) flash("");
    const meetingMatch = (location.hash || "").match(/^#\/m\/([^?]+)(?:\?(.*))?$/);
    if (meetingMatch) {
      const params = new URLSearchParams(meetingMatch[2] || "");
      await openMeeting(decodeURIComponent(meetingMatch[1]), params.get("seg"), params.get("t"));
    } else {
      stopStream();
      if (state.audio) resetAudio();
      state.meetingId = null;
      await showList();
    }
  }
  window.addEventListener("hashchange", route);

  // -- the meetings list ------------------------------------------------------------------------------------
  async function showList() {
    show("list-view");
    document.title = "Meetings · meetmem";
    let meetings;
    try {
      meetings = await getJson("/v1/meetings");
    } catch (err) {
      if (err.status !== 401) flash(`The meetings could not be listed: ${err.message}`);
      return;
    }
    probeSearchAll();
    // A live meeting with no recorded start is happening now: it sorts first.
    const now = new Date().toISOString();
    const isLive = (m) => !m.closed && m.status !== "closed";
    const dateOf = (m) => m.started_at || (m.closure && m.closure.closed_at) || (isLive(m) ? now : "");
    meetings.forEach((m, i) => { m._order = i; });
    meetings.sort((a, b) => (dateOf(b) || "").localeCompare(dateOf(a) || "") || b._order - a._order);
    const body = $("meetings").querySelector("tbody");
    put(body);
    $("list-empty").hidden = meetings.length > 0;
    $("meetings").hidden = meetings.length === 0;
    const fills = [];
    for (const m of meetings) {
      const live = !m.closed && m.status !== "closed";
      const people = el("td", { "data-label": "Participants" }, (m.participants || []).join(", ") || "…");
      const todos = el("td", { "data-label": "To do", class: "num" }, "…");
      const row = el("tr", {},
        el("th", { scope: "row" }, el("a", { href: `#/m/${encodeURIComponent(m.meeting_id)}` },
          m.title || m.meeting_id)),
        el("td", { "data-label": "Date" }, m.started_at ? day(m.started_at)
          : (m.closure ? `ended ${day(m.closure.closed_at)}` : (live ? "in progress" : "—"))),
        el("td", { "data-label": "Length" }, length(m.duration)),
        people,
        el("td", { "data-label": "State" }, el("span", { class: `badge ${live ? "live" : "closed"}` },
          live ? "live" : "closed")),
        todos);
      body.append(row);
      fills.push(() => fillRow(m, people, todos));
    }
    // Participants (when the listing has none) and todo counts come from each meeting, four at a time.
    const queue = fills.slice();
    const worker = async () => { while (queue.length) await queue.shift()(); };
    await Promise.all([worker(), worker(), worker(), worker()]);
  }

  async function fillRow(m, peopleCell, todoCell) {
    try {
      if (!(m.participants && m.participants.length)) {
        const segments = await getJson(meetingPath(m.meeting_id, "/segments"));
        const speakers = [...new Set(segments.map((s) => s.speaker).filter(Boolean))];
        peopleCell.textContent = speakers.join(", ") || "—";
      }
      const ledger = await getJson(meetingPath(m.meeting_id, "/ledger"));
      const open = ledger.todos.filter((t) => t.status === "current").length;
      todoCell.textContent = String(open);
    } catch (err) {
      if (peopleCell.textContent === "…") peopleCell.textContent = "—";
      todoCell.textContent = err.status === 503 ? "later" : "—";
    }
  }

  async function probeSearchAll() {
    if (state.searchAll === null) {
      try {
        await api("/v1/search?q=meeting&k=1");
        state.searchAll = true;
      } catch (err) {
        state.searchAll = err.status !== 404 && err.status !== 405;
      }
    }
    $("search-all-form").hidden = !state.searchAll;
  }

  $("search-all-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const q = $("search-all-input").value.trim();
    const list = $("search-all-results");
    put(list, el("li", { class: "note" }, "Searching…"));
    try {
      const hits = await getJson(`/v1/search?q=${encodeURIComponent(q)}&k=20`);
      put(list, ...(hits.length ? hits.map((h) => el("li", {},
        el("a", { href: `#/m/${encodeURIComponent(h.meeting_id)}?seg=${encodeURIComponent(h.segment_id)}&t=${h.start}` },
          el("span", { class: "where" }, `${h.meeting_id} · ${clock(h.start)}`),
          h.speaker ? el("span", { class: "speaker" }, `${h.speaker}: `) : null,
          highlighted(h.text, q)))) : [el("li", { class: "note" }, "Nothing found.")]));
    } catch (err) {
      put(list, el("li", { class: "error" }, err.message));
    }
  });

  // -- one meeting ---------------------------------------------------------------------------------------------
  async function openMeeting(id, segmentId, at) {
    show("meeting-view");
    const same = state.meetingId === id;
    if (!same) {
      stopStream();
      state.meetingId = id;
      state.segments = new Map();
      state.supersededBy = new Map();
      state.speakerNames = new Map();
      state.partials = new Map();
      renderCaption();
      state.loadToken += 1;
      for (const box of ["transcript", "summary", "ledger", "answer", "search-results"]) $(box).replaceChildren();
      $("m-title").textContent = id;
      $("m-meta").textContent = "";
      $("audio-note").textContent = "";
      document.title = `${id} · meetmem`;
      const ticket = state.loadToken;
      let info;
      try {
        info = await getJson(meetingPath(id));
      } catch (err) {
        if (err.status !== 401) flash(err.status === 404 ? `There is no meeting “${id}” for this token.` : err.message);
        return;
      }
      if (ticket !== state.loadToken) return;
      renderHead(info);
      await Promise.all([loadContent(id, ticket, info), loadAudioInfo(id, ticket)]);
      if (ticket !== state.loadToken) return;
      startStream(id);
    }
    if (segmentId || at) jumpTo(segmentId, at !== null ? Number(at) : null);
  }

  function renderHead(info, doc) {
    const title = (doc && doc.title) || info.title || info.meeting_id;
    $("m-title").textContent = title;
    document.title = `${title} · meetmem`;
    const people = (doc && doc.participants && doc.participants.length ? doc.participants : info.participants) || [];
    const date = (doc && doc.started_at) || info.started_at;
    const live = !info.closed && info.status !== "closed";
    const parts = [];
    if (date) parts.push(day(date));
    else if (info.closure) parts.push(`ended ${day(info.closure.closed_at)}`);
    parts.push(length((doc && doc.duration) || info.duration));
    if (people.length) parts.push(people.join(", "));
    parts.push(live ? "live" : "closed");
    $("m-meta").textContent = parts.join(" · ");
    $("live-badge").hidden = !live;
  }

  async function loadContent(id, ticket, info) {
    let doc = null;
    try {
      doc = JSON.parse(await (await api(meetingPath(id, "/export?format=json"))).text());
    } catch (err) {
      if (err.status === 401) return;
      // The summary may not be ready (503 while the models load): show the transcript alone for now.
      try {
        const segments = await getJson(meetingPath(id, "/segments"));
        doc = { segments, summary: null, ledger: null };
      } catch (err2) {
        flash(err2.message);
        return;
      }
      scheduleRefresh(5000);
    }
    if (ticket !== state.loadToken) return;
    for (const seg of doc.segments) {
      if (seg.speaker && seg.speaker_name) state.speakerNames.set(seg.speaker, seg.speaker_name);
      addSegment(seg, false);
    }
    renderTranscript();
    renderHead(info, doc);
    renderSummary(doc.summary);
    renderLedger(doc.ledger);
  }

  // -- transcript ---------------------------------------------------------------------------------------------
  function addSegment(seg) {
    state.segments.set(seg.segment_id, seg);
    if (seg.supersedes) state.supersededBy.set(seg.supersedes, seg.segment_id);
  }

  function ordered() {
    return [...state.segments.values()].sort((a, b) => a.start - b.start
      || String(a.device_id).localeCompare(String(b.device_id)) || a.seq - b.seq);
  }

  // A correction is shown beside the segment it corrects (struck through), not as a row of its own; a
  // correction of a correction shows the first words and the last.
  function inline(seg) {
    return Boolean(seg.supersedes && state.segments.has(seg.supersedes));
  }

  function rootOf(id) {
    let seg = state.segments.get(id);
    while (seg && inline(seg)) seg = state.segments.get(seg.supersedes);
    return seg ? seg.segment_id : id;
  }

  function latestOf(id) {
    let current = id;
    while (state.supersededBy.has(current)) current = state.supersededBy.get(current);
    return current === id ? null : state.segments.get(current);
  }

  // The transcript row that shows a segment (a correction's row is the one of the segment it corrects).
  function rowFor(id) {
    return id ? $(`seg-${rootOf(id)}`) : null;
  }

  // A speaker by the name the meeting's speaker map gives the label (the label itself on hover).
  function speakerTag(label, name, suffix = "") {
    const known = name || state.speakerNames.get(label);
    return el("span", { class: "speaker", title: known && known !== label ? `speaker ${label}` : "" },
      `${known || label}${suffix}`);
  }

  function segmentItem(seg) {
    const correction = latestOf(seg.segment_id);
    const text = correction
      ? [el("del", { title: "superseded by a correction" }, seg.text),
        el("span", { class: "correction" }, " → ", el("ins", { title: "the correction" }, correction.text))]
      : [seg.text];
    return el("li", { id: `seg-${seg.segment_id}`, class: correction ? "segment superseded" : "segment",
      tabindex: "-1", dataset: { start: seg.start, end: seg.end } },
    el("button", { type: "button", class: "time", title: `Play from ${clock(seg.start)}`,
      "aria-label": `Play from ${clock(seg.start)}`, onclick: () => jumpTo(seg.segment_id, seg.start) },
    clock(seg.start)),
    seg.speaker ? speakerTag(seg.speaker, seg.speaker_name) : null,
    el("span", { class: "text" }, ...text),
    seg.supersedes && !correction ? el("span", { class: "tag" }, "correction") : null);
  }

  function renderTranscript() {
    const list = $("transcript");
    put(list, ...ordered().filter((seg) => !inline(seg)).map(segmentItem));
    if (!state.segments.size) list.append(el("li", { class: "note" }, "No segments yet."));
  }

  function insertLive(seg) {
    const list = $("transcript");
    const panel = list.closest(".transcript-col");
    const atBottom = panel.scrollHeight - panel.scrollTop - panel.clientHeight < 80;
    const known = state.segments.has(seg.segment_id);
    addSegment(seg);
    if (known) return;
    const note = list.querySelector(".note");
    if (note) note.remove();
    if (inline(seg)) {
      const root = rootOf(seg.segment_id);
      const oldItem = $(`seg-${root}`);
      if (oldItem) {
        const fresh = segmentItem(state.segments.get(root));
        fresh.classList.add("arrived");
        oldItem.replaceWith(fresh);
        return;
      }
    }
    const item = segmentItem(seg);
    item.classList.add("arrived");
    const after = [...list.children].find((li) => Number(li.dataset.start) > seg.start);
    list.insertBefore(item, after || null);
    if (atBottom && !after) panel.scrollTop = panel.scrollHeight;
  }

  // -- live captions: the SSE stream, read with fetch so it carries the bearer token ---------------------------
  function stopStream() {
    if (state.stream) state.stream.abort();
    state.stream = null;
    $("live-status").textContent = "";
  }

  async function startStream(id) {
    stopStream();
    const controller = new AbortController();
    state.stream = controller;
    let after = -1;
    let delay = 1000;
    while (!controller.signal.aborted && state.meetingId === id) {
      try {
        const response = await api(meetingPath(id, `/events?after=${after}`), {
          signal: controller.signal, headers: { Accept: "text/event-stream" } });
        delay = 1000;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let cut;
          while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
            const event = { event: "message", data: [] };
            for (const line of block.split(/\r?\n/)) {
              if (!line || line.startsWith(":")) continue;
              const colon = line.indexOf(":");
              const name = colon < 0 ? line : line.slice(0, colon);
              const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
              if (name === "data") event.data.push(val);
              else event[name] = val;
            }
            if (event.id !== undefined) after = Number(event.id);
            if (!event.data.length) continue;
            onLiveEvent(id, event.event, JSON.parse(event.data.join("\n")));
          }
        }
      } catch (err) {
        if (controller.signal.aborted || err.status === 401 || err.status === 404) return;
        $("live-status").textContent = "Live captions interrupted; reconnecting…";
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 15000);
    }
  }

  let liveCount = 0;
  function onLiveEvent(id, kind, data) {
    if (state.meetingId !== id) return;
    if (kind === "closed") {
      state.partials.clear();
      renderCaption();
      $("live-badge").hidden = true;
      $("live-status").textContent = `The meeting closed (${data.reason}).`;
      scheduleRefresh(500);
      return;
    }
    if (kind === "partial") {
      showPartial(data);
      return;
    }
    if (kind === "deleted") {
      stopStream();
      $("live-status").textContent = "This meeting was deleted.";
      return;
    }
    // Only a segment becomes a row ("unauthorized" ends the stream; the reconnect's 401 signs out).
    if (kind !== "message" || !data || typeof data.segment_id !== "string") return;
    finishPartial(data);
    const isNew = !state.segments.has(data.segment_id);
    insertLive(data);
    if (isNew) {
      liveCount += 1;
      $("live-badge").hidden = false;
      $("live-status").textContent = `Live: ${liveCount} new segment${liveCount === 1 ? "" : "s"} · latest at ${clock(data.start)}`;
      scheduleRefresh(3000);
    }
  }

  // Partial captions: the words of an utterance still being spoken, one line per device under the transcript.
  // Never a row: the final segment replaces the line (as the server skips partials its segments cover).
  function showPartial(partial) {
    if (!partial || typeof partial.device_id !== "string") return;
    state.partials.set(partial.device_id, partial);
    renderCaption();
  }

  function finishPartial(seg) {
    const partial = state.partials.get(seg.device_id);
    if (partial && partial.start < seg.end - 0.01) {
      state.partials.delete(seg.device_id);
      renderCaption();
    }
  }

  function renderCaption() {
    const line = $("live-caption");
    const partials = [...state.partials.values()].sort((a, b) => a.start - b.start);
    put(line, partials.map((p, i) => [i ? el("br") : null, el("span", { class: "time" }, clock(p.start)),
      `${p.text || ""}…`]));
    line.hidden = partials.length === 0;
  }

  // A live meeting's summary and ledger follow its segments (the service summarizes in the background).
  function scheduleRefresh(wait) {
    clearTimeout(state.refreshTimer);
    const id = state.meetingId;
    state.refreshTimer = setTimeout(async () => {
      if (state.meetingId !== id) return;
      try {
        const [summary, ledger] = await Promise.all([getJson(meetingPath(id, "/summary")),
          getJson(meetingPath(id, "/ledger"))]);
        if (state.meetingId !== id) return;
        renderSummary(summary);
        renderLedger(ledger);
      } catch (err) {
        if (err.status === 503) scheduleRefresh(5000);
      }
    }, wait);
  }

  // -- summary and ledger -----------------------------------------------------------------------------------
  function jumpButton(source, label) {
    const first = (source.segment_ids || [])[0];
    return el("button", { type: "button", class: "time", title: `Play from ${clock(source.start)}`,
      "aria-label": `Play from ${clock(source.start)}`, onclick: () => jumpTo(first, source.start) }, label || clock(source.start));
  }

  function renderSummary(summary) {
    const box = $("summary");
    if (!summary) {
      put(box, el("p", { class: "note" }, "The summary is being made…"));
      return;
    }
    const l2 = summary.l2 || [];
    const l1 = summary.l1 || [];
    put(box,
      l2.length ? el("ul", { class: "lines l2" }, l2.map((line) => el("li", {}, jumpButton(line), " ", line.text)))
        : el("p", { class: "note" }, summary.final ? "Nothing to summarize." : "No topic section has closed yet."),
      l1.length ? el("h3", {}, "By topic") : null,
      l1.map((section, i) => el("details", { class: "section", open: l1.length <= 4 },
        el("summary", {}, `§${i + 1} ${clock(section.start)}–${clock(section.end)}`),
        el("ul", { class: "lines" }, (section.lines || []).map((line) => el("li", {}, jumpButton(line), " ", line.text))))),
      summary.open_from !== null && summary.open_from !== undefined && !summary.final
        ? el("p", { class: "note" }, `From ${clock(summary.open_from)} the current topic is still open.`) : null);
  }

  const KINDS = [["decisions", "Decisions"], ["todos", "To do"], ["open_questions", "Open questions"],
    ["facts", "Facts"]];

  function renderLedger(ledger) {
    const box = $("ledger");
    if (!ledger) {
      put(box, el("p", { class: "note" }, "The ledger is being made…"));
      return;
    }
    const parts = [];
    for (const [key, title] of KINDS) {
      const items = ledger[key] || [];
      parts.push(el("h3", {}, `${title} `, el("span", { class: "count" }, `(${items.filter((i) => i.status === "current").length})`)));
      if (!items.length) {
        parts.push(el("p", { class: "note" }, "None."));
        continue;
      }
      parts.push(el("ul", { class: `ledger ${key}` }, items.map((item) => ledgerItem(key, item))));
    }
    put(box, ...parts);
  }

  function ledgerItem(key, item) {
    const superseded = item.status === "superseded";
    let body;
    if (key === "todos") {
      body = el("span", { class: "todo" },
        el("strong", {}, item.owner || "someone"), " — ", item.task || item.text,
        item.due || item.due_date ? el("span", { class: "due" }, ` · due ${item.due || ""}${item.due_date
          ? ` (${item.due_date})` : ""}`) : null);
    } else if (key === "facts" && item.value && item.text.includes(item.value)) {
      // The sentence, its value in bold: "amount: $4,250" alone would not say of what.
      const at = item.text.indexOf(item.value);
      body = el("span", {}, item.text.slice(0, at), el("strong", {}, item.value), item.text.slice(at + item.value.length));
    } else {
      body = el("span", {}, item.text);
    }
    const label = `${superseded ? "Superseded: " : ""}${item.text} (${clock(item.source.start)})`;
    return el("li", { class: superseded ? "superseded" : "" },
      el("button", { type: "button", class: "item", "aria-label": `Play from ${clock(item.source.start)}: ${label}`,
        dataset: { item: item.id },
        onclick: () => jumpTo((item.source.segment_ids || [])[0], item.source.start) },
      el("span", { class: "time" }, clock(item.source.start)), " ",
      superseded ? el("del", {}, body) : body,
      superseded ? el("span", { class: "tag" }, "superseded") : null));
  }

  // -- audio and jumping ------------------------------------------------------------------------------------
  // A meeting's audio may span hours, or days with gaps, so the page never fetches all of it: it asks for a
  // stretch around the time being played (`/audio?start=&end=`, `X-Audio-Start` naming position 0's meeting
  // time) and the next one when playback reaches its end, and nothing until the user plays or jumps. The
  // chunks' listing (small JSON) says where audio exists: stretches lie inside it, so a gap between
  // recordings is skipped rather than fetched as silence.
  const STRETCH_BEFORE = 3;     // seconds before a cited time, to hear the words start
  const STRETCH_SECONDS = 300;  // the length of one fetch (the server may cap a stretch; keep it modest)
  const JOIN_GAP = 2;           // chunks closer than this play as one span

  function audioSpans(chunks) {
    const spans = [];
    for (const c of [...chunks].sort((a, b) => a.start - b.start)) {
      const last = spans[spans.length - 1];
      if (last && c.start <= last.end + JOIN_GAP) last.end = Math.max(last.end, c.end);
      else spans.push({ start: c.start, end: c.end });
    }
    return spans;
  }

  // The stretch to fetch for meeting time `at`: from a little before it (within its span) to a few minutes
  // on; after the end of a span, the next span's start. Null past the last span.
  function stretchFor(at, spans) {
    const span = spans.find((s) => at < s.end - 0.05);
    if (!span) return null;
    const from = Math.max(span.start, at - STRETCH_BEFORE);
    return { from, to: Math.min(span.end, from + STRETCH_SECONDS), at: Math.max(at, span.start) };
  }

  function resetAudio() {
    const audio = state.audio;
    if (audio && audio.stretch) URL.revokeObjectURL(audio.stretch.url);
    state.audio = { spans: null, stretch: null, request: (audio ? audio.request : 0) + 1, position: 0 };
    const player = $("player");
    player.pause();
    player.removeAttribute("src");
    delete player.dataset.offset;
    player.dataset.audio = "unknown";
    player.hidden = true;
    $("play-audio").hidden = true;
  }

  async function loadAudioInfo(id, ticket) {
    resetAudio();
    const note = $("audio-note");
    let chunks;
    try {
      chunks = await getJson(meetingPath(id, "/audio/chunks"));
    } catch (err) {
      if (ticket !== state.loadToken) return;
      $("player").dataset.audio = "none";
      note.textContent = err.status === 404 ? "No audio is kept for this meeting."
        : `The audio could not be listed: ${err.message}`;
      return;
    }
    if (ticket !== state.loadToken) return;
    state.audio.spans = audioSpans(chunks);
    $("player").dataset.audio = state.audio.spans.length ? "ready" : "none";
    if (!state.audio.spans.length) {
      note.textContent = "No audio is kept for this meeting.";
      return;
    }
    state.audio.position = state.audio.spans[0].start;
    $("play-audio").hidden = false;
    note.textContent = "";
    if (state.audio.pending !== undefined) playAt(state.audio.pending);
  }

  // Fetch the stretch for meeting time `at` and play from `at`. A newer call wins over one still loading.
  async function playAt(at) {
    const audio = state.audio;
    const player = $("player");
    if (!audio) return;
    if (!audio.spans) {  // still listing the audio: play once it is known
      audio.pending = at;
      return;
    }
    if (!audio.spans.length) return;
    const current = audio.stretch;
    if (current && at >= current.start && at < current.end - 0.05) {
      player.currentTime = at - current.start;
      startPlaying();
      return;
    }
    const wanted = stretchFor(at, audio.spans);
    if (!wanted) {
      $("audio-note").textContent = `No audio after ${clock(at)}.`;
      return;
    }
    const request = ++audio.request;
    const id = state.meetingId;
    $("audio-note").textContent = `Loading the audio from ${clock(wanted.from)}…`;
    let response, blob;
    try {
      response = await api(meetingPath(id, `/audio?start=${wanted.from.toFixed(3)}&end=${wanted.to.toFixed(3)}`));
      blob = await response.blob();
    } catch (err) {
      if (request === audio.request && state.audio === audio) {
        $("audio-note").textContent = `The audio could not be loaded: ${err.message}`;
      }
      return;
    }
    if (request !== audio.request || state.audio !== audio) return;  // a later jump, or another meeting
    const start = Number(response.headers.get("X-Audio-Start"));
    const from = Number.isFinite(start) ? start : wanted.from;
    if (current) URL.revokeObjectURL(current.url);
    audio.stretch = { start: from, end: wanted.to, url: URL.createObjectURL(blob) };
    player.dataset.offset = String(from);
    player.src = audio.stretch.url;
    player.hidden = false;
    $("play-audio").hidden = true;
    await new Promise((resolve) => player.addEventListener("loadedmetadata", resolve, { once: true }));
    if (request !== audio.request || state.audio !== audio) return;
    player.currentTime = Math.max(0, wanted.at - from);
    startPlaying();
  }

  function startPlaying() {
    const playing = $("player").play();
    if (playing && playing.catch) playing.catch(() => { /* autoplay refused: the position is set anyway */ });
  }

  function seek(at) {
    if (state.audio) state.audio.position = at;
    playAt(at);
  }

  $("play-audio").addEventListener("click", () => seek(state.audio ? state.audio.position : 0));

  $("player").addEventListener("timeupdate", () => {
    const audio = state.audio;
    if (!audio || !audio.stretch) return;
    audio.position = audio.stretch.start + $("player").currentTime;
    $("audio-note").textContent = `${clock(audio.position)} of the meeting`;
  });

  // The end of a stretch: on to the next one (after a gap in the recording, the next recording).
  $("player").addEventListener("ended", async () => {
    const audio = state.audio;
    if (!audio || !audio.stretch) return;
    const next = audio.stretch.end;
    if (!stretchFor(next, audio.spans)) {
      // A live meeting may have recorded more since the page listed its audio.
      try {
        const chunks = await getJson(meetingPath(state.meetingId, "/audio/chunks"));
        if (state.audio === audio) audio.spans = audioSpans(chunks);
      } catch (_) { /* the note below says where it stopped */ }
      if (state.audio !== audio) return;
      if (!stretchFor(next, audio.spans)) {
        $("audio-note").textContent = `End of the audio (${clock(next)}).`;
        return;
      }
    }
    seek(next);
  });

  function jumpTo(segmentId, at) {
    let item = rowFor(segmentId);
    if (!item && at !== null && at !== undefined) {
      item = [...$("transcript").children].find((li) => Number(li.dataset.end) >= at) || null;
    }
    for (const old of document.querySelectorAll(".segment.current")) old.classList.remove("current");
    if (item) {
      item.classList.add("current");
      const panel = item.closest(".transcript-col");
      if (panel.scrollHeight > panel.clientHeight + 1 && getComputedStyle(panel).overflowY !== "visible") {
        // Wide screens: the transcript scrolls in its own column; the rest of the page stays put.
        panel.scrollTop = item.offsetTop - panel.clientHeight / 2 + item.offsetHeight / 2;
      } else {
        item.scrollIntoView({ block: "center" });
      }
      item.focus({ preventScroll: true });
    }
    const start = at !== null && at !== undefined ? at : (item ? Number(item.dataset.start) : null);
    if (start !== null && !Number.isNaN(start)) seek(start);
  }

  // -- ask ------------------------------------------------------------------------------------------------------
  function renderAnswer(answer, heard) {
    const box = $("answer");
    const citations = answer.citations || [];
    put(box,
      heard ? el("p", { class: "heard" }, "You asked: ", el("q", {}, heard)) : null,
      el("p", { class: "answer-text" }, el("span", { class: "badge" }, answer.kind), " ", answer.answer),
      citations.length ? el("ol", { class: "citations" }, citations.map((c) => el("li", {},
        el("button", { type: "button", class: "item", onclick: () => jumpTo(c.segment_id, c.start),
          "aria-label": `Play from ${clock(c.start)}: ${c.text}` },
        el("span", { class: "time" }, clock(c.start)), " ",
        c.speaker ? speakerTag(c.speaker, c.speaker_name, ": ") : null, c.text)))) : null,
      answer.manifest ? el("details", { class: "manifest" },
        el("summary", {}, "How this answer was built"),
        el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "Block"), el("th", {}, "Tokens"), el("th", {}, "Why"))),
          el("tbody", {}, answer.manifest.map((b) => el("tr", {}, el("td", {}, b.block), el("td", { class: "num" }, b.tokens),
            el("td", {}, b.reason)))))) : null);
  }

  $("ask-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const question = $("ask-input").value.trim();
    if (!question) return;
    const box = $("answer");
    put(box, el("p", { class: "note" }, "Thinking…"));
    try {
      const answer = await getJson(meetingPath(state.meetingId, "/ask"), {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ question, explain: true }) });
      renderAnswer(answer);
    } catch (err) {
      put(box, el("p", { class: "error" }, err.message));
    }
  });

  // Hold to speak: the browser records while the button is held, then sends the clip to /ask/voice.
  const speak = { recorder: null, chunks: [], stream: null };
  async function startSpeaking() {
    if (speak.recorder) return;
    const button = $("hold-to-speak");
    if (!navigator.mediaDevices || !window.MediaRecorder) {
      put($("answer"), el("p", { class: "error" }, "This browser cannot record (it needs a secure page, https or localhost, and microphone access)."));
      return;
    }
    try {
      speak.stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (err) {
      put($("answer"), el("p", { class: "error" }, `No microphone: ${err.message}`));
      return;
    }
    const type = ["audio/ogg;codecs=opus", "audio/webm;codecs=opus", "audio/webm"].find((t) => MediaRecorder.isTypeSupported(t));
    speak.recorder = new MediaRecorder(speak.stream, type ? { mimeType: type } : {});
    speak.chunks = [];
    const started = performance.now();
    button.dataset.recordedMs = "0";
    speak.recorder.ondataavailable = (e) => {
      if (e.data.size) speak.chunks.push(e.data);
      // How much has been heard so far (a test, or a screen reader's user, can tell it is listening).
      button.dataset.recordedMs = String(Math.round(performance.now() - started));
    };
    speak.recorder.onstop = sendSpoken;
    speak.recorder.start(250);
    button.classList.add("recording");
    button.textContent = "Listening… release to ask";
  }

  function stopSpeaking() {
    if (!speak.recorder) return;
    speak.recorder.stop();
    for (const track of speak.stream.getTracks()) track.stop();
    const button = $("hold-to-speak");
    button.classList.remove("recording");
    button.textContent = "Hold to speak";
  }

  async function sendSpoken() {
    const recorder = speak.recorder;
    speak.recorder = null;
    const type = recorder.mimeType || "audio/webm";
    const blob = new Blob(speak.chunks, { type });
    const box = $("answer");
    if (blob.size < 200) {
      put(box, el("p", { class: "note" }, "Too short: hold the button while you speak."));
      return;
    }
    put(box, el("p", { class: "note" }, "Transcribing your question…"));
    const form = new FormData();
    form.append("file", blob, type.includes("ogg") ? "question.ogg" : "question.webm");
    form.append("explain", "true");
    try {
      const answer = await getJson(meetingPath(state.meetingId, "/ask/voice"), { method: "POST", body: form });
      renderAnswer(answer, answer.transcribed_question);
    } catch (err) {
      put(box, el("p", { class: "error" }, err.message));
    }
  }

  const hold = $("hold-to-speak");
  hold.addEventListener("pointerdown", (e) => { e.preventDefault(); startSpeaking(); });
  hold.addEventListener("pointerup", stopSpeaking);
  hold.addEventListener("pointerleave", stopSpeaking);
  hold.addEventListener("keydown", (e) => {
    if ((e.key === " " || e.key === "Enter") && !e.repeat) { e.preventDefault(); startSpeaking(); }
  });
  hold.addEventListener("keyup", (e) => { if (e.key === " " || e.key === "Enter") { e.preventDefault(); stopSpeaking(); } });

  // -- search -----------------------------------------------------------------------------------------------------
  $("search-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const q = $("search-input").value.trim();
    const list = $("search-results");
    for (const old of document.querySelectorAll(".segment.hit")) old.classList.remove("hit");
    put(list, el("li", { class: "note" }, "Searching…"));
    try {
      const hits = await getJson(meetingPath(state.meetingId, `/search?q=${encodeURIComponent(q)}&k=10`));
      put(list, ...(hits.length ? hits.map((h) => {
        const item = rowFor(h.segment_id);
        if (item) item.classList.add("hit");
        return el("li", {}, el("button", { type: "button", class: "item", onclick: () => jumpTo(h.segment_id, h.start),
          "aria-label": `Play from ${clock(h.start)}: ${h.text}` },
        el("span", { class: "time" }, clock(h.start)), " ",
        h.speaker ? speakerTag(h.speaker, null, ": ") : null,
        el("span", { class: "hit-text" }, highlighted(h.text, q))));
      }) : [el("li", { class: "note" }, "Nothing found.")]));
    } catch (err) {
      put(list, el("li", { class: "error" }, err.message));
    }
  });

  // -- export --------------------------------------------------------------------------------------------------
  for (const button of document.querySelectorAll("[data-export]")) {
    button.addEventListener("click", async () => {
      const fmt = button.dataset.export;
      try {
        const response = await api(meetingPath(state.meetingId, `/export?format=${fmt}`));
        const blob = await response.blob();
        const url = URL.createObjectURL(blob);
        const safe = state.meetingId.replace(/[^\w.-]+/g, "_");
        const link = el("a", { href: url, download: `${safe}.${fmt}` });
        document.body.append(link);
        link.click();
        link.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
      } catch (err) {
        flash(`The export failed: ${err.message}`);
      }
    });
  }

  // The section links on a phone: scroll to the section (the address keeps naming the meeting).
  for (const link of document.querySelectorAll("[data-goto]")) {
    link.addEventListener("click", (event) => {
      event.preventDefault();
      const target = $(link.dataset.goto);
      target.scrollIntoView({ block: "start" });
      const heading = target.querySelector("h2");
      if (heading) { heading.tabIndex = -1; heading.focus({ preventScroll: true }); }
    });
  }

  route();
})();
