/* The live preview chat on the agent's test page: a question streams its answer, with what was retrieved. */
import { $, csrf } from "./dom.js";
import { messagesOf, readJSON } from "./http.js";
import { hitsBlock, readEvents, showAnswer, showError } from "./chat-events.js";

export function previewChat(chat) {
  const log = $("[data-chat-log]", chat);
  const form = $("[data-chat-form]", chat);
  const input = form.message;
  const emptyNote = $("[data-chat-empty]", log).cloneNode(true);
  let conversationId = null; // follow-up questions continue the conversation, as in the widget

  $("[data-chat-reset]", chat).addEventListener("click", () => {
    conversationId = null;
    log.replaceChildren(emptyNote.cloneNode(true));
    input.focus();
  });

  function bubble(kind, text) {
    const empty = $("[data-chat-empty]", log);
    if (empty) empty.remove();
    const el = document.createElement("div");
    el.className = "bubble " + kind;
    el.textContent = text || "";
    log.append(el);
    log.scrollTop = log.scrollHeight;
    return el;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const message = input.value.trim();
    if (!message) return;
    input.value = "";
    const button = $("button", form);
    button.disabled = true;
    bubble("user", message);
    const answer = bubble("bot");
    answer.innerHTML = '<span class="typing">Thinking…</span>';
    let text = "";
    try {
      const response = await fetch(chat.dataset.url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream", "X-CSRFToken": csrf() },
        body: JSON.stringify({ message, conversation_id: conversationId }),
      });
      if (!response.ok || !response.body) {
        answer.classList.add("error");
        answer.textContent = messagesOf(await readJSON(response)).join(" ") || `The preview failed (${response.status}).`;
        return;
      }
      await readEvents(response, (data) => {
        if (data.type === "knowledge.hits") {
          log.insertBefore(hitsBlock(data), answer);
        } else if (data.type === "text.delta") {
          text += data.delta;
          answer.textContent = text;
        } else if (data.type === "error") {
          showError(answer, data);
        } else if (data.type === "done") {
          conversationId = data.conversation_id;
          showAnswer(answer, data);
        }
        log.scrollTop = log.scrollHeight;
      });
    } catch (_error) {
      answer.classList.add("error");
      answer.textContent = "The connection was lost; try again.";
    } finally {
      button.disabled = false;
      input.focus();
    }
  });
}
