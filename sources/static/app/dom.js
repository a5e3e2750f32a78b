/* Finding elements, and the page's CSRF token for the requests the modules send. */

export const $ = (selector, root) => (root || document).querySelector(selector);
export const $$ = (selector, root) => Array.from((root || document).querySelectorAll(selector));
export const csrf = () => ($('meta[name="csrf-token"]') || {}).content || "";
