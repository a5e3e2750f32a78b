/* Requests to the server and reading its answers. */
import { csrf } from "./dom.js";

export function postJSON(url, body) {
  return fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf() },
    body: JSON.stringify(body || {}),
  });
}

export async function readJSON(response) {
  try {
    return await response.json();
  } catch (_error) {
    return {};
  }
}

export function messagesOf(errors) {
  if (!errors || typeof errors !== "object") return [];
  if (errors.detail) return [String(errors.detail)];
  return Object.values(errors).flat().map(String);
}

// XMLHttpRequest rather than fetch: only it reports upload progress.
export function upload(url, formData, { onProgress } = {}) {
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", url);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.setRequestHeader("X-CSRFToken", csrf());
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable && onProgress) onProgress(Math.round((event.loaded / event.total) * 100));
    };
    xhr.onload = () => {
      let body = {};
      try {
        body = JSON.parse(xhr.responseText || "{}");
      } catch (_error) {
        body = { __all__: [`The server answered ${xhr.status}.`] };
      }
      resolve({ status: xhr.status, body });
    };
    xhr.onerror = () => resolve({ status: 0, body: { __all__: ["The connection failed; check it and try again."] } });
    xhr.send(formData);
  });
}
