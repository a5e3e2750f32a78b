/* The preview chat's server-sent events: reading the stream, and drawing the retrieved passages, an error
 * and the finished answer. */

// Calls onEvent with each event's data, parsed, until the stream ends.
export async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const dataLine = block.split("\n").find((line) => line.startsWith("data: "));
      if (!dataLine) continue;
      onEvent(JSON.parse(dataLine.slice(6)));
    }
  }
}

export function hitsBlock(event) {
  const details = document.createElement("details");
  details.className = "hits-mini";
  details.open = true;
  details.dataset.hits = String(event.hits.length);
  const summary = document.createElement("summary");
  summary.textContent = `Retrieved ${event.hits.length} passage${event.hits.length === 1 ? "" : "s"} for “${event.query}”`;
  details.append(summary);
  const ol = document.createElement("ol");
  for (const hit of event.hits) {
    const li = document.createElement("li");
    const title = document.createElement("strong");
    title.textContent = hit.title || "Untitled";
    const score = document.createElement("span");
    score.className = "muted";
    score.textContent = ` · score ${Number(hit.score).toFixed(3)}`;
    const text = document.createElement("span");
    text.className = "x";
    text.textContent = hit.text;
    li.append(title, score, text);
    ol.append(li);
  }
  if (!event.hits.length) {
    const none = document.createElement("div");
    none.className = "muted";
    none.textContent = "No passage matched.";
    details.append(none);
  }
  details.append(ol);
  return details;
}

export function showError(answer, data) {
  answer.classList.add("error");
  answer.textContent = data.message;
  if (data.detail && data.detail !== data.message) {
    const more = document.createElement("details");
    more.className = "details";
    const summary = document.createElement("summary");
    summary.textContent = "Show details";
    const pre = document.createElement("pre");
    pre.className = "detail";
    pre.textContent = data.detail;
    more.append(summary, pre);
    answer.append(more);
  }
}

export function showAnswer(answer, data) {
  answer.textContent = data.answer;
  answer.dataset.done = "1";
  if (data.metadata && data.metadata.offtopic) {
    const tag = document.createElement("div");
    tag.className = "badge warn";
    tag.style.marginTop = "6px";
    tag.textContent = "Off-topic reply (scope gate)";
    answer.append(document.createElement("br"), tag);
  }
  if (data.sources && data.sources.length) {
    const sources = document.createElement("div");
    sources.className = "muted small";
    sources.style.marginTop = "6px";
    sources.textContent = "Sources: " + data.sources.map((s) => s.title).join(", ");
    answer.append(sources);
  }
}
