/*
 * Grounded chat widget. Paste on a page:
 *   <script src="https://YOUR-GROUNDED-HOST/static/agents/widget.js" data-agent="ag_..." defer></script>
 * Optional: data-visitor-token="..." (signed by your server), data-title="Ask us".
 * It talks only to the host it was loaded from, streams answers over Server-Sent Events, and shows
 * the sources an answer used in a slide-out sidebar.
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

  var css = [
    ".gw-launch{position:fixed;right:20px;bottom:20px;width:56px;height:56px;border-radius:50%;border:0;",
    "background:#2f6df6;color:#fff;box-shadow:0 6px 20px rgba(20,33,61,.25);cursor:pointer;z-index:2147483000;",
    "display:flex;align-items:center;justify-content:center}",
    ".gw-panel{position:fixed;right:20px;bottom:88px;width:380px;max-width:calc(100vw - 24px);height:560px;",
    "max-height:calc(100vh - 110px);background:#fff;border-radius:14px;box-shadow:0 12px 40px rgba(20,33,61,.25);",
    "display:none;flex-direction:column;overflow:hidden;z-index:2147483000;font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#14213d}",
    ".gw-panel.gw-open{display:flex}",
    ".gw-head{display:flex;align-items:center;gap:8px;padding:14px 16px;background:#14213d;color:#fff;font-weight:600}",
    ".gw-head .gw-sp{flex:1}.gw-head button{background:transparent;border:0;color:#fff;cursor:pointer;font-size:18px}",
    ".gw-log{flex:1;overflow-y:auto;padding:16px;display:flex;flex-direction:column;gap:10px;background:#f6f8fb}",
    ".gw-msg{max-width:85%;padding:9px 12px;border-radius:12px;white-space:pre-wrap;word-wrap:break-word}",
    ".gw-user{align-self:flex-end;background:#2f6df6;color:#fff;border-bottom-right-radius:4px}",
    ".gw-bot{align-self:flex-start;background:#fff;border:1px solid #e3e7ee;border-bottom-left-radius:4px}",
    ".gw-err{border-color:#f3b4b4;background:#fff5f5;color:#a12b2b}",
    ".gw-src-btn{display:inline-flex;align-items:center;gap:4px;margin-top:6px;font-size:12px;color:#2f6df6;",
    "background:#eef3ff;border:0;border-radius:999px;padding:3px 9px;cursor:pointer}",
    ".gw-form{display:flex;gap:8px;padding:10px;border-top:1px solid #e3e7ee;background:#fff}",
    ".gw-form input{flex:1;border:1px solid #d5dbe5;border-radius:10px;padding:10px;font:inherit}",
    ".gw-form button{border:0;border-radius:10px;background:#2f6df6;color:#fff;padding:0 14px;cursor:pointer;font:inherit}",
    ".gw-form button:disabled{opacity:.5;cursor:default}",
    ".gw-side{position:absolute;top:0;right:0;bottom:0;width:78%;background:#fff;border-left:1px solid #e3e7ee;",
    "transform:translateX(100%);transition:transform .2s ease;display:flex;flex-direction:column}",
    ".gw-side.gw-open{transform:none;box-shadow:-8px 0 24px rgba(20,33,61,.12)}.gw-side h3{margin:0;padding:14px 16px;font-size:15px;border-bottom:1px solid #e3e7ee;display:flex}",
    ".gw-side h3 span{flex:1}.gw-side h3 button{border:0;background:transparent;cursor:pointer;font-size:16px}",
    ".gw-side ol{margin:0;padding:12px 16px 12px 34px;overflow-y:auto}.gw-side li{margin-bottom:10px}",
    ".gw-side a{color:#2f6df6;text-decoration:none}.gw-side a:hover{text-decoration:underline}",
    ".gw-typing{opacity:.6}",
    "@media (max-width:520px){.gw-panel{right:0;bottom:0;width:100vw;max-width:100vw;height:100vh;max-height:100vh;border-radius:0}",
    ".gw-launch{right:14px;bottom:14px}.gw-panel.gw-open~.gw-launch{display:none}.gw-side{width:100%}}"
  ].join("");

  var style = document.createElement("style");
  style.textContent = css;
  document.head.appendChild(style);

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text) node.textContent = text;
    return node;
  }

  // Inline SVG icons: emoji fonts are missing on many systems.
  var CHAT_ICON = '<svg width="26" height="26" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" ' +
    'stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><path d="M21 15a2 2 0 0 1-2 2H7l-4 4V5a2 2 0 0 1 2-2h14a2 2 0 0 1 2 2z"/></svg>';
  var DOC_ICON = '<svg width="12" height="12" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2.2" ' +
    'aria-hidden="true"><path d="M14 2H6a2 2 0 0 0-2 2v16a2 2 0 0 0 2 2h12a2 2 0 0 0 2-2V8z"/><path d="M14 2v6h6"/></svg>';
  var launch = el("button", "gw-launch");
  launch.innerHTML = CHAT_ICON;
  launch.setAttribute("aria-label", "Open chat");
  var panel = el("div", "gw-panel");
  panel.setAttribute("role", "dialog");
  var head = el("div", "gw-head");
  var title = el("span", "gw-title", script.dataset.title || "Ask us");
  var close = el("button", "", "\u2715");
  close.setAttribute("aria-label", "Close chat");
  head.append(title, el("span", "gw-sp"), close);
  var log = el("div", "gw-log");
  var form = el("form", "gw-form");
  var input = el("input");
  input.placeholder = "Type your question\u2026";
  input.maxLength = 4000;
  input.setAttribute("aria-label", "Your question");
  var send = el("button", "", "Send");
  send.type = "submit";
  form.append(input, send);
  var side = el("div", "gw-side");
  var sideHead = el("h3");
  var sideClose = el("button", "", "\u2715");
  sideClose.setAttribute("aria-label", "Close sources");
  sideHead.append(el("span", "", "Sources"), sideClose);
  var sideList = el("ol");
  side.append(sideHead, sideList);
  panel.append(head, log, form, side);
  document.body.append(panel, launch);

  function headers() {
    var h = { "Content-Type": "application/json" };
    if (token) h["X-Visitor-Token"] = token;
    return h;
  }

  function showSources(sources) {
    sideList.textContent = "";
    sources.forEach(function (s) {
      var li = el("li");
      if (s.url) {
        var a = el("a", "", s.title);
        a.href = s.url;
        a.target = "_blank";
        a.rel = "noopener";
        li.append(a);
      } else {
        li.textContent = s.title;
      }
      sideList.append(li);
    });
    side.classList.add("gw-open");
  }

  function addBot(text, sources) {
    var msg = el("div", "gw-msg gw-bot", text);
    log.append(msg);
    if (sources && sources.length) attachSources(msg, sources);
    log.scrollTop = log.scrollHeight;
    return msg;
  }

  function attachSources(msg, sources) {
    var btn = el("button", "gw-src-btn");
    btn.innerHTML = DOC_ICON;
    btn.append(document.createTextNode(sources.length + (sources.length === 1 ? " source" : " sources")));
    btn.type = "button";
    btn.addEventListener("click", function () { showSources(sources); });
    msg.append(document.createElement("br"), btn);
  }

  function ask(question) {
    log.append(el("div", "gw-msg gw-user", question));
    var msg = addBot("\u2026");
    msg.classList.add("gw-typing");
    send.disabled = true;
    var answer = "";
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
          if (event.type === "text.delta") {
            answer += event.delta;
            msg.classList.remove("gw-typing");
            msg.textContent = answer;
          } else if (event.type === "done") {
            conversationId = event.conversation_id;
            try { sessionStorage.setItem(storageKey, conversationId); } catch (e) { /* ignore */ }
            msg.classList.remove("gw-typing");
            msg.textContent = event.answer;
            if (event.sources && event.sources.length) attachSources(msg, event.sources);
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
        msg.classList.add("gw-err");
        msg.textContent = error.message || "Something went wrong.";
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

  launch.addEventListener("click", function () {
    panel.classList.toggle("gw-open");
    if (panel.classList.contains("gw-open")) input.focus();
  });
  close.addEventListener("click", function () { panel.classList.remove("gw-open"); });
  sideClose.addEventListener("click", function () { side.classList.remove("gw-open"); });
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var q = input.value.trim();
    if (!q) return;
    input.value = "";
    ask(q);
  });

  fetch(api + "/widget/init", { method: "POST", headers: headers(), body: JSON.stringify({ page_url: location.href }) })
    .then(function (r) { return r.ok ? r.json() : null; })
    .then(function (info) { if (info && !script.dataset.title) title.textContent = info.name; })
    .catch(function () { /* the chat still works without the greeting */ });
  restore();
})();
