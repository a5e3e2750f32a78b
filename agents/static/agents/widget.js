/*
 * Grounded chat widget. Paste on a page:
 *   <script src="https://YOUR-GROUNDED-HOST/static/agents/widget.js" data-agent="ag_..." defer></script>
 * Optional: data-visitor-token="..." (signed by your server), data-title="Ask us".
 * It talks only to the host it was loaded from and streams answers over Server-Sent Events. Everything it
 * draws lives in a shadow root, so the host page's CSS cannot restyle it and its CSS cannot leak out.
 * The accent colour, side, greeting and launcher label come from the agent's settings (widget/init).
 */
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || !script.dataset.agent) return;
  var api = new URL(script.src, location.href).origin + "/api/v1/agents/" + encodeURIComponent(script.dataset.agent);
  var token = script.dataset.visitorToken || "";
  var storageKey = "grounded:" + script.dataset.agent + ":conversation";
  var conversationId = null;
  try { conversationId = sessionStorage.getItem(storageKey); } catch (e) { /* storage may be blocked */ }

  // Pixels only (never rem): the host's root font size must not resize us. :host is reset with
  // !important because the host page's own rules (e.g. `* { all: unset }`) reach the host element.
  var CSS = [
    ":host{all:initial !important;display:block !important;position:static !important}",
    "*,*::before,*::after{box-sizing:border-box}",
    ".gw{--accent:#2f6df6;--on-accent:#fff;font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#14213d}",
    ".gw-launch{position:fixed;right:calc(20px + env(safe-area-inset-right));bottom:calc(20px + env(safe-area-inset-bottom));",
    "min-width:56px;height:56px;padding:0 16px;border-radius:28px;border:0;background:var(--accent);color:var(--on-accent);",
    "box-shadow:0 6px 20px rgba(20,33,61,.25);cursor:pointer;z-index:2147483000;display:flex;align-items:center;",
    "justify-content:center;gap:8px;font-weight:600;font-size:15px;line-height:1;font-family:inherit}",
    ".gw-left .gw-launch{right:auto;left:calc(20px + env(safe-area-inset-left))}",
    ".gw-launch:focus-visible,.gw button:focus-visible,.gw a:focus-visible{outline:3px solid #14213d;outline-offset:2px}",
    ".gw-launch:focus-visible{outline-color:#fff;box-shadow:0 0 0 5px #14213d}",
    ".gw-panel{position:fixed;right:20px;bottom:88px;width:380px;max-width:calc(100vw - 24px);height:560px;",
    "max-height:calc(100vh - 110px);background:#fff;border-radius:14px;box-shadow:0 12px 40px rgba(20,33,61,.25);",
    "display:none;flex-direction:column;overflow:hidden;z-index:2147483000}",
    ".gw-left .gw-panel{right:auto;left:20px}",
    ".gw-panel.gw-open{display:flex}",
    ".gw-head{display:flex;align-items:center;gap:8px;padding:14px 16px;background:#14213d;color:#fff;font-weight:600}",
    ".gw-head h2{flex:1;margin:0;font:inherit}",
    // 44 by 44 px tap targets (WCAG 2.5.5); the close button's negative margins keep the header as tall as before.
    ".gw-head button{background:transparent;border:0;color:#fff;cursor:pointer;font-size:18px;width:44px;height:44px;",
    "margin:-6px -10px -6px 0;border-radius:8px;flex:none}",
    ".gw-log{flex:1;overflow-y:auto;padding:16px;display:flex;flex-direction:column;gap:10px;background:#f6f8fb}",
    ".gw-msg{max-width:88%;padding:9px 12px;border-radius:12px;word-wrap:break-word;overflow-wrap:anywhere}",
    ".gw-user{align-self:flex-end;background:var(--accent);color:var(--on-accent);border-bottom-right-radius:4px;white-space:pre-wrap}",
    ".gw-bot{align-self:flex-start;background:#fff;border:1px solid #d5dbe5;border-bottom-left-radius:4px}",
    ".gw-bot p{margin:0 0 8px}.gw-bot p:last-child{margin-bottom:0}",
    ".gw-bot ul,.gw-bot ol{margin:0 0 8px;padding-left:22px}.gw-bot li{margin:2px 0}",
    ".gw-bot code{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#eef1f6;border-radius:4px;padding:1px 4px}",
    ".gw-bot pre{margin:0 0 8px;background:#14213d;color:#f6f8fb;border-radius:8px;padding:10px;overflow-x:auto}",
    ".gw-bot pre code{background:transparent;padding:0;color:inherit;white-space:pre}",
    ".gw a{color:#1d4ed8;text-decoration:underline}",
    ".gw-cite{font-size:12px;vertical-align:super;line-height:0;margin:0 1px;color:#4a5568}a.gw-cite{color:#1d4ed8}",
    ".gw-err{border-color:#f3b4b4;background:#fff5f5;color:#a12b2b}",
    ".gw-typing{color:#4a5568}",
    ".gw-sources{margin-top:8px;padding-top:8px;border-top:1px solid #e3e7ee;font-size:13px;color:#4a5568}",
    ".gw-sources h3{margin:0 0 4px;font-weight:600;font-size:12px;line-height:1.4;text-transform:uppercase;letter-spacing:.04em}",
    ".gw-sources ol{margin:0;padding-left:20px}",
    ".gw-passages{margin-top:6px}.gw-passages summary{cursor:pointer;font-weight:600;font-size:12px;text-transform:uppercase;letter-spacing:.04em}",
    ".gw-passages li{margin:6px 0}.gw-passages blockquote{margin:2px 0 0;padding-left:8px;border-left:3px solid #d5dbe5;",
    "white-space:pre-wrap;color:#14213d;max-height:12em;overflow-y:auto}",
    ".gw-form{display:flex;gap:8px;padding:10px;border-top:1px solid #e3e7ee;background:#fff}",
    ".gw-form input{flex:1;min-width:0;min-height:44px;border:1px solid #8a94a6;border-radius:10px;padding:10px;font-size:16px;line-height:1.3;",
    "font-family:inherit;color:#14213d;background:#fff}",
    ".gw-form input::placeholder{color:#5f6b7a}",
    ".gw-form button{min-width:44px;min-height:44px;border:0;border-radius:10px;background:var(--accent);color:var(--on-accent);padding:0 14px;cursor:pointer;",
    "font-weight:600;font-size:15px;line-height:1;font-family:inherit}",
    ".gw-form button:disabled{opacity:.6;cursor:default}",
    ".gw-sr{position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0}",
    "@media (max-width:520px){.gw-panel,.gw-left .gw-panel{left:0;right:0;top:0;bottom:0;width:100vw;max-width:100vw;",
    "height:100vh;height:100dvh;max-height:none;border-radius:0;padding:env(safe-area-inset-top) env(safe-area-inset-right) ",
    "env(safe-area-inset-bottom) env(safe-area-inset-left)}",
    ".gw-launch{bottom:calc(14px + env(safe-area-inset-bottom))}.gw-open~.gw-launch{display:none}}"
  ].join("");

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text) node.textContent = text;
    return node;
  }

  // Inline SVG icons (fixed strings, never data): emoji fonts are missing on many systems.
  var CHAT_ICON = '<svg width="26" height="26" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" ' +
    'stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><path d="M21 15a2 2 0 0 1-2 2H7l-4 4V5a2 2 0 0 1 2-2h14a2 2 0 0 1 2 2z"/></svg>';

  // ---- Safe Markdown. The model's text is never parsed as HTML: nodes are built with textContent, and only
  // a whitelist (paragraphs, lists, code, bold, italic, http(s)/mailto links, [n] citations) is recognised.
  function safeHref(url) {
    try {
      var parsed = new URL(url, location.href);
      return /^(https?:|mailto:)$/.test(parsed.protocol) ? parsed.href : null;
    } catch (e) { return null; }
  }

  function link(text, href) {
    var a = el("a", "", text);
    a.href = href;
    a.target = "_blank";
    a.rel = "noopener noreferrer";
    return a;
  }

  var INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*|_[^_\s][^_]*_)|(\[[^\]]+\]\([^)\s]+\))|(\[(\d{1,3})\])/;

  function inline(parent, text, sources) {
    while (text) {
      var m = INLINE.exec(text);
      if (!m) { parent.append(text); return; }
      if (m.index) parent.append(text.slice(0, m.index));
      var token = m[0];
      if (m[1]) parent.append(el("code", "", token.slice(1, -1)));
      else if (m[2]) inline(parent.appendChild(el("strong")), token.slice(2, -2), sources);
      else if (m[3]) inline(parent.appendChild(el("em")), token.slice(1, -1), sources);
      else if (m[4]) {
        var split = token.indexOf("](");
        var href = safeHref(token.slice(split + 2, -1));
        if (href) parent.append(link(token.slice(1, split), href));
        else parent.append(token.slice(1, split));
      } else parent.append(citation(Number(m[6]), sources));
      text = text.slice(m.index + token.length);
    }
  }

  function citation(number, sources) {
    var source = (sources || []).filter(function (s) { return s.number === number; })[0];
    var label = "[" + number + "]";
    var href = source && source.url && safeHref(source.url);
    if (!href) {
      var span = el("span", "gw-cite", label);
      if (source) span.title = source.title;
      return span;
    }
    var a = link(label, href);
    a.className = "gw-cite";
    a.setAttribute("aria-label", "Source " + number + ": " + source.title);
    return a;
  }

  function markdown(text, sources) {
    var root = document.createDocumentFragment();
    var lines = text.replace(/\r\n?/g, "\n").split("\n");
    var para = [];
    var list = null;
    function flush() {
      if (para.length) inline(root.appendChild(el("p")), para.join(" "), sources);
      para = [];
    }
    for (var i = 0; i < lines.length; i++) {
      var line = lines[i];
      if (/^\s*```/.test(line)) {
        flush(); list = null;
        var code = [];
        while (++i < lines.length && !/^\s*```/.test(lines[i])) code.push(lines[i]);
        root.appendChild(el("pre")).appendChild(el("code", "", code.join("\n")));
        continue;
      }
      var item = /^\s*(?:([-*+])|(\d+)[.)])\s+(.*)$/.exec(line);
      if (item) {
        flush();
        var tag = item[1] ? "ul" : "ol";
        if (!list || list.tagName.toLowerCase() !== tag) list = root.appendChild(el(tag));
        inline(list.appendChild(el("li")), item[3], sources);
        continue;
      }
      if (!line.trim()) { flush(); list = null; continue; }
      var heading = /^#{1,6}\s+(.*)$/.exec(line);
      if (heading) { flush(); list = null; inline(root.appendChild(el("p")).appendChild(el("strong")), heading[1], sources); continue; }
      if (list && /^\s{2,}\S/.test(line)) { inline(list.lastChild, " " + line.trim(), sources); continue; }
      list = null;
      para.push(line.trim());
    }
    flush();
    return root;
  }

  // ---- Colour: text on the accent is white or near-black, whichever contrasts more (WCAG AA needs 4.5:1).
  function luminance(hex) {
    var rgb = [1, 3, 5].map(function (i) {
      var c = parseInt(hex.slice(i, i + 2), 16) / 255;
      return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2];
  }
  function textOn(hex) {
    var l = luminance(hex);
    return (1.05 / (l + 0.05)) >= ((l + 0.05) / (luminance("#111827") + 0.05)) ? "#fff" : "#111827";
  }

  // ---- The DOM, inside a shadow root.
  var host = el("div");
  host.setAttribute("data-grounded-widget", "");
  var shadow = host.attachShadow({ mode: "open" });
  var style = el("style");
  style.textContent = CSS;
  var root = el("div", "gw");
  shadow.append(style, root);

  var launch = el("button", "gw-launch");
  launch.type = "button";
  launch.innerHTML = CHAT_ICON;
  var launchLabel = el("span");
  launch.append(launchLabel);
  launch.setAttribute("aria-label", "Open chat");
  launch.setAttribute("aria-expanded", "false");
  var panel = el("div", "gw-panel");
  panel.id = "gw-panel";
  launch.setAttribute("aria-controls", panel.id);
  panel.setAttribute("role", "dialog");
  panel.setAttribute("aria-labelledby", "gw-title");
  var head = el("div", "gw-head");
  var title = el("h2", "gw-title", script.dataset.title || "Ask us");
  title.id = "gw-title";
  var close = el("button", "gw-close", "\u2715");
  close.type = "button";
  close.setAttribute("aria-label", "Close chat");
  head.append(title, close);
  var log = el("div", "gw-log");
  log.setAttribute("role", "log");
  log.setAttribute("aria-label", "Conversation");
  // Deltas would make a screen reader read every fragment: only finished answers go to the live region.
  var live = el("div", "gw-sr gw-live");
  live.setAttribute("aria-live", "polite");
  live.setAttribute("role", "status");
  var form = el("form", "gw-form");
  var input = el("input");
  input.type = "text";
  input.placeholder = "Type your question\u2026";
  input.maxLength = 4000;
  input.setAttribute("aria-label", "Your question");
  input.autocomplete = "off";
  var send = el("button", "gw-send", "Send");
  send.type = "submit";
  send.setAttribute("aria-label", "Send question");
  form.append(input, send);
  panel.append(head, log, live, form);
  root.append(panel, launch);
  document.body.append(host);

  var greeting = "";
  var showSources = true;

  function applySettings(info) {
    if (!script.dataset.title && info.name) title.textContent = info.name;
    var accent = /^#[0-9a-fA-F]{6}$/.test(info.accent_color || "") ? info.accent_color : null;
    if (accent) {
      root.style.setProperty("--accent", accent);
      root.style.setProperty("--on-accent", textOn(accent));
    }
    root.classList.toggle("gw-left", info.position === "left");
    if (info.launcher_label) {
      launchLabel.textContent = info.launcher_label;
      launch.setAttribute("aria-label", info.launcher_label);
    }
    greeting = info.greeting || "";
    showSources = info.show_sources !== false;
    if (greeting && !log.children.length) addBot(greeting, [], "gw-greeting");
  }

  function headers() {
    var h = { "Content-Type": "application/json" };
    if (token) h["X-Visitor-Token"] = token;
    return h;
  }

  function render(msg, text, sources, passages) {
    msg.textContent = "";
    msg.append(markdown(text, sources));
    var listed = showSources && sources && sources.length;
    if (!listed && !(passages && passages.length)) return;
    var box = el("div", "gw-sources");
    if (listed) {
      box.append(el("h3", "", "Sources"));
      var ol = el("ol");
      sources.forEach(function (s) {
        var li = el("li");
        var href = s.url && safeHref(s.url);
        li.append(href ? link(s.title, href) : s.title);
        if (s.number) li.value = s.number;
        ol.append(li);
      });
      box.append(ol);
    }
    if (passages && passages.length) box.append(passagesSection(passages));
    msg.append(box);
  }

  // The passages behind an answer, only when the server sent them (knowledge.hits: a signed-in visitor whose
  // token allows it). Plain text only: a passage is shown as written, never read as HTML or Markdown.
  function passagesSection(passages) {
    var details = el("details", "gw-passages");
    details.append(el("summary", "", "Passages (" + passages.length + ")"));
    var ol = el("ol");
    passages.forEach(function (p) {
      var li = el("li");
      var title = String(p.title || "Untitled");
      var href = p.url && safeHref(String(p.url));
      li.append(href ? link(title, href) : el("strong", "", title));
      li.append(el("blockquote", "", String(p.text || "")));
      ol.append(li);
    });
    details.append(ol);
    return details;
  }

  // Hits of every search of one turn, each passage once.
  function addHits(passages, hits) {
    (Array.isArray(hits) ? hits : []).forEach(function (hit) {
      if (!hit || typeof hit !== "object") return;
      var known = passages.some(function (p) { return p.title === hit.title && p.text === hit.text; });
      if (!known) passages.push(hit);
    });
  }

  function addBot(text, sources, cls) {
    var msg = el("div", "gw-msg gw-bot" + (cls ? " " + cls : ""));
    render(msg, text, sources);
    log.append(msg);
    log.scrollTop = log.scrollHeight;
    return msg;
  }

  function announce(text) {
    live.textContent = "";
    // A separate tick so screen readers notice a change even when two answers are identical.
    setTimeout(function () { live.textContent = text; }, 50);
  }

  function ask(question) {
    log.append(el("div", "gw-msg gw-user", question));
    var msg = addBot("\u2026", [], "gw-typing");
    msg.setAttribute("aria-busy", "true");
    send.disabled = true;
    var answer = "";
    var passages = [];
    var body = JSON.stringify(conversationId ? { message: question, conversation_id: conversationId } : { message: question });
    fetch(api + "/chat/stream", { method: "POST", headers: headers(), body: body })
      .then(function (response) {
        if (!response.ok) {
          return response.json().catch(function () { return {}; }).then(function (b) {
            throw new Error((b.error && b.error.message) || "The assistant is unavailable right now.");
          });
        }
        var reader = response.body.getReader();
        var decoder = new TextDecoder();
        var buffer = "";
        function handle(block) {
          var data = block.split("\n").filter(function (l) { return l.indexOf("data: ") === 0; }).map(function (l) { return l.slice(6); }).join("");
          if (!data) return;
          var event = JSON.parse(data);
          if (event.type === "knowledge.hits") {
            addHits(passages, event.hits);
          } else if (event.type === "text.delta") {
            answer += event.delta;
            msg.classList.remove("gw-typing");
            render(msg, answer, []);
          } else if (event.type === "done") {
            conversationId = event.conversation_id;
            try { sessionStorage.setItem(storageKey, conversationId); } catch (e) { /* ignore */ }
            msg.classList.remove("gw-typing");
            msg.removeAttribute("aria-busy");
            render(msg, event.answer, event.sources || [], passages);
            announce(event.answer);
          } else if (event.type === "error") {
            throw new Error(event.message);
          }
          log.scrollTop = log.scrollHeight;
        }
        function pump() {
          return reader.read().then(function (chunk) {
            if (chunk.done) return;
            buffer += decoder.decode(chunk.value, { stream: true });
            var parts = buffer.split("\n\n");
            buffer = parts.pop();
            parts.forEach(handle);
            return pump();
          });
        }
        return pump();
      })
      .catch(function (error) {
        msg.classList.remove("gw-typing");
        msg.removeAttribute("aria-busy");
        msg.classList.add("gw-err");
        msg.textContent = error.message || "Something went wrong.";
        announce(msg.textContent);
      })
      .finally(function () { send.disabled = false; input.focus(); });
  }

  function restore() {
    if (!conversationId) return;
    fetch(api + "/conversations/" + conversationId, { headers: headers() })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (thread) {
        if (!thread) return;
        thread.messages.forEach(function (m) {
          if (m.role === "user") log.append(el("div", "gw-msg gw-user", m.content));
          else if (m.content) addBot(m.content, m.sources);
        });
      });
  }

  var returnFocus = null;
  function open() {
    returnFocus = document.activeElement === host ? launch : document.activeElement;
    panel.classList.add("gw-open");
    launch.setAttribute("aria-expanded", "true");
    input.focus();
  }
  function shut() {
    panel.classList.remove("gw-open");
    launch.setAttribute("aria-expanded", "false");
    // Back to where the visitor was; the launcher when focus came from inside the widget.
    var target = returnFocus && returnFocus !== document.body && document.contains(returnFocus) ? returnFocus : launch;
    target.focus();
  }

  launch.addEventListener("click", function () {
    if (panel.classList.contains("gw-open")) shut(); else open();
  });
  close.addEventListener("click", shut);
  root.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && panel.classList.contains("gw-open")) { e.stopPropagation(); shut(); }
  });
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var q = input.value.trim();
    if (!q) return;
    input.value = "";
    ask(q);
  });

  fetch(api + "/widget/init", { method: "POST", headers: headers(), body: JSON.stringify({ page_url: location.href }) })
    .then(function (r) { return r.ok ? r.json() : null; })
    .then(function (info) { if (info) applySettings(info); })
    .catch(function () { /* the chat still works without the agent's look */ })
    .finally(restore);
})();
